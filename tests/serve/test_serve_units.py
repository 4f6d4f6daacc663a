"""Pieces of the server tested without HTTP: API keys and the Durable hooks it relies on."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from loopwright.core.errors import UserError
from loopwright.durable import Durable, DurableConfig
from loopwright.loop import Agent
from loopwright.loop.agent import Run
from loopwright.providers.scripted import FunctionModel, Reply
from loopwright.serve import ApiKeys, AppConfig, ClusterConfig, ServeConfig, load_keys
from loopwright.store import AsyncStore, MemoryStore


def test_keys_from_the_environment_and_from_files(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_SERVE_KEYS", "key-aaaa-1=alpha, key-bbbb-2=bravo")
    keys = load_keys()
    assert keys.tenant("key-aaaa-1") == "alpha" and keys.tenant("key-bbbb-2") == "bravo"
    assert keys.tenant("key-aaaa-") is None and keys.tenant("") is None
    pairs = tmp_path / "keys.txt"
    pairs.write_text("# comment\nkey-cccc-3 carol\nkey-dddd-4=dave  # trailing\n")
    assert load_keys(pairs).tenant("key-dddd-4") == "dave"
    as_json = tmp_path / "keys.json"
    as_json.write_text(json.dumps({"key-eeee-5": "erin"}))
    assert load_keys(as_json).tenant("key-eeee-5") == "erin"


@pytest.mark.parametrize(
    ("text", "needle"),
    [("", "no API keys"), ("short=a", "at least 8"), ("just-a-key-no-tenant", "entry 1")],
)
def test_bad_keys_say_what_to_fix(monkeypatch, text: str, needle: str) -> None:
    monkeypatch.setenv("LOOPWRIGHT_SERVE_KEYS", text)
    with pytest.raises(UserError, match=needle):
        load_keys()


def test_keys_are_held_as_digests() -> None:
    keys = ApiKeys.from_mapping({"secret-key-1": "alpha"})
    assert all(isinstance(k, bytes) and len(k) == 32 for k in keys.tenants)
    assert b"secret-key-1" not in keys.tenants


async def test_durable_reports_each_run_and_shares_one_async_store() -> None:
    """`on_run` hands out the live run (the server steers and cancels through it), and a
    Durable given an AsyncStore uses it instead of opening its own thread pool."""

    def reply(messages, request):
        return Reply(" | ".join(m.text for m in messages if m.role == "user"), delay=0.05)

    runs: list[Run] = []

    def on_run(run: Run) -> None:
        runs.append(run)
        run.follow_up("and more")

    shared = AsyncStore(MemoryStore())
    durable = Durable(Agent(FunctionModel(reply)), shared, on_run=on_run)
    assert durable.aio is shared and durable.store is shared.store
    result = await durable.arun("first")
    assert len(runs) == 1 and runs[0].session_id == result.session_id
    assert result.answer == "first | and more"


async def test_the_event_log_keeps_the_newest_events_and_replays_from_the_oldest_kept() -> None:
    from loopwright.serve.sessions import LiveSession

    live = LiveSession("s-x", "alpha", "echo", max_events=10)
    for n in range(1, 26):
        live.publish("tick", {"n": n})
    assert live.last_id == 25 and len(live.events) <= 10
    replay = [e async for batch in live.follow(0, keepalive=1) if batch for e in batch]
    ids = [e.id for e in replay]
    assert ids == list(range(ids[0], 26)) and ids[0] > 1  # the oldest kept onwards
    assert [e.id async for b in live.follow(23, keepalive=1) if b for e in b] == [24, 25]
    assert all(json.loads(e.data)["n"] == e.id for e in replay)


async def test_a_follower_is_woken_by_new_events_and_released_when_the_run_ends() -> None:
    from loopwright.serve.sessions import LiveSession

    live = LiveSession("s-y", "alpha", "echo")
    live.active = True
    got: list[object] = []

    async def reader() -> None:
        async for batch in live.follow(0, keepalive=0.05):
            got.extend([None] if batch is None else [e.id for e in batch])

    task = asyncio.create_task(reader())
    await asyncio.sleep(0.12)  # idle: keepalives
    live.publish("tick", {})
    await asyncio.sleep(0.01)
    live.active = False
    live.notify()
    await asyncio.wait_for(task, 1)
    assert None in got and got[-1] == 1


def _manager(on_event=None, **config: object):
    from loopwright.loop import Hooks
    from loopwright.serve import ServeConfig, SessionManager

    def reply(messages, request):
        return Reply("heard: " + " | ".join(m.text for m in messages if m.role == "user"))

    agents = {"echo": Agent(FunctionModel(reply), hooks=Hooks(on_event=on_event))}
    return SessionManager(agents, MemoryStore(), ServeConfig(**config))  # type: ignore[arg-type]


async def test_a_message_sent_as_the_run_stops_starts_the_next_turn() -> None:
    """A message that arrives after the run's last turn but before its task ended is
    queued on the session; when the task ends it must start the next turn, not vanish."""
    from loopwright.core.events import RunFinished

    sent: list[str] = []

    def on_event(event: object) -> None:
        # the run has taken its last turn: a message now is queued on the session
        if isinstance(event, RunFinished) and not sent:
            sent.append("late")
            live.queued.append(("follow_up", "late"))  # what message() does in that window

    manager = _manager(on_event)
    live = manager.live[await manager.create("alpha", "echo", "first")]
    for _ in range(100):
        await asyncio.sleep(0.01)
        if not live.running:
            break
    state = await manager.state("alpha", live.session_id)
    assert state.best_answer() == "heard: first | late"
    assert [e.type for e in live.events].count("run_finished") == 2
    await manager.close()


async def test_idle_sessions_beyond_the_cap_leave_memory_but_stay_in_the_store() -> None:
    manager = _manager(max_idle_sessions=2)
    lives = [manager.live[await manager.create("alpha", "echo", f"q{i}")] for i in range(4)]
    await asyncio.gather(*(live.task for live in lives if live.task is not None))
    assert set(manager.live) == {lives[2].session_id, lives[3].session_id}
    rows = await manager.sessions("alpha", 10)
    assert {r.session_id for r in rows} == {live.session_id for live in lives}
    assert (await manager.state("alpha", lives[0].session_id)).best_answer() == "heard: q0"
    await manager.close()


async def test_a_stored_session_of_an_agent_no_longer_served_is_a_clear_409() -> None:
    from loopwright.serve import ApiError

    manager = _manager()
    live = manager.live[await manager.create("alpha", "echo", "first")]
    assert live.task is not None
    await live.task
    del manager.agents["echo"]
    with pytest.raises(ApiError) as err:
        await manager.message("alpha", live.session_id, "again", "follow_up")
    assert err.value.status == 409 and "does not serve" in err.value.message
    await manager.close()


async def test_a_factory_that_returns_no_agent_is_a_named_error() -> None:
    # was: AttributeError ('int' object has no attribute 'config'): a plain-text 500
    from loopwright.serve import ApiError
    from loopwright.serve.sessions import SessionManager

    manager = SessionManager({"odd": lambda: 5}, MemoryStore())  # type: ignore[dict-item]
    with pytest.raises(ApiError) as err:
        await manager.create("alpha", "odd", "hi")
    assert err.value.status == 500 and err.value.code == "agent_factory_failed"
    assert "returned int, not an Agent" in err.value.message
    await manager.close()


async def test_listing_shows_only_the_tenants_own_sessions() -> None:
    manager = _manager()
    mine = manager.live[await manager.create("alpha", "echo", "a")]
    theirs = manager.live[await manager.create("bravo", "echo", "b")]
    await asyncio.gather(*(x.task for x in (mine, theirs) if x.task is not None))
    assert [r.session_id for r in await manager.sessions("alpha", 10)] == [mine.session_id]
    assert [r.session_id for r in await manager.sessions("bravo", 10)] == [theirs.session_id]
    from loopwright.serve.sessions import tenant_tag

    assert len(tenant_tag("alpha")) == 16
    await manager.close()


async def test_listing_asks_the_store_for_one_tenants_page_only() -> None:
    """The tenant filter and the limit go into the store's query: a server with many
    tenants does not list every stored session to show one tenant a page."""
    from loopwright.serve.sessions import tenant_tag

    manager = _manager()
    lives = [manager.live[await manager.create("alpha", "echo", str(k))] for k in range(3)]
    await asyncio.gather(*(x.task for x in lives if x.task is not None))
    asked: list[dict[str, object]] = []
    listing = manager.store.sessions

    def sessions(**kwargs: object) -> list:
        asked.append(kwargs)
        return listing(**kwargs)  # type: ignore[arg-type]

    manager.store.sessions = sessions  # type: ignore[method-assign]
    rows = await manager.sessions("alpha", 2)
    assert asked == [{"limit": 2, "prefix": f"s-{tenant_tag('alpha')}-"}]
    assert len(rows) == 2 and {r.session_id for r in rows} <= {x.session_id for x in lives}
    await manager.close()


@pytest.mark.parametrize("at_boundary", [True, False])
async def test_cancel_at_a_boundary_lets_the_running_tool_finish(at_boundary: bool) -> None:
    """What a server handing a run over uses: the tool in flight completes and its result
    is kept; a plain cancel cuts it off."""
    from loopwright.providers.scripted import tool_call
    from loopwright.tools import tool

    finished: list[str] = []
    started = asyncio.Event()

    @tool
    async def work(n: int) -> str:
        """Work a while."""
        started.set()
        await asyncio.sleep(0.2)
        finished.append(f"w{n}")
        return f"worked {n}"

    def reply(messages, request):
        return [tool_call("work", {"n": 1}, id="c1")]

    run = Agent(FunctionModel(reply), [work]).start("go", events=False)
    await asyncio.wait_for(started.wait(), 10)  # the tool is running
    run.cancel(at_boundary=at_boundary)
    result = await run.result()
    assert result.stop.value == "cancelled"
    results = [r for m in result.messages for r in m.tool_results_parts]
    assert [r.is_error for r in results] == [not at_boundary]
    assert finished == (["w1"] if at_boundary else [])


@pytest.mark.parametrize(
    "data",
    [
        {"text": "héllo ✓ 😀", "n": 1, "f": 7.004400322330184e-05, "ok": True, "none": None},
        {"nested": [{"a": [1, 2.5, "x"]}, []], "tab\there": "line\nbreak"},
        {"nan": float("nan"), "inf": [float("inf"), -float("inf")]},
        {"lone": "a\ud800b", "pair": "\ud83d\ude00"},
        {"big": 2**70, "neg": -(2**65)},
        {1: "int key", "k": {2.5: "float key"}},
    ],
)
def test_event_json_writes_what_to_json_writes(data: dict) -> None:
    """Events are encoded on the fast path; whatever it refuses (surrogates, huge
    integers, keys that are not strings) falls back, and the JSON value is always the
    one ``to_json`` writes: non-finite floats as null, text that encodes as UTF-8."""
    from loopwright.core.text import to_json
    from loopwright.serve.eventlog import event_json

    text = event_json(data)
    text.encode("utf-8")  # never a lone surrogate
    assert json.loads(text) == json.loads(to_json(data))


async def test_a_session_is_described_from_memory_until_its_run_starts() -> None:
    """The client's ``GET .../events`` right after the 201 is answered with the state
    the session was just stored with, not a store read (one per session at load)."""
    from loopwright.core.run import RunState
    from loopwright.serve.sessions import SessionManager

    store = MemoryStore()
    loads: list[str] = []
    load = store.load

    def counting(session_id: str, checkpoint: int | None = None) -> RunState:
        loads.append(session_id)
        return load(session_id, checkpoint)

    store.load = counting  # type: ignore[method-assign]
    echo = Agent(FunctionModel(lambda messages, request: "hi " + messages[-1].text))
    manager = SessionManager({"echo": echo}, store)
    try:
        sid = await manager.create("alpha", "echo", "there")
        state = await manager.state("alpha", sid)
        assert [m.text for m in state.messages] == ["there"] and loads == []
        task = manager.live[sid].task
        assert task is not None
        await task
        assert manager.live[sid].created is None  # the run started: its state is live
        assert (await manager.state("alpha", sid)).messages[-1].text == "hi there"
    finally:
        await manager.close()


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: DurableConfig(lock_ttl=0), "lock_ttl"),
        (lambda: AppConfig(max_body=-5), "max_body"),
        (lambda: AppConfig(recover_every=-1), "recover"),
        (lambda: ServeConfig(store_threads=0), "threads"),
        (lambda: ServeConfig(drain=float("nan")), "drain"),
        (
            lambda: ClusterConfig("redis://x", max_runs=-1),
            "max_runs",
        ),
    ],
)
def test_serve_and_durable_configs_refuse_bad_numbers(build: object, field: str) -> None:
    # a lock_ttl of 0 let a second process take a running session; a negative body limit
    # answered every request 413; store_threads=0 failed at startup as an internal error
    with pytest.raises(UserError, match=field):
        build()  # type: ignore[operator]


@pytest.mark.parametrize("flag", [["--max-body", "-5"], ["--port", "99999"], ["--lock-ttl", "0"]])
def test_serve_command_refuses_bad_numbers_before_starting(flag: list[str]) -> None:
    from click.testing import CliRunner

    from loopwright.cli.main import main

    result = CliRunner().invoke(main, ["serve", "--agents", "nowhere:agents", *flag])
    assert result.exit_code == 2 and flag[0] in result.output


def test_serve_on_a_port_in_use_is_a_usage_error_not_a_store_error(tmp_path: Path) -> None:
    # was: uvicorn's startup failure exit (3) with no loopwright error: 3 reads as
    # "store error" in this CLI's exit codes
    import socket
    import subprocess
    import sys

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [
                *(sys.executable, "-m", "loopwright.cli", "serve"),
                *("--agents", "served_agents:agents", "--port", str(port)),
                *("--store-url", str(tmp_path / "s.db")),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).parent,
            env={**os.environ, "LOOPWRIGHT_SERVE_KEYS": "key-alpha-0001=alpha"},
        )
    assert proc.returncode == 2, proc.stderr
    assert f"could not start listening on 127.0.0.1:{port}" in proc.stderr
