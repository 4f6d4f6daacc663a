"""What the embedded model's tool arguments may be, and guards on them while they decode.

**Grounding** of the schema before it becomes the call grammar lives in
``local_ground`` (``grounded_arguments``). What each parameter's schema tells the guard
(identifiers, lists, shapes, names a value may not echo) is read by ``local_params``;
where a copied span of the request may end, and where in the partial JSON the decoder
is, by ``local_spans``.

**Guards**:

A 270M model fills a parameter it cannot read from the request with what the prompt
showed it: the worked example's value (``read_file(path="notes/todo.txt")`` for "What
does notes.txt say?"), or it runs one digit after another inside a string
(``LIMIT 1000000000``). :class:`ArgumentGuard` refuses, token by token, the moves
that start those failures (generic; it reads only the prompt's examples and the
conversation):

* **leaving the request for an example**: a string argument that so far copies the
  request's text may not turn into the start of a value the prompt's worked examples
  show (and the request does not hold): ``notes`` is fine (the request says
  ``notes.txt``), ``notes/`` (of the example ``notes/todo.txt``) is not, and the model
  goes on with ``.txt``;
* **cutting a copied word**: a string value copying the request may not end, or
  turn into other text, in the middle of one of the request's words (``"f"`` of
  "fahrenheit", ``netwlan`` of "netsh wlan");
* **copying a span badly** (``local_spans.span_ends``): a copied string may not go on past a
  clause or sentence break, stop inside a run of capitalized words or (for a
  parameter whose description joins a place to its region) before ", France", nor
  start inside a request word (``123456`` of "U123456"); a value may not begin with a
  number no text gives;
* **inventing long numbers**: a run of more than :data:`MAX_FREE_DIGITS` digits must
  be (the start of) a number the request or a tool result contains, and a string holds
  at most :data:`MAX_FREE_NUMBERS` numbers that none does;
* **inventing signs**: a string argument uses only the signs (characters other than
  letters, digits and the plain space) that the prompt, the tools or the request use:
  the model otherwise dodged a refused move with ``<i>201</i>``, a no-break space or
  a Unicode hyphen;
* **inventing words**: each word of a string argument (letters, digits and ``_``; words
  of digits only are left to the number rule, words of capital letters only are
  keywords such as ``WHERE``) must be a word of the prompt (the
  system text, the tools' descriptions and worked examples) or of the request and the
  results since it, matched without case. A word being written must be the start of
  one. ``sql_query`` cannot query a ``product_id`` column no text shows, a file name
  is spelled from the request, not made up.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loopwright.core.grounding import STOPWORDS
from loopwright.core.messages import Message
from loopwright.core.tools import ToolSpec
from loopwright.providers.local_dates import dates_in, times_in
from loopwright.providers.local_ground import request_context
from loopwright.providers.local_params import (
    FROM_CUE,
    TEXT_WORDS,
    TO_CUE,
    coded_parameters,
    direction,
    echoed_names,
    joined_parameters,
    known_words,
    listed_parameters,
    name_parts,
    shaped_parameters,
)
from loopwright.providers.local_spans import (
    MIN_COPY_CHARS,
    current_key,
    cuts_quote,
    open_array_items,
    open_string,
    span_ends,
    starts_inside_quote,
    stray_quote,
)

MAX_FREE_DIGITS = 3
# Numbers no text gives that one string value may hold: a formula's constant or two
# ("20 / 100 * 150"), not a made-up code that counts on ("100-101-102-...").
MAX_FREE_NUMBERS = 3
MIN_SENTENCE_WORDS = 4
_CALL_LINE = re.compile(r'^Assistant: (\{"tool": .*\})$', re.MULTILINE)
_DIGITS = re.compile(r"\d+$")
_NUMBER = re.compile(r"\d+")
_WORD = re.compile(r"[a-z0-9_]+", re.IGNORECASE)
_TAIL_WORD = re.compile(r"[a-z0-9_]+$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ArgumentGuard:
    """Called by the sampler with the text decoded so far and a candidate token's text;
    ``True`` refuses the candidate (see the module docstring)."""

    examples: tuple[str, ...]  # example values the request does not hold, lower-cased
    context: str  # the request and the results since it, lower-cased
    numbers: tuple[str, ...]  # digit runs of the request and the results
    words: tuple[str, ...] = ()  # the words a string argument may use, sorted
    source: str = ""  # ``context`` as written (capitals tell names and sentences)
    joined: tuple[str, ...] = ()  # parameters whose examples join names with a comma
    shaped: tuple[str, ...] = ()  # parameters the grammar holds to their examples' shape
    listed: tuple[str, ...] = ()  # parameters that are lists of free strings
    echoes: tuple[tuple[str, tuple[str, ...]], ...] = ()  # names a value may not be
    signs: str = ""  # the signs the prompt, the tools and the request use
    coded: tuple[tuple[str, tuple[str, ...]], ...] = ()  # identifier keys: the codes given
    iso_dates: tuple[str, ...] = ()  # the request's dates as YYYY-MM-DD
    asked: tuple[str, ...] = ()  # the words of the request and the results, sorted
    keywords: frozenset[str] = frozenset()  # words the examples write in capitals

    def __call__(self, text: str, piece: str) -> bool:
        inside, value = open_string(text)
        if inside:
            head = piece.split('"', 1)[0]
            grown = value + head
            so_far, longer = value.lstrip(" ").lower(), grown.lstrip(" ").lower()
            if self._before_own_name(current_key(text), so_far):
                # only the closing quote, unless the value is a name of the schema
                closing = not head and '"' in piece
                return not closing or self._echoes(text, longer)
            if self._leaves_for_example(so_far, longer):
                return True
            if head and self._copies_example(current_key(text), longer):
                return True
            if self._switches_case(value, head):
                return True
            if head and grown[:2].isspace():
                return True  # a value is written after one space: more is padding
            if self._span_refuses(text, so_far, head, closes='"' in piece):
                return True
            if head and self._starts_inside_word(longer):
                return True
            first = " " not in so_far.strip()  # the value's first word
            if head and first and starts_inside_quote(longer, self.context):
                return True
            if head and stray_quote(so_far, longer, self.context):
                return True
            if self._bad_item(text, so_far, longer, closes='"' in piece):
                return True
            if '"' in piece and self._echoes(text, longer):
                return True
            shaped = current_key(text) in self.shaped  # the grammar holds its form
            if not shaped and self._not_a_date(longer, closes='"' in piece):
                return True
            if self._not_a_code(current_key(text), longer, closes='"' in piece):
                return True
            if '"' in piece and not head and cuts_quote(so_far, self.context):
                return True
            if head and self._crosses(current_key(text), longer):
                return True
            if self.signs and any(_sign(ch) and ch not in self.signs for ch in head):
                return True
            if _SURROGATE.search(head) and not self._spelled(value + head):
                return True
            run = _SIGN_RUN.search(longer)
            if head and run is not None and run.group(0) not in self.context:
                return True  # "-----..." until the length bound
            if head and self._repeats(so_far, longer):
                return True
            raw = (value.lstrip(" "), grown.lstrip(" "))
            free = current_key(text) in self.shaped
            joined = current_key(text) in self.joined
            if not free and not joined and self._leaves_span(so_far, longer, head):
                return True
            if self.words and not free and self._invents_word(*raw, closes='"' in piece):
                return True
            if '"' in piece and self._cut_word(longer) and not self._abbreviates(raw[1]):
                return True
            if head and longer not in self.context and self._cut_word(so_far):
                return True
        else:
            grown = text + piece
        run = _DIGITS.search(grown)
        if run is None or not piece[-1:].isdigit():
            return False
        # A string value that begins with a number the request does not hold is made
        # up (``"date": "202"`` for "this weekend"); later numbers in a formula or a
        # query are the notation's own, free up to a few digits.
        leading = inside and not grown[: run.start()].strip()
        known = any(n.startswith(run.group(0)) for n in self.numbers)
        if inside and not known:
            made_up = [n for n in _NUMBER.findall(grown[: run.start()]) if n not in self.numbers]
            if len(made_up) >= MAX_FREE_NUMBERS:
                return True  # "K-100-100-101-102-..." until the length bound
        if len(run.group(0)) <= MAX_FREE_DIGITS and not leading:
            return False
        return not any(n.startswith(run.group(0)) for n in self.numbers)

    def _span_refuses(self, text: str, value: str, head: str, closes: bool) -> bool:
        """A string copying a span of the request ends where the request's text does
        (:func:`span_ends`): it may not go on past a clause or sentence break ("2020
        Addison Street, Berkeley, CA, USA" ends before ", and I can wait"), nor stop
        inside a run of capitalized words ("Gibson" of "Gibson Les Paul") or, for a
        parameter whose examples join names with a comma ("e.g. Seattle, WA"), before
        the comma-joined rest of a place ("Paris" of "Paris, France")."""
        if len(value) < MIN_COPY_CHARS or not self.source:
            return False
        if (
            value[-1] in ".!?"
            and len(value.split()) >= MIN_SENTENCE_WORDS
            and value in self.context
        ):
            return bool(head)  # the sentence has ended
        comma = current_key(text) in self.joined
        ends = span_ends(self.source, self.context, value, comma=comma)
        if ends is None:
            return False
        must_end, may_end = ends
        if head and must_end:
            # a sentence of several words keeps the mark that ends it ("Hello, how
            # are you?" to translate); a name does not ("New York City?")
            mark = head in ".!?" and len(value.split()) >= MIN_SENTENCE_WORDS
            texty = bool(TEXT_WORDS & set(name_parts(current_key(text) or "")))
            return not (mark and texty and value + head in self.context)
        return closes and not head and not may_end

    def _leaves_span(self, value: str, grown: str, head: str) -> bool:
        """A value copying several words of the request goes on with text the
        request does not have there (``docker -evaluate`` of "docker --version",
        ``show date %date% %date%``), or a copied word is joined to the next by a
        sign the request does not put there (``docker-installed`` for "the docker is
        installed", ``Gibson-Les-Paul``). It may stop instead. The request's own
        compounds ("docker --version", "gluten-free") are copied as written; a
        formula copying numbers ("(10 + 6) / 4") is not a copy of words."""
        if not head or grown in self.context or value not in self.context:
            return False
        if not re.search(r"[a-z]{2}", value):
            return False
        words = " " in value.strip()
        joins = value[-1:].isalpha() and head[:1] in _JOINERS and f"{value} " in self.context
        return words or joins

    def _crosses(self, key: str | None, value: str) -> bool:
        """A value for a "from" parameter (``from_currency``, ``source_language``,
        ``start_location``) copies what the request writes after "to" and not after
        "from", or the other way round: "Translate ... from English to French" gave
        ``"source_language": "French"``, "Convert 200 euros to US dollars" gave
        ``"from_currency": "US dollars"``."""
        side = direction(key) if key else None
        if side is None or len(value) < MIN_COPY_CHARS:
            return False
        own, other = (FROM_CUE, TO_CUE) if side == "from" else (TO_CUE, FROM_CUE)
        after = re.escape(value)
        crossed = re.search(rf"\b{other}\s+(?:the\s+)?{after}", self.context)
        return (
            crossed is not None
            and re.search(rf"\b{own}\s+(?:the\s+)?{after}", self.context) is None
        )

    def _repeats(self, value: str, grown: str) -> bool:
        """The candidate completes a third copy in a row of a piece of text the request
        does not repeat so: ``"K-100-100-100-..."`` and ``"%date% %date% %date%"``
        ran on to the length bound."""
        run = _REPEAT.search(grown)
        return run is not None and run.group(0) not in self.context and not _REPEAT.search(value)

    def _spelled(self, value: str) -> bool:
        """Whether the bytes of a character being written over several tokens (the
        sampler passes them as surrogate escapes) are bytes of a character the request
        writes: "Đường" may be spelled byte by byte, a no-break space no text has
        may not."""
        tail = _SURROGATE.search(value[-4:])
        if tail is None:
            return True
        written = tail.group(0).encode("utf-8", "surrogateescape")
        return written in self.source.encode("utf-8")

    def _echoes(self, text: str, value: str) -> bool:
        """The value is a name, not a value: its own parameter's name
        (``"project": "project"``, ``"start_location": "start location"``), its tool's
        name (``"identifier": "reschedule"``) or a value another parameter of the tool
        takes (``"location": "fahrenheit"`` beside ``unit``)."""
        key = current_key(text)
        item = value.strip(" ,.;:").replace("_", " ")
        return any(k == key and item in names for k, names in self.echoes)

    def _before_own_name(self, key: str | None, value: str) -> bool:
        """The value copies the request up to where the request names the parameter
        itself, as a noun after an article ("Johnny Depp| in the cast" for ``cast``):
        the value ends there rather than taking the name's words in. A verb of the
        same spelling goes on ("I cannot answer this question" for ``answer``), and so
        does a name holding the word ("Premier League" for ``league``)."""
        if key is None or len(value) < MIN_COPY_CHARS or not value[-1:].isalnum():
            return False
        names = [w for w in name_parts(key) if len(w) > 3]
        if not names:
            return False
        name = "|".join(names)
        noun = re.compile(
            rf"\s+(?:(?:in|on|of|as|for|by|at|with)\s+)?(?:the|a|an)\s+(?:{name})s?\b"
        )
        start = r"(?<![a-z0-9])" if value[0].isalnum() else ""
        for m in re.finditer(start + re.escape(value), self.context):
            if noun.match(self.context, m.end()):
                return True
        return False

    def _not_a_date(self, value: str, closes: bool) -> bool:
        """A date the model writes in ISO form (year, month, day) is one of the
        request's dates, zero-padded: ``"2021-01-1"`` for "January 1, 2021" (and it
        may not stop at ``"2021-01"``). Checked from the month on, for a year the
        request names; with no full date in the request the value is free."""
        match = _ISO_START.fullmatch(value)
        if not self.iso_dates or match is None:
            return False
        if not any(d.startswith(match.group(1)) for d in self.iso_dates):
            return False  # another year: not one of the request's dates
        if closes:
            return value not in self.iso_dates
        return not any(d.startswith(value) for d in self.iso_dates)

    def _not_a_code(self, key: str | None, value: str, closes: bool) -> bool:
        """An identifier parameter (``project_id``; a ``project`` described as "The
        unique identifier (UUID) of the project") takes one of the codes or quoted
        values the request gives, whole: ``"project": "project.name"`` for "project
        with UUID SUPERFANCY", ``"identifier": "reschedule event"`` for "Reschedule
        event 'Bob-123'". With no such code in the request the value is free."""
        codes = next((c for k, c in self.coded if k == key), ())
        if not codes:
            return False
        if closes:
            return value not in codes
        return not any(code.startswith(value) for code in codes)

    def _bad_item(self, text: str, value: str, grown: str, closes: bool) -> bool:
        """An item of a list of free strings copies the request's text and is not
        an earlier item again: ``["vegan", "gluten-free", "milk-free", ...]`` for "a
        vegan menu" (the later items came from the description's examples), a
        number list written as one string item, ``["getting", "getting"]``."""
        if not self.listed or current_key(text) not in self.listed:
            return False
        items = open_array_items(text)
        if items is None:
            return False
        if grown and grown not in self.context:
            return True
        if not closes:
            return False
        item = value.strip()
        return not item or item in items

    def _starts_inside_word(self, value: str) -> bool:
        """``value`` copies the request but starts inside a word there: every place
        the request has it, a letter or digit comes just before (``"123456"`` of
        "U123456"; a single digit too: ``"1"`` of it)."""
        short = len(value) < MIN_COPY_CHARS and not value.isdigit()
        if short or not value[:1].isalnum():
            return False
        starts = [m.start() for m in re.finditer(re.escape(value), self.context)]
        return bool(starts) and all(i > 0 and self.context[i - 1].isalnum() for i in starts)

    def _invents_word(self, value: str, grown: str, closes: bool) -> bool:
        """A word the candidate touches (the one it goes on with and those it adds) is
        not a known word, or, while still being written, not the start of one. A word
        in capitals is free: it is a keyword of the notation the value is written in
        (SQL's ``WHERE``) or an abbreviation, not a name the model makes up; a name
        in capitals (``ATM_ACCOUNT_PIN``) is not."""
        tail = _TAIL_WORD.search(value)
        start = tail.start() if tail is not None else len(value)
        for match in _WORD.finditer(grown, start):
            word = match.group(0).lower()
            if word.isdigit() or (word.isalpha() and match.group(0).isupper()):
                continue
            at = bisect_left(self.words, word)
            if match.end() == len(grown) and not closes:
                if not (at < len(self.words) and self.words[at].startswith(word)):
                    return True
            elif not (at < len(self.words) and self.words[at] == word):
                return True
        return False

    def _cut_word(self, value: str) -> bool:
        """``value`` copies the request but stops inside a word there: every place the
        request has it from the start of a word, a letter or digit follows ("f" of
        "fahrenheit", "net" of "netsh"). Such a value may neither end nor go on with
        anything but the rest of that text (the model wrote ``"location": "f"`` and ``"netwlan"``)."""
        if not value or value[-1].isspace():
            return False
        start = r"(?<![a-z0-9])" if value[0].isalnum() else ""
        ends = [m.end() for m in re.finditer(start + re.escape(value), self.context)]
        # after a sign, any text but a space goes on with the same token ("docker -" of
        # "docker --version", "microsoft.windows." of "microsoft.windows.camera:")
        goes_on = str.isalnum if value[-1].isalnum() else _joins_token
        return bool(ends) and all(
            end < len(self.context) and goes_on(self.context[end]) for end in ends
        )

    def _abbreviates(self, value: str) -> bool:
        """``value`` is an abbreviation in capitals the request does not write ("CA"
        for "California"): it ends where it is, not where the request's word does."""
        word = value.strip()
        return (
            len(word) >= MIN_COPY_CHARS
            and bool(_CAPITALS.fullmatch(word))
            and (word not in self.source)
        )

    def _copies_example(self, key: str | None, grown: str) -> bool:
        """The value is being copied from a worked example's value and reaches a
        content word of it the request does not use: ``"subject": "Meeting moved"``
        and ``"body": "The meeting is now at 3 pm."`` (``send_email``'s examples) for
        "Email ana@example.com that I will be late". An example shows the form of a
        value, not what this request asks; the word is refused as soon as no request
        word starts the way it does. Examples that are a form (no space, a sign in
        them: ``Asia/Tokyo``, ``ana@example.com``) and parameters the grammar holds to
        their examples' shape are left to the other rules, and so are the words an
        example writes in capitals (a notation's keywords: ``SELECT ... FROM``): a
        form is meant to be followed."""
        if key in self.shaped or not grown.strip():
            return False
        for example in self.examples:
            if not example.startswith(grown) or _form_like(example):
                continue
            for match in _WORD.finditer(grown):
                whole = _WORD.match(example, match.start())
                word = whole.group(0) if whole is not None else ""
                if len(word) < MIN_CONTENT_CHARS or word.isdigit() or word in STOPWORDS:
                    continue
                if word in self.keywords:
                    continue  # a notation's keyword (SQL's SELECT): the form, not words
                written = match.group(0)
                if self._asked(word, whole=True):
                    continue
                if written == word or (
                    len(written) >= MIN_CONTENT_CHARS and not self._asked(written, whole=False)
                ):
                    return True
        return False

    def _switches_case(self, value: str, head: str) -> bool:
        """The candidate goes on with a request word in capitals where the request
        writes it in lower case, inside the word: ``"interest rateS"`` for "interest
        rates", ``"assistS"`` (the lower-case ending was refused or ranked low, and
        capitals pass the word rule as keywords)."""
        if not head[:1].isupper() or not value[-1:].islower():
            return False
        tail = _TAIL_WORD.search(value)
        letters = _LETTERS.match(head)
        if tail is None or letters is None:
            return False
        joined = tail.group(0) + letters.group(0)
        return joined.lower() in self.context and joined not in self.source

    def _asked(self, word: str, *, whole: bool) -> bool:
        """Whether ``word`` is a word of the request and the results (``whole``), or
        the start of one."""
        at = bisect_left(self.asked, word)
        if at >= len(self.asked):
            return False
        return self.asked[at] == word if whole else self.asked[at].startswith(word)

    def _leaves_for_example(self, value: str, grown: str) -> bool:
        """The value so far is text of the request, and the candidate turns it into
        the start of an example value instead (``notes`` -> ``notes/``). An example
        used as a form (``SELECT ...``) is not refused: its start is not the
        request's text."""
        if len(value) < MIN_COPY_CHARS or value not in self.context or grown in self.context:
            return False
        return any(example.startswith(grown) for example in self.examples)


_CAPITALS = re.compile(r"[A-Z]+")
_LETTERS = re.compile(r"[A-Za-z]+")
_CAPITAL_WORD = re.compile(r"\b[A-Z][A-Z_]{2,}\b")
# A content word of an example value: at least this long, not a function word.
MIN_CONTENT_CHARS = 3


def _form_like(example: str) -> bool:
    """An example that shows a form rather than words: one token with a sign in it
    (``asia/tokyo``, ``ana@example.com``, ``notes/todo.txt``, ``19:30``)."""
    return " " not in example and any(_sign(ch) for ch in example)


def argument_guard(
    prefix: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()
) -> ArgumentGuard:
    """The guard for a call turn: ``prefix`` is the rendered prompt before the
    conversation (its worked examples), ``messages`` the conversation, ``tools`` the
    callable tools (their whole descriptions and parameter schemas, of which the
    prompt shows only a part, give words too)."""
    source = request_context(messages)
    context = source.lower()
    raw = _example_values(prefix)
    shown = {v.strip().lower() for v in raw}
    keywords = frozenset(w.lower() for v in raw for w in _CAPITAL_WORD.findall(v))
    examples = tuple(sorted(v for v in shown if len(v) >= MIN_COPY_CHARS and v not in context))
    # A date the request writes may be written in a parameter's format ("06-01-2023"
    # for "June01 2023"): its zero-padded parts count as the request's numbers.
    padded = [f"{p:02d}" for date in dates_in(source) for p in date]
    padded += [f"{p:02d}" for time in times_in(source) for p in time]  # "10pm" is "22:00"
    numbers = tuple(dict.fromkeys(_NUMBER.findall(context) + padded))
    described = " ".join(f"{t.description} {json.dumps(t.parameters)}" for t in tools)
    words = known_words(prefix.lower(), described.lower(), context)
    joined = joined_parameters(tools)
    return ArgumentGuard(
        examples,
        context,
        numbers,
        words,
        source,
        joined,
        shaped_parameters(tools),
        listed_parameters(tools),
        echoed_names(tools),
        "".join(sorted({ch for t in (prefix, described, source) for ch in t if _sign(ch)})),
        coded_parameters(tools, source),
        tuple(f"{y:04d}-{m:02d}-{d:02d}" for y, m, d in dates_in(source)),
        known_words(context),
        keywords,
    )


# The start of an ISO date from its month on: "2021-0", "2021-01-", "2021-01-1".
_ISO_START = re.compile(r"(\d{4}-)\d{1,2}(?:-\d{0,2})?")


def _sign(ch: str) -> bool:
    """A character that is neither a letter, a digit, a plain space nor part of one
    (a surrogate escape: see :meth:`ArgumentGuard._spelled`)."""
    return ch != " " and not ch.isalnum() and not _SURROGATE.match(ch)


# One sign three times in a row ("---", "%%%").
_SIGN_RUN = re.compile(r"([^\w\s])\1\1")
# A piece of two characters or more three times in a row ("-100-100-100").
_REPEAT = re.compile(r"(.{2,16}?)\1\1", re.DOTALL)


def _joins_token(ch: str) -> bool:
    """Whether ``ch``, right after a sign, goes on with the same token."""
    return not ch.isspace() and ch not in "\"'"


# Bytes of a character split over tokens, as ``bytes.decode(errors="surrogateescape")``
# writes them.
_SURROGATE = re.compile("[\udc80-\udcff]+")


def _example_values(prefix: str) -> list[str]:
    found: list[str] = []
    for match in _CALL_LINE.finditer(prefix):
        try:
            call = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(call, dict):
            found += _strings(call.get("arguments"))
    return found


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


_JOINERS = ("-", "_", "/")


__all__ = ["MAX_FREE_DIGITS", "ArgumentGuard", "argument_guard"]
