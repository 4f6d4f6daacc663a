"""Durable runs under concurrency: does a slow store hold the runs up?

100 durable runs in one event loop, each a new session (``Durable.arun(prompt)``: the id
is made up, and the first model call overlaps the claim of the lock) of 4 model calls of
20 ms (two idempotent lookups, one non-idempotent ``notify`` with its intent records, then
the answer), checkpointing every step. Compared, in the same process:

* the same runs without a store (``Agent.arun``): the floor;
* ``Durable`` over a store whose every write (save, intent, lock, ledger) takes 5 ms
  (a ``MemoryStore`` that sleeps; blocking, like a database driver). Goal: wall time
  within 1.5x of the floor;
* ``Durable`` over the real Redis and PostgreSQL servers when
  ``LOOPWRIGHT_TEST_REDIS_URL`` / ``LOOPWRIGHT_TEST_POSTGRES_URL`` are set
  (``source .ci/services.sh``).

Usage: ``python benchmarks/durable.py [--quick]``. Prints figures, then ONE JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from loopwright import Agent, FunctionModel, Reply, tool
from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.protocols import ModelRequest
from loopwright.core.run import RunState
from loopwright.durable import Durable
from loopwright.store import CheckpointRef, CheckpointStore, IntentRecord, MemoryStore, Write
from loopwright.store.base import claim_each, write_each
from loopwright.store.state import Claim, ClaimOutcome, Encoded, WriteOutcome

RUNS = 100
MODEL_DELAY = 0.02
WRITE_DELAY = 0.005


@tool(idempotent=True)
async def lookup(key: str) -> str:
    """Look a key up (no side effect)."""
    return f"value of {key}"


@tool
async def notify(text: str) -> str:
    """Send a notification (a side effect: intent records guard it)."""
    return f"sent {text!r}"


def _reply(messages: Sequence[Message], request: ModelRequest) -> object:
    step = sum(1 for m in messages if m.role == "tool")
    if step < 2:
        content: object = [ToolCallPart(f"l{step}", "lookup", {"key": f"k{step}"})]
    elif step == 2:
        content = [ToolCallPart("n1", "notify", {"text": "done"})]
    else:
        content = "all done"
    return Reply(content, delay=MODEL_DELAY)  # type: ignore[arg-type]


class SlowStore(MemoryStore):
    """A MemoryStore whose writes take ``delay`` seconds, blocking like a driver call.

    The delay stands for a round trip and commit to a database: a write call made alone
    (a lock refresh, a ledger entry) pays it, and so does one group-commit batch
    (``write(writes)``, ``claim(claims)``: one transaction for all of it, however many)."""

    blocking = True

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.writes = 0  # round trips paid: single calls and batches
        self.batched = 0  # writes and claims that went in batches
        self._batch = threading.local()

    def _wait(self) -> None:
        if getattr(self._batch, "open", False):
            return  # the batch pays once for all of its calls
        self.writes += 1
        time.sleep(self.delay)

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        self._wait()
        self.batched += len(writes)
        self._batch.open = True
        try:
            return write_each(self, writes)
        finally:
            self._batch.open = False

    def claim(self, claims: Sequence[Claim]) -> list[ClaimOutcome]:
        self._wait()
        self.batched += len(claims)
        self._batch.open = True
        try:
            return claim_each(self, claims)
        finally:
            self._batch.open = False

    def save(
        self, state: RunState, *, rewrite_from: int | None = None, encoded: Encoded | None = None
    ) -> CheckpointRef:
        self._wait()
        return super().save(state, rewrite_from=rewrite_from, encoded=encoded)

    def put_intent(self, intent: IntentRecord) -> None:
        self._wait()
        super().put_intent(intent)

    def acquire_lock(self, session_id: str, owner: str, ttl: float = 120.0) -> None:
        self._wait()
        super().acquire_lock(session_id, owner, ttl)

    def release_lock(self, session_id: str, owner: str) -> None:
        self._wait()
        super().release_lock(session_id, owner)

    def ledger_put(self, key: str, result: ToolResultPart) -> None:
        self._wait()
        super().ledger_put(key, result)


def _agent() -> Agent:
    return Agent(FunctionModel(_reply), [lookup, notify])  # type: ignore[arg-type]


Timing = tuple[float, float]
"""(wall, CPU) seconds: on a loaded machine the wall clock also counts time spent waiting
for a core; the process CPU time (all threads) does not."""


def _clocks() -> Timing:
    return time.perf_counter(), time.process_time()


def _since(t0: Timing) -> Timing:
    return time.perf_counter() - t0[0], time.process_time() - t0[1]


async def _plain(runs: int) -> Timing:
    agent = _agent()
    t0 = _clocks()
    results = await asyncio.gather(*(agent.arun("go") for _ in range(runs)))
    assert all(r.ok for r in results)
    return _since(t0)


async def _durable(runs: int, store: CheckpointStore) -> Timing:
    durable = Durable(_agent(), store)
    t0 = _clocks()
    # new sessions, as a user starts them: Durable makes up each id (unique across
    # processes, so runs on the shared servers never meet)
    results = await asyncio.gather(*(durable.arun("go") for _ in range(runs)))
    elapsed = _since(t0)
    durable.aio.close()
    assert all(r.ok for r in results), [r.detail for r in results if not r.ok][:3]
    assert results[0].session_id is not None
    last = store.load(results[0].session_id)
    assert last.stop is not None and len(last.messages) == 8
    return elapsed


def _stores() -> dict[str, Callable[[], CheckpointStore]]:
    stores: dict[str, Callable[[], CheckpointStore]] = {
        "5 ms writes": lambda: SlowStore(WRITE_DELAY),
        "memory": MemoryStore,
    }
    redis_url = os.environ.get("LOOPWRIGHT_TEST_REDIS_URL")
    if redis_url:
        from loopwright.store.redis_store import RedisStore

        stores["redis"] = lambda: RedisStore(redis_url, prefix=f"bench-{uuid.uuid4().hex[:6]}")
    pg_url = os.environ.get("LOOPWRIGHT_TEST_POSTGRES_URL")
    if pg_url:
        from loopwright.store.postgres import PostgresStore

        stores["postgres"] = lambda: PostgresStore(pg_url)
    return stores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else 5
    stores = _stores()
    times: dict[str, list[Timing]] = {"no store": [], **{k: [] for k in stores}}
    for _ in range(repeats):  # interleaved, so load changes hit every variant alike
        times["no store"].append(asyncio.run(_plain(RUNS)))
        for name, make in stores.items():
            store = make()
            try:
                times[name].append(asyncio.run(_durable(RUNS, store)))
            finally:
                store.close()
    floor = statistics.median(t[0] for t in times["no store"])
    out: dict[str, Any] = {"runs": RUNS, "load": os.getloadavg()[0], "ms": {}, "cpu_ms": {}}
    print(
        f"{RUNS} concurrent runs x 4 model calls x {MODEL_DELAY * 1e3:.0f} ms "
        f"(median of {repeats}):     wall   ratio   CPU"
    )
    for name, values in times.items():
        wall = statistics.median(t[0] for t in values) * 1e3
        cpu = statistics.median(t[1] for t in values) * 1e3
        out["ms"][name] = wall
        out["cpu_ms"][name] = cpu
        print(f"  {name:<12} {wall:8.1f} ms {wall / (floor * 1e3):5.2f}x {cpu:7.1f} ms")
    print(f"load average (1 min): {out['load']:.2f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
