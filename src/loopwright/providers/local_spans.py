"""Spans of the request a string argument copies, and where a partial JSON call is.

Read by the embedded model's argument guard (``local_args``) token by token: where a
copy of the request may end (:func:`span_ends`), quotes it must not cut or leave
stray, and which key, string and list the partly decoded call is writing.
"""

from __future__ import annotations

import json
import re

_TAIL_WORD = re.compile(r"[a-z0-9_]+$", re.IGNORECASE)
MIN_COPY_CHARS = 2

_QUOTES = "'’"


def stray_quote(value: str, grown: str, context: str) -> bool:
    """The candidate writes a quotation mark that closes no quote the value opened and
    is no apostrophe inside a word of the request: the model copied a quoted span with
    its closing mark ("what is the weather like'" of "'what is the weather like'") or
    ran on from a described example ("CA' for California" of "such as 'CA' for
    California"). "McDonald's" is the request's own word; "= 'engineer'" closes the
    quote it opened."""
    for i in range(len(value), len(grown)):
        mark = grown[i]
        before = grown[:i]
        if mark not in _QUOTES or not before[-1:].isalnum() or before.count(mark) % 2:
            continue
        tail = _TAIL_WORD.search(before)
        word = tail.group(0) if tail is not None else ""
        if not re.search(re.escape(word + mark) + r"[^\W\d_]", context):
            return True
    return False


# A span the request quotes: the quote marks stand apart from words (not "I'd").
_QUOTED_SPAN = re.compile(r"(?<!\w)(['\"‘“`])([^'\"’”`]{1,200}?)['\"’”`](?!\w)")


def cuts_quote(value: str, context: str) -> bool:
    """``value`` would end as the start of a span the request quotes, and the request
    has it nowhere else: "https" of "the URL 'https://api.insights.com/groups'". A
    quoted span is one value; a copy that starts where it starts ends where it ends."""
    if len(value) < MIN_COPY_CHARS:
        return False
    spans = list(_QUOTED_SPAN.finditer(context))
    starts = {m.start(2) for m in spans if m.group(2).startswith(value) and m.group(2) != value}
    if not starts:
        return False
    return all(m.start() in starts for m in re.finditer(re.escape(value), context))


# What follows a span that ends a value: a clause ("…, USA, and I can wait"), or a
# sentence ("…shopping. Then"); a name of capitals goes on ("Gibson Les Paul").
_CLAUSE_BREAK = re.compile(
    r",?\s+(?:and|but|so|which|while|then|because|if|when)\s+(?:i|we|you|it|they|he|she|my|please)\b"
    r"|,\s+(?:and|or|but|so|which|while|then|because|if|when|i|we|please)\b"
    r"|[.!?](?:\s|$)"
)
# A capitalized word that starts the next clause, not more of a name ("Riga, Latvia,
# Can you tell me ...", "in New York City, I would like ...").
_CLAUSE_START = (
    r"(?!(?:I|I'm|Im|Can|Could|Would|Will|What|When|Where|Which|Who|Why|How|Please|Is|"
    r"Are|Do|Does|Did|Tell|Show|Give|Find|Get|And|But|So|Then|Also|It|We|You|My|The|"
    r"This|That|There|Let|Make|Set)\b)"
)
_NAME_GOES_ON = re.compile(r" " + _CLAUSE_START + r"[A-Z][\w&.'-]*")
_COMMA_NAME_GOES_ON = re.compile(r", ?" + _CLAUSE_START + r"[A-Z][\w&.'-]*")


