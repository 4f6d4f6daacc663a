"""The verdict of ``answers_eval.py`` on one answer (:func:`check`).

* **right call**: the expected tool was called with the argument that matters (the
  city, the file, a query returning the asked value, an expression with that value);
* **states the result**: the final answer contains the asked value of the tool result
  (the number, the weather field asked about, the fact from the file or the row;
  for a question about one row, the answer names that row too);
* **contradicts nothing**: every number in the answer appears in a tool result or in the
  question; a number written right after a field's name is that field's value ("the
  humidity is 14" when humidity_pct is 35 fails; so does "14% humidity"); no other weather
  condition (and no "Yes" to the one a question asks about: "Is it raining?" -> "Yes, it
  is raining" when the result says sunny), no "real forecast" for demo data, no
  Fahrenheit; no repeated clause;
* **reads fluently** (:func:`_fluency`): no word cut at its front ("ondon"), no bare
  run of three numbers, no quantity stated twice, not a whole tool result when the
  question asks one value in it.

An answer replaced by the strategy's fallback ("I could not state a reliable answer ...
<tool> returned: ...") is counted separately: it shows the result but is not a
model-written answer. An answer the strategy cut to its grounded leading sentences is
model-written (counted as ``trimmed``). ``pass`` = right call + states the result +
contradicts nothing + reads fluently, model-written.
"""

from __future__ import annotations

import json
import re

from answers_sets import Case

from loopwright.core.run import RunResult
from loopwright.core.untrusted import unwrap_untrusted

_NUMBER = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?(?!\d)")
_CONDITIONS = ("sunny", "cloudy", "rain", "windy", "foggy", "snow")
_NEG = re.compile(r"\b(?:not|no|isn't|n't)\b\W+(?:\w+\W+){0,2}$")


def _canon(n: str) -> str:
    return n.rstrip("0").rstrip(".") if "." in n else n


def _contradictions(answer: str, case: Case, result: RunResult) -> list[str]:
    text = answer.lower()
    results = " ".join(p.content for m in result.messages for p in m.tool_results_parts)
    # a formula the call sent may be restated ("30 / 100 * 250 = 75." for "30% of 250")
    sent = " ".join(
        str(v) for m in result.messages for c in m.tool_calls for v in c.arguments.values()
    )
    known = {_canon(n) for n in _NUMBER.findall(results + " " + case.question + " " + sent)}
    found = [f"number {n}" for n in _NUMBER.findall(answer) if _canon(n) not in known]
    for word, value in case.fields.items():
        for m in re.finditer(rf"\b{word}\w*\b(?:\W+[a-z]+){{0,5}}?\W+(-?\d+(?:\.\d+)?)", text):
            if _canon(m.group(1)) != value:
                found.append(f"{word} is {m.group(1)}")
        # The field named right after a number and at most one unit word: "62 pct
        # wind speed" says the wind is 62.
        for m in re.finditer(rf"(-?\d+(?:\.\d+)?)\s*(?:%|[a-z]+)?\s+{word}", text):
            if _canon(m.group(1)) != value:
                found.append(f"{word} is {m.group(1)}")
        if value != case.fields["temperature"] and re.search(
            rf"\b{value}\s*(?:degree|°|celsius)", text
        ):
            found.append(f"{word} in degrees")
    if case.tool == "get_weather":
        actual = next((c for c in _CONDITIONS if c in results), "")
        for other in _CONDITIONS:
            if other in actual or other not in text:
                continue
            if other in case.question.lower():
                # The question's word restated ("How windy is it?" -> "It is windy, 22
                # kph") is not a claim, but "Yes" to "Is it raining?" (sunny) is.
                if re.match(r"\W*yes\b", text):
                    found.append(f"yes to {other}")
                continue
            at = text.find(other)
            if not _NEG.search(text[:at]):
                found.append(f"condition {other}")
        if "fahrenheit" in text or "°f" in text:
            found.append("fahrenheit")
        at = text.find("real forecast")
        if at != -1 and not _NEG.search(text[:at]):
            found.append("real forecast")
    words = re.findall(r"\w+", text)
    grams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    if len(grams) != len(set(grams)):
        found.append("repetition")
    return found


