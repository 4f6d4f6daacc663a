"""`loopwright serve` under load: what the HTTP API adds over an in-process run.

N concurrent sessions, each 6 model calls of 20 ms (5 calls of an idempotent tool, then
the answer), checkpointed to SQLite by the durable runner. Measured in one run:

* floor: the same N runs in process (``Agent.arun``, no store);
* durable: the same N runs in process through ``Durable`` over SQLite (the server's
  engine without HTTP);
* http: N clients against a ``loopwright serve`` process on 127.0.0.1, each creating a
  session (``POST /v1/sessions``) and reading its SSE stream to ``run_finished``.

Reported: sessions per second (N / wall time), per-session latency p50/p99 and the
latency added over the floor at the same percentile, errors, and the server's resident
memory per idle session afterwards. Usage: ``python benchmarks/serve.py [--sessions N]
[--quick]``. Prints figures, then ONE JSON line.

``--kill N``: the crash test instead: two server processes over one store, the one
running a session SIGKILLed at a random moment N times; every side effect (3 sends per
session through a non-idempotent tool) must land exactly once. ``--kill N --cluster``:
the same with THREE processes forming a cluster over PostgreSQL and Redis
(``$LOOPWRIGHT_TEST_POSTGRES_URL``, ``$LOOPWRIGHT_TEST_REDIS_URL``: ``source
.ci/services.sh``): sessions are created through a random process, the worker that
claimed each is SIGKILLed mid-run and restarted; the dead worker's job returns to the
queue and another worker finishes the session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loopwright import Agent, FunctionModel, Reply, tool
from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.protocols import ModelRequest
from loopwright.durable import NOT_RUN, Durable
from loopwright.store import AsyncStore, CheckpointStore, SQLiteStore

MODEL_DELAY = 0.02
CALLS = 6
KEY = "bench-key-0001"
IN_PROCESS = "in-process-"
"""Session ids of the durable runs made in this process."""


@tool(idempotent=True)
async def lookup(key: str) -> str:
    """Look a key up (no side effect)."""
    return f"value of {key}"


def _reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
    step = sum(1 for m in messages if m.role == "tool")
    if step < CALLS - 1:
        return Reply([ToolCallPart(f"l{step}", "lookup", {"key": f"k{step}"})], delay=MODEL_DELAY)
    return Reply("done", delay=MODEL_DELAY)


def make_agent() -> Agent:
    return Agent(FunctionModel(_reply), [lookup])


OUTBOX_ENV = "SERVE_BENCH_OUTBOX"
SENDS = 3


def _already_sent(key: str) -> object:
    """``outcome_check``: the recorded result of a send cut off by a crash, or NOT_RUN."""
    path = Path(os.environ[OUTBOX_ENV])
    lines = path.read_text().splitlines() if path.exists() else []
    return f"sent {key}" if any(json.loads(x)["key"] == key for x in lines) else NOT_RUN


@tool(
    idempotency_key=lambda a: f"{a['token']}|{a['n']}",
    unknown_outcome="ask_tool",
    outcome_check=_already_sent,
)
def send(token: str, n: int) -> str:
    """Send message ``n`` (a side effect: one outbox line per key, never two)."""
    with open(os.environ[OUTBOX_ENV], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"key": f"{token}|{n}"}) + "\n")
    return f"sent {token}|{n}"


def _sender(messages: Sequence[Message], request: ModelRequest) -> Reply:
    token = next(m.text for m in messages if m.role == "user")
    # a send whose result is an error (cut off by a crash or a hand-over) is asked again
    done = {r.content for m in messages for r in m.tool_results_parts if not r.is_error}
    todo = [n for n in range(SENDS) if f"sent {token}|{n}" not in done]
    if todo:
        call = ToolCallPart(f"s{len(messages)}", "send", {"token": token, "n": todo[0]})
        return Reply([call], delay=MODEL_DELAY * 2)
    return Reply("all sent", delay=MODEL_DELAY)


agents = {"bench": make_agent, "sender": lambda: Agent(FunctionModel(_sender), [send])}
"""What the server process imports (``--agents serve:agents`` from this folder)."""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _timed(coro: Any) -> float:
    start = time.perf_counter()
    await coro
    return time.perf_counter() - start


async def in_process(n: int, store: CheckpointStore | None) -> tuple[float, list[float]]:
    start = time.perf_counter()
    if store is None:
        runs = [_timed(make_agent().arun(f"q{i}")) for i in range(n)]
    else:
        shared = AsyncStore(store)  # one pool of store threads, as the server has
        agents = [Durable(make_agent(), shared) for _ in range(n)]
        runs = [
            _timed(d.arun(f"q{i}", session_id=f"{IN_PROCESS}{i}")) for i, d in enumerate(agents)
        ]
    latencies = await asyncio.gather(*runs)
    wall = time.perf_counter() - start
    return wall, list(latencies)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _request(host: str, port: int, head: str, body: bytes = b"") -> tuple[Any, Any]:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(head.encode() + body)
    await writer.drain()
    return reader, writer


async def _session(url: str, i: int) -> float:
    """One client: create a session, read its SSE stream up to ``run_finished``.

    Plain asyncio streams speaking HTTP/1.1, not httpx: on a shared 2-core machine an
    httpx client spends ~18 ms of CPU per session and becomes the bottleneck it is
    supposed to measure."""
    host, port = url.removeprefix("http://").split(":")
    auth = f"Authorization: Bearer {KEY}\r\nHost: {host}\r\n"
    body = json.dumps({"agent": "bench", "prompt": f"q{i}"}).encode()
    start = time.perf_counter()
    head = (
        f"POST /v1/sessions HTTP/1.1\r\n{auth}Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    reader, writer = await _request(host, int(port), head, body)
    raw = await reader.read()
    writer.close()
    if not raw.startswith(b"HTTP/1.1 201"):
        raise RuntimeError(f"create failed: {raw[:200]!r}")
    sid = json.loads(raw.split(b"\r\n\r\n", 1)[1])["id"]
    head = f"GET /v1/sessions/{sid}/events HTTP/1.1\r\n{auth}Connection: close\r\n\r\n"
    reader, writer = await _request(host, int(port), head)
    seen = b""
    try:
        while chunk := await reader.read(65536):
            seen = seen[-400:] + chunk  # the marker may straddle two reads
            if b"event: run_finished" in seen:
                return time.perf_counter() - start
    finally:
        writer.close()
    raise RuntimeError(f"session {sid}: the stream ended without run_finished: {seen[-400:]!r}")


async def over_http(n: int, urls: Sequence[str]) -> tuple[float, list[float], int]:
    """``n`` clients at once, client ``i`` talking to ``urls[i % len(urls)]``."""
    start = time.perf_counter()
    sessions = (_session(urls[i % len(urls)], i) for i in range(n))
    results = await asyncio.gather(*sessions, return_exceptions=True)
    wall = time.perf_counter() - start
    latencies = [r for r in results if isinstance(r, float)]
    failures = [r for r in results if not isinstance(r, float)]
    if failures:
        print(f"{len(failures)} failed sessions; the first: {failures[0]!r}")
    return wall, latencies, len(failures)


PROFILE_ENV = "SERVE_BENCH_PROFILE"
"""A folder: each server process runs under cProfile and writes ``<pid>.prof`` there
when it stops (its event-loop thread; the store threads are not profiled)."""


# uvicorn re-raises SIGTERM once it has shut down (the process dies of it, past any
# ``finally``): the profile is written just before
_PROFILED = """
import cProfile, os, signal, sys
prof = cProfile.Profile()
def _dump(sig):
    prof.disable()
    prof.dump_stats({out!r})
    os._exit(0)
