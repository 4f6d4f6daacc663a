"""`loopwright run --trace/--otel/--batch` and `loopwright trace list/show/view`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopwright.cli import agents as run_mod
from loopwright.cli.main import main
from loopwright.core.errors import RateLimited
from loopwright.core.messages import Usage
from loopwright.providers.scripted import FunctionModel, Reply, ScriptedModel, tool_call


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch):
    def install(model: object) -> None:
        monkeypatch.setattr(run_mod, "resolve", lambda spec, base_url, on_payload: model)

    return install


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _record(tmp_path: Path, script, model: object, prompt: str = "What is 2 + 3?") -> Path:
    script(model)
    out = invoke("run", "--trace", str(tmp_path), "--json", prompt)
    assert "trace: " in out.stderr
    (path,) = [p for p in tmp_path.glob("*.jsonl") if p.stem in out.stderr]
    return path


def test_run_trace_writes_a_trace_and_names_it(tmp_path: Path, script) -> None:
    model = ScriptedModel(
        [
            Reply(
                [tool_call("calculator", {"expression": "2 + 3"})], usage=Usage(10, 5, cost=0.002)
            ),
            Reply("5", usage=Usage(20, 1, cost=0.001)),
        ],
        name="openai:gpt-4o",
    )
    path = _record(tmp_path, script, model)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["type"] == "trace_header"
    assert lines[-1]["type"] == "run_finished" and lines[-1]["result"]["answer"] == "5"


def test_trace_show_prints_the_tree(tmp_path: Path, script) -> None:
    model = ScriptedModel(
        [
            Reply([tool_call("calculator", {"expression": "2 +"})], usage=Usage(10, 5, cost=0.002)),
            Reply("sorry", usage=Usage(20, 1, cost=0.001)),
        ],
        name="openai:gpt-4o",
    )
    path = _record(tmp_path, script, model)
    out = invoke("trace", "show", path.stem[:17], "--dir", str(tmp_path))
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith(f"run {path.stem}") and "final_answer" in lines[0]
    assert "tokens 30→6" in lines[0] and "cost $0.0030" in lines[0] and "errors 1" in lines[0]
    assert lines[1].startswith("├─ chat gpt-4o") and "10→5 tok" in lines[1]
    assert lines[2].startswith("├─ execute_tool calculator") and "✗" in lines[2]
    assert lines[3].startswith("└─ chat gpt-4o")


def test_trace_list_shows_runs_and_cost_per_session(tmp_path: Path, script) -> None:
    for answer in ("a", "b"):
        _record(tmp_path, script, ScriptedModel([Reply(answer, usage=Usage(3, 1, cost=0.01))]))
    out = invoke("trace", "list", "--dir", str(tmp_path))
    assert out.exit_code == 0
    assert out.output.count("final_answer") == 2
    assert "cost per session:" in out.output and "$0.0100" in out.output
    rows = [
        json.loads(x)
        for x in invoke("trace", "list", "--dir", str(tmp_path), "--json").output.splitlines()
    ]
    assert len(rows) == 2 and rows[0]["run_id"] > rows[1]["run_id"]  # newest first
    assert rows[0]["cost"] == pytest.approx(0.01)


def test_trace_view_writes_self_contained_html(tmp_path: Path, script) -> None:
    model = ScriptedModel([[tool_call("calculator", {"expression": "1 + 1"})], "</script><b>2</b>"])
    path = _record(tmp_path, script, model)
    html = tmp_path / "run.html"
    out = invoke("trace", "view", str(path), "-o", str(html))
    assert out.exit_code == 0
    text = html.read_text()
    assert "http://" not in text and "https://" not in text  # nothing fetched
    assert "<script src" not in text and "<link" not in text
    assert "</script><b>" not in text  # the answer cannot close the data script
    assert text.count("</script>") == 2


def test_unknown_trace_is_a_usage_error(tmp_path: Path) -> None:
    out = CliRunner().invoke(main, ["trace", "show", "nope", "--dir", str(tmp_path)])
    assert out.exit_code == 2
    assert "no trace 'nope'" in out.stderr


def test_batch_writes_one_line_per_prompt_and_progress(tmp_path: Path, script) -> None:
    def reply(messages, request):  # type: ignore[no-untyped-def]
        text = messages[-1].text
        if text == "boom":
            return RateLimited("nope")
        return Reply(f"echo {text}", usage=Usage(2, 2, cost=0.5))

    script(FunctionModel(reply))
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('"one"\n\n{"prompt": "two", "id": "b"}\n"boom"\n{"prompt": "four"}\n')
    out = CliRunner().invoke(
        main,
        [
            "run",
            "--batch",
            str(prompts),
            "--concurrency",
            "2",
            "--max-turns",
            "2",
            "--trace",
            str(tmp_path / "t"),
        ],
    )
    assert out.exit_code == 18  # the code of the first run without an answer (model_error)
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert sorted(x["index"] for x in lines) == [0, 1, 2, 3]
    by_index = {x["index"]: x for x in lines}
    assert by_index[1]["id"] == "b" and by_index[1]["answer"] == "echo two"
    assert by_index[2]["stop_reason"] == "model_error"
    progress = out.stderr.strip().splitlines()[-1]
    assert progress.startswith("batch 4/4 [####################]")
    assert "errors 1" in progress and "cost $1.5000" in progress and "/s" in progress
    assert len(list((tmp_path / "t").glob("*.jsonl"))) == 4  # closed and flushed at the end


def test_batch_bad_line_is_a_usage_error(tmp_path: Path, script) -> None:
    script(ScriptedModel(["x"]))
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('"ok"\nnot json\n')
    out = CliRunner().invoke(main, ["run", "--batch", str(prompts)])
    assert out.exit_code == 2
    assert f"{prompts}:2: not JSON" in out.stderr


def test_run_without_prompt_or_batch_is_a_usage_error(script) -> None:
    script(ScriptedModel(["x"]))
    out = CliRunner().invoke(main, ["run", "--max-turns", "2"])
    assert out.exit_code == 2 and "--batch" in out.stderr


def test_run_otel_exports_to_the_configured_endpoint(
    tmp_path: Path, script, monkeypatch: pytest.MonkeyPatch
) -> None:
    import functools
    import threading
    from http.server import ThreadingHTTPServer

    from tests.tracing.test_tracing_otlp_export import _Receiver

    from loopwright.tracing import otel

    # the CLI makes its provider the global one; keep the test session's global untouched
    monkeypatch.setattr(
        otel, "configure_otlp", functools.partial(otel.configure_otlp, set_global=False)
    )
    requests: list = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Receiver,), {"requests": requests}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv(
            "OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}"
        )
        script(ScriptedModel(["hi"], name="anthropic:claude-sonnet-4-5"))
        out = invoke("run", "--otel", "hello")
        assert out.exit_code == 0
        assert requests and all(path == "/v1/traces" for path, _, _ in requests)
        assert b"invoke_agent loopwright" in b"".join(body for _, _, body in requests)
    finally:
        server.shutdown()
        server.server_close()


def test_trace_line_comes_after_a_streamed_answer(tmp_path: Path, script) -> None:
    script(ScriptedModel(["streamed answer"]))
    out = invoke("run", "--stream", "--trace", str(tmp_path), "hi")
    lines = [x for x in out.output.splitlines() if x.strip()]
    assert "streamed answer" in lines[-2] and lines[-1].startswith("trace: ")