_ALPHA = re.compile(r"[A-Za-z]+")
_NUMBER_RUN = re.compile(r"-?\d+(?:\.\d+)?[a-z%°]*(?:\s*,\s*-?\d+(?:\.\d+)?[a-z%°]*){2,}", re.I)
_QUANTITY = re.compile(r"(-?\d+(?:\.\d+)?)\s*(%|°|[a-z]+)", re.I)
# Questions that ask for what a file or result says as a whole, not for one value in it.
# ("What does todo.txt say to buy?" asks for one item; "Read todo.txt and tell me the
# first item." too.)
_WHOLE = re.compile(
    r"^\s*(?:what does \S+ (?:say|contain)(?:\s+about\b[^?]*)?\W*$|summari[sz]e\b"
    r"|(?:read|show)\b(?![^?]*\b(?:and|then)\b))",
    re.I,
)
MIN_DUMP_WORDS = 6
# Shorter cut words are often words of their own ("day" of "today", "here" of "where").
MIN_FRAGMENT = 5


def _fluency(answer: str, question: str, results: list[str]) -> list[str]:
    """Defects of form a reader sees at once, whatever the facts: a word cut from the
    front of one the question or results use ("ondon" for "London"), a bare run of
    three or more numbers ("9, 72, 10, 72c"), one quantity stated twice ("22 kph and
    22kph"), and a tool result repeated whole when the question asks for one value
    in it ("The team meeting is on Tuesday at 10 am in room 4." for "What time is the
    meeting?")."""
    found: list[str] = []
    source = question + " " + " ".join(results)
    known = {w.lower() for w in _ALPHA.findall(source)}
    for word in _ALPHA.findall(answer):
        low = word.lower()
        if len(low) < 3 or low in known:
            continue
        if len(low) >= MIN_FRAGMENT and any(
            len(k) - 2 <= len(low) < len(k) and k.endswith(low) for k in known
        ):
            found.append(f"fragment {word}")
    if _NUMBER_RUN.search(answer):
        found.append("number run")
    quantities = [(n, u.lower()) for n, u in _QUANTITY.findall(answer)]
    if len(quantities) != len(set(quantities)):
        found.append("quantity repeated")
    if not _WHOLE.search(question):
        said = " ".join(_ALPHA.findall(answer.lower()))
        for content in results:
            whole = " ".join(_ALPHA.findall(content.lower()))
            if len(whole.split()) >= MIN_DUMP_WORDS and whole in said:
                found.append("result dump")
                break
    return found


_CLAUSE_CUT = re.compile(r"[,;:!?]|\.(?!\d)")
_SENTENCE_CUT = re.compile(r"[.!?](?!\d)")
_LABEL_WORDS = 6


def _tables(results: list[str]) -> list[tuple[list[str], list[list[object]]]]:
    """The (columns, rows) of every table result (``{"columns": [...], "rows": [...]}``)."""
    found = []
    for content in results:
        try:
            data = json.loads(content)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("columns"), list):
            rows = [r for r in data.get("rows") or [] if isinstance(r, list)]
            found.append(([str(c).lower() for c in data["columns"]], rows))
    return found


def _names_column(word: str, column: str) -> bool:
    parts = re.findall(r"[a-z]+", column)
    return any(
        len(p) >= 3 and (word.startswith(p) or (len(word) >= 4 and p.startswith(word)))
        for p in parts
    )


def _cell(value: object) -> str:
    return _canon(json.dumps(value)) if isinstance(value, int | float) else str(value).lower()


