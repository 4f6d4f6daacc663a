"""Check a final answer against the tool results it follows; show the results instead
of an answer that is not grounded in them.

:class:`GroundedAnswers` wraps a model. When the model answers after tool results (since
the last user message), the answer is held back until it is complete and checked by
:func:`ungrounded` (generic rules, nothing that knows what a tool does):

* it is finished (not cut by the token cap) and not empty, and some tool call since
  the question succeeded (when every one failed, the failures are what to show);
* every number in it appears in a tool result, in the question or in a string
  argument of the calls made (a formula: "144 ** (1 / 2)");
* it states a value of the results: one of their numbers, or one of their words the
  question does not use (a label such as "cloudy", a name such as "Oslo");
* it does not assert what a result denies (the result says "not a real forecast", the
  answer says "a real forecast"), nor the opposite of what a result's sentence on the
  same topic states ("Build failed." for "Build 512 passed.": ``core.polarity``), nor
  say "Yes" to a question word no result states ("Is it raining in Lima?" -> "Yes, it
  is raining" when the result says sunny), nor open with the other answer than the one
  the results plainly give a yes/no question ("Yes" to "Did any tests fail?" over "0
  tests failed.");
* it does not repeat itself, and is not the question echoed back;
* when a result holds several rows (a table, a list of objects) and the answer picks
  some of them, it names nothing of the question that neither the results, the calls
  nor the tools' descriptions show: after ``SELECT price FROM products`` (three rows,
  no names), "The price of the desk is 40" picked one row's price for a desk the
  result never names; and when the question names a row by one of its text values,
  the answer names that row, not only others ("Ana is in Berlin" for "Which city
  does Dana live in?");
* when the question names an item of a listed result by its position ("the second
  item"), the answer does not name another item first ("The second item is buy
  milk").

The model reads, of each plain-text result, only the part the question asks about
(:mod:`.focus`); the check holds it to the whole, and a fallback shows that part. An
answer that writes out a whole text result when the question asks about one of its
clauses is cut to that clause (:func:`asked_clause`); one that goes through a list's
items when the question names one by position is cut to that item's clause
(:func:`item_clause`). A failing answer whose leading
sentences pass on their own is cut to them (a small model
often states the result in its first sentence and then goes wrong: "The price of the
desk is 240. The price of the table is 240."); otherwise it is replaced by a plain
statement that no reliable answer came out, followed by what the tools returned, so the
user never reads an invented result.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from loopwright.core.events import ModelEvent, ResponseDone, TextDelta
from loopwright.core.grounding import (
    MIN_ROWS,
    MIN_STEM,
    STOPWORDS,
    asked_item,
    canonical_number,
    is_json,
    is_number,
    label_words,
    other_item_first,
    result_labels,
    row_values,
    unstated_words,
)
from loopwright.core.messages import Message, StopReason, TextPart, ToolResultPart
from loopwright.core.polarity import contradiction, verdict, yes_no
from loopwright.core.protocols import Model, ModelRequest
from loopwright.core.untrusted import unwrap_untrusted
from loopwright.strategies.embedded.claims import (
    cut_value,
    first_statement,
    mislabeled_number,
    other_position,
    other_subject,
    records,
    restated_value,
    unstated_action,
    unstated_thing,
)
from loopwright.strategies.embedded.focus import focused_request, shown_part
from loopwright.strategies.wrapper import ModelWrapper

_NUMBER = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?(?!\d)")
_WORD = re.compile(r"[a-z0-9']+")
_DENIAL = re.compile(r"\bnot (?:an? |the )?((?:[a-z]+ ){0,2}[a-z]+)")
_NEGATORS = ("not", "no", "never", "isn't", "aren't", "wasn't", "n't")
# A sentence ends at ".", "!" or "?" followed by a space and a capital letter, except
# after a list item's number ("1. Buy milk, 2. Call the plumber"; "is 40. The" ends one).
# A value left blank: a currency sign with no amount after it ("priced at $   and"), or
# a run of spaces inside the text. A small model whose answer grammar admits no number
# (the result held none: an empty row set) pads the slot where the value would go.
_BLANK_SLOT = re.compile(r"[$€£¥](?!\s?-?\d)|\S {2,}")
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z])")
_LIST_NUMBER = re.compile(r"(?:^|[,;:]\s*)\d{1,2}$")
MIN_KEPT_WORDS = 3
MAX_SHOWN_CHARS = 400
FALLBACK = "I could not state a reliable answer from the tool results. {shown}"
# An answer given without any tool result cannot be checked against one; only its form
# can: the small model degenerates into one fragment over and over ("ended in  ivi ivi
# iva ivi ..."). Such an answer is replaced by this plain statement.
NO_TOOL_FALLBACK = "I cannot answer that reliably with the tools I have."
# Three uses of one word among five consecutive words: "ics, ics, and ics".
_DEGENERATE_SPAN = 5


@dataclass(frozen=True, slots=True)
class Turn:
    """What an answer is checked against: the question and the results since it."""

    question: str
    results: tuple[ToolResultPart, ...]
    # the calls' arguments since the question (JSON), and what the tools offered
    # describe (added by GroundedAnswers)
    calls: tuple[str, ...] = ()


def current_turn(messages: Sequence[Message]) -> Turn:
    """The question and the results since it (results the dispatcher wrapped as
    untrusted data are checked and shown by their content), and the calls made."""
    results: list[ToolResultPart] = []
    calls: list[str] = []
    for message in reversed(messages):
        if message.role == "user":
            return Turn(message.text, tuple(reversed(results)), tuple(reversed(calls)))
        calls += [json.dumps(dict(c.arguments), ensure_ascii=False) for c in message.tool_calls]
        for part in reversed(message.tool_results_parts):
            inner = unwrap_untrusted(part.content)
            results.append(part if inner is None else replace(part, content=inner))
    return Turn("", tuple(reversed(results)), tuple(reversed(calls)))


def _numbers(text: str) -> set[str]:
    return {canonical_number(m.group(0)) for m in _NUMBER.finditer(text)}


def _call_numbers(turn: Turn) -> set[str]:
    """Numbers of the string arguments of the calls made (a formula the runtime sent:
    "144 ** (1 / 2)"); not of the tools' descriptions ``turn.calls`` may also hold."""
    found: set[str] = set()
    for text in turn.calls:
        try:
            arguments = json.loads(text)
        except ValueError:
            continue
        if isinstance(arguments, dict):
            for value in arguments.values():
                if isinstance(value, str):
                    found |= _numbers(value)
    return found


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _states_a_label(labels: set[str], stated: set[str]) -> bool:
    """Whether the answer's words state a result's label as written or inflected
    ("snow" stated as "snowing", "rain" as "rainy"): a word starting with a label of at
    least :data:`MIN_STEM` letters."""
    return bool(labels & stated) or any(
        len(label) >= MIN_STEM and word.startswith(label) for label in labels for word in stated
    )


