"""The answer sampler's veto for the embedded model's grounded answers.

:mod:`loopwright.providers.local_answer` narrows what an answer may write with a
grammar (numbers from the context, a result value quoted, a sentence budget); some
rules depend on the words decoded so far, which a grammar cannot see. They live here:
the sampler calls :class:`AnswerVeto` with the text so far and a candidate token and
refuses the token when it returns ``True`` (``local_sampler``). Nothing here knows
what a tool does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loopwright.core.grounding import MIN_STEM, STOPWORDS, canonical_number
from loopwright.providers.local_answer import (
    KEY_WORD,
    MIN_FIELD_WORD,
    Grounding,
)

_EQUATION_END = re.compile(r"=\s*-?\d+(?:\.\d+)?(\.?)$")


def runs_past_equation(text: str, piece: str) -> bool:
    """Whether ``piece`` would go on after an equation's value (``= 64``) with anything
    but the sentence end or more of that number. A small model that has written
    "(3 + 5) * 8 = 64" runs on ("64 64", "= 125/8 = 8"); an equation's right side is
    where its sentence ends. Used as the answer sampler's veto."""
    end = _EQUATION_END.search(text)
    if end is None:
        return False
    head = piece[:1]
    if end.group(1):  # "= 64." ends the answer (or goes on as a decimal: "= 10.5")
        return not (head.isdigit() or head == '"' or piece == "")
    return not (head.isdigit() or head in (".", "!", '"', "°") or piece == "")


_NUMBER_COMMA_END = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*,\s*$")
_DIGITS_START = re.compile(r"\s*(\d+)")


def runs_past_formula(text: str, piece: str, formulas: tuple[str, ...]) -> bool:
    """Whether ``piece`` goes on with an operator or a number right after a formula
    the calls computed (``formulas``, quoted by the answer guide) and the parentheses
    closing it: the formula is what was computed ("((250 + 375) * 2) / 2 = 1250."
    added an operation no call made)."""
    head = piece.lstrip(" ")[:1]
    if not head or head not in "+-*/^%0123456789":
        return False
    tail = text.rstrip(" )")
    return any(tail.endswith(f.rstrip(" )")) for f in formulas)


def repeats_number(text: str, piece: str) -> bool:
    """Whether ``piece`` writes again the number just written before a comma: held to
    one allowed number ("How many customers live in Berlin?": 2), a small model that
    wanted another wrote "There are 2,2,2 customers"."""
    end = _NUMBER_COMMA_END.search(text)
    digits = _DIGITS_START.match(piece)
    return bool(end and digits and end.group(1).startswith(digits.group(1)))


_YES_FIRST = re.compile(r"\W*yes(?![a-z])", re.IGNORECASE)
_QUESTION_FIRST = re.compile(
    r"\W*(?:which|what|how|where|when|who|whom|whose|why)(?![a-z])", re.IGNORECASE
)
_ANSWER_KEY = '"answer":'
MAX_FIRST_WORD = 6


# A number and the word being written right after it: "72 deg".
_NUMBER_WORD_END = re.compile(r"(?<![\d.])(-?\d+(?:\.\d+)?) +([A-Za-z]+)$")
# A number, at most one unit after it, and the word being written: "62 pct wind".
_NUMBER_THEN_WORD = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:[%°]|[A-Za-z]+)?\s+([A-Za-z]+)$")