def _row_claims(answer: str, case: Case, results: list[str]) -> list[str]:
    """Numbers stated about a table row that are not that row's value of the column the
    sentence names (the strict check, added after "The chair cost is $12." passed for
    the chair's price, 85: 12 is its stock). The column a word names: a column whose
    name it starts (or starts with), else, for a word of the question that names no
    column, the column holding the asked value in the asked row ("cost" -> price, where
    the chair's 85 is). The row: the one the sentence names by a text value, else the
    case's subject row."""
    found: list[str] = []
    asked_numbers = {_canon(n) for n in _NUMBER.findall(case.question)}
    for columns, rows in _tables(results):
        texts = [[_cell(v) for v in row] for row in rows]
        subject = [t for t in texts if case.subject and case.subject.lower() in t]
        # the question's words that name no column, mapped through the asked value
        mapped: dict[str, str] = {}
        if subject and case.facts and _NUMBER.fullmatch(case.facts[0]):
            at = [i for i, v in enumerate(subject[0]) if v == _canon(case.facts[0])]
            for word in re.findall(r"[a-z]+", case.question.lower()):
                cells = {v for t in texts for v in t}
                if (
                    len(at) == 1
                    and len(word) >= 4
                    and word.rstrip("s") not in cells
                    and not any(_names_column(word, c) for c in columns)
                ):
                    mapped[word] = columns[at[0]]
        for sentence in _SENTENCE_CUT.split(answer.lower()):
            words = set(re.findall(r"[a-z]+", sentence))
            named = [t for t in texts if any(v in words or f"{v}s" in words for v in t)]
            if len(named) > 1:
                continue  # several rows in one sentence: which number is whose is open
            row = named[0] if named else (subject[0] if subject else None)
            if row is None and len(texts) == 1:
                row = texts[0]
            if row is None:
                continue
            for m in _NUMBER.finditer(sentence):
                number = _canon(m.group(0))
                if number in asked_numbers:
                    continue
                head = _CLAUSE_CUT.split(sentence[: m.start()])[-1]
                before = list(reversed(re.findall(r"[a-z]+", head)))[:_LABEL_WORDS]
                after = re.findall(r"[a-z]+", _CLAUSE_CUT.split(sentence[m.end() :])[0])
                column = _label(before, columns, mapped) or _label(after[:3], columns, {})
                if column is None:
                    continue
                value = row[columns.index(column)]
                if value != number:
                    found.append(f"row {row[0]}: {column} is {value}, not {number}")
    return found


def _label(words: list[str], columns: list[str], mapped: dict[str, str]) -> str | None:
    for word in words:
        if word in ("and", "or", "but", "with"):
            return None
        for column in columns:
            if _names_column(word, column):
                return column
        for asked, column in mapped.items():
            if word[:4] == asked[:4]:
                return column
    return None


def _states(answer: str, fact: str) -> bool:
    """``fact`` appears in ``answer``; a number must stand alone ("7", not "1,7")."""
    if _NUMBER.fullmatch(fact):
        # "280.0" states 280 (a REAL column's value as the result writes it)
        written = re.finditer(r"(?<![\d.,])\d+(?:\.\d+)?(?![\d]|[.,]\d)", answer)
        return any(_canon(m.group(0)) == _canon(fact) for m in written)
    # a word stands alone or with an inflection ("raining" for rain), not inside another
    # word ("rainier" is no statement of rain)
    found = re.search(rf"(?<!\w){re.escape(fact)}(?:s|es|ing|y|ed)?(?!\w)", answer, re.I)
    return found is not None


def _other_rows_named(answer: str, case: Case, contents: list[str]) -> bool:
    """Whether ``answer`` names a row of a table result other than the case's subject
    row (by a text value only other rows hold): "Ana is in Berlin, Bo is in Paris" for
    Dana's city."""
    words = set(re.findall(r"[a-z0-9]+", answer.lower()))
    subject = case.subject.lower()
    for _, rows in _tables(contents):
        texts = [[_cell(v) for v in row] for row in rows]
        own = {v for t in texts if subject in t for v in t}
        others = {v for t in texts if subject not in t for v in t if not _NUMBER.fullmatch(v)}
        if any(v in words or f"{v}s" in words for v in others - own):
            return True
    return False