def ungrounded(answer: str, turn: Turn) -> str | None:
    """Why ``answer`` is not grounded in ``turn`` (see the module docstring), or
    ``None`` when it passes."""
    ok = [r for r in turn.results if not r.is_error]
    if not answer.strip():
        return "empty answer"
    if turn.results and not ok:
        # Nothing to ground an answer in: the failure itself is the answer to show.
        return "every tool call failed"
    if _BLANK_SLOT.search(answer.strip()):
        return "leaves a value blank"
    said = _numbers(answer)
    known = set().union(*(_numbers(r.content) for r in ok)) if ok else set()
    stray = said - known - _numbers(turn.question) - _call_numbers(turn)
    if stray:
        return f"numbers not in any result or the question: {sorted(stray)}"
    claimed = _claims(answer, turn, ok)
    if claimed:
        return claimed
    labels = {w.lower() for w in result_labels((r.content for r in ok), turn.question)}
    stated = {w.lower() for w in label_words(answer)} | set(_words(answer))
    # an ordinal ("the 2nd floor", "the 1st column") states no number of the results
    valued = _numbers(_ORDINAL.sub("", answer))
    if (known or labels) and not valued & known and not _states_a_label(labels, stated):
        return "states no value of the results"
    denied = _contradiction(answer, ok)
    if denied:
        return f"asserts what a result denies: {denied!r}"
    opposed = contradiction(answer, [r.content for r in ok])
    if opposed:
        return f"says the opposite of what a result states: {opposed!r}"
    given = verdict(yes_no(turn.question), [r.content for r in ok]) if ok else ""
    opening = _YES_OR_NO.match(answer)
    if given and opening and opening.group(1).lower() != given.lower():
        return f"answers {opening.group(1)!r} where the results say {given!r}"
    # a "Yes" the results give claims nothing unstated ("on the list in todo.txt")
    unsupported = _unsupported_yes(answer, turn.question, ok) if given != "Yes" else None
    if unsupported:
        return f"says yes to {unsupported!r}, which no result states"
    rows = [row for r in ok for row in row_values(r.content, 0)]
    unnamed = _unnamed_row(answer, turn, ok, rows)
    if unnamed:
        return f"names {unnamed!r}, which no row of the results shows"
    other = _other_row(answer, turn.question, rows)
    if other:
        return f"names the row of {other!r}, not the one the question names"
    missed = _named_row_unstated(answer, turn.question, ok)
    if missed:
        return f"states nothing of the row of {missed!r} the question names"
    item = other_item_first(answer, turn.question, (r.content for r in ok))
    if item:
        return f"names another list item ({item!r}) before the one the question names"
    words = _words(answer)
    grams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    if len(grams) != len(set(grams)):
        return "repeats itself"
    if " ".join(words) in " ".join(_words(turn.question)):
        return "echoes the question"
    return None


