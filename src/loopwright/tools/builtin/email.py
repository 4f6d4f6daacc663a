"""``send_email``: append the message to a local outbox file (JSON lines) instead of
sending it.

The tool requires confirmation and is not idempotent. Each call carries an idempotency
key derived from its arguments (:func:`email_key`); the outbox write itself checks the
key under a file lock, so a retried or resumed call never writes the same email twice
(the second call reports the existing entry instead).

Exactly once across a crash: the spec declares ``unknown_outcome=ASK_TOOL`` and the
tool's outcome check is :meth:`Outbox.outcome`. When a run resumes after the process
died mid-send, the recorded outbox entry is the call's result if the key is there, and
:data:`~loopwright.core.tools.NOT_RUN` (so the send runs now) if it is not: the email
is neither duplicated nor lost.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import stat
import time
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from loopwright.core.emails import lookalike
from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.core.tools import NOT_RUN, Permission, ToolSpec, UnknownOutcomePolicy

_ADDRESS = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[^@\s,;<>]+$")

SPEC = ToolSpec(
    name="send_email",
    description="Send an email (written to a local outbox file, not really sent).",
    parameters={
        "type": "object",
        "properties": {
            "to": {
                "type": "string",
                "description": "recipient address",
                "examples": ["ana@example.com"],
                "maxLength": 254,
            },
            "subject": {"type": "string", "examples": ["Meeting moved"], "maxLength": 200},
            "body": {
                "type": "string",
                "examples": ["The meeting is now at 3 pm."],
                "maxLength": 5000,
            },
        },
        "required": ["to", "subject", "body"],
        "additionalProperties": False,
    },
    requires_confirmation=True,
    permission=Permission.WRITE,
    idempotent=False,
    timeout=10.0,
    unknown_outcome=UnknownOutcomePolicy.ASK_TOOL,
)


def normalize_address(to: str) -> str:
    """The form of an address the duplicate check compares: stripped and case-folded
    (``" Ana@Example.com"`` and ``"ana@example.com"`` are one recipient)."""
    return to.strip().casefold()


def email_key(arguments: Mapping[str, object]) -> str:
    """The idempotency key: a hash of the canonical JSON of the arguments, with the
    address normalised (:func:`normalize_address`)."""
    data = dict(arguments)
    if isinstance(data.get("to"), str):
        data["to"] = normalize_address(str(data["to"]))
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return "email-" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def check_arguments(arguments: Mapping[str, object]) -> str | None:
    """Business rules run before confirmation (and again when sending): one plain
    address in ``to``, one line in ``subject``. ``None`` when fine, else the problem."""
    to, subject = arguments.get("to"), arguments.get("subject")
    if isinstance(to, str):
        bad = _hidden(to)
        if bad:
            return (
                f"'to' contains invisible or control characters ({bad}); "
                "send one plain address like ana@example.com"
            )
        if not _ADDRESS.match(to.strip()):
            return f"'to' must be one email address like ana@example.com, got {to!r}"
        why = lookalike(to.strip())
        if why:  # an internationalized address is fine; a mix of lookalike scripts is not
            return (
                f"'to' may be a lookalike address: {why}; write the address in one script "
                "as the person gave it (ana@example.com, иван@пример.рф)"
            )
    if isinstance(subject, str) and ("\r" in subject or "\n" in subject):
        return "'subject' must be one line: remove the line breaks (CR/LF)"
    if isinstance(subject, str) and _hidden(subject):
        return f"'subject' contains invisible or control characters ({_hidden(subject)})"
    return None


def _hidden(text: str) -> str:
    """Names of control, format (bidi overrides, zero-width) and separator characters
    in ``text``: they can make an address or header read differently than it is."""
    found = sorted({f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in _HIDDEN})
    return ", ".join(found[:5])


_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_MAX_LINE = 64_000  # an outbox line is at most ~6 KB; longer is not ours


@dataclass(frozen=True, slots=True)
class Outbox:
    """A JSON-lines file of "sent" emails, deduplicated by idempotency key."""

    path: Path

    def send(self, to: str, subject: str, body: str, key: str | None = None) -> dict[str, object]:
        problem = check_arguments({"to": to, "subject": subject})
        if problem is not None:
            raise ToolError(problem, kind=ToolErrorKind.INVALID_ARGUMENTS)
        key = key or email_key({"to": to, "subject": subject, "body": body})
        entry = {
            "key": key,
            "to": to.strip(),
            "subject": subject,
            "body": body,
            "queued_at": time.time(),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._open("a+b") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                fh.seek(0)
                if any(_key_of(line) == key for line in _lines(fh)):
                    return {"status": "already_sent", "key": key, "outbox": str(self.path)}
                fh.seek(0, 2)
                line = json.dumps(entry, ensure_ascii=False) + "\n"
                fh.write(line.encode("utf-8", "surrogatepass"))
                fh.flush()
                os.fsync(fh.fileno())
            except OSError as exc:  # a full disk, a read-only file system...
                raise ToolError(
                    f"could not write the outbox {self.path}: {exc.strerror or exc}; "
                    "the email was not queued"
                ) from None
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return {
            "status": "queued",
            "key": key,
            "outbox": str(self.path),
            "note": "written to the local outbox; no email left this machine",
        }

    def _open(self, mode: str) -> BinaryIO:
        """The outbox opened in binary ``mode``; it must be a regular file (a device such
        as ``/dev/full`` or ``/dev/zero`` would read endless bytes)."""
        try:
            fh = cast(BinaryIO, self.path.open(mode))
        except OSError as exc:
            raise ToolError(f"cannot open the outbox {self.path}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            fh.close()
            raise ToolError(f"the outbox {self.path} is not a regular file")
        return fh

    def find(self, key: str) -> dict[str, object] | None:
        """The outbox entry with ``key`` (for resume-time outcome checks)."""
        if not self.path.exists():
            return None
        with self._open("rb") as fh:
            for line in _lines(fh):
                if _key_of(line) == key:
                    found: dict[str, object] = json.loads(line)
                    return found
        return None

    def outcome(self, key: str) -> object:
        """The outcome check for crash recovery: the result a completed send reported
        (``status: already_sent`` plus the recorded entry) when ``key`` is in the outbox,
        else :data:`NOT_RUN` (the write never happened, so it is safe to run now).

        The outbox line is written and flushed under the lock in one step, so "key
        present" and "email sent" cannot disagree."""
        entry = self.find(key)
        if entry is None:
            return NOT_RUN
        return {
            "status": "already_sent",
            "key": key,
            "to": entry.get("to"),
            "subject": entry.get("subject"),
            "outbox": str(self.path),
        }

    def entries(self) -> list[dict[str, object]]:
        """Every readable entry (lines that are not JSON objects are skipped)."""
        if not self.path.exists():
            return []
        with self._open("rb") as fh:
            out = []
            for line in _lines(fh):
                try:
                    data = json.loads(line)
                except ValueError:
                    continue
                if isinstance(data, dict):
                    out.append(data)
            return out


def _lines(fh: BinaryIO) -> Iterator[bytes]:
    """The lines of ``fh``, each read with a bounded ``readline`` (an over-long line is
    skipped to its end rather than held in memory)."""
    while True:
        line = fh.readline(_MAX_LINE)
        if not line:
            return
        if not line.endswith(b"\n") and len(line) >= _MAX_LINE:
            while (rest := fh.readline(_MAX_LINE)) and not rest.endswith(b"\n"):
                pass
            continue
        yield line


def _key_of(line: bytes) -> str | None:
    """The key of one outbox line; ``None`` for a line that is not ours (bad JSON, not
    UTF-8: one damaged line must not stop later sends)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    key = data.get("key") if isinstance(data, dict) else None
    return key if isinstance(key, str) else None