# A line of a listed text ("1. Buy milk", "- eggs") and a list after a lead-in and a colon
# ("Pancakes: 200 g flour, 2 eggs, 300 ml milk.").
_ITEM_LINE = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*])\s+(\S.*)$", re.M)
_COLON_LIST = re.compile(r":\s*([^.:\n]+(?:\.\d[^.:\n]*)*)")
MIN_ITEM_WORD = 3


def _list_items(text: str) -> list[str]:
    """The items of a listed text: its marked lines, else the comma-separated parts after
    a colon (two or more); else none."""
    lines = _ITEM_LINE.findall(text)
    if len(lines) >= 2:
        return lines
    for m in _COLON_LIST.finditer(text):
        parts = [p.strip() for p in re.split(r",\s*(?:and\s+)?|\s+and\s+", m.group(1))]
        if len([p for p in parts if p]) >= 2:
            return [p for p in parts if p]
    return []


def _other_items(answer: str, case: Case, contents: list[str]) -> list[str]:
    """Other items of the listed text result whose item answers the question, that the
    answer names too (by a word only they hold): "Pancakes: 200 g flour, 2 eggs, 300 ml
    milk." for the first ingredient; "buy milk or call the plumber or ..." for what to
    buy. A question asking for the whole text, or how many items, may name them all."""
    if _WHOLE.search(case.question) or re.search(r"\bhow many\b", case.question, re.I):
        return []
    said = set(re.findall(r"[a-z]+", answer.lower()))
    asked = set(re.findall(r"[a-z]+", case.question.lower()))
    for content in contents:
        items = _list_items(content)
        answering = [i for i in items if any(_states(i, f) for f in case.facts)]
        if len(answering) != 1:
            continue
        own = set(re.findall(r"[a-z]+", answering[0].lower()))
        named = []
        for item in items:
            if item == answering[0]:
                continue
            words = set(re.findall(r"[a-z]+", item.lower())) - own - asked
            if any(len(w) >= MIN_ITEM_WORD and w in said for w in words):
                named.append(item)
        return named
    return []


def check(case: Case, result: RunResult, *, strict: bool = True) -> dict[str, object]:
    """The verdict on one answer; ``strict`` adds the row-and-column check
    (:func:`_row_claims`), which the checker before it lacked (``strict=False`` gives
    that older check, for figures comparable with earlier rounds)."""
    calls = [(c.name, dict(c.arguments)) for m in result.messages for c in m.tool_calls]
    answer = result.answer or ""
    fallback = any("grounding" in m.provider_meta for m in result.messages)
    trimmed = any("grounding_trimmed" in m.provider_meta for m in result.messages)
    if case.tool == "*":
        right_call = len(calls) >= 2
    else:
        right_call = any(n == case.tool and case.arg_ok(a) for n, a in calls)
    states = any(_states(answer, f) for f in case.facts)
    parts = [p.content for m in result.messages for p in m.tool_results_parts]
    contents = [unwrap_untrusted(c) or c for c in parts]
    # the row asked about must be named when the answer names other rows as well
    # ("The customer is in Paris." answers "Where does Bo live?")
    if case.subject and case.subject.lower() not in answer.lower():
        states = states and not _other_rows_named(answer, case, contents)
    if case.tool == "sql_query":
        results = " ".join(p.content for m in result.messages for p in m.tool_results_parts)
        right_call = right_call and any(f in results for f in case.facts)
    bad = [] if fallback else _contradictions(answer, case, result)
    if not fallback:
        bad += _fluency(answer, case.question, contents)
        bad += [f"other item {i!r}" for i in _other_items(answer, case, contents)]
        if strict:
            bad += _row_claims(answer, case, contents)
    ok = right_call and states and not bad and not fallback
    return {
        "pass": ok,
        "right_call": right_call,
        "states": states,
        "bad": bad,
        "fallback": fallback,
        "trimmed": trimmed,
    }
