"""JSONL traces: one file per run, every event, redacted, written off the event loop."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from loopwright import Agent, Hooks, Reply, ScriptedModel, tool, tool_call
from loopwright.core.errors import ConfigError
from loopwright.core.events import RunEvent
from loopwright.tracing import REDACTED, JsonlRecorder, fanout, redact


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_event_lands_in_one_file_per_run(tmp_path: Path) -> None:
    recorder = JsonlRecorder(tmp_path)
    seen: list[RunEvent] = []
    model = ScriptedModel([[tool_call("add", {"a": 1, "b": 2})], "3"], chunk_size=1)
    agent = Agent(model, [add], hooks=Hooks(on_event=fanout(recorder, seen.append)))
    result = agent.run("1+2?")
    recorder.close()

    (path,) = recorder.paths
    assert path.parent == tmp_path and path.suffix == ".jsonl"
    lines = _lines(path)
    header, events = lines[0], lines[1:]
    assert header["type"] == "trace_header" and header["format"] == 1
    assert header["session_id"] == result.session_id
    assert header["run_id"] == path.stem
    assert [e["type"] for e in events] == [e.type for e in seen]
    assert [e["seq"] for e in events] == list(range(1, len(seen) + 1))
    times = [e["t"] for e in events]
    assert times == sorted(times)
    finished = events[-1]
    assert (
        finished["result"]["answer"] == "3" and finished["result"]["stop_reason"] == "final_answer"
    )
    tool_done = next(e for e in events if e["type"] == "tool_call_finished")
    assert tool_done["call"]["arguments"] == {"a": 1, "b": 2}
    assert tool_done["result"]["content"] == "3"
    # deltas are recorded too (chunk_size=1: one per character)
    assert sum(1 for e in events if e["type"] == "model_streamed") >= 1


def test_concurrent_runs_write_separate_files(tmp_path: Path) -> None:
    recorder = JsonlRecorder(tmp_path)

    async def main() -> list[str]:
        agents = [
            Agent(
                ScriptedModel([Reply([tool_call("add", {"a": i, "b": 0})], delay=0.005), f"{i}"]),
                [add],
                hooks=Hooks(on_event=recorder),
            )
            for i in range(5)
        ]
        results = await asyncio.gather(*(a.arun(f"q{i}") for i, a in enumerate(agents)))
        return [r.answer for r in results]

    answers = asyncio.run(main())
    recorder.close()
    assert len(recorder.paths) == 5
    got = set()
    for path in recorder.paths:
        events = _lines(path)[1:]
        inputs = [e for e in events if e["type"] == "run_started"]
        assert len(inputs) == 1
        prompt = inputs[0]["input"]["parts"][0]["text"]
        answer = events[-1]["result"]["answer"]
        assert prompt == f"q{answer}"  # each file holds exactly its own run
        got.add(answer)
    assert got == set(answers)


def test_secrets_are_redacted_before_writing(tmp_path: Path) -> None:
    recorder = JsonlRecorder(tmp_path, payloads=True)

    class Leaky:
        name = "openai:gpt-4o"

        def __init__(self) -> None:
            self.inner = ScriptedModel(["the key is sk-proj-ABCDEFGHIJKLMNOPQRSTUV ok"])

        def stream(self, request):  # type: ignore[no-untyped-def]
            recorder.payload_hook(
                "request",
                {"headers": {"Authorization": "Bearer abcdefghijklmnop"}, "api_key": "k-123456"},
            )
            return self.inner.stream(request)

    Agent(Leaky(), hooks=Hooks(on_event=recorder)).run("hello")
    recorder.close()
    text = recorder.paths[0].read_text()
    assert "abcdefghijklmnop" not in text and "k-123456" not in text
    assert "sk-proj-ABCDEFGHIJKLMNOPQRSTUV" not in text
    payload = next(e for e in _lines(recorder.paths[0]) if e["type"] == "payload")
    assert payload["payload"] == {"headers": {"Authorization": REDACTED}, "api_key": REDACTED}


def test_redaction_keeps_token_counts() -> None:
    data = {
        "usage": {"input_tokens": 5, "max_tokens": 9},
        "x-goog-api-key": "AIzaSyA-secret",
        "url": "https://x.test/v1?key=abcdefghijklmnop&alt=sse",
        "note": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload",
    }
    out = redact(data)
    assert out["usage"] == {"input_tokens": 5, "max_tokens": 9}
    assert out["x-goog-api-key"] == REDACTED
    assert "abcdefghijklmnop" not in out["url"] and out["url"].endswith("&alt=sse")
    assert "eyJhbGci" not in out["note"]


def test_the_event_loop_thread_never_writes(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """File writes happen on the writer thread only (no I/O on the event loop)."""
    import builtins

    loop_thread = threading.get_ident()
    writers: set[int] = set()
    real_open = builtins.open

    def spy_open(file, mode="r", *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file).startswith(str(tmp_path)) and "a" in mode:
            writers.add(threading.get_ident())
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    recorder = JsonlRecorder(tmp_path)
    Agent(ScriptedModel(["a"]), hooks=Hooks(on_event=recorder)).run("q")
    recorder.close()
    assert writers and loop_thread not in writers


def test_flush_makes_a_running_trace_readable(tmp_path: Path) -> None:
    recorder = JsonlRecorder(tmp_path)
    Agent(ScriptedModel(["a"]), hooks=Hooks(on_event=recorder)).run("q")
    recorder.flush()
    assert _lines(recorder.paths[0])[-1]["type"] == "run_finished"
    Agent(ScriptedModel(["b"]), hooks=Hooks(on_event=recorder)).run("q2")
    recorder.close()
    assert len(recorder.paths) == 2


def test_events_fed_from_agent_stream(tmp_path: Path) -> None:
    """A recorder also works as a plain consumer of ``agent.stream``."""
    recorder = JsonlRecorder(tmp_path)

    async def main() -> None:
        agent = Agent(ScriptedModel([[tool_call("add", {"a": 1, "b": 1})], "2"]), [add])
        async for event in agent.stream("1+1?"):
            recorder(event)

    asyncio.run(main())
    recorder.close()
    (path,) = recorder.paths
    assert _lines(path)[-1]["result"]["answer"] == "2"


def test_raw_payloads_of_a_real_adapter(tmp_path: Path) -> None:
    """``payloads=True`` + ``on_payload=recorder.payload_hook``: the OpenAI Chat adapter's
    request and response payloads land in the trace, redacted."""
    import sys

    providers = Path(__file__).parents[1] / "providers"
    if str(providers) not in sys.path:
        sys.path.insert(0, str(providers))
    from contract import Answer
    from fakeserver import FakeServer
    from kit_openai import ChatKit

    kit = ChatKit()
    recorder = JsonlRecorder(tmp_path, payloads=True)
    with FakeServer() as server:
        server.push(
            kit.reply(Answer(text="Hi! Authorization: Bearer sk-proj-ABCDEFGHIJKLMNOPQRST"))
        )
        model = kit.model(server.url, on_payload=recorder.payload_hook)
        Agent(model, hooks=Hooks(on_event=recorder)).run("hello")
    recorder.close()
    lines = _lines(recorder.paths[0])
    payloads = [x for x in lines if x["type"] == "payload"]
    directions = [p["direction"] for p in payloads]
    assert "request" in directions
    request = next(p["payload"] for p in payloads if p["direction"] == "request")
    assert request["messages"][-1]["content"] == "hello"
    text = recorder.paths[0].read_text()
    assert "sk-proj-ABCDEFGHIJKLMNOPQRST" not in text and REDACTED in text


def test_a_bad_directory_fails_up_front_and_write_errors_are_kept(tmp_path: Path) -> None:
    import pytest

    from loopwright.core.errors import ConfigError

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot create the trace directory"):
        JsonlRecorder(blocker / "traces")
    recorder = JsonlRecorder(tmp_path / "t")
    (tmp_path / "t").rmdir()  # removed under the recorder's feet
    result = Agent(ScriptedModel(["a"]), hooks=Hooks(on_event=recorder)).run("q")
    recorder.close()
    assert result.ok  # the run is not affected
    assert isinstance(recorder.error, FileNotFoundError)


@pytest.mark.parametrize("directory", ["", "  ", None])
def test_an_empty_directory_is_refused(
    directory: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="trace directory"):
        JsonlRecorder(directory)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []
