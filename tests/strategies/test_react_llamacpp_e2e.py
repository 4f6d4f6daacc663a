"""ReAct in text against the real ``llama_cpp.server`` serving the embedded model with a
plain chat template (``chatml``: no function calling). The 270M base model reasons
poorly; what is proven is the wire and the protocol: the server honours the stop
sequence (no reply invents an observation), every reply is parsed or answered with an
observation, and the run ends with a named stop, never an error."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopwright import Limits, RunStop, tool
from loopwright.core.events import ModelCallFinished, StrategyStep, ToolCallFinished
from loopwright.core.protocols import ModelSettings
from loopwright.providers.registry import resolve_model
from loopwright.strategies import ReActText

pytestmark = pytest.mark.embedded


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from loopwright.providers.local import default_model_path

    port = _free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path()),
        "--chat_format", "chatml", "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", "1", "--n_ctx", "2048",
    ]  # fmt: skip
    log: Path = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ})
        url = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"llama_cpp.server exited early:\n{log.read_text()[-2000:]}")
                try:
                    urllib.request.urlopen(url + "/models", timeout=1).read()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        pytest.fail("llama_cpp.server did not start within 60 s")
                    time.sleep(0.3)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


async def test_react_text_against_a_plain_chat_server(plain_server: str) -> None:
    sent: list[dict[str, object]] = []

    def hook(direction: str, payload: object) -> None:
        if direction == "request" and isinstance(payload, dict):
            sent.append(payload)

    model = resolve_model("openai:gemma-3-270m", base_url=plain_server, on_payload=hook)
    strategy = ReActText(
        model,
        [add],
        max_steps=3,
        settings=ModelSettings(max_tokens=48, temperature=0.0),
        limits=Limits(max_turns=None, timeout=120),
    )
    events: list[object] = []
    result = await strategy.arun("What is 2 + 3? Use the add tool.", on_event=events.append)
    assert result.stop in (RunStop.FINAL_ANSWER, RunStop.MAX_TURNS), result.detail
    assert sent and all(p.get("stop") == ["\nObservation:"] for p in sent)
    assert "tools" not in sent[0]  # plain text: no native tool definitions on the wire
    replies = [e.message.text for e in events if isinstance(e, ModelCallFinished)]
    assert replies and all("\nObservation:" not in r for r in replies)  # the stop held
    handled = [e for e in events if isinstance(e, (ToolCallFinished, StrategyStep))]
    # every reply became a final answer, a tool call or an observation naming the problem
    assert len(handled) >= len(replies)
