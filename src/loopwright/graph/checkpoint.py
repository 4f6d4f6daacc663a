"""Graph checkpoints on loopwright's stores -- the ONLY module of the graph that talks
to a store, through the stores' public API (``save``, ``load``, ``history`` and the
``AsyncStore`` adapter).

Each superstep is one store checkpoint of the session named by the thread id; the
graph's record lives in the checkpoint's ``metadata["graph"]``:

* a **snapshot** holds every state value; a **delta** holds only what the superstep
  changed: the writes of keys whose reducer is known to be deterministic
  (``operator.add``, ``add_messages``) or the new value of any other changed key. A
  delta's cost is the size of the superstep's writes, not of the state, so a
  checkpoint costs the same at step 200 as at step 10. A snapshot is taken when the
  deltas since the last one outweigh it (or after 256 of them), which keeps loading
  bounded.
* a **writes** record keeps what the tasks of an unfinished superstep produced (the
  updates of tasks that succeeded, errors, interrupts and resume answers) next to the
  checkpoint it belongs to, so ``get_state`` can show them and a resume re-runs only
  the tasks that did not finish.

The checkpoint number the store assigns is the graph's ``checkpoint_id``. Runs (async
code) save through :class:`~loopwright.store.AsyncStore` and load on a worker thread, so
a blocking store never stalls the event loop; ``get_state`` and friends are synchronous.
"""

from __future__ import annotations

import asyncio
import json
import operator
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loopwright.core.run import LoopState, RunState
from loopwright.graph.codec import decode, encode
from loopwright.graph.messages import add_messages
from loopwright.graph.types import MISSING, GraphError, Interrupt, Overwrite, Send
from loopwright.store import AsyncStore, CheckpointStore, SessionNotFound

RECORD_VERSION = 1
MAX_CHAIN = 256
_CACHE_THREADS = 256
_REPLAYABLE: tuple[Callable[..., Any], ...] = (operator.add, add_messages)
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass(slots=True)
class PendingResult:
    """What one task of an unfinished superstep left behind."""

    writes: list[tuple[str, Any]] | None = None
    """The task's state writes when it finished (``None``: it must run again)."""
    gotos: list[str | Send] = field(default_factory=list)
    error: str | None = None
    resume: list[Any] = field(default_factory=list)
    interrupts: list[Interrupt] = field(default_factory=list)


@dataclass(slots=True)
class Saved:
    """One loaded checkpoint, as the engine uses it."""

    number: int
    step: int
    source: str
    values: dict[str, Any]
    next: list[str | Send]
    """Tasks of the next superstep: a node name (an edge) or a Send."""
    barriers: dict[str, list[str]]
    parent: int | None
    created_at: float
    results: dict[str, PendingResult] = field(default_factory=dict)
    """Task id -> what it left, for the superstep ``next`` describes."""
    inputs: list[tuple[str, Any]] | None = None
    """An ``input`` checkpoint's input writes: a run resumed from it applies them
    (``None`` for other checkpoints, and input checkpoints stored without them)."""
    # delta bookkeeping
    base: int | None = None
    chain: int = 0
    since: int = 0
    snap: int = 0


@dataclass(frozen=True, slots=True)
class Change:
    """How one key changed in a superstep: its ``writes`` when the reducer can replay
    them, else its new ``value``."""

    writes: tuple[Any, ...] | None = None
    value: Any = MISSING