@dataclass(frozen=True, slots=True)
class AnswerVeto:
    """The answer sampler's veto (called with the text decoded so far and a candidate
    token's text; ``True`` refuses it):

    * :func:`runs_past_equation`, :func:`runs_past_formula` and :func:`repeats_number`;
    * no "Yes" as the answer's first word while the question has words no result
      states (``unstated``): a small model answers "Is it raining in Lima?" with "Yes,
      it is raining" whatever the result says (sunny). The same rule checks a
      finished answer (``strategies.embedded.grounded``); here it steers the
      decoding before the model commits;
    * with one row named (``subject``), no capitalized word inside a sentence that
      starts no word of the question or the results (``names``): "Bo from the city
      of Copenhagen" (Paris in the result);
    * no word right after a number read in a unit but that unit or its field's
      words ("72 degrees Fahrenheit" for ``humidity_pct: 72``);
    * no field named right after a number (and at most one unit word) that is not
      that field's value (``fields``, as :class:`FieldBinder` reads them): listing
      several fields, the model wrote "30 percent humidity, and 62 pct wind speed"
      for humidity 62 and wind 30. The binder keeps the number after a field's name;
      this keeps the name after a number. A text's words after a number count as its
      fields too ("3 minutes per side": not "2 minutes");
    * no question word first ("Which port is set in config: 8080"): the answer
      states, it does not restate the question;
    * a yes/no question's claim no result states (``claims``) only denied, and after
      the denial only words of the question and results (``known``) or
      :data:`COMMON_WORDS`;
    * no word of a row the question does not name (``others``), when it names some;
    * no "=" unless a call or the question holds a formula (``equations``): read
      from a file, "Bread: 3 eggs, 500 g flour = 3." equated a count to a weight;
    * no number made a percentage ("%", "percent") when neither the question nor a
      result speaks of percentages (``percent``): "The lamp is 40% of the price." for
      a price of 40."""

    unstated: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()
    claims: tuple[str, ...] = ()
    others: tuple[str, ...] = ()
    known: tuple[str, ...] = ()
    equations: bool = True
    subject: str = ""
    units: tuple[tuple[str, str], ...] = ()
    names: tuple[str, ...] = ()
    formulas: tuple[str, ...] = ()
    percent: bool = True

    def __call__(self, text: str, piece: str) -> bool:
        if runs_past_equation(text, piece) or repeats_number(text, piece):
            return True
        if self.formulas and runs_past_formula(text, piece, self.formulas):
            return True
        if not self.equations and "=" in piece:
            return True
        if not self.percent and _PERCENT_AFTER_NUMBER.search(text + piece.split('"', 1)[0]):
            return True
        if self.subject and self._off_subject(text, piece):
            return True
        at = text.rfind(_ANSWER_KEY)
        if at == -1:
            return False
        written = text[at + len(_ANSWER_KEY) :].lstrip(' "')
        first = self.unstated and len(written) <= MAX_FIRST_WORD
        if first and _YES_FIRST.match((written + piece).lstrip(' "')) is not None:
            return True
        opening = len(written) <= MAX_FIRST_WORD
        if opening and _QUESTION_FIRST.match((written + piece).lstrip(' "')) is not None:
            return True
        grown = written + piece.split('"', 1)[0]
        if (self.claims or self.others) and self._unsupported(grown, len(written)):
            return True
        if self.units and self._wrong_unit(grown):
            return True
        if self.names and self._invented_name(grown, len(written)):
            return True
        return bool(self.fields) and self._misnamed(grown)

    def _invented_name(self, grown: str, start: int) -> bool:
        """Whether the piece (``grown[start:]``) writes a capitalized word inside a
        sentence that starts no word of ``names`` (the question's and the results'):
        naming one row, a small model names a city no row holds ("Bo from the city of
        Copenhagen"; the result says Paris)."""
        for match in _CAPITAL_WORD.finditer(grown):
            if match.end() <= start:
                continue
            before = grown[: match.start()].rstrip(" \"'(")
            if not before or before[-1] in ".!?:":
                continue  # a sentence's first word
            word = match.group(0).lower()
            if not any(k.startswith(word) for k in self.names):
                return True
        return False

    def _wrong_unit(self, grown: str) -> bool:
        """Whether the word being written right after a number is not the unit that
        number is read in (``units``: ``"humidity_pct": 72`` is read in pct), when
        every field holding that number has a unit: "72 degrees Fahrenheit" for a
        humidity of 72. Its unit, a word of its field's key or a function word ("72
        and 10 kph") may follow."""
        match = _NUMBER_WORD_END.search(grown[-MAX_NAMED_TAIL:])
        if match is None:
            return False
        number, word = canonical_number(match.group(1)), match.group(2).lower()
        keys = {w for w, v in self.fields if canonical_number(v) == number}
        by_unit = dict(self.units)
        read_in = {by_unit.get(k) for k in keys if k not in by_unit.values()}
        if any(u is not None and len(u) > MAX_UNIT_CHARS for u in read_in):
            return False  # a noun, not a unit: "row_count": 4 is "4 customers"
        if not read_in or None in read_in:
            return False  # no field, or one without a unit, holds the number
        fitting = {u for u in read_in if u} | keys
        if any(f.startswith(word) or word.startswith(f) for f in fitting):
            return False
        return not any(c.startswith(word) for c in COMMON_WORDS)

    def _off_subject(self, text: str, piece: str) -> bool:
        """Whether ``piece`` starts the answer with anything but ``subject``: picking
        one row out of several by its name, the answer opens with that name ("Dana
        lives in Oslo"); a small model otherwise opens with the first row ("Ana is in
        Berlin") or loses the row ("The city is in the city of Dana ...")."""
        at = text.rfind(_ANSWER_KEY)
        if at == -1:
            return False
        written = text[at + len(_ANSWER_KEY) :].lstrip(' "')
        if len(written) >= len(self.subject):
            return False
        grown = (written + piece).lstrip(' "')
        return not (self.subject.startswith(grown) or grown.startswith(self.subject))

    def _unsupported(self, grown: str, start: int) -> bool:
        """Whether the piece (``grown[start:]``) writes a word of another row
        (``others``) or, not negated, a claim of a yes/no question (``claims``)."""
        # Words as a key's are split ("inBerlin" is "in", "Berlin"): a small model
        # glues a word it was kept from onto the previous one.
        for match in KEY_WORD.finditer(grown):
            if match.end() <= start:
                continue
            word = match.group(0).lower()
            if word in self.others or (word.endswith("s") and word[:-1] in self.others):
                return True
            before = grown[: match.start()]
            claimed = any(_stem(word, c) for c in self.claims)
            if claimed and not _NEGATED.search(before):
                return True
            if self.claims and not claimed and self._denied(before) and not self._known(word):
                return True
        return False

    def _denied(self, before: str) -> bool:
        """Whether the sentence being written has denied a claim ("It is not raining
        in Lima, it is"): what it says next is what the results say, in their words
        (a small model goes on "it is snowing" for a sunny result)."""
        sentence = _SENTENCE_SPLIT.split(before)[-1]
        for match in KEY_WORD.finditer(sentence):
            word = match.group(0).lower()
            if any(_stem(word, c) for c in self.claims) and _NEGATED.search(
                sentence[: match.start()]
            ):
                return True
        return False

    def _known(self, word: str) -> bool:
        """Whether ``word`` (maybe cut short) starts a word of the question, the
        results or :data:`COMMON_WORDS`."""
        return any(k.startswith(word) for k in (*self.known, *COMMON_WORDS))

    def _misnamed(self, grown: str) -> bool:
        match = _NUMBER_THEN_WORD.search(grown[-MAX_NAMED_TAIL:])
        if match is None or len(match.group(2)) < MIN_FIELD_WORD:
            return False
        word = match.group(2).lower()
        values = {v for w, v in self.fields if w.startswith(word) or word.startswith(w)}
        return bool(values) and canonical_number(match.group(1)) not in {
            canonical_number(v) for v in values
        }