signal.raise_signal = _dump
sys.argv[0] = "loopwright"
from loopwright.cli.main import main
prof.enable()
main()
"""


def start_server(
    db: Path, store_url: str | None = None, extra: Sequence[str] = ("--no-resume",)
) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = _free_port()
    env = {**os.environ, "LOOPWRIGHT_SERVE_KEYS": f"{KEY}=bench"}
    here = Path(__file__).resolve().parent
    profile = os.environ.get(PROFILE_ENV)
    start = ["-c", _PROFILED.format(out=f"{profile}/{port}.prof")] if profile else []
    cmd = [
        sys.executable,
        *(start or ["-m", "loopwright.cli"]),
        "serve",
        "--agents",
        "serve:agents",
        "--port",
        str(port),
        "--store-url",
        store_url or f"sqlite:///{db}",
        "--no-access-log",
        *extra,
    ]
    proc = subprocess.Popen(cmd, cwd=here, env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the server did not start")


def unfinished(store: CheckpointStore, n: int, served: bool) -> int:
    """Of ``n`` sessions, those the store does not hold as finished with all their
    messages (a run whose checkpoints failed still answers its client: the durable
    runner logs the failure). ``served``: count the server's sessions, else the
    in-process runs' (a cluster run keeps both in one schema)."""
    rows = [r for r in store.sessions() if r.session_id.startswith(IN_PROCESS) != served]
    full = 2 * CALLS  # the prompt, 5 x (call, result), the answer
    done = sum(1 for r in rows if r.stop is not None and r.message_count == full)
    return n - done


