"""Checkpointing as an event subscriber, and intent records around tool execution.

:class:`Checkpointer` subscribes to a run's events (``Hooks.on_event``) and saves the
run's live :class:`~loopwright.loop.state.RunState` to a store according to a
:class:`CheckpointPolicy`. The seed's trade-off (section 5.3):

* ``every_step`` -- a checkpoint per appended message and at the end: finest recovery,
  most writes (cheap here: each write appends only the new messages);
* ``tool_calls`` -- before tools run (the assistant message holding the calls) and after
  (the results), plus the end: covers the failures that matter for side effects;
* ``interval`` -- at most one checkpoint per ``interval`` seconds, plus the end: fewest
  writes; a crash loses up to ``interval`` seconds of progress (intent records still
  protect non-idempotent tools).

:class:`IntentRecorder` provides the dispatcher's ``before_tool_call`` /
``after_tool_call`` hooks: before a non-idempotent tool runs it writes an intent record
(call id + idempotency key); after, the result. Both run whatever the policy.
"""

from __future__ import annotations

import enum
import inspect
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from loopwright.core.errors import ToolErrorKind
from loopwright.core.events import MessageAppended, RunEvent, RunFinished
from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.run import RunStop
from loopwright.core.tools import ToolSpec
from loopwright.loop.state import ErrorRecord, RunState
from loopwright.store.base import DEFAULT_LOCK_TTL, CheckpointStore
from loopwright.store.state import CheckpointRef, ExecutionState, IntentRecord, IntentStatus
from loopwright.tools import ToolRegistry

log = logging.getLogger("loopwright.durable")


class CheckpointPolicy(enum.StrEnum):
    EVERY_STEP = "every_step"
    TOOL_CALLS = "tool_calls"
    INTERVAL = "interval"


# ---------------------------------------------------------------- state conversion
def to_execution_state(
    state: RunState,
    base: ExecutionState | None = None,
    stop: RunStop | None = None,
    detail: str = "",
) -> ExecutionState:
    """Snapshot a live run state. ``base`` supplies what RunState does not track
    (goal, plan, completed steps, metadata, parent, created_at)."""
    sid = state.session_id or (base.session_id if base else "")
    return ExecutionState(
        session_id=sid,
        status=state.status,
        turn=state.turn,
        messages=tuple(state.messages),
        usage=state.usage,
        goal=base.goal if base else "",
        plan=base.plan if base else (),
        completed_steps=base.completed_steps if base else (),
        consecutive_errors=state.consecutive_errors,
        error_log=tuple(e.to_dict() for e in state.error_log),
        pending_calls=tuple(state.pending_calls),
        held_results=tuple(state.held_results),
        steering=tuple(state.steering),
        follow_ups=tuple(state.follow_ups),
        stop=stop,
        detail=detail,
        parent=base.parent if base else None,
        metadata=dict(base.metadata) if base else {},
        created_at=base.created_at if base else state.started_at,
        updated_at=time.time(),
    )


def to_run_state(state: ExecutionState) -> RunState:
    """A live run state continuing ``state`` (fresh lists; the input is not shared)."""
    errors = []
    for e in state.error_log:
        try:
            errors.append(
                ErrorRecord(int(e["turn"]), str(e["source"]), str(e["kind"]), str(e["message"]))
            )
        except (KeyError, TypeError, ValueError):
            continue  # an error-log entry is diagnostic only; a malformed one is dropped
    return RunState(
        session_id=state.session_id,
        status=state.status,
        turn=state.turn,
        messages=list(state.messages),
        usage=state.usage,
        consecutive_errors=state.consecutive_errors,
        error_log=errors,
        pending_calls=list(state.pending_calls),
        held_results=list(state.held_results),
        steering=list(state.steering),
        follow_ups=list(state.follow_ups),
        started_at=state.created_at,
        updated_at=state.updated_at,
    )


# ---------------------------------------------------------------- checkpointer
@dataclass(frozen=True, slots=True)
class CheckpointConfig:
    policy: CheckpointPolicy = CheckpointPolicy.EVERY_STEP
    interval: float = 5.0
    lock_owner: str | None = None
    lock_ttl: float = DEFAULT_LOCK_TTL