def span_ends(
    source: str, context: str, value: str, *, comma: bool = False
) -> tuple[bool, bool] | None:
    """Where a value copying the request (``value``, lower-cased, found in
    ``context``, the lower-cased ``source``) may end: ``(must_end, may_end)``, or
    ``None`` when the value is not a span of the request that starts at a word. Every
    place the request has the span counts: it must end when each is followed by a
    clause or sentence break and the span has several words; it may not end when
    each is followed by more of a name
    (a capitalized word after a capitalized one; with ``comma``, a capitalized word
    after a comma: "Paris, France", "Berkeley, CA")."""
    if len(source) != len(context) or not value[-1:].isalnum():
        return None
    start = r"(?<![a-z0-9])" if value[0].isalnum() else ""
    ends = [m.end() for m in re.finditer(start + re.escape(value), context)]
    if not ends:
        return None
    # Only a span of several words: a formula or query reuses single words of the
    # request ("1024" of "Subtract 199 from 1024.") and goes on with its own text.
    several = " " in value.strip()
    must = several and all(_CLAUSE_BREAK.match(context, end) for end in ends)
    names = [_NAME_GOES_ON] + ([_COMMA_NAME_GOES_ON] if comma else [])
    goes_on = all(
        _capitalized_before(source, end) and any(p.match(source, end) for p in names)
        for end in ends
    )
    return must, not goes_on


_TAIL_LETTERS = re.compile(r"[^\W_]+$")


def _capitalized_before(source: str, end: int) -> bool:
    """Whether the word ending at ``end`` (any script: "Divinópolis") starts with a
    capital or is a number."""
    word = _TAIL_LETTERS.search(source[:end])
    return word is not None and (word.group(0)[0].isupper() or word.group(0)[0].isdigit())


def current_key(text: str) -> str | None:
    """The object key whose value ``text`` (partial JSON) is writing."""
    keys = re.findall(r'"((?:[^"\\]|\\.)*)"\s*:', text)
    return keys[-1] if keys else None


def open_array_items(text: str) -> list[str] | None:
    """When ``text`` (partial JSON) is writing an item of an array, the earlier items
    of that array that are strings (stripped, lower-cased); ``None`` otherwise."""
    stack: list[int] = []
    inside = escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif inside:
            escaped, inside = ch == "\\", ch != '"'
        elif ch == '"':
            inside = True
        elif ch in "[{":
            stack.append(i)
        elif ch in "]}" and stack:
            stack.pop()
    if not stack or text[stack[-1]] != "[":
        return None
    head = text[stack[-1] :]
    done = head[: head.rfind('"')].rstrip().rstrip(",") + "]"
    try:
        earlier = json.loads(done)
    except ValueError:
        return []
    return [v.strip().lower() for v in earlier if isinstance(v, str)]


def open_string(text: str) -> tuple[bool, str]:
    """Whether ``text`` (partial JSON) ends inside a string, and that string so far."""
    inside, escaped, start = False, False, 0
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            inside = not inside
            start = i + 1
    return inside, text[start:] if inside else ""


def starts_inside_quote(value: str, context: str) -> bool:
    """``value`` (lower case) copies the request only from inside a span the request
    quotes, past the span's start: "random" of "Remove the 'todo random' item", "i
    cannot answer this question." of "it replied with '**Logistic regression ...
    therefore I cannot answer this question.**'". A quoted span is one value; a copy
    of it starts where it starts (its markup, such as ``**``, left out)."""
    word = value.lstrip()
    if len(word) < MIN_COPY_CHARS or not word[:1].isalnum():
        return False
    spans = []
    for m in _QUOTED_SPAN.finditer(context):
        lead = re.search(r"[^\W_]", m.group(2))
        if lead is not None:
            spans.append((m.start(2) + lead.start(), m.end(2)))
    if not spans:
        return False
    starts = [m.start() for m in re.finditer(r"(?<![a-z0-9])" + re.escape(word), context)]
    return bool(starts) and all(any(a < i < b for a, b in spans) for i in starts)


__all__ = [
    "MIN_COPY_CHARS",
    "current_key",
    "cuts_quote",
    "open_array_items",
    "open_string",
    "span_ends",
    "starts_inside_quote",
    "stray_quote",
]
