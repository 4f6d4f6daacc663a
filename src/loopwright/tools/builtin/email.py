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
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

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


def email_key(arguments: Mapping[str, object]) -> str:
    """The idempotency key: a hash of the canonical JSON of the arguments."""
    canonical = json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False)
    return "email-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class Outbox:
    """A JSON-lines file of "sent" emails, deduplicated by idempotency key."""

    path: Path

    def send(self, to: str, subject: str, body: str, key: str | None = None) -> dict[str, object]:
        if not _ADDRESS.match(to.strip()):
            raise ToolError(
                f"'to' must be one email address like ana@example.com, got {to!r}",
                kind=ToolErrorKind.INVALID_ARGUMENTS,
            )
        key = key or email_key({"to": to, "subject": subject, "body": body})
        entry = {
            "key": key,
            "to": to.strip(),
            "subject": subject,
            "body": body,
            "queued_at": time.time(),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+", encoding="utf-8") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                fh.seek(0)
                for line in fh:
                    if _key_of(line) == key:
                        return {"status": "already_sent", "key": key, "outbox": str(self.path)}
                fh.seek(0, 2)
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
                fh.flush()
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        return {
            "status": "queued",
            "key": key,
            "outbox": str(self.path),
            "note": "written to the local outbox; no email left this machine",
        }

    def find(self, key: str) -> dict[str, object] | None:
        """The outbox entry with ``key`` (for resume-time outcome checks)."""
        if not self.path.exists():
            return None
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
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
        if not self.path.exists():
            return []
        with self.path.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]


def _key_of(line: str) -> str | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data.get("key") if isinstance(data, dict) else None
