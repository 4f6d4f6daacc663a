"""In-memory checkpoint store: fast, per process, lost on exit (development and tests).

It stores the same encoded rows the persistent stores do, so the codec (and its
corruption errors) behave identically and a loaded state never aliases a live one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from loopwright.core.messages import ToolResultPart
from loopwright.core.run import RunState
from loopwright.store.base import DEFAULT_LOCK_TTL, claim_each, write_each, write_start
from loopwright.store.codec import (
    check_continues,
    decode_intent,
    decode_result,
    decode_state,
    encode_intent,
    encode_result,
)
from loopwright.store.codec import encoded as encoded_state
from loopwright.store.errors import (
    CheckpointNotFound,
    SessionLocked,
    SessionNotFound,
)
from loopwright.store.state import (
    CheckpointRef,
    Claim,
    ClaimOutcome,
    Encoded,
    IntentRecord,
    SessionInfo,
    Write,
    WriteOutcome,
    owner_is_dead,
)


@dataclass(slots=True)
class _Session:
    info: SessionInfo
    messages: list[str] = field(default_factory=list)
    checkpoints: dict[int, tuple[CheckpointRef, str]] = field(default_factory=dict)
    last: int = 0
    intents: dict[str, str] = field(default_factory=dict)


class MemoryStore:
    kind = "memory"
    blocking = False  # pure Python under a lock: AsyncStore calls it inline

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        self._ledger: dict[str, str] = {}
        self._locks: dict[str, tuple[str, float]] = {}
        self._mutex = threading.RLock()

    def save(
        self, state: RunState, *, rewrite_from: int | None = None, encoded: Encoded | None = None
    ) -> CheckpointRef:
        sid, n, now = state.session_id, len(state.messages), time.time()
        enc = encoded_state(state, encoded)
        with self._mutex:
            sess = self._sessions.get(sid)
            stored = len(sess.messages) if sess else 0
            start = write_start(sid, stored, n, rewrite_from)
            if start > 0 and sess is not None:
                check_continues(sid, start - 1, (sess.messages[start - 1],), enc.rows[start - 1])
            rows = enc.rows
            new_rows = [rows[i] for i in range(start, n)]
            if sess is None:
                sess = _Session(_info(state, 0, now))
                self._sessions[sid] = sess
            if start < stored:
                del sess.messages[start:]
                for k in [
                    k for k, (ref, _) in sess.checkpoints.items() if ref.message_count > start
                ]:
                    del sess.checkpoints[k]
            sess.messages.extend(new_rows)
            sess.last += 1
            ref = CheckpointRef(sid, sess.last, state.turn, state.status, state.stop, n, now)
            sess.checkpoints[sess.last] = (ref, enc.header)
            created = sess.info.created_at
            sess.info = _info(state, len(sess.checkpoints), now, created)
            return ref

    def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        with self._mutex:
            sess = self._sessions.get(session_id)
            if sess is None or not sess.checkpoints:
                raise SessionNotFound(session_id)
            number = max(sess.checkpoints) if checkpoint is None else checkpoint
            if number not in sess.checkpoints:
                raise CheckpointNotFound(session_id, number, sess.last)
            ref, header = sess.checkpoints[number]
            rows = sess.messages[: ref.message_count]
        return decode_state(header, rows, session_id=session_id, checkpoint=number)

    def history(self, session_id: str) -> list[CheckpointRef]:
        with self._mutex:
            sess = self._sessions.get(session_id)
            if sess is None or not sess.checkpoints:
                raise SessionNotFound(session_id)
            return [sess.checkpoints[k][0] for k in sorted(sess.checkpoints)]

    def sessions(
        self, *, limit: int | None = None, unfinished: bool = False, prefix: str = ""
    ) -> list[SessionInfo]:
        with self._mutex:
            infos = sorted(
                (
                    s.info
                    for s in self._sessions.values()
                    if s.checkpoints
                    and not (unfinished and s.info.stop is not None)
                    and s.info.session_id.startswith(prefix)
                ),
                key=lambda i: -i.updated_at,
            )
        return infos if limit is None else infos[:limit]

    def delete(self, session_id: str) -> bool:
        with self._mutex:
            self._locks.pop(session_id, None)
            return self._sessions.pop(session_id, None) is not None

    def acquire_lock(self, session_id: str, owner: str, ttl: float = DEFAULT_LOCK_TTL) -> None:
        now = time.time()
        with self._mutex:
            holder = self._locks.get(session_id)
            if holder and holder[0] != owner and holder[1] > now and not owner_is_dead(holder[0]):
                raise SessionLocked(session_id, holder[0], holder[1] - now)
            self._locks[session_id] = (owner, now + ttl)

    def release_lock(self, session_id: str, owner: str) -> None:
        with self._mutex:
            if self._locks.get(session_id, ("",))[0] == owner:
                del self._locks[session_id]

    def break_lock(self, session_id: str) -> bool:
        with self._mutex:
            return self._locks.pop(session_id, None) is not None

    def lock_owner(self, session_id: str) -> str | None:
        with self._mutex:
            holder = self._locks.get(session_id)
        return holder[0] if holder and holder[1] > time.time() else None

    def put_intent(self, intent: IntentRecord) -> None:
        row = encode_intent(intent)
        with self._mutex:
            sess = self._sessions.get(intent.session_id)
            if sess is None:
                sess = _Session(_placeholder_info(intent.session_id))
                self._sessions[intent.session_id] = sess
            sess.intents[intent.call_id] = row

    def intents(self, session_id: str) -> list[IntentRecord]:
        with self._mutex:
            sess = self._sessions.get(session_id)
            rows = list(sess.intents.values()) if sess else []
        records = [decode_intent(r, session_id) for r in rows]
        return sorted(records, key=lambda r: (r.created_at, r.call_id))

    def ledger_get(self, key: str) -> ToolResultPart | None:
        with self._mutex:
            row = self._ledger.get(key)
        return None if row is None else decode_result(row, f"ledger key {key!r}")

    def ledger_put(self, key: str, result: ToolResultPart) -> None:
        row = encode_result(result)
        with self._mutex:
            self._ledger.setdefault(key, row)

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        return write_each(self, writes)

    def claim(self, claims: Sequence[Claim]) -> list[ClaimOutcome]:
        return claim_each(self, claims)

    def close(self) -> None:
        """Nothing to release (the data lives as long as the object)."""


def _info(
    state: RunState, checkpoints: int, now: float, created: float | None = None
) -> SessionInfo:
    return SessionInfo(
        state.session_id,
        state.status,
        state.stop,
        state.turn,
        checkpoints,
        len(state.messages),
        state.created_at if created is None else created,
        now,
        state.parent,
    )


def _placeholder_info(session_id: str) -> SessionInfo:
    from loopwright.core.run import LoopState

    now = time.time()
    return SessionInfo(session_id, LoopState.OBSERVE, None, 0, 0, 0, now, now)
