"""Long-term memory of lessons (Reflexion's reflections), kept in a checkpoint store.

Lessons are scoped by a *key* (a task family, a user, a repository ...): each key is one
stored session whose history holds the lessons as assistant messages, oldest first. So
they survive a restart and are shared by every process using the same store (SQLite,
Redis, PostgreSQL or memory: any :class:`~loopwright.store.CheckpointStore`). At most
``limit`` lessons are kept per key; an older one is dropped when a new one arrives.
"""

from __future__ import annotations

import hashlib

from loopwright.core.messages import Message
from loopwright.core.run import RunState
from loopwright.store import CheckpointStore, SessionNotFound


class ReflectionMemory:
    """Lessons per key in ``store`` (module docstring)."""

    def __init__(self, store: CheckpointStore, *, limit: int = 5, namespace: str = "reflexion"):
        if limit < 1:
            raise ValueError(f"ReflectionMemory(limit=...) must be >= 1, got {limit}")
        self.store = store
        self.limit = limit
        self.namespace = namespace

    def session_id(self, key: str) -> str:
        """The stored session holding ``key``'s lessons (a digest: any key is safe)."""
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        return f"{self.namespace}-{digest}"

    def recall(self, key: str) -> list[str]:
        """The lessons kept for ``key``, oldest first ([] when there are none)."""
        try:
            state = self.store.load(self.session_id(key))
        except SessionNotFound:
            return []
        return [m.text for m in state.messages[-self.limit :]]

    def remember(self, key: str, lesson: str) -> None:
        """Keep ``lesson`` for ``key``, dropping the oldest beyond ``limit``."""
        sid = self.session_id(key)
        try:
            state = self.store.load(sid)
        except SessionNotFound:
            state = RunState(session_id=sid, metadata={"key": key})
        state.messages.append(Message.assistant(lesson))
        excess = len(state.messages) - self.limit
        if excess > 0:
            del state.messages[:excess]
            self.store.save(state, rewrite_from=0)
        else:
            self.store.save(state)
