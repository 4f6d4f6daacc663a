"""Email addresses: the JSON Schema ``email`` and ``idn-email`` formats, and lookalikes.

JSON Schema's ``email`` is an RFC 5321 mailbox: ASCII only. ``idn-email`` is RFC 6531's
internationalized mailbox: a local part and a domain in any script (``иван@пример.рф`` is
a real address). What neither standard forbids, and what a phishing address uses, is a
*mix* of scripts that look alike: ``pаypal@example.com`` with a Cyrillic ``а``.
:func:`mixed_script` finds those with the "highly restrictive" rule of Unicode's
security mechanisms (UTS #39): the letters of one part (the local part, each domain
label) come from one script, where Latin may join Han, Hiragana, Katakana, Hangul or
Bopomofo (Japanese, Chinese and Korean writing mixes those with Latin), and characters
common to all scripts (digits, punctuation) join anything. An ``idn-email`` with such
a part is refused, as is one not in Unicode's NFKC form (full-width ``ａ``, mathematical
``𝐚``: a lookalike of a plain letter).
"""

from __future__ import annotations

import re
import unicodedata

_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_ASCII_LOCAL = re.compile(
    rf'(?:{_ATEXT}+(?:\.{_ATEXT}+)*|"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*")'
)
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_IP_LITERAL = re.compile(r"\[(?:\d{1,3}(?:\.\d{1,3}){3}|IPv6:[0-9A-Fa-f:.]+)\]")
# RFC 6531: any non-ASCII character is atext too
_UATEXT = r"(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]|[^\x00-\x7f])"
_IDN_LOCAL = re.compile(rf"{_UATEXT}+(?:\.{_UATEXT}+)*")
_IDN_LABEL = re.compile(r"[^\W_](?:[\w-]{0,61}[^\W_])?")
# Scripts that UTS #39's "highly restrictive" level lets Latin mix with (one writing system)
_CJK = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO"})
_WIDTH = frozenset({"FULLWIDTH", "HALFWIDTH", "SMALL", "CAPITAL"})


def is_email(value: object) -> bool:
    """An RFC 5321 mailbox in ASCII (JSON Schema ``email``): a dot-atom or quoted local
    part of at most 64 characters, ``@``, a hostname or an address literal; at most 254
    characters. Non-strings pass (``type`` decides those)."""
    if not isinstance(value, str):
        return True
    local, at, domain = value.rpartition("@")
    if not at or len(value) > 254 or len(local) > 64 or not value.isascii():
        return False
    if _ASCII_LOCAL.fullmatch(local) is None:
        return False
    return _IP_LITERAL.fullmatch(domain) is not None or all(
        _LABEL.fullmatch(label) for label in domain.split(".")
    )


def is_idn_email(value: object) -> bool:
    """An RFC 6531 internationalized mailbox (JSON Schema ``idn-email``) that is no
    lookalike: NFKC form, and no part mixing scripts (:func:`mixed_script`)."""
    if not isinstance(value, str):
        return True
    if value.isascii():
        return is_email(value)
    return lookalike(value) is None and _idn_shape(value)


def _idn_shape(value: str) -> bool:
    local, at, domain = value.rpartition("@")
    if not at or len(value.encode("utf-8")) > 254 or len(local.encode("utf-8")) > 64:
        return False
    if _IDN_LOCAL.fullmatch(local) is None:
        return False
    return all(_IDN_LABEL.fullmatch(label) for label in domain.split("."))


def lookalike(address: str) -> str | None:
    """Why ``address`` may be a lookalike of another one (``None``: it is not): a part
    mixing scripts, or characters NFKC maps to plain ones. The reason names the part and
    the characters, so a person (or a model) sees what differs."""
    folded = unicodedata.normalize("NFKC", address)
    if folded != address:
        odd = sorted({c for c in address if unicodedata.normalize("NFKC", c) != c})
        return f"it has compatibility forms of plain characters ({_names(odd)})"
    local, _, domain = address.rpartition("@")
    for part in (local, *domain.split(".")):
        mixed = mixed_script(part)
        if mixed:
            return f"{part!r} mixes {mixed}"
    return None


def mixed_script(text: str) -> str:
    """``""`` when the letters of ``text`` come from one script (Latin with Han, Kana,
    Hangul or Bopomofo counts as one), else which scripts it mixes and the letters of
    the rarer ones: ``"LATIN and CYRILLIC letters (а: CYRILLIC SMALL LETTER A)"``."""
    by_script: dict[str, list[str]] = {}
    for c in text:
        script = _script(c)
        if script is not None:
            by_script.setdefault(script, []).append(c)
    scripts = set(by_script)
    if len(scripts) <= 1 or (scripts - _CJK) <= {"LATIN"}:
        return ""
    ordered = sorted(by_script, key=lambda s: -len(by_script[s]))
    odd = sorted({c for s in ordered[1:] for c in by_script[s]})
    return f"{' and '.join(ordered)} letters ({_names(odd)})"


def _script(c: str) -> str | None:
    """The script of a letter, from its Unicode name (``None`` for digits, marks,
    punctuation: characters common to every script)."""
    if not unicodedata.category(c).startswith("L"):
        return None
    words = unicodedata.name(c, "").split()
    while words and words[0] in _WIDTH:
        words = words[1:]
    return words[0] if words else None


def _names(chars: list[str]) -> str:
    return ", ".join(f"{c}: {unicodedata.name(c, f'U+{ord(c):04X}')}" for c in chars[:3])