# A number written as a percentage at the end of the text: "40%", "40 perc".
_PERCENT_AFTER_NUMBER = re.compile(r"\d\s*(?:%|perc(?:e(?:nt?)?)?)$", re.IGNORECASE)
MAX_NAMED_TAIL = 40
# A unit is an abbreviation (pct, kph, eur, mph, kg); a longer last key word is a noun.
MAX_UNIT_CHARS = 4
_CAPITAL_WORD = re.compile(r"(?<=[\s(\"'])[A-Z][A-Za-z]+")
_SENTENCE_SPLIT = re.compile(r"[.!?;]\s")
# Function words a sentence needs whatever it states (with ``STOPWORDS``).
COMMON_WORDS = (
    frozenset(
        [
            "a",
            "an",
            "as",
            "at",
            "be",
            "by",
            "in",
            "is",
            "it",
            "of",
            "on",
            "or",
            "so",
            "to",
            "s",
            "t",
        ]
    )
    | STOPWORDS
)
# A negation at most two words before the word being written: "it is not raining".
# An answer's "No," denies the question, not the words after it ("No, Chen lives in
# Paris" claims he does): "no" followed by punctuation negates nothing.
_NEGATED = re.compile(r"(?:\bnot|\bno(?!\s*[,.;:!])|\bnever|n't)\W+(?:\w+\W+){0,2}$", re.IGNORECASE)


def _stem(word: str, claim: str) -> bool:
    """Whether ``word`` (being written, so maybe cut short) is ``claim`` or shares its
    stem (``MIN_STEM`` letters: "rain", "rainy" for "raining")."""
    need = min(len(claim), MIN_STEM)
    return len(word) >= need and word[:need] == claim[:need]


def answer_veto(ground: Grounding) -> AnswerVeto:
    """The veto of an answer turn grounded in ``ground``."""
    fields = ground.fields + ground.pairs
    return AnswerVeto(
        ground.unstated,
        fields,
        ground.claims,
        ground.others,
        ground.known,
        ground.equations,
        ground.subject,
        ground.units,
        ground.names,
        ground.formulas,
        ground.percent,
    )


__all__ = [
    "AnswerVeto",
    "answer_veto",
    "repeats_number",
    "runs_past_equation",
    "runs_past_formula",
]