_ORDINAL = re.compile(r"\b\d+(?:st|nd|rd|th)\b", re.IGNORECASE)


def _named_row_unstated(
    answer: str, question: str, results: Sequence[ToolResultPart]
) -> str | None:
    """The value by which the question names the one table row it asks about, when the
    answer states none of that row's other values ("Which customer lives in Paris?" ->
    "Paris is in the 1st column of the rows.": Bo is not said); else ``None``."""
    rows = [row for r in results for row in row_values(r.content, 1)]
    asked = set(_words(question))
    named = [row for row in rows if any(_names(asked, v) for v in row if not is_number(v))]
    if len(named) != 1 or len(rows) < 1:
        return None
    row = named[0]
    others = [v for v in row if not _names(asked, v) and not (is_number(v) and v in asked)]
    if not others:
        return None
    numbers, words = _numbers(_ORDINAL.sub("", answer)), set(_words(answer))
    if any(_said(v, numbers, words) for v in others):
        return None
    return next(v for v in row if _names(asked, v))


def _protected(turn: Turn) -> set[str]:
    """Numbers an answer may state more than once: the question's and the calls' (a
    formula restated with its steps: "3 + 5 = 8, 8 * 8 = 64")."""
    return _numbers(turn.question).union(*(_numbers(c) for c in turn.calls))


def _claims(answer: str, turn: Turn, ok: Sequence[ToolResultPart]) -> str | None:
    """Why ``answer`` claims what the results do not say (see :mod:`.claims`): a number
    under another field's label, one value stated again and again, an act done that a
    result only names, a thing no result, question or call names after a table's rows."""
    contents = [r.content for r in ok]
    mislabeled = mislabeled_number(answer, turn.question, contents, turn.calls)
    if mislabeled:
        return f"labels a number wrongly: {mislabeled}"
    again = restated_value(answer, _protected(turn))
    if again:
        return f"repeats the value {again}"
    position = other_position(answer, turn.question, contents)
    if position:
        return f"names the {position} item where the question names another"
    act = unstated_action(answer, turn.question, contents)
    if act:
        return f"claims an act no result states: {act!r}"
    subject = other_subject(answer, turn.question, contents)
    if subject:
        return f"states a value of another thing: {subject}"
    cut = cut_value(answer, contents)
    if cut:
        return f"cuts a value short: {cut}"
    if any(r.table for r in records(contents)) or any(not is_json(c) for c in contents):
        thing = unstated_thing(answer, turn.question, [*contents, *turn.calls])
        if thing:
            return f"names {thing!r}, which neither the results nor the question name"
    return None