class Checkpointer:
    """Saves ``state`` (the live object the run mutates) on the events ``policy`` selects.

    Only messages the store has not seen are written: the checkpointer remembers how many
    messages are persisted and which object was last, and passes ``rewrite_from`` to the
    store if the history was rewritten. Saving refreshes the session lock.
    """

    def __init__(
        self,
        store: CheckpointStore,
        state: RunState,
        base: ExecutionState | None = None,
        config: CheckpointConfig = CheckpointConfig(),
        persisted: int = 0,
    ) -> None:
        self.store = store
        self.state = state
        self.base = base
        self.config = config
        self.saves = 0
        self.last_ref: CheckpointRef | None = None
        self._saved: list[Message] = list(state.messages[:persisted])
        self._last_save = float("-inf")
        self._last_lock = time.monotonic()

    def on_event(self, event: RunEvent) -> None:
        if isinstance(event, RunFinished):
            result = event.result
            self.save(result.stop, result.detail)
            return
        if not isinstance(event, MessageAppended):
            return
        policy = self.config.policy
        if policy is CheckpointPolicy.EVERY_STEP:
            self.save()
        elif policy is CheckpointPolicy.TOOL_CALLS:
            if event.source == "tools" or event.message.tool_calls:
                self.save()
        elif time.monotonic() - self._last_save >= self.config.interval:
            self.save()

    def save(self, stop: RunStop | None = None, detail: str = "") -> CheckpointRef:
        """Checkpoint the state now (``stop``: the run ended for that reason)."""
        state = self.state
        messages = state.messages
        rewrite_from = self._rewrite_point(messages)
        snapshot = to_execution_state(state, self.base, stop, detail)
        cfg = self.config
        if cfg.lock_owner is not None and time.monotonic() - self._last_lock > cfg.lock_ttl / 4:
            self.store.acquire_lock(snapshot.session_id, cfg.lock_owner, cfg.lock_ttl)
            self._last_lock = time.monotonic()
        ref = self.store.save(snapshot, rewrite_from=rewrite_from)
        saved = self._saved
        if rewrite_from is not None:
            del saved[rewrite_from:]
        saved.extend(messages[len(saved) :])
        self._last_save = time.monotonic()
        self.saves += 1
        self.last_ref = ref
        return ref

    def _rewrite_point(self, messages: list[Message]) -> int | None:
        saved = self._saved
        n = len(saved)
        if n == 0 or (len(messages) >= n and messages[n - 1] is saved[-1]):
            return None  # append-only since the last save (the loop's contract)
        for i, (old, new) in enumerate(zip(saved, messages, strict=False)):
            if old is not new:
                return i
        return min(n, len(messages))


# ---------------------------------------------------------------- intent records
Hook = Callable[..., Any]


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class IntentRecorder:
    """``before_tool_call`` / ``after_tool_call`` hooks that record intents and results
    of non-idempotent tools, composed with the user's own hooks (which run first)."""

    def __init__(
        self,
        store: CheckpointStore,
        session_id: str,
        registry: ToolRegistry,
        user_before: Hook | None = None,
        user_after: Hook | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.registry = registry
        self._user_before = user_before
        self._user_after = user_after
        self._open: dict[str, IntentRecord] = {}

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
        if self._user_before is not None:
            blocked = await _maybe(self._user_before(call, spec))
            if blocked is not None:
                return str(blocked)
        if spec.idempotent:
            return None
        intent = IntentRecord(
            self.session_id, call.id, call.name, self.key_for(call), dict(call.arguments)
        )
        self.store.put_intent(intent)
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
            try:
                self.store.put_intent(done)
            except Exception as exc:
                # The tool ran: its real result must reach the model (an error here would
                # make the model retry the side effect). The record stays ``started``, so
                # a crash before the next checkpoint reports the outcome as unknown
                # instead of running the call again.
                log.warning(
                    "session %s: recording the result of call %s (%s) failed: %s",
                    self.session_id,
                    call.id,
                    call.name,
                    exc,
                )
        return replaced