class GraphSaver:
    """Saves and loads one compiled graph's checkpoints in a loopwright store."""

    def __init__(self, store: CheckpointStore, reducers: Mapping[str, Callable[..., Any]]):
        self.store = store
        # async runs save through the store's one async face (worker threads for a
        # blocking backend, inline for the memory store)
        self.aio = AsyncStore(store)
        self._reducers = reducers
        # thread -> (number of its newest store checkpoint, the graph checkpoint it shows)
        self._cache: OrderedDict[str, tuple[int, Saved]] = OrderedDict()
        self._lock = threading.Lock()  # one compiled graph may run in several threads

    def replayable(self, key: str) -> bool:
        return self._reducers.get(key) in _REPLAYABLE

    # ------------------------------------------------------------------ read
    def latest(self, thread: str) -> Saved | None:
        try:
            refs = self.store.history(thread)
        except SessionNotFound:
            return None
        if not refs:
            return None
        return self.at(thread, refs[-1].checkpoint)

    def at(self, thread: str, number: int) -> Saved:
        hit = self._cache.get(thread)
        if hit is not None and number in (hit[0], hit[1].number):
            return hit[1]
        record = self._record(thread, number)
        if record.get("kind") == "writes":
            saved = self._checkpoint(thread, int(record["of"]))
            saved.results = _results(record)
            return saved
        return self._checkpoint(thread, number)

    def history(self, thread: str) -> list[Saved]:
        """Every checkpoint of the thread, newest first (with its unfinished results).

        Records are read once each and rebuilt oldest first, each delta on top of its
        already rebuilt parent."""
        try:
            refs = self.store.history(thread)
        except SessionNotFound:
            return []
        out: dict[int, Saved] = {}
        for ref in refs:
            record = self._record(thread, ref.checkpoint)
            if record.get("kind") == "writes":
                of = int(record["of"])
                if of in out:
                    out[of].results = _results(record)
                continue
            parent = record.get("parent")
            base = (
                out.get(int(parent))
                if record.get("base") is not None and parent is not None
                else None
            )
            out[ref.checkpoint] = self._checkpoint(
                thread, ref.checkpoint, record, None if base is None else base.values
            )
        return sorted(out.values(), key=lambda s: s.number, reverse=True)

    def _record(self, thread: str, number: int) -> dict[str, Any]:
        state = self.store.load(thread, number)
        record = state.metadata.get("graph")
        if not isinstance(record, dict):
            raise SessionNotFound(
                f"session {thread!r} checkpoint {number} is not a graph checkpoint"
            )
        return record

    def _checkpoint(
        self,
        thread: str,
        number: int,
        record: dict[str, Any] | None = None,
        parent_values: Mapping[str, Any] | None = None,
    ) -> Saved:
        record = record or self._record(thread, number)
        if record.get("base") is None:
            values = {k: decode(v) for k, v in record["values"].items()}
        else:
            if parent_values is None:
                parent_values = self._values_at(thread, int(record["parent"]))
            values = dict(parent_values)
            for key, change in record["delta"].items():
                values[key] = self._replay(thread, key, values.get(key, MISSING), change)
        saved = Saved(
            number=number,
            step=int(record["step"]),
            source=str(record["source"]),
            values=values,
            next=[decode(t) for t in record["next"]],
            barriers={k: list(v) for k, v in record.get("barriers", {}).items()},
            parent=record.get("parent"),
            created_at=float(record.get("created", 0.0)),
            base=record.get("base"),
            chain=int(record.get("chain", 0)),
            since=int(record.get("since", 0)),
            snap=int(record.get("snap", 0)),
        )
        if "input" in record:
            saved.inputs = [(k, decode(v)) for k, v in record["input"]]
        return saved

    def _values_at(self, thread: str, number: int) -> dict[str, Any]:
        # walk back to the snapshot iteratively (chains are long), then replay forward
        records: list[dict[str, Any]] = []
        cursor: int | None = number
        while cursor is not None:
            hit = self._cache.get(thread)
            if hit is not None and hit[1].number == cursor:
                values = dict(hit[1].values)
                break
            record = self._record(thread, cursor)
            if record.get("kind") == "writes":
                cursor = int(record["of"])
                continue
            if record.get("base") is None:
                values = {k: decode(v) for k, v in record["values"].items()}
                break
            records.append(record)
            cursor = record.get("parent")
        else:  # pragma: no cover - a delta always has a parent
            values = {}
        for record in reversed(records):
            for key, change in record["delta"].items():
                values[key] = self._replay(thread, key, values.get(key, MISSING), change)
        return values

    def _replay(self, thread: str, key: str, current: Any, change: list[Any]) -> Any:
        if change[0] == "s":
            return decode(change[1])
        reducer = self._reducers.get(key)
        if reducer is None:
            # the graph changed since: the stored writes need the reducer that merged them
            raise GraphError(
                f"thread {thread!r} stores writes of state key {key!r} to be merged by a "
                "reducer (operator.add or add_messages) this graph no longer gives that key; "
                f"declare it again (Annotated[list, operator.add]) to read this thread, or "
                "use a new thread_id"
            )
        for write in change[1]:
            value = decode(write)
            current = value if current is MISSING else reducer(current, value)
        return current

    # ------------------------------------------------------------------ write
    def put(
        self,
        thread: str,
        parent: Saved | None,
        new: Saved,
        changes: Mapping[str, Change] | None,
    ) -> Saved:
        """Store ``new`` (a checkpoint following ``parent``) and return it numbered.

        ``changes`` describes how ``new.values`` differs from ``parent.values``; without
        it (or without a parent) a snapshot is written.
        """
        state = self.checkpoint_state(thread, parent, new, changes)
        return self._stored(thread, new, self.store.save(state).checkpoint)

    async def aput(
        self,
        thread: str,
        parent: Saved | None,
        new: Saved,
        changes: Mapping[str, Change] | None,
    ) -> Saved:
        """:meth:`put` from async code: the store call runs off the event loop."""
        return await self.awrite(thread, new, self.checkpoint_state(thread, parent, new, changes))

    async def awrite(self, thread: str, new: Saved, state: RunState) -> Saved:
        """Store the row :meth:`checkpoint_state` made for ``new``; returns ``new`` numbered."""
        return self._stored(thread, new, (await self.aio.save(state)).checkpoint)

    def _stored(self, thread: str, new: Saved, number: int) -> Saved:
        new.number = number
        self._remember(thread, number, new)
        return new

    def checkpoint_state(
        self,
        thread: str,
        parent: Saved | None,
        new: Saved,
        changes: Mapping[str, Change] | None,
    ) -> RunState:
        """The store row of checkpoint ``new``: a delta on ``parent`` or a snapshot (sets
        ``new``'s delta bookkeeping and parent)."""
        record: dict[str, Any] = {
            "v": RECORD_VERSION,
            "kind": "checkpoint",
            "step": new.step,
            "source": new.source,
            "parent": parent.number if parent is not None else None,
            "next": [encode(t, "a pending Send") for t in new.next],
            "barriers": new.barriers,
            "created": new.created_at,
        }
        if new.inputs is not None:
            record["input"] = [[k, encode(v, f"input key {k!r}")] for k, v in new.inputs]
        new.parent = record["parent"]
        delta = None
        if parent is not None and changes is not None and parent.chain < MAX_CHAIN:
            delta = {k: self._change(k, c) for k, c in changes.items()}
            size = len(_dumps(delta))
            if parent.since + size <= max(parent.snap, 1024):
                base = parent.base if parent.base is not None else parent.number
                record.update(base=base, delta=delta, chain=parent.chain + 1)
                record.update(since=parent.since + size, snap=parent.snap)
                new.base, new.chain, new.since, new.snap = (
                    base,
                    parent.chain + 1,
                    parent.since + size,
                    parent.snap,
                )
            else:
                delta = None
        if delta is None:
            values = {k: encode(v, f"state key {k!r}") for k, v in new.values.items()}
            size = len(_dumps(values))
            record.update(values=values, base=None, chain=0, since=0, snap=size)
            new.base, new.chain, new.since, new.snap = None, 0, 0, size
        status = LoopState.OBSERVE if new.next else LoopState.DONE
        return RunState(
            session_id=thread, status=status, turn=max(new.step, 0), metadata={"graph": record}
        )

    def _change(self, key: str, change: Change) -> list[Any]:
        where = f"state key {key!r}"
        writes = change.writes
        if (
            writes is not None
            and self.replayable(key)
            and not any(isinstance(w, Overwrite) for w in writes)
        ):
            return ["w", [encode(w, where) for w in writes]]
        return ["s", encode(change.value, where)]

    def put_results(self, thread: str, saved: Saved, results: Mapping[str, PendingResult]) -> None:
        """Record what the tasks of ``saved``'s pending superstep left (replacing any
        earlier record for it)."""
        ref = self.store.save(self._results_state(thread, saved, results))
        saved.results = dict(results)
        self._remember(thread, ref.checkpoint, saved)

    async def aput_results(
        self, thread: str, saved: Saved, results: Mapping[str, PendingResult]
    ) -> None:
        """:meth:`put_results` from async code."""
        ref = await self.aio.save(self._results_state(thread, saved, results))
        saved.results = dict(results)
        self._remember(thread, ref.checkpoint, saved)

    def _results_state(
        self, thread: str, saved: Saved, results: Mapping[str, PendingResult]
    ) -> RunState:
        tasks: dict[str, Any] = {}
        for task_id, result in results.items():
            tasks[task_id] = {
                "writes": None
                if result.writes is None
                else [[k, encode(v, f"state key {k!r}")] for k, v in result.writes],
                "gotos": [encode(g, "a Command goto") for g in result.gotos],
                "error": result.error,
                "resume": [encode(v, "a resume value") for v in result.resume],
                "interrupts": [encode(i, "an interrupt value") for i in result.interrupts],
            }
        record = {"v": RECORD_VERSION, "kind": "writes", "of": saved.number, "tasks": tasks}
        if any(r.interrupts for r in results.values()):
            status = LoopState.PAUSED
        elif any(r.error is not None for r in results.values()):
            status = LoopState.ERROR
        else:  # the finished tasks of a superstep still running
            status = LoopState.OBSERVE
        return RunState(
            session_id=thread,
            status=status,
            turn=max(saved.step, 0),
            metadata={"graph": record},
        )

    async def alatest(self, thread: str) -> Saved | None:
        """:meth:`latest` from async code (off the event loop for a blocking store)."""
        if not self.store.blocking:
            return self.latest(thread)
        return await asyncio.to_thread(self.latest, thread)

    async def aat(self, thread: str, number: int) -> Saved:
        """:meth:`at` from async code."""
        if not self.store.blocking:
            return self.at(thread, number)
        return await asyncio.to_thread(self.at, thread, number)

    def _remember(self, thread: str, number: int, saved: Saved) -> None:
        with self._lock:
            self._cache[thread] = (number, saved)
            self._cache.move_to_end(thread)
            if len(self._cache) > _CACHE_THREADS:
                self._cache.popitem(last=False)


def _results(record: Mapping[str, Any]) -> dict[str, PendingResult]:
    out: dict[str, PendingResult] = {}
    for task_id, data in record.get("tasks", {}).items():
        writes = data.get("writes")
        out[task_id] = PendingResult(
            writes=None if writes is None else [(k, decode(v)) for k, v in writes],
            gotos=[decode(g) for g in data.get("gotos", [])],
            error=data.get("error"),
            resume=[decode(v) for v in data.get("resume", [])],
            interrupts=[decode(i) for i in data.get("interrupts", [])],
        )
    return out


def now() -> float:
    return time.time()