def grounded_head(answer: str, turn: Turn) -> str | None:
    """The longest run of ``answer``'s leading sentences (fewer than all of them, at
    least :data:`MIN_KEPT_WORDS` words) that passes :func:`ungrounded`; else the longest
    run of its first sentence's leading clauses, closed with a period ("There are 1,
    respectively ." -> "There are 1."); else ``None``."""
    cuts = [m.end() for m in _SENTENCE_END.finditer(answer)]
    for cut in reversed(cuts):
        head = answer[:cut].strip()
        if _LIST_NUMBER.search(head[:-1]):
            continue
        if len(_words(head)) >= MIN_KEPT_WORDS and ungrounded(head, turn) is None:
            return head
    first = answer[: cuts[0]] if cuts else answer
    for comma in reversed([m.start() for m in _CLAUSE_END.finditer(first)]):
        head = first[:comma].strip() + "."
        if _LIST_NUMBER.search(head[:-1]):
            continue  # "1. Buy milk, 2" is no clause
        if len(_words(head)) >= MIN_KEPT_WORDS and ungrounded(head, turn) is None:
            return head
    return None


_CLAUSE_END = re.compile(r",\s")


_YES = re.compile(r"\W*yes\b", re.IGNORECASE)
_YES_OR_NO = re.compile(r"\W*(yes|no)\b", re.IGNORECASE)


def _unsupported_yes(answer: str, question: str, results: Sequence[ToolResultPart]) -> str | None:
    """A word of the question that an answer starting with "Yes" repeats in its first
    sentence and no result states (as written or sharing a stem: "raining" and
    "rain"); ``None`` when there is none or the answer does not start with "Yes"."""
    if not _YES.match(answer):
        return None
    first = _SENTENCE_END.split(answer, maxsplit=1)[0]
    said = {w.lower() for w in label_words(first)}
    for word in unstated_words(question, (r.content for r in results)):
        if word in said:
            return word
    return None


def _unnamed_row(
    answer: str, turn: Turn, results: Sequence[ToolResultPart], rows: list[list[str]]
) -> str | None:
    """A word of the question the answer repeats that neither the results nor the
    calls state, when the answer picks some of several rows (``rows``, the results'
    rows: it states a value of some, not all) that the question names by none of their
    text values: the answer then ties one row's value to something the result does not
    show ("the desk" after ``SELECT price FROM products``). ``None`` otherwise."""
    if len(rows) < MIN_ROWS:
        return None
    asked = set(_words(turn.question))
    if any(_names(asked, v) for row in rows for v in row if not is_number(v)):
        return None  # the question names a row: see _other_row
    numbers, words = _numbers(answer), set(_words(answer))
    picked = [row for row in rows if any(_said(v, numbers, words) for v in row)]
    if not picked or len(picked) == len(rows):
        return None
    said = {w.lower() for w in label_words(answer)}
    shown = [r.content for r in results] + list(turn.calls)
    for word in unstated_words(turn.question, shown):
        if word in said:
            return word
    return None


def _said(value: str, numbers: set[str], words: set[str]) -> bool:
    return value in numbers if is_number(value) else _names(words, value)


def _other_row(answer: str, question: str, rows: list[list[str]]) -> str | None:
    """A text value of another row (of ``rows``, the results' rows), when the question
    names rows by a text value of theirs and the answer names none of those but names
    another; else ``None``."""
    rows = [[v for v in row if not is_number(v)] for row in rows]
    if len(rows) < MIN_ROWS:
        return None
    asked, said = set(_words(question)), set(_words(answer))
    named = [v for row in rows for v in row if _names(asked, v)]
    if not named or any(_names(said, v) for v in named):
        return None
    return next((v for row in rows for v in row if _names(said, v) and v not in named), None)


def _names(words: set[str], value: str) -> bool:
    """Whether ``words`` name ``value``: each of its words, as written or plural."""
    parts = _words(value)
    return bool(parts) and all(p in words or f"{p}s" in words for p in parts)


