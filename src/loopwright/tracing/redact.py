"""Redaction of secrets in recorded payloads, traces and cassettes.

Two rules, applied to any JSON-like value (dicts, lists, strings):

* a mapping key that names a credential (``api_key``, ``authorization``, ``x-api-key``,
  ``x-goog-api-key``, ``password``, ``secret``, ``*token`` except token *counts* ...) has
  its value replaced by :data:`REDACTED`;
* inside any string, text shaped like a credential (``Bearer …``, ``sk-…``, ``AKIA…``,
  ``AIza…``, ``key=…`` query parameters) is replaced by :data:`REDACTED`.

Redaction runs when a trace or cassette is *written*, so a secret never reaches the disk;
the live objects the loop uses are never modified.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from loopwright.core.messages import JSONValue

REDACTED = "[REDACTED]"

_SECRET_NAMES = (
    r"(?:api[-_]?key|apikey|authorization|auth|password|passwd|secret|"
    r"access[-_]?key|secret[-_]?key|session[-_]?token|access[-_]?token|refresh[-_]?token|"
    r"id[-_]?token|token|bearer|cookie|set-cookie|x-api-key|x-goog-api-key|"
    r"x-amz-security-token|client[-_]?secret|private[-_]?key)"
)
_SECRET_KEY = re.compile(r"(?:^|[-_.])" + _SECRET_NAMES + "$", re.IGNORECASE)
# the same rule over JSON text: a string member whose key names a credential
_SECRET_MEMBER = re.compile(
    r'(?<=[-_."])(' + _SECRET_NAMES + r'"\s*:\s*)"(?:[^"\\]|\\.)+"', re.IGNORECASE
)
# substrings without which neither rule can match: most lines skip both regexes
_MEMBER_HINTS = ('key"', "auth", 'token"', "secret", "passw", "cookie", 'bearer"')
_TEXT_HINTS = (
    "Bearer",
    "Basic",
    "sk-",
    "AKIA",
    "AIza",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "key=",
)
_SECRET_TEXT = re.compile(
    r"(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_-]{30,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"
    r"|(?<=[?&]key=)[A-Za-z0-9_-]{12,}",
)


def is_secret_key(key: str) -> bool:
    """True when a mapping key names a credential (token *counts* such as
    ``input_tokens`` / ``max_tokens`` are not secrets)."""
    return bool(_SECRET_KEY.search(key))


def redact_text(text: str) -> str:
    """``text`` with credential-shaped substrings replaced."""
    if len(text) < 8:
        return text
    return _SECRET_TEXT.sub(REDACTED, text)


def redact_json(text: str) -> str:
    """Both rules applied to a JSON document's text (one regex pass each): what the JSONL
    writer uses, several times cheaper than walking the value. Replacements never touch
    quotes or backslashes, so the text stays valid JSON."""
    lower = text.lower()
    if any(hint in lower for hint in _MEMBER_HINTS):
        text = _SECRET_MEMBER.sub(r'\1"' + REDACTED + '"', text)
    if any(hint in text for hint in _TEXT_HINTS):
        text = _SECRET_TEXT.sub(REDACTED, text)
    return text


def redact(value: JSONValue) -> JSONValue:
    """A copy of ``value`` with secrets replaced (see the module docstring)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {
            k: (REDACTED if isinstance(k, str) and is_secret_key(k) and v else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value
