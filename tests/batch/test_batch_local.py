"""The batch driver on the local engine: bounded concurrency, retries, exactly-once
results, resuming a results file, the progress line."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from batch_agents import marked_processes, standin, time_server_config

from loopwright import Agent, FunctionModel, Hooks, Reply, Usage
from loopwright.batch import (
    BatchConfig,
    BatchTask,
    LocalEngine,
    Progress,
    TaskOutcome,
    WorkLost,
    make_tasks,
    run_batch,
)
from loopwright.core.events import RunEvent


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def _echo(calls: list[str] | None = None) -> Agent:
    def reply(messages, request):  # type: ignore[no-untyped-def]
        if calls is not None:
            calls.append(messages[-1].text)
        return Reply("ok " + messages[-1].text, usage=Usage(1, 1, cost=0.5))

    return Agent(FunctionModel(reply))


def test_at_most_n_runs_at_a_time() -> None:
    state = {"now": 0, "peak": 0}

    async def reply(messages, request):  # type: ignore[no-untyped-def]
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return "ok " + messages[-1].text

    out = io.StringIO()
    tasks = make_tasks([f"p{i}" for i in range(12)])
    summary = run_batch(Agent(FunctionModel(reply)), tasks, out, config=BatchConfig(concurrency=3))
    assert state["peak"] == 3
    assert summary.ok and summary.done == 12
    lines = _records(out.getvalue())
    assert sorted(x["answer"] for x in lines) == sorted(f"ok p{i}" for i in range(12))
    assert {x["attempts"] for x in lines} == {1}


def test_a_run_that_raises_is_retried_and_recorded_once() -> None:
    raised: set[str] = set()

    def hook(event: RunEvent) -> None:  # raises inside the run, once per prompt "bad"
        if "bad" not in raised:
            raised.add("bad")
            raise RuntimeError("the subscriber fell over")

    agent = Agent(FunctionModel(lambda m, r: "fine"), hooks=Hooks(on_event=hook))
    out = io.StringIO()
    summary = run_batch(agent, make_tasks(["bad"]), out, config=BatchConfig(retry_delay=0))
    (line,) = _records(out.getvalue())
    assert line["answer"] == "fine" and line["attempts"] == 2
    assert summary.retries == 1 and summary.ok


def test_a_run_that_keeps_raising_is_recorded_as_internal_error() -> None:
    def hook(event: RunEvent) -> None:
        raise RuntimeError("always")

    agent = Agent(FunctionModel(lambda m, r: "x"), hooks=Hooks(on_event=hook))
    out = io.StringIO()
    config = BatchConfig(retries=1, retry_delay=0)
    summary = run_batch(agent, make_tasks(["a"]), out, config=config)
    (line,) = _records(out.getvalue())
    assert line["stop_reason"] == "internal_error" and line["attempts"] == 2
    assert "RuntimeError: always" in line["error"]
    assert summary.failures == ("internal_error",)


def test_stop_reasons_are_final_unless_listed_in_retry_on() -> None:
    from loopwright.core.errors import BadRequest

    seen: list[str] = []

    def reply(messages, request):  # type: ignore[no-untyped-def]
        seen.append("call")
        return BadRequest("no") if len(seen) == 1 else "second time lucky"

    out = io.StringIO()
    run_batch(Agent(FunctionModel(reply)), make_tasks(["q"]), out, config=BatchConfig())
    assert _records(out.getvalue())[0]["stop_reason"] == "model_error"
    seen.clear()
    out = io.StringIO()
    config = BatchConfig(retry_on=frozenset({"model_error"}), retry_delay=0)
    run_batch(Agent(FunctionModel(reply)), make_tasks(["q"]), out, config=config)
    (line,) = _records(out.getvalue())
    assert line["answer"] == "second time lucky" and line["attempts"] == 2


class _Redelivering(LocalEngine):
    """An engine that hands every outcome back twice, and loses the first chunk it is
    given after running it (as when a worker dies after its runs finished)."""

    def __init__(self) -> None:
        super().__init__()
        self.lost_once = False

    async def run(self, tasks: Sequence[BatchTask]) -> Sequence[TaskOutcome]:
        outcomes = await super().run(tasks)
        if not self.lost_once:
            self.lost_once = True
            raise WorkLost("the worker died after running its chunk")
        return [*outcomes, *outcomes]


def test_a_task_executed_again_still_gives_one_result_line() -> None:
    calls: list[str] = []
    out = io.StringIO()
    config = BatchConfig(concurrency=2, retry_delay=0)
    summary = run_batch(
        _echo(calls), make_tasks(["a", "b", "c"]), out, engine=_Redelivering(), config=config
    )
    lines = _records(out.getvalue())
    assert sorted(x["task"] for x in lines) == ["#0", "#1", "#2"]  # one line each
    assert len(calls) == 4  # the lost task ran twice
    assert summary.retries == 1 and summary.done == 3


def test_a_resumed_results_file_runs_only_what_it_lacks(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    tasks = make_tasks(["a", {"prompt": "b", "id": "bee"}, "c"])
    results.write_text('{"task": "bee", "answer": "from before"}\n{"task": "#2", "ans')
    calls: list[str] = []
    summary = run_batch(_echo(calls), tasks, results)
    assert sorted(calls) == ["a", "c"]
    assert (summary.total, summary.skipped, summary.done) == (3, 1, 2)
    assert sorted(x["task"] for x in _records(results.read_text())) == ["#0", "#2", "bee"]
    calls.clear()
    summary = run_batch(_echo(calls), tasks, results)
    assert calls == [] and summary.skipped == 3


def test_per_task_limits_are_laid_over_the_batch_limits() -> None:
    from loopwright import tool, tool_call
    from loopwright.loop import Limits

    @tool
    def ping() -> str:
        """Pong."""
        return "pong"

    agent = Agent(
        FunctionModel(lambda m, r: Reply([tool_call("ping", {})], usage=Usage(1, 1, cost=1.0))),
        [ping],
    )
    tasks = make_tasks(
        [
            {"prompt": "a", "id": "turns", "limits": {"max_turns": 2}},
            {"prompt": "b", "id": "cost", "limits": {"cost_budget": 2.5}},
            {"prompt": "c", "id": "batch"},
        ]
    )
    out = io.StringIO()
    config = BatchConfig(limits=Limits(max_turns=5, repeat_limit=None))
    run_batch(agent, tasks, out, config=config)
    by_task = {x["task"]: x for x in _records(out.getvalue())}
    assert (by_task["turns"]["stop_reason"], by_task["turns"]["turns"]) == ("max_turns", 2)
    assert by_task["cost"]["stop_reason"] == "cost_budget" and by_task["cost"]["turns"] == 3
    assert (by_task["batch"]["stop_reason"], by_task["batch"]["turns"]) == ("max_turns", 5)


def test_progress_redraws_one_line_on_a_terminal() -> None:
    stream = _Tty()
    progress = Progress(2, stream)
    progress.add(True, 0.25)
    progress.retried()
    progress.add(False, 0.5)
    text = stream.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    assert "batch 2/2" in text and "errors 1" in text and "retries 1" in text
    assert "cost $0.7500" in text


def test_progress_without_a_terminal_is_rate_limited() -> None:
    stream = io.StringIO()
    progress = Progress(1000, stream, interval=3600)
    for _ in range(999):
        progress.add(True, 0.0)
    assert stream.getvalue().count("\n") == 1  # the first line only
    progress.add(True, 0.0)
    assert stream.getvalue().splitlines()[-1].startswith("batch 1000/1000")


def test_the_batch_progress_counts_the_cost_of_every_attempt() -> None:
    stream = io.StringIO()
    summary = run_batch(_echo(), make_tasks(["a", "b"]), io.StringIO(), progress=stream)
    assert summary.cost == 1.0
    assert stream.getvalue().splitlines()[-1].startswith("batch 2/2 [####################]")
    assert "cost $1.0000" in stream.getvalue()


# ------------------------------------------------------------------ the command line
def _cli(tmp_path: Path, monkeypatch, *args: str):  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from loopwright.cli.main import main

    shutil.copy(Path(__file__).with_name("batch_agents.py"), tmp_path / "batch_agents.py")
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(main, ["batch", *args, "--agent", "batch_agents:standin"])


def test_a_strategy_the_model_cannot_run_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from loopwright.cli.main import main

    shutil.copy(Path(__file__).with_name("batch_agents.py"), tmp_path / "batch_agents.py")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.jsonl").write_text('"hi"\n')
    args = [
        "batch",
        "p.jsonl",
        "--strategy",
        "tree_of_thoughts",
        "--agent",
        "batch_agents:formatless",
    ]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2 and "--strategy tree_of_thoughts: " in out.output
    assert "--model" in out.output and '"task"' not in out.output  # no task ran


def test_the_local_engine_through_the_command(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    marks = tmp_path / "marks"
    marks.mkdir()
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(
        '"hi"\n'
        f'{{"prompt": "flaky {marks} f", "id": "f"}}\n'
        '{"prompt": "loop", "id": "L", "limits": {"max_turns": 2}}\n'
    )
    out = _cli(tmp_path, monkeypatch, str(prompts), "--out", "r.jsonl", "--retry-on", "model_error")
    assert out.exit_code == 10, out.output  # L stopped at max_turns
    by_task = {x["task"]: x for x in _records((tmp_path / "r.jsonl").read_text())}
    assert by_task["#0"]["answer"] == "echo hi" and by_task["f"]["attempts"] == 2
    assert by_task["L"]["stop_reason"] == "max_turns" and by_task["L"]["attempts"] == 1
    assert "batch 3/3" in out.stderr and "retries 1" in out.stderr


def test_usage_errors_of_the_command(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('"hi"\n')
    out = _cli(tmp_path, monkeypatch, str(prompts), "--address", "auto")
    assert out.exit_code == 2 and "--address is for --engine ray" in out.stderr
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    out = _cli(tmp_path, monkeypatch, str(prompts), "--engine", "ray")
    assert out.exit_code == 2 and "pip install 'loopwright[ray]'" in out.stderr


def test_ray_is_not_imported_unless_a_ray_engine_starts() -> None:
    code = (
        "import sys, loopwright, loopwright.batch, loopwright.cli.main; "
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_without_an_address_ray_starts_its_own_cluster_unless_ray_address_says(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    # "local": never the cluster named by the address file `ray start` leaves behind
    # (ray.init() with no address would join it, or fail on it once that node is gone)
    from loopwright.batch import RayEngine

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert RayEngine()._address() == "local"
    assert RayEngine("auto")._address() == "auto"
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    assert RayEngine()._address() is None  # Ray reads its own variable


async def test_an_interrupted_batch_keeps_what_it_recorded_and_resumes(tmp_path: Path) -> None:
    from loopwright.batch import arun_batch

    results = tmp_path / "results.jsonl"
    calls: list[str] = []

    async def reply(messages, request):  # type: ignore[no-untyped-def]
        calls.append(messages[-1].text)
        if messages[-1].text.startswith("slow"):
            await asyncio.sleep(30)
        return "done " + messages[-1].text

    tasks = make_tasks(["a", "b", "slow1", "slow2"])
    agent = Agent(FunctionModel(reply))
    batch = asyncio.ensure_future(
        arun_batch(agent, tasks, results, config=BatchConfig(concurrency=4))
    )
    for _ in range(1000):  # until the two quick runs are recorded
        if results.exists() and results.read_text().count("\n") == 2:
            break
        await asyncio.sleep(0.01)
    batch.cancel()  # Ctrl-C: the slow runs are cut off, the file is closed and unlocked
    with contextlib.suppress(asyncio.CancelledError):
        await batch
    assert sorted(x["task"] for x in _records(results.read_text())) == ["#0", "#1"]
    calls.clear()

    async def quick(messages, request):  # type: ignore[no-untyped-def]
        calls.append(messages[-1].text)
        return "done " + messages[-1].text

    summary = await arun_batch(Agent(FunctionModel(quick)), tasks, results)
    assert sorted(calls) == ["slow1", "slow2"] and summary.skipped == 2
    assert sorted(x["task"] for x in _records(results.read_text())) == ["#0", "#1", "#2", "#3"]


def test_mcp_servers_are_connected_once_for_the_batch_and_closed_after(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from loopwright.mcp import MCPToolset

    connects: list[object] = []
    connect = MCPToolset.connect
    monkeypatch.setattr(
        MCPToolset, "connect", lambda servers: connects.append(1) or connect(servers)
    )
    mark = f"batch-local-{uuid.uuid4().hex}"
    config = time_server_config(tmp_path, mark)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('"time Asia/Tokyo"\n"time Europe/Paris"\n"time UTC"\n')
    out = _cli(tmp_path, monkeypatch, str(prompts), "--mcp", f"{config}#time", "--concurrency", "2")
    assert out.exit_code == 0, out.output
    answers = [x["answer"] for x in _records(out.stdout)]
    zones = sorted(a.split('"timezone": "')[1].split('"')[0] for a in answers)
    assert zones == ["Asia/Tokyo", "Europe/Paris", "UTC"], answers
    assert len(connects) == 1  # one connection serves every prompt of the batch
    assert marked_processes(mark) == []  # closed when the batch ended, not at exit


def test_a_bad_mcp_server_is_a_usage_error_before_any_prompt(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('"hi"\n')
    out = _cli(
        tmp_path, monkeypatch, str(prompts), "--mcp", "no-such-mcp-server-xyz", "--out", "r.jsonl"
    )
    assert out.exit_code == 2, out.output
    assert "no-such-mcp-server-xyz" in out.stderr and not (tmp_path / "r.jsonl").exists()


def test_bad_prompt_lines_are_all_named_before_any_prompt_runs(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('"hi"\n{"prompt": "a", "id": ""}\nnot json\n')
    out = _cli(tmp_path, monkeypatch, str(prompts), "--out", "r.jsonl")
    assert out.exit_code == 2, out.output
    assert "p.jsonl:2: 'id' is empty" in out.stderr and "p.jsonl:3: not JSON" in out.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_a_source_giving_a_context_manager_holds_it_for_the_whole_batch() -> None:
    events: list[str] = []

    @contextlib.contextmanager
    def source() -> Iterator[Agent]:
        events.append("enter")
        yield _echo(events)
        events.append("exit")

    summary = run_batch(source, make_tasks(["a", "b"]), io.StringIO())
    assert summary.done == 2
    assert events[0] == "enter" and events[-1] == "exit"
    assert sorted(events[1:-1]) == ["a", "b"]


def test_run_batch_passes_mcp_servers_on(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from loopwright.cli import agents as agents_mod
    from loopwright.cli.main import main

    model = standin().config.model  # `run` has no --agent: the stand-in's model instead
    monkeypatch.setattr(agents_mod, "resolve", lambda spec, base_url, on_payload: model)
    config = time_server_config(tmp_path, f"run-batch-{uuid.uuid4().hex}")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('"time UTC"\n')
    argv = ["run", "--batch", str(prompts), "--mcp", str(config), "--tools", ""]
    out = CliRunner().invoke(main, argv)
    assert out.exit_code == 0, out.output
    (record,) = _records(out.stdout)
    assert '"timezone": "UTC"' in record["answer"]
