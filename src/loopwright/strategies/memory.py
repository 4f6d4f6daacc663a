"""What strategies keep in a checkpoint store: Reflexion's lessons
(:class:`ReflectionMemory`) and plan-and-execute progress (:class:`PlanCheckpoints`).

Long-term memory of lessons (Reflexion's reflections):

Lessons are scoped by a *key* (a task family, a user, a repository ...): each key is one
stored session whose history holds the lessons as assistant messages, oldest first. So
they survive a restart and are shared by every process using the same store (SQLite,
Redis, PostgreSQL or memory: any :class:`~loopwright.store.CheckpointStore`). At most
``limit`` lessons are kept per key; an older one is dropped when a new one arrives.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Coroutine, Mapping

from loopwright.core.messages import JSONValue, Message
from loopwright.core.run import RunState, RunStop, new_session_id
from loopwright.store import CheckpointStore, SessionLocked, SessionNotFound
from loopwright.store.aio import AsyncStore
from loopwright.store.base import DEFAULT_LOCK_TTL
from loopwright.store.heartbeat import LockHeartbeat
from loopwright.store.state import lock_owner_id
from loopwright.strategies.runtime import StrategyResult

# a lesson's write holds its key's lock this long at most (if its process dies mid-write)
_LOCK_TTL = 10.0
# how long a writer waits for another one's write of the same key
_LOCK_WAIT = 15.0


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
        """Keep ``lesson`` for ``key``, dropping the oldest beyond ``limit``.

        Runs sharing a key (in any process) each load the lessons, append and save: the
        key's session lock makes that one step, so neither a save that meets another
        writer's append (``HistoryConflict``) nor a trim that would drop it can happen."""
        sid = self.session_id(key)
        owner = lock_owner_id()
        self._lock(sid, owner)
        try:
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
        finally:
            self.store.release_lock(sid, owner)

    def _lock(self, sid: str, owner: str) -> None:
        """Take the key's lock, waiting up to ``_LOCK_WAIT`` s for another writer (a
        writer holds it for one load and one save; its TTL frees it if that writer died)."""
        deadline = time.monotonic() + _LOCK_WAIT
        delay = 0.002
        while True:
            try:
                self.store.acquire_lock(sid, owner, ttl=_LOCK_TTL)
                return
            except SessionLocked:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


class PlanCheckpoints:
    """Plan-and-execute progress in a checkpoint store: pass it as
    ``PlanConfig(on_progress=...)``; after a crash or an escalation, in any process,
    ``PlanAndExecute.aresume(PlanCheckpoints(store, session_id).load())`` continues the
    run without running finished steps again.

    The progress is the metadata of one stored session (``session_id``, a fresh one when
    not given), next to ``metadata`` (kept with every save: what the command line stores
    to rebuild the agent); each save is a checkpoint, and :meth:`finish` records how the
    run ended (``stop`` stays unset while it runs, so a crashed run shows as unfinished).

    With ``lock=True`` the run holds the session's lock, as a durable agent run does: taken
    (or refreshed) with every save, released by :meth:`finish`, so a second process cannot
    continue the same plan at the same time (:class:`~loopwright.store.SessionLocked`); a
    lock left by a process that died on this host is taken over. The lock lives ``ttl``
    seconds from its latest refresh: run the strategy through :meth:`hold` so a
    heartbeat refreshes it while a step runs longer than that.
    """

    KEY = "plan_execute"

    def __init__(
        self,
        store: CheckpointStore,
        session_id: str | None = None,
        *,
        metadata: Mapping[str, JSONValue] | None = None,
        lock: bool = False,
        ttl: float = DEFAULT_LOCK_TTL,
    ) -> None:
        self.store = store
        self.session_id = session_id or new_session_id()
        self.metadata = dict(metadata or {})
        self.owner = lock_owner_id() if lock else None
        self.ttl = ttl
        self._last: Mapping[str, JSONValue] = {}

    def lock(self) -> None:
        """Take (or refresh) the session's lock; a no-op without ``lock=True``."""
        if self.owner is not None:
            self.store.acquire_lock(self.session_id, self.owner, self.ttl)

    async def hold(self, run: Coroutine[object, object, StrategyResult]) -> StrategyResult:
        """Await ``run`` (the strategy's ``arun`` / ``aresume`` with this object as its
        ``on_progress``) under the session's lock, then :meth:`finish` it with the run's
        stop. While ``run`` works, a :class:`~loopwright.store.heartbeat.LockHeartbeat`
        refreshes the lock every ``ttl / 3`` seconds, so a step longer than ``ttl`` keeps
        it. If ``run`` raises, the lock is released (the progress saved so far stays)."""
        if self.owner is None:
            outcome = await run
        else:
            outcome = await self._locked(run, self.owner)
        self.finish(outcome.stop, outcome.detail)
        return outcome

    async def _locked(
        self, run: Coroutine[object, object, StrategyResult], owner: str
    ) -> StrategyResult:
        aio = AsyncStore(self.store, workers=1)
        heartbeat = LockHeartbeat(aio, self.session_id, owner, self.ttl)
        try:
            await aio.acquire_lock(self.session_id, owner, self.ttl)
        except BaseException:
            run.close()  # never started
            aio.close()
            raise
        heartbeat.start()
        try:
            return await run
        except BaseException:
            await heartbeat.stop()
            await aio.release_lock(self.session_id, owner)
            raise
        finally:
            await heartbeat.stop()
            aio.close()

    def __call__(self, state: Mapping[str, JSONValue]) -> None:
        self._last = dict(state)
        self._save(None, "")

    def finish(self, stop: RunStop, detail: str = "") -> None:
        """Record the run's end: paused (``awaiting_confirmation``), finished or stopped
        by a limit, with the last progress saved -- and release the lock."""
        self._save(stop, detail)
        if self.owner is not None:
            self.store.release_lock(self.session_id, self.owner)

    def _save(self, stop: RunStop | None, detail: str) -> None:
        self.lock()
        metadata = {**self.metadata, self.KEY: dict(self._last)}
        self.store.save(
            RunState(session_id=self.session_id, stop=stop, detail=detail, metadata=metadata)
        )

    def load(self) -> Mapping[str, JSONValue]:
        """The latest progress saved (:class:`~loopwright.store.SessionNotFound` if none)."""
        saved = self.store.load(self.session_id).metadata.get(self.KEY)
        if not isinstance(saved, dict):
            raise SessionNotFound(self.session_id, "it holds no plan-and-execute progress")
        self._last = saved
        return saved
