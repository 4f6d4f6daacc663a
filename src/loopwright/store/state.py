"""The small records stores keep next to a session's :class:`~loopwright.core.run.RunState`
checkpoints: checkpoint references, session rows, intent records, lock owners."""

from __future__ import annotations

import enum
import functools
import os
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from loopwright.core.messages import JSONValue, ToolResultPart
from loopwright.core.run import LoopState, RunState, RunStop

SCHEMA_VERSION = 2
"""Version of the checkpoint header layout written by this loopwright."""


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    """Where one checkpoint sits in a session's history (checkpoints count from 1)."""

    session_id: str
    checkpoint: int
    turn: int
    status: LoopState
    stop: RunStop | None
    message_count: int
    created_at: float


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One row of ``store.sessions()``."""

    session_id: str
    status: LoopState
    stop: RunStop | None
    turn: int
    checkpoints: int
    message_count: int
    created_at: float
    updated_at: float
    parent: str | None = None
    problem: str = ""  # why the row could not be read (it is listed, not fatal)

    @classmethod
    def unreadable(cls, session_id: str, problem: str) -> SessionInfo:
        """A row that does not decode: listed with its problem so one bad row never
        hides the other sessions."""
        return cls(session_id, LoopState.ERROR, None, 0, 0, 0, 0.0, 0.0, problem=problem)

    @property
    def display_status(self) -> str:
        """``awaiting_confirmation`` for paused sessions waiting for a human, else the state
        (``unreadable`` for a row that does not decode)."""
        if self.problem:
            return "unreadable"
        if self.stop is RunStop.AWAITING_CONFIRMATION:
            return "awaiting_confirmation"
        if self.status is LoopState.DONE and self.stop is not None:
            return "done" if self.stop is RunStop.FINAL_ANSWER else f"stopped:{self.stop.value}"
        return self.status.value


class IntentStatus(enum.StrEnum):
    STARTED = "started"  # written before the tool ran; no result yet
    DONE = "done"  # the result is recorded
    DEFERRED = "deferred"  # the tool did not run (awaiting a confirmation decision)


@dataclass(frozen=True, slots=True)
class IntentRecord:
    """Crash-safety record around one non-idempotent tool call.

    Written with ``status=started`` before the tool executes and completed with its result
    after. A ``started`` record found on resume means the outcome is unknown.
    """

    session_id: str
    call_id: str
    tool: str
    idempotency_key: str | None
    arguments: Mapping[str, JSONValue]
    status: IntentStatus = IntentStatus.STARTED
    result: ToolResultPart | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True)
class Encoded:
    """A checkpoint as a store writes it, encoded by its writer ahead of the store call
    (``store.codec.StateEncoder``): the header, and ``rows[i]``, the row of message ``i``
    of the state (at least as many rows as messages; the rows below the state's message
    count never change)."""

    header: str
    rows: Sequence[str]


@dataclass(frozen=True, slots=True)
class Write:
    """One caller's part of a group commit (``CheckpointStore.write``): a checkpoint of
    ``state`` (``None``: none), then ``intents``; and, with ``release`` (the owner), the
    session's lock released whether or not the rest succeeded. ``state`` must not change
    until the write returns (pass a :meth:`RunState.snapshot` of a live state)."""

    state: RunState | None = None
    rewrite_from: int | None = None
    intents: tuple[IntentRecord, ...] = ()
    release: tuple[str, str] | None = None
    """``(session_id, owner)`` of the lock to release."""
    encoded: Encoded | None = None
    """``state`` already encoded (``None``: the store encodes it)."""


WriteOutcome = CheckpointRef | None | Exception
"""What one :class:`Write` of a batch came to: the checkpoint's reference (``None``
without a state), or the error that made it fail."""


@dataclass(frozen=True, slots=True)
class Claim:
    """What a run does before it starts (``CheckpointStore.claim``): take the session's
    lock for ``owner`` for ``ttl`` seconds (breaking a held one first with
    ``break_first``), then load the session's latest checkpoint."""

    session_id: str
    owner: str
    ttl: float
    break_first: bool = False


ClaimOutcome = RunState | None | Exception
"""What one :class:`Claim` came to: the loaded state, ``None`` (the lock is held and the
session is not stored yet), or the error (``SessionLocked`` ...); after an error the lock
is not held."""


def lock_owner_id() -> str:
    """``host:pid:nonce``: who holds a session lock (host and pid help break stale locks)."""
    return f"{_hostname()}:{os.getpid()}:{os.urandom(4).hex()}"


@functools.cache
def _hostname() -> str:
    # once per process: every run takes an owner id, and the lookup is a system call
    return socket.gethostname()


def owner_is_dead(owner: str) -> bool:
    """True when ``owner`` names a process on this host that no longer exists."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != _hostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    # A SIGKILLed child not yet reaped by its parent still answers kill(pid, 0).
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False
