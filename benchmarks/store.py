"""Checkpoint store latency: write and load per step, per store, at 10 and 1,000 messages;
plus 100 sessions checkpointing concurrently.

    python benchmarks/store.py            # memory + sqlite (+ redis/postgres when
                                          # LOOPWRIGHT_TEST_REDIS_URL / _POSTGRES_URL are set)

A "step" appends one message to the history and saves a checkpoint (what the
Checkpointer does per event). The floor is plain Python: ``json.dumps`` of the whole
state and a naive SQLite store that rewrites the whole history as one blob per step
(what a store that does not append would pay). Prints a table, ends with one JSON line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.run import RunState
from loopwright.store import CheckpointStore, MemoryStore, SQLiteStore, encode_state

STEPS = 200
LOADS = 50


def history(n: int) -> tuple[Message, ...]:
    out: list[Message] = []
    for i in range(n):
        match i % 3:
            case 0:
                out.append(Message.user(f"question {i}: " + "lorem ipsum " * 8))
            case 1:
                call = ToolCallPart(f"c{i}", "search", {"q": f"term {i}", "limit": 5})
                out.append(Message("assistant", (call,)))
            case _:
                out.append(
                    Message.tool_results([ToolResultPart(f"c{i - 1}", "search", "result " * 20)])
                )
    return tuple(out)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(samples: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(pct(samples, 0.5) * 1e3, 4),
        "p99_ms": round(pct(samples, 0.99) * 1e3, 4),
    }


def bench_store(store: CheckpointStore, length: int) -> dict[str, Any]:
    sid = f"bench-{uuid.uuid4().hex[:10]}"
    base = history(length)
    state = RunState(sid, messages=base)
    store.save(state)
    extra = Message.user("one more step")
    writes: list[float] = []
    for step in range(STEPS):
        state = dataclasses.replace(state, messages=[*state.messages, extra], turn=step)
        t0 = time.perf_counter()
        store.save(state)
        writes.append(time.perf_counter() - t0)
    loads: list[float] = []
    for _ in range(LOADS):
        t0 = time.perf_counter()
        loaded = store.load(sid)
        loads.append(time.perf_counter() - t0)
    assert len(loaded.messages) == length + STEPS
    store.delete(sid)
    return {"write": ms(writes), "load": ms(loads)}


def floor_json(length: int) -> dict[str, Any]:
    state = RunState("floor", messages=history(length))
    extra = Message.user("one more step")
    samples = []
    for _ in range(STEPS):
        state = dataclasses.replace(state, messages=[*state.messages, extra])
        t0 = time.perf_counter()
        encode_state(state)
        samples.append(time.perf_counter() - t0)
    return {"write": ms(samples)}


def floor_naive_sqlite(path: Path, length: int) -> dict[str, Any]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE IF NOT EXISTS s (id TEXT PRIMARY KEY, state TEXT)")
    state = RunState("naive", messages=history(length))
    extra = Message.user("one more step")
    samples = []
    for _ in range(STEPS):
        state = dataclasses.replace(state, messages=[*state.messages, extra])
        t0 = time.perf_counter()
        conn.execute("INSERT OR REPLACE INTO s VALUES (?, ?)", ("naive", encode_state(state)))
        samples.append(time.perf_counter() - t0)
    conn.close()
    return {"write": ms(samples)}


def concurrent(store: CheckpointStore, sessions: int = 100, steps: int = 20) -> dict[str, Any]:
    errors: list[str] = []
    prefix = uuid.uuid4().hex[:6]

    def work(i: int) -> None:
        try:
            state = RunState(f"conc-{prefix}-{i}", messages=history(4))
            store.save(state)
            for _ in range(steps):
                state = dataclasses.replace(state, messages=[*state.messages, Message.user("x")])
                store.save(state)
            if len(store.load(state.session_id).messages) != 4 + steps:
                errors.append(f"session {i}: wrong history length")
        except Exception as exc:  # counted and reported, the benchmark asserts none
            errors.append(f"session {i}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(sessions)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    for i in range(sessions):
        store.delete(f"conc-{prefix}-{i}")
    return {
        "sessions": sessions,
        "checkpoints": sessions * (steps + 1),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "seconds": round(elapsed, 3),
        "checkpoints_per_s": round(sessions * (steps + 1) / elapsed, 1),
    }


def stores(tmp: Path) -> dict[str, Callable[[], CheckpointStore]]:
    out: dict[str, Callable[[], CheckpointStore]] = {
        "memory": MemoryStore,
        "sqlite": lambda: SQLiteStore(tmp / "bench.db"),
    }
    redis_url = os.environ.get("LOOPWRIGHT_TEST_REDIS_URL")
    if redis_url:
        from loopwright.store.redis_store import RedisStore

        out["redis"] = lambda: RedisStore(redis_url, prefix=f"bench-{uuid.uuid4().hex[:6]}")
    pg_url = os.environ.get("LOOPWRIGHT_TEST_POSTGRES_URL")
    if pg_url:
        from loopwright.store.postgres import PostgresStore

        out["postgres"] = lambda: PostgresStore(pg_url)
    return out


def main() -> None:
    results: dict[str, Any] = {"steps": STEPS, "loads": LOADS, "stores": {}, "floor": {}}
    with tempfile.TemporaryDirectory(prefix="lw-store-bench-") as tmp_name:
        tmp = Path(tmp_name)
        for length in (10, 1000):
            results["floor"][str(length)] = {
                "json_full_state": floor_json(length),
                "naive_sqlite_rewrite": floor_naive_sqlite(tmp / "naive.db", length),
            }
        for name, factory in stores(tmp).items():
            store = factory()
            entry: dict[str, Any] = {}
            for length in (10, 1000):
                entry[str(length)] = bench_store(store, length)
            entry["concurrent"] = concurrent(store)
            store.close()
            results["stores"][name] = entry
    print(
        f"{'store':<10} {'history':>7} {'write p50':>10} {'write p99':>10} {'load p50':>9} {'load p99':>9}  (ms)"
    )
    for name, entry in results["stores"].items():
        for length in ("10", "1000"):
            e = entry[length]
            print(
                f"{name:<10} {length:>7} {e['write']['p50_ms']:>10.3f} {e['write']['p99_ms']:>10.3f} "
                f"{e['load']['p50_ms']:>9.3f} {e['load']['p99_ms']:>9.3f}"
            )
        c = entry["concurrent"]
        print(
            f"{name:<10} concurrent: {c['sessions']} sessions, {c['checkpoints']} checkpoints, "
            f"{c['errors']} errors, {c['checkpoints_per_s']}/s"
        )
    for length in ("10", "1000"):
        f = results["floor"][length]
        print(
            f"floor      {length:>7} json(full state) p50 {f['json_full_state']['write']['p50_ms']:.3f} ms; "
            f"naive sqlite rewrite p50 {f['naive_sqlite_rewrite']['write']['p50_ms']:.3f} ms"
        )
    sq = results["stores"]["sqlite"]["1000"]["write"]["p50_ms"]
    naive = results["floor"]["1000"]["naive_sqlite_rewrite"]["write"]["p50_ms"]
    results["sqlite_write_p50_ms_at_1000"] = sq
    results["sqlite_goal_met"] = sq < 2.0
    results["naive_over_append_ratio_at_1000"] = round(naive / sq, 1)
    print(
        f"sqlite write p50 at 1,000 messages: {sq:.3f} ms (goal < 2 ms); naive rewrite / append = "
        f"{results['naive_over_append_ratio_at_1000']}x"
    )
    print(json.dumps({"benchmark": "store", **results}))


if __name__ == "__main__":
    main()