def _figures(name: str, n: int, wall: float, lat: list[float], floor: list[float]) -> dict:
    p50, p99 = _pct(lat, 0.5), _pct(lat, 0.99)
    out = {
        "sessions_per_s": round(n / wall, 1),
        "p50_ms": round(p50 * 1000, 1),
        "p99_ms": round(p99 * 1000, 1),
        "added_p50_ms": round((p50 - _pct(floor, 0.5)) * 1000, 1),
        "added_p99_ms": round((p99 - _pct(floor, 0.99)) * 1000, 1),
    }
    print(
        f"{name:8s} {out['sessions_per_s']:8.1f} sessions/s  p50 {out['p50_ms']:7.1f} ms  "
        f"p99 {out['p99_ms']:7.1f} ms  added p50 {out['added_p50_ms']:6.1f} ms  "
        f"added p99 {out['added_p99_ms']:6.1f} ms"
    )
    return out


async def _create(url: str, token: str) -> str:
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"agent": "sender", "prompt": token}).encode()
    head = (
        f"POST /v1/sessions HTTP/1.1\r\nAuthorization: Bearer {KEY}\r\nHost: {host}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    reader, writer = await _request(host, int(port), head, body)
    raw = await reader.read()
    writer.close()
    return str(json.loads(raw.split(b"\r\n\r\n", 1)[1])["id"])


def kill_test(rounds: int, tmp: Path) -> dict[str, Any]:
    """SIGKILL the process running a session at a random moment, ``rounds`` times; a
    second process (and the restarted first) take the sessions over. Every send must be
    in the outbox exactly once."""
    import random

    import httpx

    os.environ[OUTBOX_ENV] = str(tmp / "outbox.jsonl")
    db = tmp / "kill.db"
    opts = ("--lock-ttl", "1", "--recover-every", "0.3")
    survivor, survivor_url = start_server(db, extra=opts)
    victim, victim_url = start_server(db, extra=opts)
    rng = random.Random(17)
    tokens: dict[str, str] = {}
    killed_after: dict[int, int] = {}  # sends done when the process died -> rounds
    try:
        for i in range(rounds):
            token = f"t{i}"
            tokens[asyncio.run(_create(victim_url, token))] = token
            time.sleep(rng.uniform(0.0, 0.2))  # sends happen in the first ~0.2 s
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            outbox = Path(os.environ[OUTBOX_ENV])
            sent = outbox.read_text().count(f'"{token}|') if outbox.exists() else 0
            killed_after[sent] = killed_after.get(sent, 0) + 1
            victim, victim_url = start_server(db, extra=opts)
        deadline = time.monotonic() + 120
        headers = {"Authorization": f"Bearer {KEY}"}
        pending = set(tokens)
        while pending and time.monotonic() < deadline:
            for sid in list(pending):
                state = httpx.get(f"{survivor_url}/v1/sessions/{sid}", headers=headers).json()
                if state["status"] == "finished":
                    pending.discard(sid)
            time.sleep(0.2)
    finally:
        for proc in (survivor, victim):
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    lines = Path(os.environ[OUTBOX_ENV]).read_text().splitlines()
    keys = [json.loads(x)["key"] for x in lines]
    expected = {f"{t}|{n}" for t in tokens.values() for n in range(SENDS)}
    out = {
        "rounds": rounds,
        "unfinished": len(pending),
        "lost": len(expected - set(keys)),
        "duplicated": len(keys) - len(set(keys)),
        "killed_after_sends": {str(k): v for k, v in sorted(killed_after.items())},
    }
    print(f"kill test: {out}")
    return out


class _ClusterSetup:
    """A fresh PostgreSQL schema and Redis key prefix for one cluster run."""

    def __init__(self) -> None:
        import secrets

        import psycopg

        self.pg, self.redis = (
            os.environ["LOOPWRIGHT_TEST_POSTGRES_URL"],
            os.environ["LOOPWRIGHT_TEST_REDIS_URL"],
        )
        self.schema = f"serve_bench_{secrets.token_hex(4)}"
        with psycopg.connect(self.pg, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {self.schema}")
        self.store_url = f"{self.pg}?options=-csearch_path%3D{self.schema}"

    def options(self, *extra: str) -> tuple[str, ...]:
        return ("--redis-url", self.redis, "--redis-prefix", f"lwbench:{self.schema}", *extra)

    def start(self, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
        return start_server(Path("unused"), self.store_url, self.options(*extra))

    def store(self) -> CheckpointStore:
        from loopwright.store import PostgresStore

        return PostgresStore(self.store_url)

    def redis_memory(self) -> int:
        import redis

        client = redis.Redis.from_url(self.redis)
        try:
            return int(client.info("memory")["used_memory"])
        finally:
            client.close()

    def lock_pid(self, session_id: str, timeout: float = 10.0) -> int | None:
        """The pid of the process holding the session's lock (None: it finished first)."""
        from loopwright.store import PostgresStore

        store = PostgresStore(self.store_url, migrate=False)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                owner = store.lock_owner(session_id)
                if owner is not None:
                    return int(owner.split(":")[1])
                if store.load(session_id).stop is not None:
                    return None
                time.sleep(0.005)
        finally:
            store.close()
        return None

    def close(self) -> None:
        import psycopg
        import redis

        with psycopg.connect(self.pg, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {self.schema} CASCADE")
        client = redis.Redis.from_url(self.redis)
        keys = list(client.scan_iter(f"lwbench:{self.schema}:*"))
        if keys:
            client.delete(*keys)
        client.close()


def kill_cluster(rounds: int, tmp: Path) -> dict[str, Any]:
    """``rounds`` sessions through a 3-process cluster; each one's worker SIGKILLed at a
    random moment of its run, then restarted. Every send must land exactly once."""
    import random

    import httpx

    os.environ[OUTBOX_ENV] = str(tmp / "outbox.jsonl")
    setup = _ClusterSetup()
    opts = ("--lock-ttl", "1", "--drain", "1")
    procs = [setup.start(*opts) for _ in range(3)]
    rng = random.Random(23)
    tokens: dict[str, str] = {}
    killed_after: dict[int, int] = {}
    missed = 0  # sessions that finished before their worker could be killed
    started = time.perf_counter()
    try:
        for i in range(rounds):
            token = f"c{i}"
            sid = asyncio.run(_create(rng.choice(procs)[1], token))
            tokens[sid] = token
            pid = setup.lock_pid(sid)
            time.sleep(rng.uniform(0.0, 0.25))  # the 3 sends happen in the first ~0.25 s
            victim = next((n for n, (p, _) in enumerate(procs) if p.pid == pid), None)
            if victim is None:
                missed += 1
                continue
            outbox = Path(os.environ[OUTBOX_ENV])
            procs[victim][0].send_signal(signal.SIGKILL)
            procs[victim][0].wait()
            sent = outbox.read_text().count(f'"{token}|') if outbox.exists() else 0
            killed_after[sent] = killed_after.get(sent, 0) + 1
            procs[victim] = setup.start(*opts)
        pending = set(tokens)
        headers = {"Authorization": f"Bearer {KEY}"}
        deadline = time.monotonic() + 120
        while pending and time.monotonic() < deadline:
            url = procs[0][1]
            for sid in list(pending):
                state = httpx.get(f"{url}/v1/sessions/{sid}", headers=headers).json()
                if state["status"] == "finished" and state["answer"] == "all sent":
                    pending.discard(sid)
            time.sleep(0.2)
    finally:
        for proc, _ in procs:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        setup.close()
    lines = Path(os.environ[OUTBOX_ENV]).read_text().splitlines()
    keys = [json.loads(x)["key"] for x in lines]
    expected = {f"{t}|{n}" for t in tokens.values() for n in range(SENDS)}
    out = {
        "mode": "cluster: 3 processes, PostgreSQL store, Redis queue/events",
        "rounds": rounds,
        "killed": rounds - missed,
        "unfinished": len(pending),
        "lost": len(expected - set(keys)),
        "duplicated": len(keys) - len(set(keys)),
        "killed_after_sends": {str(k): v for k, v in sorted(killed_after.items())},
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"kill test: {out}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="50 sessions")
    parser.add_argument(
        "--profile", type=Path, help="run the servers under cProfile, their .prof files here"
    )
    parser.add_argument("--kill", type=int, default=0, help="only the kill test, N rounds")
    parser.add_argument(
        "--cluster", action="store_true", help="the kill test on a 3-process Redis cluster"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="server processes; 2+: a cluster over PostgreSQL and Redis ($LOOPWRIGHT_TEST_*)",
    )
    args = parser.parse_args()
    n = 50 if args.quick else args.sessions
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
        os.environ[PROFILE_ENV] = str(args.profile.resolve())
    tmp = Path(tempfile.mkdtemp(prefix="lw-serve-bench-"))
    if args.kill:
        killed = kill_cluster(args.kill, tmp) if args.cluster else kill_test(args.kill, tmp)
        killed["load"] = os.getloadavg()[0]
        print(json.dumps(killed))
        return
    workers = max(1, args.workers)
    where = "SQLite, one process" if workers == 1 else f"PostgreSQL + Redis, {workers} processes"
    print(
        f"{n} concurrent sessions, {CALLS} model calls of {MODEL_DELAY * 1000:.0f} ms each "
        f"({where})"
    )
    result: dict[str, Any] = {"sessions": n, "workers": workers, "load_before": _load()}
    cpu = time.process_time()
    wall, floor = asyncio.run(in_process(n, None))
    result["floor"] = _figures("floor", n, wall, floor, floor)
    result["floor"]["cpu_ms_per_session"] = round((time.process_time() - cpu) * 1000 / n, 2)
    setup = _ClusterSetup() if workers > 1 else None
    try:
        store = SQLiteStore(tmp / "durable.db") if setup is None else setup.store()
        cpu = time.process_time()
        wall, lat = asyncio.run(in_process(n, store))
        # this process's CPU, its store threads included: the server's engine alone
        durable_cpu = round((time.process_time() - cpu) * 1000 / n, 2)
        result["durable"] = _figures("durable", n, wall, lat, floor)
        result["durable"]["cpu_ms_per_session"] = durable_cpu
        result["durable"]["not_stored"] = unfinished(store, n, served=False)
        store.close()
        print(
            f"CPU per session in process: floor {result['floor']['cpu_ms_per_session']} ms, "
            f"durable {durable_cpu} ms"
        )
        if setup is None:
            procs = [start_server(tmp / "serve.db")]
        else:
            # 8 store threads per process: 2 x 64 PostgreSQL connections contend for the
            # interpreter (measured ~13 % more CPU per session) and for max_connections
            procs = [setup.start("--no-resume", "--store-threads", "8") for _ in range(workers)]
        try:
            lat = _measure_http(n, procs, setup, floor, result)
        finally:
            for proc, _ in procs:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)
        served = SQLiteStore(tmp / "serve.db") if setup is None else setup.store()
        result["http"]["not_stored"] = unfinished(served, n, served=True)
        served.close()
        print(
            f"sessions not stored finished: durable {result['durable']['not_stored']}, "
            f"http {result['http']['not_stored']}"
        )
    finally:
        if setup is not None:
            setup.close()
    result["load"] = _load()
    result["median_latency_ratio_http_over_floor"] = round(
        statistics.median(lat) / statistics.median(floor), 2
    )
    print(json.dumps(result))


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _measure_http(
    n: int,
    procs: list[tuple[subprocess.Popen[bytes], str]],
    setup: _ClusterSetup | None,
    floor: list[float],
    result: dict[str, Any],
) -> list[float]:
    pids = [p.pid for p, _ in procs]
    idle_rss = sum(_rss_kib(pid) for pid in pids)
    redis_before = setup.redis_memory() if setup is not None else 0
    server_cpu, client_cpu = sum(_cpu_s(pid) for pid in pids), time.process_time()
    wall, lat, errors = asyncio.run(over_http(n, [url for _, url in procs]))
    server_cpu = sum(_cpu_s(pid) for pid in pids) - server_cpu
    client_cpu = time.process_time() - client_cpu
    figures = result["http"] = _figures("http", n, wall, lat, floor) if lat else {}
    figures["errors"] = errors
    # on a shared machine the client competes with the servers for the same cores
    figures["server_cpu_ms_per_session"] = round(server_cpu * 1000 / n, 2)
    figures["client_cpu_ms_per_session"] = round(client_cpu * 1000 / n, 2)
    print(
        f"CPU per session: servers {server_cpu * 1000 / n:.2f} ms, "
        f"client {client_cpu * 1000 / n:.2f} ms"
    )
    time.sleep(1.0)
    grown = sum(_rss_kib(pid) for pid in pids) - idle_rss
    figures["rss_kib_per_idle_session"] = round(grown / n, 1)
    line = f"errors {errors}; server memory per idle session ~{grown / n:.1f} KiB"
    if setup is not None:
        kib = (setup.redis_memory() - redis_before) / 1024 / n
        figures["redis_kib_per_idle_session"] = round(kib, 1)
        line += f", Redis ~{kib:.1f} KiB"
    print(line)
    return lat


if __name__ == "__main__":
    main()
