"""``loopwright batch --engine ray`` end to end, through the real command, on a Ray
started once for this module (two CPUs on this machine), with the stand-in agent of
``batch_agents.py``: results and progress, a worker that dies mid-chunk, resuming a
results file, per-task limits, strategies."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import shutil
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from batch_agents import marked_processes, time_server_config
from click.testing import CliRunner

from loopwright import Agent, FunctionModel, Reply, ScriptedModel, Usage
from loopwright.batch import RayEngine, make_tasks, run_batch
from loopwright.cli.main import main
from loopwright.core.errors import UserError

AGENTS = Path(__file__).with_name("batch_agents.py")


@pytest.fixture(scope="module")
def doc_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("batch-doc")


@pytest.fixture(scope="module", autouse=True)
def ray_session(doc_dir: Path) -> Iterator[None]:
    # Ray hands the driver's sys.path to its workers when it starts: the docs' module
    # (imported by the Python example) must be importable there too
    sys.path.insert(0, str(doc_dir))
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="warning")
    yield
    ray.shutdown()
    sys.path.remove(str(doc_dir))


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with the agents module, as a user would run the command from."""
    shutil.copy(AGENTS, tmp_path / "batch_agents.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _batch(prompts: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(
        main,
        ["batch", str(prompts), "--engine", "ray", "--agent", "batch_agents:standin", *args],
    )


