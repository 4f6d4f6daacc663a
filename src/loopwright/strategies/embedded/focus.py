"""Show a small model only the part of a text result that a question asks about.

Asked "How long should each side cook?" after reading a recipe, a 270M model answered
with the ingredient list; asked "What time is the meeting?", with the whole file. The
answer turn therefore sees, in place of each plain-text tool result of the current
turn, the part of it the question is about (:func:`relevant_text`); the conversation
itself, and the answer check, keep the whole result.

The part is chosen by generic means only: the sentences (or lines) sharing the most
content words with the question, then, inside the one sentence left, the clause that
shares the most, or a phrase of the kind the question asks for (a time for "what
time", a day for "which day", a duration for "how long", a place for "where").
Nothing here knows a file or a topic.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace

from loopwright.core.grounding import STOPWORDS, asked_item, base_form, is_json, label_words
from loopwright.core.messages import Message, ToolResultPart
from loopwright.core.protocols import ModelRequest
from loopwright.core.untrusted import unwrap_untrusted

# A question that asks for a whole text, not one fact in it ("What does notes.txt
# say?", "... say about the build?"; not "What does todo.txt say to buy?").
_WHOLE = re.compile(
    r"^\W*(?:what does \S+ (?:say|contain)(?:\s+about\b[^?]*)?\W*$|what is in\b"
    r"|summari[sz]e|read\b|show\b|print\b)",
    re.IGNORECASE,
)
# Words of an instruction about where to look, not of what is asked.
_SOURCE_WORDS = frozenset(
    ["according", "check", "see", "look", "file", "read", "use", "tell", "say", "says"]
)
# A sentence ends at ".", "!" or "?" after a letter, before a space: not inside a name
# ("example.internal") nor after a list item's number ("3. Renew the passport").
_SENTENCE_END = re.compile(r"(?<=[^\W\d_][.!?])\s+")
_CLAUSE = re.compile(r"[^,;]+")
STEM = 4


def _stems(text: str) -> set[str]:
    """The content words of ``text`` by their first :data:`STEM` letters ("cooking"
    and "cook" share one; an irregular verb's past form by its base form's: "bought"
    and "buy"); file names and instruction words left out."""
    found = set()
    for word in label_words(text):
        low = base_form(word)
        if "." in low or low in STOPWORDS or low in _SOURCE_WORDS:
            continue
        found.add(low[:STEM])
    return found


def _best(units: Sequence[str], asked: set[str]) -> list[str]:
    """The ``units`` sharing the most content words with the question, when some share
    more than others; else all of them."""
    scores = [len(_stems(u) & asked) for u in units]
    top = max(scores, default=0)
    if top == 0 or all(s == top for s in scores):
        return list(units)
    return [u for u, s in zip(units, scores, strict=True) if s == top]


_TIME = r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d{2}\b|\bnoon\b|\bmidnight\b"
_DAY = (
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow"
    r"|january|february|march|april|may|june|july|august|september|october|november"
    r"|december)\b|\b\d{4}-\d{2}-\d{2}\b"
)
_DURATION = r"\b\d+(?:\.\d+)?\s*(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?)\b"
# The kind of value a question asks for, and how a text writes one.
_KINDS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (re.compile(r"\bwhat time\b|\bat what time\b|\bwhat hour\b", re.I), re.compile(_TIME, re.I)),
    (re.compile(r"\b(?:which|what) (?:day|date)\b", re.I), re.compile(_DAY, re.I)),
    (re.compile(r"\bhow long\b", re.I), re.compile(_DURATION, re.I)),
    (re.compile(r"\bwhen\b", re.I), re.compile(f"{_TIME}|{_DAY}", re.I)),
)
# A phrase of a sentence: from a preposition to the next one.
_PREPOSITION = re.compile(r"\s+(?=(?:on|at|in|for|from|by|until|during|before|after)\s)", re.I)
_PLACE = re.compile(r"^(?:in|at)\s", re.I)


def _phrase(sentence: str, question: str) -> str | None:
    """``sentence`` cut to its head (the words before its first preposition) and the
    phrases of the kind the question asks for ("The team meeting is on Tuesday at 10
    am in room 4." -> "The team meeting is at 10 am." for "What time ..."), or
    ``None`` when the question asks for no kind, or no phrase or every one is of it."""
    body = sentence.strip().rstrip(".!?")
    head, *phrases = _PREPOSITION.split(body)
    if not phrases:
        return None
    kept: list[str] = []
    for asks, writes in _KINDS:
        if asks.search(question):
            kept = [p for p in phrases if writes.search(p)]
            break
    else:
        if re.search(r"\bwhere\b", question, re.I):
            timed = re.compile(f"{_TIME}|{_DAY}|{_DURATION}", re.I)
            kept = [p for p in phrases if _PLACE.match(p) and not timed.search(p)]
        else:
            # the phrases naming what the question names ("in room 4" for "What room")
            asked = _stems(question) - _stems(head)
            kept = [p for p in phrases if _stems(p) & asked]
    if not kept or len(kept) == len(phrases):
        return None
    return " ".join([head, *kept]) + "."


def relevant_text(question: str, text: str) -> str:
    """The part of ``text`` (a plain-text tool result) that ``question`` asks about
    (module docstring); ``text`` itself when the question asks for the whole, or no
    part is more relevant than the rest."""
    if _WHOLE.search(question.strip()) or not text.strip():
        return text
    asked = _stems(question)
    sentences = [
        s.strip() for line in text.splitlines() for s in _SENTENCE_END.split(line) if s.strip()
    ]
    kept = _best(sentences, asked)
    if len(kept) == 1:
        clauses = [c.strip() for c in _CLAUSE.findall(kept[0]) if c.strip()]
        # a list's lead-in ("Pancakes:") is every item's context, not the first's
        lead, colon, first = clauses[0].partition(":") if clauses else ("", "", "")
        items = [first.strip(), *clauses[1:]] if colon and first.strip() else clauses
        best = _best(items, asked)
        if len(best) == 1 and len(items) > 1:
            clause = best[0].rstrip(".!?")
            if colon and first.strip():
                clause = f"{lead.strip()}: {clause}"  # the lead-in stays with its item
            kept = [clause[0].upper() + clause[1:] + "."]
        kept = [_phrase(kept[0], question) or kept[0]]
    if len(kept) == len(sentences) and kept == sentences:
        return text
    return "\n".join(kept)


def shown_part(question: str, content: str) -> str:
    """The part of a tool result's ``content`` that ``question`` asks about: of a list,
    the item it names by position ("the last item": "3. Renew the passport"); of a plain
    text, :func:`relevant_text`; of a table, the rows the question names by a text
    value (:func:`named_rows`); anything else whole."""
    if not is_json(content):
        return item_text(question, content) or relevant_text(question, content)
    return named_rows(question, content) or content


def item_text(question: str, content: str) -> str | None:
    """The item of a listed text that ``question`` names by its position, as the text
    writes it: its line ("3. Renew the passport"), or the item with the list's lead-in
    ("Pancakes: 200 g flour." for the first ingredient); ``None`` when the question
    names no item of it."""
    found = asked_item(question, [content])
    if found is None:
        return None
    items, index = found
    lines = [m.group(0).strip() for m in _ITEM_LINE.finditer(content)]
    if len(lines) == len(items):
        return lines[index]
    lead = _LEAD_IN.search(content)
    at = content.lower().find(items[index])
    if lead is None or at == -1:
        return None
    item = content[at : at + len(items[index])]
    return f"{lead.group(1).strip()}: {item}."


# The words before a list's colon, from the start of their sentence.
_LEAD_IN = re.compile(r"(?:^|[.!?]\s+)([^.!?:\n]+):")


_CELL_WORD = re.compile(r"[a-z0-9]+")
# A line of a listed result ("1. Buy milk", "- Buy milk"), as core.grounding reads one.
_ITEM_LINE = re.compile(r"^[ \t]*(?:\d{1,2}[.)]|[-*\u2022])[ \t]+\S.*$", re.MULTILINE)


def named_rows(question: str, content: str) -> str | None:
    """A table result (``{"columns": [...], "rows": [[...], ...]}``) cut to the rows the
    question names by one of their text values ("Which city is Bo from?": Bo's row), as
    JSON; ``None`` when it is no such table or the question names none or all rows."""
    try:
        data = json.loads(content)
    except ValueError:
        return None
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not isinstance(data.get("columns"), list):
        return None
    asked = set(_CELL_WORD.findall(question.lower()))

    def names(cell: object) -> bool:
        words = _CELL_WORD.findall(cell.lower()) if isinstance(cell, str) else []
        return bool(words) and all(w in asked or f"{w}s" in asked for w in words)

    kept = [r for r in rows if isinstance(r, list) and any(names(c) for c in r)]
    if not kept or len(kept) == len(rows):
        return None
    return json.dumps({"columns": data["columns"], "rows": kept}, ensure_ascii=False)


def _focused(part: ToolResultPart, question: str) -> ToolResultPart:
    inner = unwrap_untrusted(part.content)
    content = part.content if inner is None else inner
    if part.is_error or is_json(content):
        return part
    narrowed = item_text(question, content) or relevant_text(question, content)
    if narrowed == content:
        return part
    shown = narrowed if inner is None else part.content.replace(inner, narrowed)
    return replace(part, content=shown)


def focused_request(request: ModelRequest) -> ModelRequest:
    """``request`` with each plain-text tool result since the last user message
    replaced by its part the question asks about (the item it names by position,
    :func:`item_text`, else :func:`relevant_text`)."""
    messages = list(request.messages)
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.role == "user":
            question = message.text
            break
    else:
        return request
    changed = False
    for j in range(i + 1, len(messages)):
        message = messages[j]
        if not message.tool_results_parts:
            continue
        parts = tuple(
            _focused(p, question) if isinstance(p, ToolResultPart) else p for p in message.parts
        )
        if parts != message.parts:
            messages[j] = Message(message.role, parts, message.provider_meta)
            changed = True
    return replace(request, messages=messages) if changed else request


__all__ = ["focused_request", "item_text", "named_rows", "relevant_text", "shown_part"]