def _contradiction(answer: str, results: Sequence[ToolResultPart]) -> str | None:
    text = " ".join(_words(answer))
    for result in results:
        for match in _DENIAL.finditer(result.content.lower()):
            phrase = " ".join(_words(match.group(1)))
            at = text.find(phrase)
            while at != -1:
                before = text[:at].split()[-3:]
                if not any(w in _NEGATORS or w.endswith("n't") for w in before):
                    return phrase
                at = text.find(phrase, at + 1)
    return None


def degenerate(answer: str) -> str | None:
    """Why an answer given without tool results is unusable, or ``None``: empty, or one
    word used three times among five consecutive words (the small model's runaway
    fragments; "the cat and the dog and the bird" passes)."""
    words = _words(answer)
    if not words:
        return "empty answer"
    for i in range(len(words)):
        window = words[i : i + _DEGENERATE_SPAN]
        if window.count(words[i]) >= 3:
            return f"repeats {words[i]!r} over and over"
    return None


def fallback_text(turn: Turn) -> str:
    """The plain statement used instead of an ungrounded answer."""
    shown = []
    for result in turn.results:
        # the part the question asks about (a text's sentence, a table's named rows):
        # short, and what was asked
        part = result.content if result.is_error else shown_part(turn.question, result.content)
        content = " ".join(part.split())
        if len(content) > MAX_SHOWN_CHARS:
            content = content[:MAX_SHOWN_CHARS] + " ..."
        verb = "failed" if result.is_error else "returned"
        shown.append(f"{result.name} {verb}: {content}")
    return FALLBACK.format(shown="; ".join(shown) or "No tool returned anything.")


_CLAUSE = re.compile(r"[^,;:.!?\n]+")
MIN_ECHO_WORDS = 6


def asked_clause(answer: str, turn: Turn) -> str | None:
    """The one clause of a text result the question asks about, when ``answer`` is that
    whole result written out ("Roses are red, violets are blue." for "What color are
    roses in poem.txt?": "Roses are red."): the only clause sharing a content word with
    the question. ``None`` when the answer is not a result repeated whole (of at least
    :data:`MIN_ECHO_WORDS` words), or when no clause or several share one (the question
    asks for the whole: "What does poem.txt say?")."""
    said = _words(answer)
    for result in turn.results:
        if result.is_error or _words(result.content) != said or len(said) < MIN_ECHO_WORDS:
            continue
        asked = {w for w in _words(turn.question) if w not in STOPWORDS}
        clauses = [c.strip() for c in _CLAUSE.findall(result.content) if c.strip()]
        named = [c for c in clauses if asked & set(_words(c))]
        if len(clauses) >= 2 and len(named) == 1 and len(_words(named[0])) >= 2:
            clause = named[0]
            return clause[0].upper() + clause[1:] + "."
    return None


_CLAUSE_OPENING = re.compile(r"^(?:and|or|then|but)\s+", re.IGNORECASE)


def item_clause(answer: str, turn: Turn) -> str | None:
    """The one clause of ``answer`` that names the list item the question names by its
    position, when the answer goes through several items ("I bought milk, I called
    the plumber, and I renewed the passport." for "What is the second item?": "I
    called the plumber."): the only clause holding a word of that item and none only
    other items use. ``None`` when the question names no item, the answer is one
    clause, or no single clause is such."""
    found = asked_item(turn.question, (r.content for r in turn.results if not r.is_error))
    if found is None:
        return None
    items, index = found
    asked = set(_words(turn.question)) | STOPWORDS
    own = {w for w in _words(items[index]) if len(w) >= MIN_STEM - 1 and w not in asked}
    others = {
        w
        for i, item in enumerate(items)
        if i != index
        for w in _words(item)
        if len(w) >= MIN_STEM - 1 and w not in asked | own
    }
    clauses = [_CLAUSE_OPENING.sub("", c.strip()) for c in _CLAUSE.findall(answer)]
    clauses = [c for c in clauses if c]
    if len(clauses) < 2:
        return None
    named = [c for c in clauses if own & set(_words(c)) and not others & set(_words(c))]
    if len(named) != 1 or len(_words(named[0])) < 2:
        return None
    return named[0][0].upper() + named[0][1:] + "."