def _write(path: Path, lines: list[object]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _results(path: Path) -> dict[str, dict]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    by_task = {r["task"]: r for r in records}
    assert len(by_task) == len(records), "a task was recorded twice"
    return by_task


def test_every_prompt_answered_once_with_progress(workdir: Path) -> None:
    prompts = _write(
        workdir / "p.jsonl", [f"q{i}" for i in range(20)] + [{"prompt": "x", "id": "x"}]
    )
    out = _batch(prompts, "--chunk-size", "3", "--concurrency", "2")
    assert out.exit_code == 0, out.output
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert sorted(x["answer"] for x in lines) == sorted(
        [f"echo q{i}" for i in range(20)] + ["echo x"]
    )
    assert {x["attempts"] for x in lines} == {1}
    progress = out.stderr.strip().splitlines()[-1]
    assert progress.startswith("batch 21/21 [####################]")
    assert "errors 0" in progress and "cost $5.2500" in progress


def test_each_worker_connects_its_mcp_servers_and_closes_them_with_the_chunk(
    workdir: Path,
) -> None:
    mark = f"batch-ray-{uuid.uuid4().hex}"
    config = time_server_config(workdir, mark)
    zones = ["Asia/Tokyo", "Europe/Paris", "UTC"]
    prompts = _write(workdir / "p.jsonl", [f"time {zone}" for zone in zones])
    out = _batch(prompts, "--mcp", str(config), "--chunk-size", "1", "--concurrency", "1")
    assert out.exit_code == 0, out.output
    answers = [json.loads(x)["answer"] for x in out.stdout.splitlines()]
    assert sorted(a.split('"timezone": "')[1].split('"')[0] for a in answers) == zones
    # the workers live on (the module's Ray session); their chunks' servers do not
    assert marked_processes(mark) == []


def test_a_worker_killed_mid_chunk_is_retried_and_each_task_recorded_once(workdir: Path) -> None:
    marks = workdir / "marks"
    marks.mkdir()
    prompts = _write(
        workdir / "p.jsonl",
        [{"prompt": f"count {marks} t{i}", "id": f"t{i}"} for i in range(3)]
        + [{"prompt": f"crash {marks} boom", "id": "boom"}],
    )
    results = workdir / "results.jsonl"
    out = _batch(prompts, "--out", str(results), "--chunk-size", "4", "--concurrency", "1")
    assert out.exit_code == 0, out.output
    by_task = _results(results)
    assert set(by_task) == {"t0", "t1", "t2", "boom"}
    assert by_task["boom"]["answer"] == "answer boom" and by_task["boom"]["attempts"] == 2
    assert "retries 4" in out.stderr  # the whole chunk ran again
    # the tasks of the lost chunk ran twice (their results never came back), recorded once
    assert all(len((marks / f"t{i}.calls").read_text().splitlines()) == 2 for i in range(3))


def test_a_resumed_batch_runs_only_the_unrecorded_tasks(workdir: Path) -> None:
    marks = workdir / "marks"
    marks.mkdir()
    prompts = _write(
        workdir / "p.jsonl", [{"prompt": f"count {marks} t{i}", "id": f"t{i}"} for i in range(6)]
    )
    results = workdir / "results.jsonl"
    # an earlier batch recorded t0 and t1, then died while writing t2's line
    results.write_text(
        '{"task": "t0", "answer": "before"}\n{"task": "t1", "answer": "before"}\n{"task": "t2"'
    )
    out = _batch(prompts, "--out", str(results))
    assert out.exit_code == 0, out.output
    assert "2 of 6 tasks are already recorded" in out.stderr
    by_task = _results(results)
    assert set(by_task) == {f"t{i}" for i in range(6)}
    assert by_task["t0"]["answer"] == "before" and by_task["t2"]["answer"] == "answer t2"
    assert sorted(p.stem for p in marks.glob("*.calls")) == ["t2", "t3", "t4", "t5"]
    out = _batch(prompts, "--out", str(results))  # everything recorded: nothing runs
    assert out.exit_code == 0 and "6 of 6 tasks are already recorded" in out.stderr
    assert len(list(marks.glob("*.calls"))) == 4
    assert all(len(p.read_text().splitlines()) == 1 for p in marks.glob("*.calls"))


def test_per_task_limits_are_honoured_on_the_workers(workdir: Path) -> None:
    prompts = _write(
        workdir / "p.jsonl",
        [
            {"prompt": "loop", "id": "turns"},
            {"prompt": "loop", "id": "own", "limits": {"max_turns": 2}},
            {"prompt": "loop", "id": "cost", "limits": {"max_turns": 20, "cost_budget": 0.6}},
            {"prompt": "slow", "id": "wall", "limits": {"timeout": 0.5}},
        ],
    )
    out = _batch(prompts, "--max-turns", "3", "--out", "r.jsonl")
    assert out.exit_code == 10, out.output  # the first failure in input order: max_turns
    by_task = _results(workdir / "r.jsonl")
    assert (by_task["turns"]["stop_reason"], by_task["turns"]["turns"]) == ("max_turns", 3)
    assert (by_task["own"]["stop_reason"], by_task["own"]["turns"]) == ("max_turns", 2)
    assert by_task["cost"]["stop_reason"] == "cost_budget"
    assert by_task["cost"]["usage"]["cost"] == 0.75  # checked after each turn: 3 x 0.25
    assert by_task["wall"]["stop_reason"] == "timeout"


def test_a_model_error_is_retried_when_asked_and_strategies_run(workdir: Path) -> None:
    marks = workdir / "marks"
    marks.mkdir()
    prompts = _write(workdir / "p.jsonl", [{"prompt": f"flaky {marks} f", "id": "f"}, "hello"])
    out = _batch(prompts, "--retry-on", "model_error", "--strategy", "self_refine")
    assert out.exit_code == 0, out.output
    by_task = {x["task"]: x for x in map(json.loads, out.stdout.splitlines())}
    assert by_task["f"]["attempts"] == 2
    assert by_task["#1"]["stop_reason"] == "final_answer" and by_task["#1"]["turns"] >= 2


def test_tracing_is_refused_with_the_ray_engine(workdir: Path) -> None:
    prompts = _write(workdir / "p.jsonl", ["a"])
    out = _batch(prompts, "--trace", str(workdir / "t"))
    assert out.exit_code == 2 and "--trace/--otel record runs in this process only" in out.stderr


# ------------------------------------------------------------------ docs/batch.md
DOC = Path(__file__).resolve().parents[2] / "docs" / "batch.md"
FENCE = re.compile(r"```(\w+)\n(.*?)```", re.S)
API = re.compile(r"```python\n([^`]*)```\n\n```text\n([^`]*)```")  # code, its output


def test_the_examples_of_docs_batch_md_run_as_shown(doc_dir: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(doc_dir)
    blocks = FENCE.findall(DOC.read_text(encoding="utf-8"))
    (agents,) = [
        code for lang, code in blocks if lang == "python" and code.startswith("# myagents.py")
    ]
    (doc_dir / "myagents.py").write_text(agents)
    (prompts,) = [code for lang, code in blocks if lang == "jsonl"]
    (doc_dir / "prompts.jsonl").write_text(prompts)
    (commands,) = [code for lang, code in blocks if lang == "bash"]
    texts = [code for lang, code in blocks if lang == "text"]
    sample = json.loads(texts[0])
    for command in commands.strip().splitlines():
        argv = shlex.split(command)
        assert argv[0] == "loopwright"
        out = CliRunner().invoke(main, argv[1:])
        assert out.exit_code == 0, out.output
        results = _results(doc_dir / argv[argv.index("--out") + 1])
        assert set(results) == {"#0", "fr", "hamlet"}
        assert results["fr"].keys() == sample.keys()
        assert {k: v for k, v in results["fr"].items() if k != "session_id"} == {
            k: v for k, v in sample.items() if k != "session_id"
        }
        progress = out.stderr.strip().splitlines()[-1]
        shown = texts[1].strip()
        assert progress.split(" ")[:3] == shown.split(" ")[:3]  # batch 3/3 [###...]
        assert "errors 0 cost $0.0030" in progress and "errors 0 cost $0.0030" in shown
    namespace: dict[str, object] = {"__name__": "batch_doc"}
    api = [(c, out) for c, out in API.findall(DOC.read_text(encoding="utf-8")) if "run_batch(" in c]
    assert len(api) == 2
    for code, expected in api:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "docs/batch.md", "exec", dont_inherit=True), namespace)
        assert printed.getvalue() == expected


