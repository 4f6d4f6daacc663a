"""Record/replay cassettes at the Model level: round trips, mismatches, redaction, and all
five wire protocols recorded through their real adapters against the fake servers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopwright import Agent, Reply, ScriptedModel, tool, tool_call
from loopwright.core.errors import RateLimited
from loopwright.core.events import ModelCallFailed, RunFinished
from loopwright.core.messages import Usage
from loopwright.testing.cassette import Cassette, CassetteMismatch
from loopwright.tracing import REDACTED


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            RateLimited("slow down"),
            Reply([tool_call("get_weather", {"city": "Paris"})], usage=Usage(12, 3, cost=0.001)),
            Reply("It is sunny in Paris.", usage=Usage(30, 6, cost=0.002)),
        ],
        name="openai:gpt-4o",
        chunk_size=3,
    )


async def _no_sleep(_: float) -> None:
    return None


def _events(agent: Agent, prompt: str) -> list[object]:
    import asyncio

    async def main() -> list[object]:
        return [e async for e in agent.stream(prompt)]

    return asyncio.run(main())


def test_record_then_replay_gives_the_same_run(tmp_path: Path) -> None:
    path = tmp_path / "weather.json"
    tape = Cassette(path, "record")
    recorded = _events(
        Agent(tape.model("openai:gpt-4o", _script), [get_weather], sleep=_no_sleep), "Weather?"
    )
    tape.finish()
    data = json.loads(path.read_text())
    assert data["model"] == "openai:gpt-4o" and len(data["interactions"]) == 3

    replay = Cassette(path)  # replay is the default mode
    model = replay.model("openai:gpt-4o")  # no real model, no key, no SDK
    replayed = _events(Agent(model, [get_weather], sleep=_no_sleep), "Weather?")
    replay.finish()

    def comparable(events: list[object]) -> list[object]:
        out = []
        for e in events:
            if isinstance(e, RunFinished):
                r = e.result
                out.append((r.answer, r.stop, r.turns, r.usage, [m.to_dict() for m in r.messages]))
            elif isinstance(e, ModelCallFailed):
                out.append((e.error.kind, str(e.error), e.attempt, e.will_retry))
            elif hasattr(e, "duration_s"):
                out.append(type(e).__name__)  # timings differ
            elif hasattr(e, "session_id"):
                out.append(type(e).__name__)
            else:
                out.append(e)
        return out

    assert comparable(replayed) == comparable(recorded)
    result = replayed[-1].result  # type: ignore[attr-defined]
    assert result.answer == "It is sunny in Paris." and result.usage.cost == pytest.approx(0.003)


def test_a_changed_request_fails_with_a_diff(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    tape = Cassette(path, "record")
    Agent(tape.model("openai:gpt-4o", _script), [get_weather], sleep=_no_sleep).run("Weather?")
    tape.finish()

    replay = Cassette(path)
    result = Agent(replay.model("openai:gpt-4o"), [get_weather], sleep=_no_sleep).run(
        "Weather in Rome?"
    )
    assert result.stop.value == "model_error" and "differs from the recording" in result.detail
    with pytest.raises(CassetteMismatch) as info:
        replay.finish()
    diff = str(info.value)
    assert '-          "text": "Weather?"' in diff
    assert '+          "text": "Weather in Rome?"' in diff


def test_tools_and_settings_are_part_of_the_match(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    tape = Cassette(path, "record")
    Agent(tape.model("x:m", lambda: ScriptedModel(["hi"])), [get_weather]).run("q")
    tape.finish()
    replay = Cassette(path)
    Agent(replay.model("x:m")).run("q")  # the tool list changed
    with pytest.raises(CassetteMismatch, match='-      "name": "get_weather"'):
        replay.finish()
    # a narrower match ignores the tools
    loose = Cassette(path, match=("messages", "system"))
    assert Agent(loose.model("x:m")).run("q").answer == "hi"
    loose.finish()


def test_calls_never_made_and_calls_never_recorded_fail(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    tape = Cassette(path, "record")
    Agent(tape.model("s", _script), [get_weather], sleep=_no_sleep).run("Weather?")
    tape.finish()
    short = Cassette(path)
    short.interactions = short.interactions[:2]
    assert (
        Agent(short.model("s"), [get_weather], sleep=_no_sleep).run("Weather?").stop.value
        == "model_error"
    )
    with pytest.raises(CassetteMismatch, match="call #3 was not recorded"):
        short.finish()
    unused = Cassette(path)
    unused.interactions.append(unused.interactions[-1])
    Agent(unused.model("s"), [get_weather], sleep=_no_sleep).run("Weather?")
    with pytest.raises(CassetteMismatch, match="1 recorded model call"):
        unused.finish()


def test_secrets_never_reach_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    tape = Cassette(path, "record")
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0"
    model = lambda: ScriptedModel([f"your key is {secret}"])  # noqa: E731
    Agent(tape.model("s", model), system=f"Authorization: Bearer {secret}").run(f"key {secret}")
    tape.finish()
    text = path.read_text()
    assert secret not in text and REDACTED in text


def test_missing_cassette_says_how_to_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOPWRIGHT_CASSETTE_MODE", raising=False)
    with pytest.raises(FileNotFoundError, match="LOOPWRIGHT_CASSETTE_MODE=record"):
        Cassette(tmp_path / "nope.json")
    monkeypatch.setenv("LOOPWRIGHT_CASSETTE_MODE", "auto")
    assert Cassette(tmp_path / "nope.json").recording


# ------------------------------------------------------------------ the five protocols


PROVIDER_TESTS = Path(__file__).parents[1] / "providers"


def _kits() -> list[object]:
    # the provider suite's kits and fake server are imported by their top-level names
    import sys

    if str(PROVIDER_TESTS) not in sys.path:
        sys.path.insert(0, str(PROVIDER_TESTS))
    from contract import load_kits

    return load_kits()


@pytest.mark.parametrize("kit", _kits(), ids=lambda k: k.name)
def test_every_protocol_records_and_replays(kit, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from contract import Answer, Call
    from fakeserver import FakeServer

    path = tmp_path / f"{kit.name}.json"
    tape = Cassette(path, "record")
    with FakeServer() as server:
        server.push(
            kit.reply(
                Answer(calls=(Call("call_1", "get_weather", {"city": "Paris"}),), stop="tool_use")
            ),
            kit.reply(Answer(text="Sunny in Paris.", usage=(40, 5, 0, 0))),
        )
        model = tape.wrap(kit.model(server.url))
        live = Agent(model, [get_weather]).run("Weather in Paris?")
        assert len(server.requests) == 2
    tape.finish()
    assert live.answer == "Sunny in Paris."

    # the server is gone: replay needs no network and gives the same conversation
    replay = Cassette(path)
    again = Agent(replay.model(model.name), [get_weather]).run("Weather in Paris?")
    replay.finish()
    assert again.answer == live.answer and again.usage == live.usage
    assert [m.to_dict() for m in again.messages] == [m.to_dict() for m in live.messages]
    assert "sk-test" not in path.read_text()


# ------------------------------------------------------------------ the pytest plugin


def test_pytest_fixture_and_marker(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "conftest.py").write_text(
        'pytest_plugins = ["loopwright.testing.cassette_pytest"]\n'
    )
    test = tmp_path / "test_agent.py"
    body = '''
import pytest
from loopwright import Agent, ScriptedModel, tool, tool_call

@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b

def model():
    return ScriptedModel([[tool_call("add", {"a": 2, "b": 3})], "5"], name="openai:gpt-4o")

def test_default_path(cassette):
    assert Agent(cassette.model("openai:gpt-4o", model), [add]).run("PROMPT").answer == "5"

@pytest.mark.cassette("tapes/add.json")
def test_marker_path(cassette):
    assert Agent(cassette.model("openai:gpt-4o", model), [add]).run("PROMPT").answer == "5"
'''
    test.write_text(body.replace("PROMPT", "2+3?"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def pytest_run(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
            cwd=tmp_path,
            env={**env, "LOOPWRIGHT_CASSETTE_MODE": mode},
            capture_output=True,
            text=True,
            timeout=120,
        )

    recorded = pytest_run("record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert (tmp_path / "cassettes" / "test_agent" / "test_default_path.json").exists()
    assert (tmp_path / "tapes" / "add.json").exists()
    replayed = pytest_run("replay")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    test.write_text(body.replace("PROMPT", "3+2?"))
    changed = pytest_run("replay")
    assert changed.returncode == 1
    assert '+          "text": "3+2?"' in changed.stdout
