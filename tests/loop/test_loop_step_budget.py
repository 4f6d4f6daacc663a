"""The Python-level calls one step of a run makes (benchmarks/loop.py, per step and
concurrency): a call costs ~600-1,000 instructions on CPython 3.11, so a helper called
once per step is ~0.3-0.5 % of a step; removing one must not be undone by accident
(benchmarks/notes/loop.md, round 9)."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Sequence
from types import FrameType

from loopwright import Agent, FunctionModel, Limits, tool
from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.protocols import ModelRequest


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _calls_per_step(first: int, last: int, steps: int, limits: Limits | None = None) -> float:
    """Python-level calls (function calls and coroutine resumptions, asyncio's own left
    out) made between the model calls of steps ``first`` and ``last``."""
    counting = False
    calls = 0

    def reply(messages: Sequence[Message], request: ModelRequest) -> object:
        nonlocal counting
        turn = len(messages) // 2  # user, then (assistant, tool) per step
        counting = first <= turn < last
        return [ToolCallPart(f"c{turn}", "add", {"a": turn, "b": 2})] if turn < steps else "done"

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if counting and event == "call" and "asyncio" not in frame.f_code.co_filename:
            calls += 1

    limits = limits or Limits(max_turns=None, repeat_limit=None)
    agent = Agent(FunctionModel(reply), [add], limits=limits)
    gc.collect()  # no finalizer of an earlier test's garbage runs inside the window
    sys.setprofile(profile)
    try:
        result = asyncio.run(agent.arun("go"))
    finally:
        sys.setprofile(None)
    assert result.ok and result.turns == steps + 1
    return calls / (last - first)


def test_a_step_makes_at_most_43_python_level_calls() -> None:
    # one step = one FunctionModel call and one async def tool call through the
    # dispatcher, nobody listening. 51 before round 9: the double called typing.cast on
    # every reply, the loop built a step's results in a list comprehension (a function
    # call in 3.11) before accounting them in a loop of its own, the dispatcher asked
    # ``interrupted()`` through a helper, ``Message.tool_calls`` was a comprehension,
    # and the loop entered each state through a method (two per step). Burst of 1,000
    # runs x 6 calls: 1,266 M -> 1,242 M instructions. 44 -> 43 in round 10: the double
    # records a plain tuple per call and builds its RecordedRequest when ``requests`` is
    # read (no frozen value's ``__init__`` per call).
    # Each change undone alone adds at least one call per step; the half call of slack
    # absorbs a stray finalizer or weak-reference callback inside the 20-step window.
    per_step = _calls_per_step(10, 30, 40)
    assert per_step <= 43.5, per_step


def test_repetition_detection_adds_one_python_level_call_per_step() -> None:
    # what a user gets: repetition detection on (the default). 46 before round 10: the
    # loop asked the detector to ``add`` the turn and then to ``check`` it (two calls,
    # and the RecordedRequest above); ``observe`` does both in one and compares the
    # tail in full only when a call repeats the one a period before it.
    per_step = _calls_per_step(10, 30, 40, Limits(max_turns=None))
    assert per_step <= 44.5, per_step


def test_a_run_of_one_model_call_makes_at_most_57_python_level_calls() -> None:
    # what a run costs besides its steps: checking the prompt, the state, the engine,
    # the one model call and the result. 62 before round 10: ``arun``/``aresume``
    # called ``typing.cast`` on the coroutine they return, and ``Message.text`` joined
    # a generator expression (a call, and a resumption per part) for the final reply
    # and again for the run's answer.
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" and "asyncio" not in frame.f_code.co_filename:
            calls += 1

    agent = Agent(FunctionModel(lambda messages, request: "done"))

    async def runs() -> None:
        await agent.arun("go")  # the first run builds the agent's shared view
        gc.collect()
        sys.setprofile(profile)
        try:
            for _ in range(10):
                assert (await agent.arun("go")).answer == "done"
        finally:
            sys.setprofile(None)

    asyncio.run(runs())
    assert calls / 10 <= 57.5, calls / 10