# ------------------------------------------------------------------ the Python API
def test_an_agent_object_is_shipped_to_the_workers_as_it_is() -> None:
    out = io.StringIO()
    tasks = make_tasks([f"p{i}" for i in range(5)])
    engine = RayEngine(chunk_size=2, in_flight=2)
    agent = Agent(ScriptedModel([Reply("ok", usage=Usage(1, 1, cost=0.5))] * 5))
    summary = run_batch(agent, tasks, out, engine=engine)
    assert summary.ok and summary.done == 5 and summary.cost == 2.5
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert sorted(x["task"] for x in lines) == [f"#{i}" for i in range(5)]
    assert ray.is_initialized()  # it joined this module's Ray, and left it running


def _answer(messages, request):  # type: ignore[no-untyped-def]
    return "ok"


def test_an_agent_that_workers_cannot_import_ends_the_batch_with_a_usage_error(
    tmp_path: Path,
) -> None:
    # _answer lives in this test module, which the workers cannot import (Ray started
    # before pytest put its folder on sys.path): every task would fail the same way
    out = tmp_path / "results.jsonl"
    with pytest.raises(UserError, match="could not build the batch's agent: ModuleNotFound"):
        run_batch(Agent(FunctionModel(_answer)), make_tasks(["a", "b"]), out, engine=RayEngine())
    assert out.read_text() == ""


def test_a_source_that_cannot_be_pickled_is_a_usage_error() -> None:
    lock = threading.Lock()  # cannot be pickled

    def factory() -> Agent:
        with lock:
            return Agent(FunctionModel(_answer))

    with pytest.raises(UserError, match="cannot be sent to Ray workers"):
        run_batch(factory, make_tasks(["a"]), io.StringIO(), engine=RayEngine())


class _FlakyRay:
    """``ray.init`` failing the way a cluster's client proxy does when it could not start
    the per-client server, ``failures`` times, then succeeding."""

    def __init__(self, failures: int, message: str) -> None:
        self.failures = failures
        self.message = message
        self.calls: list[str | None] = []
        self.shutdowns = 0

    def init(self, address: str | None = None, **options: object) -> None:
        self.calls.append(address)
        if len(self.calls) <= self.failures:
            raise ConnectionAbortedError(self.message)  # what Ray Client raises

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_joining_through_ray_client_tries_again_when_the_proxy_could_not_start_a_server() -> None:
    from loopwright.batch.ray_engine import CLIENT_SERVER_FAILED, JOIN_ATTEMPTS, _join_cluster

    flaky = _FlakyRay(1, f"Initialization failure from server: {CLIENT_SERVER_FAILED}. See ...")
    _join_cluster(flaky, "ray://127.0.0.1:10001", {}, pause=0.0)
    assert flaky.calls == ["ray://127.0.0.1:10001"] * 2 and flaky.shutdowns == 1
    hopeless = _FlakyRay(JOIN_ATTEMPTS, CLIENT_SERVER_FAILED)
    with pytest.raises(ConnectionError, match=CLIENT_SERVER_FAILED):
        _join_cluster(hopeless, "ray://127.0.0.1:10001", {}, pause=0.0)
    assert len(hopeless.calls) == JOIN_ATTEMPTS
    other = _FlakyRay(1, "some other failure")  # not the proxy's: raised at once
    with pytest.raises(ConnectionError, match="some other failure"):
        _join_cluster(other, "ray://127.0.0.1:10001", {}, pause=0.0)
    local = _FlakyRay(1, CLIENT_SERVER_FAILED)  # not a Ray Client address
    with pytest.raises(ConnectionError):
        _join_cluster(local, "auto", {}, pause=0.0)
    assert len(other.calls) == len(local.calls) == 1