class GroundedAnswers(ModelWrapper):
    """A :class:`~loopwright.core.protocols.Model` whose answers after tool results are
    checked (see the module docstring). ``checked`` and ``replaced`` count the answers
    seen and replaced, ``trimmed`` those cut to their grounded leading sentences. Other
    attributes are the wrapped model's."""

    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.checked = 0
        self.replaced = 0
        self.trimmed = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        turn = current_turn(request.messages)
        if turn.results and request.tools:
            # The tools' descriptions name what the calls worked on ("the database
            # tables ..."): words an answer may repeat from the question.
            described = tuple(t.description for t in request.tools)
            turn = replace(turn, calls=turn.calls + described)
        if not turn.results:
            events = self.model.stream(request)
            check: Callable[[ResponseDone], ResponseDone] = self._declined
        else:
            # The model reads only the part of a text result the question asks about;
            # the check holds its answer to the whole (see .focus).
            events = self.model.stream(focused_request(request))
            check = partial(self._checked, turn=turn)
        # A final answer is held until complete and streamed as checked; tool calls and
        # their deltas pass as they come.
        held: list[TextDelta] = []
        async for event in events:
            if isinstance(event, TextDelta):
                held.append(event)
                continue
            if isinstance(event, ResponseDone) and not event.message.tool_calls:
                event = check(event)
                yield TextDelta(event.message.text)
            else:
                for delta in held:
                    yield delta
            held = []
            yield event

    def _declined(self, done: ResponseDone) -> ResponseDone:
        """An answer with no tool result since the question: replaced by
        :data:`NO_TOOL_FALLBACK` when :func:`degenerate`."""
        reason = degenerate(done.message.text)
        if reason is None:
            return done
        self.replaced += 1
        return _rewritten(done, NO_TOOL_FALLBACK, reason)

    def _checked(self, done: ResponseDone, turn: Turn) -> ResponseDone:
        self.checked += 1
        answer = done.message.text
        reason = (
            "cut by the token cap"
            if done.stop_reason is StopReason.MAX_TOKENS
            else ungrounded(answer, turn)
        )
        item = item_clause(answer, turn)
        clause = asked_clause(answer, turn) if reason is None else None
        head: str | None
        if item is not None and item != answer and ungrounded(item, turn) is None:
            reason, head = reason or "goes through other list items", item
        elif clause is not None and ungrounded(clause, turn) is None:
            reason, head = "repeats the whole result", clause
        elif reason is None:
            return done
        else:
            head = _first_statement(answer, turn) or grounded_head(answer, turn)
        if head is not None:
            self.trimmed += 1
            return _rewritten(done, head, reason, trimmed=True)
        self.replaced += 1
        return _rewritten(done, fallback_text(turn), reason)


def _first_statement(answer: str, turn: Turn) -> str | None:
    """``answer`` up to its first statement of a value it states again, when that part
    is grounded ("Manila is 63 pct, 63% humidity, 63 pct is 63" -> "Manila is 63
    pct.")."""
    again = restated_value(answer, _protected(turn))
    head = first_statement(answer, again) if again else None
    if head is None or len(_words(head)) < MIN_KEPT_WORDS or ungrounded(head, turn):
        return None
    return head


def _rewritten(
    done: ResponseDone, text: str, reason: str, *, trimmed: bool = False
) -> ResponseDone:
    """``done`` with ``text`` as its answer. The model's own answer and why it was
    rewritten stay in ``provider_meta``: under ``grounding_trimmed`` (``reason``) when
    ``text`` is its own grounded part, else under ``grounding`` (``replaced``)."""
    key, why = ("grounding_trimmed", "reason") if trimmed else ("grounding", "replaced")
    meta = {**done.message.provider_meta, key: {why: reason, "answer": done.message.text}}
    message = Message("assistant", (TextPart(text),), meta)
    return ResponseDone(message, StopReason.FINAL_ANSWER, done.usage, done.model)


__all__ = [
    "GroundedAnswers",
    "Turn",
    "NO_TOOL_FALLBACK",
    "current_turn",
    "degenerate",
    "fallback_text",
    "asked_clause",
    "item_clause",
    "grounded_head",
    "ungrounded",
]
