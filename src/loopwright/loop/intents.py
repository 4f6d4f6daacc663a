"""Intent records around non-idempotent tool calls: what lets a run that was killed while
its tools ran avoid running them again (:mod:`loopwright.loop.recovery` reads them back).

:class:`IntentRecorder` provides the dispatcher's ``before_tool_call`` /
``after_tool_call`` hooks: before a non-idempotent tool runs, an intent ``started`` is
stored; after it, the result (``done``), or ``deferred`` when it waits for approval.
Durable agent runs use it with their checkpointer (the intent rides with the checkpoint
holding the call); a graph's ``ToolNode`` uses it alone.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from loopwright.core.errors import ToolErrorKind
from loopwright.core.messages import ToolCallPart, ToolResultPart
from loopwright.core.tools import ToolSpec
from loopwright.store.aio import AsyncStore
from loopwright.store.state import IntentRecord, IntentStatus, Write
from loopwright.tools import ToolRegistry

log = logging.getLogger("loopwright.durable")


class IntentCheckpoints(Protocol):
    """What :class:`IntentRecorder` needs of a durable run's checkpointer
    (``loopwright.durable.Checkpointer``)."""

    async def lock_held(self) -> None: ...

    def submit_now(self) -> None: ...

    async def flush(self) -> object: ...

    def add_intent(self, intent: IntentRecord) -> None: ...


Hook = Callable[..., Any]


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # marks it retrieved: no "never retrieved" warning


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class IntentRecorder:
    """``before_tool_call`` / ``after_tool_call`` hooks that record intents and results
    of non-idempotent tools, composed with the user's own hooks (which run first)."""

    def __init__(
        self,
        store: AsyncStore,
        session_id: str,
        registry: ToolRegistry,
        user_before: Hook | None = None,
        user_after: Hook | None = None,
        checkpointer: IntentCheckpoints | None = None,
    ) -> None:
        self.store = store
        self.checkpointer = checkpointer
        self.session_id = session_id
        self.registry = registry
        self._user_before = user_before
        self._user_after = user_after
        self._open: dict[str, IntentRecord] = {}
        self._writes: set[asyncio.Task[None]] = set()

    def key_for(self, call: ToolCallPart) -> str | None:
        t = self.registry.get(call.name)
        if t is None or t.idempotency_key is None:
            return None
        try:
            key = t.idempotency_key(call.arguments)
        except Exception:  # the dispatcher reports a bad key itself; no key recorded here
            return None
        return None if key is None else str(key)

    async def before(self, call: ToolCallPart, spec: ToolSpec) -> str | None:
        if self.checkpointer is not None:
            await self.checkpointer.lock_held()  # no tool, hook or confirmation before it
        if self._user_before is not None:
            blocked = await _maybe(self._user_before(call, spec))
            if blocked is not None:
                return str(blocked)
        if spec.idempotent:
            return None
        intent = IntentRecord(
            self.session_id, call.id, call.name, self.key_for(call), dict(call.arguments)
        )
        if self.checkpointer is None:
            await self.store.put_intent(intent)
        else:
            # the side effect must not run before the message holding its call and the
            # intent are both stored; the two writes are independent (an intent whose
            # call never reached a checkpoint is ignored by recovery), so they overlap:
            # one store round trip before the tool instead of two (benchmarks/durable.py).
            # Both are queued now, so one batch takes both; then both are awaited (no
            # task per write).
            self.checkpointer.submit_now()
            written = self.store.submit(Write(intents=(intent,)))
            written.add_done_callback(_retrieved)  # raised below, or nobody waits any more
            await self.checkpointer.flush()
            await asyncio.shield(written)  # a cancelled caller leaves the write to its batch
        self._open[call.id] = intent
        return None

    async def after(self, call: ToolCallPart, result: ToolResultPart) -> ToolResultPart | None:
        replaced = None
        if self._user_after is not None:
            replaced = await _maybe(self._user_after(call, result))
            if replaced is not None:
                result = replaced
        intent = self._open.pop(call.id, None)
        if intent is not None:
            deferred = result.error_kind == ToolErrorKind.AWAITING_CONFIRMATION.value
            status = IntentStatus.DEFERRED if deferred else IntentStatus.DONE
            done = replace(
                intent, status=status, result=None if deferred else result, updated_at=time.time()
            )
            if self.checkpointer is not None:  # rides with the next checkpoint write
                self.checkpointer.add_intent(done)
                return replaced
            # written in the background: the run does not wait for it (until flush())
            task = asyncio.get_running_loop().create_task(self._record(call, done))
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)
        return replaced

    async def _record(self, call: ToolCallPart, done: IntentRecord) -> None:
        try:
            await self.store.put_intent(done)
        except Exception as exc:
            # The tool ran and its real result reaches the model either way (an error
            # there would make the model retry the side effect). The record stays
            # ``started``, so a crash before the next checkpoint reports the outcome as
            # unknown instead of running the call again.
            log.warning(
                "session %s: recording the result of call %s (%s) failed: %s",
                self.session_id,
                call.id,
                call.name,
                exc,
            )

    async def flush(self) -> None:
        """Wait for the result records still being written."""
        while self._writes:
            await asyncio.gather(*self._writes)
