"""Whether a claim agrees with a text about the same thing: opposite words (passed and
failed, open and closed), negation, and a yes/no question's answer.

A small model answered "Build failed." to a file saying "Build 512 passed.", and "Yes"
to "Did any tests fail?" over "0 tests failed.". Checking that an answer quotes a value
of the result does not see that: every word it used is in the file. Here a claim is
compared with the sentences of the text that share a topic word with it (content words
other than the opposite words themselves): "Build failed" with "Build 512 passed", not
with "0 tests failed". Generic: a list of common opposite words and the English
negations; nothing here knows a tool or a topic. Shared by the embedded model's answer
grammar (``providers.local_answer``: which word a yes/no answer starts with) and the
answer check of ``strategies.embedded`` (whether an answer contradicts the result).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from loopwright.core.grounding import STOPWORDS, is_json

# Each pair: the forms of a word and of its opposite.
_OPPOSITES: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split()), frozenset(b.split()))
    for a, b in (
        ("pass passed passes passing", "fail failed fails failing failure failures"),
        ("succeed succeeded succeeds success successful", "fail failed fails failure"),
        ("open opened opens", "closed closes shut"),
        ("enable enabled enables", "disable disabled disables"),
        ("true", "false"),
        ("active", "inactive"),
        ("online", "offline"),
        ("valid", "invalid"),
        ("available", "unavailable"),
        ("allowed allow allows permitted", "denied deny denies forbidden"),
        ("accepted accept accepts approved approve", "rejected reject rejects declined"),
        ("present", "absent"),
        ("included include includes", "excluded exclude excludes"),
        ("correct", "incorrect wrong"),
        ("complete completed finished done", "incomplete unfinished pending"),
        ("locked lock", "unlocked unlock"),
        ("visible shown", "hidden"),
        ("connected connect", "disconnected disconnect"),
        ("running started", "stopped halted"),
        ("won win wins", "lost lose loses"),
        ("paid", "unpaid"),
        ("increased increase increases rose", "decreased decrease decreases fell"),
    )
)
_POLAR = frozenset(w for pair in _OPPOSITES for side in pair for w in side)
# Words that negate the word after them (within three words), a zero count among them:
# "0 tests failed" says that no test failed.
_NEGATORS = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nothing",
        "without",
        "zero",
        "0",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "didn't",
        "doesn't",
        "don't",
        "hasn't",
        "haven't",
        "cannot",
        "can't",
        "won't",
    ]
)
_WORD = re.compile(r"[a-z0-9']+")
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
NEGATION_REACH = 3
STEM = 4
# Words of a question that name where to look, not what it claims ("on the list in
# todo.txt", "according to the file").
_CONTAINERS = frozenset(
    w[:STEM] for w in ["list", "file", "according", "txt", "document", "text", "check"]
)


def _sentences(text: str) -> list[list[str]]:
    return [_WORD.findall(s.lower()) for s in _SENTENCES.split(text) if s.strip()]


def _negated(words: list[str], at: int) -> bool:
    before = words[max(0, at - NEGATION_REACH) : at]
    return any(w in _NEGATORS or w.endswith("n't") for w in before)


def _topic(words: Iterable[str]) -> set[str]:
    """The content words of a sentence by their first :data:`STEM` letters, without the
    opposite words and negations."""
    return {
        w[:STEM]
        for w in words
        if len(w) >= 3 and w not in STOPWORDS | _POLAR | _NEGATORS and not w.isdigit()
    }


def _poles(words: list[str]) -> list[tuple[int, str, bool]]:
    """(pair index, side, negated) for each opposite word of a sentence: the side is
    "a" or "b" of the pair."""
    found = []
    for at, word in enumerate(words):
        for index, (a, b) in enumerate(_OPPOSITES):
            if word in a or word in b:
                found.append((index, "a" if word in a else "b", _negated(words, at)))
    return found


def _stance(claim: list[str], text: str) -> tuple[int, str] | None:
    """How ``text`` stands to one claimed sentence: (1, word) when a sentence of it on
    the same topic says the same of an opposite word the claim uses, (-1, word) when
    it says the opposite (or negates it), ``None`` when no such sentence says either."""
    topic = _topic(claim)
    claimed = _poles(claim)
    if not topic or not claimed:
        return None
    for sentence in _sentences(text):
        if not topic & _topic(sentence):
            continue
        for index, side, negated in claimed:
            for other, other_side, other_negated in _poles(sentence):
                if other != index:
                    continue
                agrees = (side == other_side) == (negated == other_negated)
                word = next(w for w in sentence if w in _OPPOSITES[index][0] | _OPPOSITES[index][1])
                return (1 if agrees else -1), word
    return None


def contradiction(claim: str, texts: Iterable[str]) -> str | None:
    """The word of ``texts`` that a sentence of ``claim`` contradicts ("passed" for
    "Build failed." against "Build 512 passed."), or ``None``."""
    sources = list(texts)
    # A leading "Yes," or "No," answers a question; it negates nothing after it ("No,
    # tests failed." claims that tests failed).
    claim = _ANSWER_WORD.sub("", claim)
    for sentence in _sentences(claim):
        for text in sources:
            stance = _stance(sentence, text)
            if stance is not None and stance[0] < 0:
                return stance[1]
    return None


_COMPARING = re.compile(
    r"\b(?:than|above|below|over|under|least|most|between|exceeds?|exceeding)\b", re.IGNORECASE
)
_FILE_NAME = re.compile(r"[\w/-]+\.[A-Za-z]\w*")
_ANSWER_WORD = re.compile(r"^\W*(?:yes|no)\s*[,.!]\s*", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]\d)")
# A yes/no question: a sentence ending in "?" that opens with an auxiliary verb (which
# claims nothing itself: "No, Chen does not live there" writes "does").
AUXILIARIES = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "am",
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "should",
        "has",
        "have",
        "had",
    ]
)
_YES_NO = re.compile(
    # a dot inside a name ("status.txt") does not end the question
    rf"(?:^|(?<=[.!?]\s))(?:{'|'.join(sorted(AUXILIARIES))})\b(?:[^.!?]|\.(?=\S))*\?",
    re.IGNORECASE,
)


def yes_no(question: str) -> str:
    """The yes/no questions of ``question`` ("Is it raining in Lima?"), joined; "" when
    it asks none."""
    return " ".join(m.group(0) for m in _YES_NO.finditer(question.strip()))


def verdict(question: str, texts: Iterable[str]) -> str:
    """ "Yes" or "No" when ``texts`` answer the yes/no ``question`` plainly, else "":
    a sentence on the question's topic says the same of an opposite word it uses
    ("Did the build pass?" over "Build 512 passed.": "Yes") or the opposite ("Did any
    tests fail?" over "0 tests failed.": "No"); or it writes another number where the
    question writes one ("Is port 9090 used?" over "port = 8080": "No")."""
    # a file name says where to look, not what is claimed ("in todo.txt")
    words = _WORD.findall(_FILE_NAME.sub(" ", question).lower())
    sources = list(texts)
    for text in sources:
        stance = _stance(words, text)
        if stance is not None:
            return "Yes" if stance[0] > 0 else "No"
    # a number the question compares with ("cheaper than 50") is no value to find
    asked = set() if _COMPARING.search(question) else set(_NUMBER.findall(question))
    topic = _topic(words) - _CONTAINERS
    if not topic:
        return ""
    lines = [line for text in sources for line in _SENTENCES.split(text)]
    # of a plain text only: a table's row holding the words or the number may still
    # say "no" (0 in stock), in a column the words do not name
    plain = {line for text in sources if not is_json(text) for line in _SENTENCES.split(text)}
    for line in lines:
        said = _WORD.findall(line.lower())
        if asked and line in plain and topic & _topic(said) and _NUMBER.search(line):
            return "Yes" if asked & set(_NUMBER.findall(line)) else "No"
        if not asked and line in plain and topic <= _topic(said) and not _NEGATORS & set(said):
            # every content word of the question in one sentence that negates nothing
            # ("Is renewing the passport on the list?" over "3. Renew the passport")
            return "Yes"
    return ""


__all__ = ["AUXILIARIES", "contradiction", "verdict", "yes_no"]
