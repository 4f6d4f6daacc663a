"""The :class:`Run` handle of a run started in the event loop, and its event feed.

:meth:`Agent.start <loopwright.loop.agent.Agent.start>` and ``resume`` return a
:class:`Run`: the live state, the run's events, steering and cancellation.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Generic, TypeAlias

from typing_extensions import TypeVar

from loopwright.core.errors import UserError
from loopwright.core.events import RunEvent, RunFinished
from loopwright.core.messages import Message
from loopwright.core.run import RunResult, RunState, as_message
from loopwright.tools.taint import mark_input

if TYPE_CHECKING:
    from loopwright.loop.steps import RunEngine

OutputT = TypeVar("OutputT", default=str, covariant=True)
"""The type of ``RunResult.output``: the agent's ``output_type`` (``str`` without one)."""
Prompt: TypeAlias = str | Message


class EventFeed:
    """Single-consumer buffer of run events: emitting never blocks the loop.

    While the consumer is not waiting, the run emits straight into the deque (its C
    ``append``, no Python frame per event: nine per step). When the consumer finds the
    deque empty and waits, the run's emitter becomes :meth:`put`, which wakes the
    consumer with the next event and switches back; every emission site reads
    ``engine.emit`` afresh, so the switch is seen at once (benchmarks/notes/loop.md,
    "stream")."""

    __slots__ = ("_closed", "_engine", "_error", "_waiter", "items")

    def __init__(self) -> None:
        self.items: deque[RunEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._error: BaseException | None = None
        self._engine: RunEngine | None = None

    def attach(self, engine: RunEngine) -> None:
        """Let this feed route ``engine``'s events (it is the engine's only listener)."""
        self._engine = engine
        engine.emit = self.items.append

    def _route(self, emit: Callable[[RunEvent], None]) -> None:
        engine = self._engine
        if engine is not None and engine.emit is not None:  # None: the run failed
            engine.emit = emit

    def put(self, event: RunEvent) -> None:
        self.items.append(event)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
            self._route(self.items.append)

    def close(self, error: BaseException | None = None) -> None:
        self._closed = True
        self._error = error
        # the engine points back at this feed (its closer): without this the finished
        # run and its whole history would wait for a cyclic garbage collection
        self._engine = None
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def refill(self) -> bool:
        """Wait until there are events (``True``) or the run ended without more
        (``False``; re-raises the run's exception if it failed)."""
        while not self.items:
            if self._closed:
                if self._error is not None:
                    raise self._error
                return False
            self._waiter = asyncio.get_running_loop().create_future()
            self._route(self.put)
            await self._waiter
            self._waiter = None
        return True


async def _drain(feed: EventFeed) -> AsyncIterator[RunEvent]:
    """Every event of ``feed`` up to ``RunFinished``. Events already buffered are yielded
    without awaiting anything (one generator step per event)."""
    items = feed.items
    while await feed.refill():
        while items:
            event = items.popleft()
            yield event
            if type(event) is RunFinished:
                return


class Run(Generic[OutputT]):
    """Handle of one running (or finished) run.

    * ``async for event in run`` -- every run event in order, ending with
      :class:`~loopwright.core.events.RunFinished` (only when started with
      ``events=True``, the default of :meth:`Agent.start`). One consumer only.
    * ``await run.result()`` -- the :class:`~loopwright.core.run.RunResult`.
    * ``run.steer(text)`` -- a user message for the next turn; calls of the current tool
      batch that have not started yet are skipped (their result says so).
    * ``run.follow_up(text)`` -- a user message delivered after the model's next final
      answer; the run continues instead of stopping.
    * ``run.cancel()`` -- stop as soon as possible; the result's stop is ``cancelled``.
    * ``run.state`` -- the live :class:`RunState` (checkpoint it from an event callback).
    """

    def __init__(
        self, engine: RunEngine, feed: EventFeed | None, task: asyncio.Task[RunResult[OutputT]]
    ) -> None:
        self._engine = engine
        self._feed = feed
        self._task = task

    @property
    def state(self) -> RunState:
        return self._engine.state

    @property
    def session_id(self) -> str:
        return self._engine.state.session_id

    def done(self) -> bool:
        return self._task.done()

    def steer(self, message: Prompt) -> None:
        """Queue a user message seen at the next turn; skip the rest of the running batch."""
        self._check_open("steer")
        queued = as_message(message, "steer(message)")
        mark_input(self._engine.state, queued)  # an MCP resource in it taints the run
        self._engine.state.queue_steering(queued)

    def follow_up(self, message: Prompt) -> None:
        """Queue a user message delivered after the next reply without tool calls (a
        final answer, or one refused or cut at max_tokens), one per reply."""
        self._check_open("follow_up")
        queued = as_message(message, "follow_up(message)")
        mark_input(self._engine.state, queued)
        self._engine.state.queue_follow_up(queued)

    def cancel(self, *, at_boundary: bool = False) -> None:
        """Request a stop. The run ends with ``RunStop.CANCELLED`` and a well-formed history
        (a tool batch cut off gets results saying so). Idempotent; no effect once done.
        Call it from the event loop's thread (from another thread use
        ``loop.call_soon_threadsafe(run.cancel)``).

        ``at_boundary=True`` interrupts nothing in flight: a model call and the tool calls
        already running finish (their results are recorded), calls of the batch that have
        not started are skipped, and the run stops at the next step boundary. A server
        handing a run to another process uses it: no side effect is left running."""
        if self._task.done():
            return
        engine = self._engine
        engine.cancel_requested = True
        # From inside the run's own task (a hook, an inline tool) cancelling the task would
        # end it CANCELLED without a result; the flag alone stops it at the next boundary.
        if not at_boundary and engine.running and asyncio.current_task() is not self._task:
            self._task.cancel()

    async def result(self) -> RunResult[OutputT]:
        """Wait for the run to finish. Cancelling the waiter cancels the run too."""
        return await self._task

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        if self._feed is None:
            raise UserError(
                "this run was started with events=False; use agent.start(..., events=True) "
                "or agent.stream(...) to iterate its events"
            )
        return _drain(self._feed)

    def _check_open(self, what: str) -> None:
        if self._task.done():
            raise UserError(
                f"Run.{what}: the run has finished; continue the conversation with "
                "agent.resume(run.state, prompt=...) or agent.start(prompt, "
                "history=result.messages)"
            )
