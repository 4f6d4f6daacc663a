"""Dropping a model whose SDK client was built on an event loop that has since closed, while
a new loop runs, must print nothing: the SDKs' own clients used to schedule ``aclose()`` from
``__del__`` on the new loop ("Event loop is closed" from a never-retrieved task)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent

SCRIPT = """
import asyncio, gc, sys
sys.path.insert(0, {here!r})
from contract import USER, PLAIN, load_kits, request
from fakeserver import FakeServer
from loopwright.core.protocols import complete

kit = next(k for k in load_kits() if k.name == {kit!r})
with FakeServer() as server:
    server.push(kit.reply(PLAIN))
    model = kit.model(server.url)
    final = asyncio.run(complete(model, request([USER])))
    print(type(final).__name__)

    async def later():
        global model
        del model
        gc.collect()
        await asyncio.sleep(0.2)

    asyncio.run(later())
    gc.collect()
"""


@pytest.mark.parametrize("kit", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_dropping_a_model_on_a_new_event_loop_prints_nothing(kit):
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(here=str(HERE), kit=kit)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ResponseDone", proc.stdout + proc.stderr
    assert "Event loop is closed" not in proc.stderr, proc.stderr
    assert "never retrieved" not in proc.stderr, proc.stderr
