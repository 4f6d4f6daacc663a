"""Backend-specific behaviour: SQLite across processes, Redis retention, a Redis server
stopped in the middle of a run."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_testlib import POSTGRES_ENV, REDIS_ENV, service_url, sid

from loopwright.core.errors import ConfigError
from loopwright.core.messages import Message
from loopwright.core.run import LoopState, RunState
from loopwright.store import SQLiteStore, StoreUnavailable

WRITER = """
import sys, dataclasses
from loopwright.core.messages import Message
from loopwright.core.run import RunState
from loopwright.store import SQLiteStore
store = SQLiteStore(sys.argv[1])
state = RunState(sys.argv[2], messages=[Message.user("0")])
store.save(state)
for i in range(60):
    state = dataclasses.replace(state, messages=[*state.messages, Message.user(str(i))])
    store.save(state)
"""


def test_sqlite_concurrent_writer_processes(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    SQLiteStore(db).close()
    ids = [sid() for _ in range(4)]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), i]) for i in ids]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    store = SQLiteStore(db)
    for i in ids:
        assert len(store.load(i).messages) == 61
        assert len(store.history(i)) == 61
    assert {s.session_id for s in store.sessions()} == set(ids)


@pytest.mark.services
def test_redis_ttl_retention() -> None:
    from loopwright.store.redis_store import RedisStore

    store = RedisStore(service_url(REDIS_ENV), prefix=f"lwttl-{sid()}", ttl=1)
    s = sid()
    store.save(RunState(s, messages=[Message.user("hi")]))
    assert [i.session_id for i in store.sessions()] == [s]
    time.sleep(2.2)
    assert store.sessions() == []


@pytest.mark.parametrize("ttl", [0, -1, "60", float("nan")])
def test_redis_ttl_must_be_seconds_above_zero(ttl: object) -> None:
    # was: 0 (meant as "no expiry") and -1 expired every session a second after its
    # save; "60" failed at the first save. Refused before any connection is made.
    from loopwright.store.redis_store import RedisStore

    with pytest.raises(ConfigError, match=r"RedisStore\(ttl=\.\.\.\) must be a finite number"):
        RedisStore("redis://127.0.0.1:1/0", ttl=ttl)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="ledger_ttl"):
        RedisStore("redis://127.0.0.1:1/0", ledger_ttl=ttl)  # type: ignore[arg-type]


@pytest.mark.services
def test_redis_unfinished_index_covers_sessions_stored_before_it() -> None:
    from loopwright.core.run import RunStop
    from loopwright.store.redis_store import RedisStore

    prefix = f"lwunf-{sid()}"
    store = RedisStore(service_url(REDIS_ENV), prefix=prefix)
    cut, done = sid(), sid()
    try:
        store.save(RunState(cut, messages=[Message.user("a")]))
        store.save(RunState(done, messages=[Message.user("b")], stop=RunStop.FINAL_ANSWER))
        # as a store written by a version without the index holds them
        store._r.delete(f"{prefix}:unfinished", f"{prefix}:unfinished:built")
        assert [i.session_id for i in store.sessions(unfinished=True)] == [cut]
        store.delete(cut)
        assert store.sessions(unfinished=True) == []
    finally:
        store.delete(done)
        store._r.delete(f"{prefix}:sessions", f"{prefix}:unfinished", f"{prefix}:unfinished:built")
        store.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_redis(port: int, data: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [
            "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--dir",
            str(data),
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--save",
            "",
        ],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("redis-server did not start")


@pytest.mark.services
def test_redis_stopped_mid_run_then_restarted_state_intact(tmp_path: Path) -> None:
    service_url(REDIS_ENV)  # the services must be installed for this test too
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed; run `source .ci/services.sh`")
    from loopwright.core.messages import ToolCallPart
    from loopwright.durable import Durable
    from loopwright.loop import Agent
    from loopwright.providers.scripted import FunctionModel
    from loopwright.store.redis_store import RedisStore

    port = _free_port()
    server = _start_redis(port, tmp_path)
    url = f"redis://127.0.0.1:{port}/0"

    def reply(messages, request):
        if messages[-1].role == "tool":
            server.terminate()  # the store goes down in the middle of the run
            server.wait()
            return "done"
        return Message("assistant", (ToolCallPart("c1", "lookup", {}),))

    def lookup() -> str:
        """Look something up."""
        return "42"

    store = RedisStore(url, socket_timeout=1)
    s = sid()
    with pytest.raises(StoreUnavailable, match=rf"redis store at {url} is unavailable"):
        Durable(Agent(FunctionModel(reply), [lookup]), store).run("go", session_id=s)
    restarted = _start_redis(port, tmp_path)
    try:
        state = RedisStore(url).load(s)  # the last checkpoint before the outage is intact
        # the last write that reached the server (writes merge while one is in flight)
        assert [m.role for m in state.messages][:2] == ["user", "assistant"]
        assert state.status is not LoopState.DONE and state.stop is None
    finally:
        restarted.terminate()
        restarted.wait()


def _pg_bindir() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return found[-1].parent if found else None


def _as_pg_user(cmd: list[str]) -> list[str]:
    import os
    import shlex

    if os.geteuid() != 0:
        return cmd
    return ["su", "-s", "/bin/sh", "postgres", "-c", shlex.join(cmd)]


@pytest.mark.services
def test_postgres_stopped_mid_run_then_restarted_state_intact() -> None:
    import os
    import tempfile

    service_url(POSTGRES_ENV)
    bindir = _pg_bindir()
    if bindir is None:
        pytest.fail("postgresql is not installed; run `source .ci/services.sh`")
    from loopwright.core.messages import ToolCallPart
    from loopwright.durable import Durable
    from loopwright.loop import Agent
    from loopwright.providers.scripted import FunctionModel
    from loopwright.store.postgres import PostgresStore

    root = Path(tempfile.mkdtemp(prefix="lw-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    data, port = root / "data", _free_port()
    subprocess.run(
        _as_pg_user(
            [str(bindir / "initdb"), "-D", str(data), "-U", "lw", "--auth=trust", "--no-sync"]
        ),
        check=True,
        capture_output=True,
    )
    ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(root / "log")]
    start = [*ctl, "-o", f"-k {root} -p {port} -h 127.0.0.1", "start"]
    subprocess.run(_as_pg_user(start), check=True, capture_output=True)
    url = f"postgresql://lw@127.0.0.1:{port}/postgres"

    def reply(messages, request):
        if messages[-1].role == "tool":
            subprocess.run(
                _as_pg_user([*ctl, "-m", "immediate", "stop"]), check=True, capture_output=True
            )
            return "done"
        return Message("assistant", (ToolCallPart("c1", "lookup", {}),))

    def lookup() -> str:
        """Look something up."""
        return "42"

    s = sid()
    try:
        store = PostgresStore(url)
        with pytest.raises(
            StoreUnavailable, match=rf"postgres store at postgresql://127.0.0.1:{port}/postgres"
        ):
            Durable(Agent(FunctionModel(reply), [lookup]), store).run("go", session_id=s)
        subprocess.run(_as_pg_user(start), check=True, capture_output=True)
        state = PostgresStore(url).load(s)  # the last committed checkpoint is intact
        assert [m.role for m in state.messages][:2] == ["user", "assistant"]
        assert state.stop is None
    finally:
        subprocess.run(_as_pg_user([*ctl, "-m", "immediate", "stop"]), capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
