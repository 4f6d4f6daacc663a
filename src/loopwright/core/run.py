"""Run-level values: the loop's states, why a run stopped, the one run state, and what a
run returns.

:class:`RunState` is the only state type: the loop mutates it while a run goes on, stores
persist it (``loopwright.store.codec`` is its one versioned codec), and a later run in
any process continues from it. :func:`new_session_id` is the one session-id factory and
:func:`check_session_id` the one check of an id a caller chose. :func:`in_running_loop` is the
one check a synchronous entry point (``Agent.run``, ``Strategy.run``, a graph's ``invoke``)
makes before starting its own event loop.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import os
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from loopwright.core.errors import UserError
from loopwright.core.messages import (
    JSONValue,
    Message,
    ToolCallPart,
    ToolResultPart,
    Usage,
    messages_to_list,
)
from loopwright.core.values import slot_init

ERROR_LOG_SIZE = 100
"""How many :class:`ErrorRecord` entries a state keeps (oldest dropped first)."""
TAINT_LOG_SIZE = 8
"""How many :class:`TaintSource` entries a state keeps (oldest dropped first)."""
_NO_USAGE = Usage()
_SESSION_PREFIX = "s-" + os.urandom(6).hex()
_session_numbers = itertools.count(1)
OutputT_co = TypeVar("OutputT_co", covariant=True)


def new_session_id() -> str:
    """A fresh session id, unique across processes and safe in URLs and shells: 48 random
    bits per process, then a counter (a uuid4 per id costs ~6 us, which shows when a
    process starts thousands of runs)."""
    return f"{_SESSION_PREFIX}-{next(_session_numbers)}"


def check_session_id(session_id: object) -> str:
    """``session_id`` when it can name a session, else a ``UserError`` saying why.

    A caller's id becomes a store key, a CLI argument and a URL path segment: an empty
    one (an unset ``$SESSION``) named a session nobody could ``loopwright resume``, a
    number was stored under a non-string key, and spaces around an id or a control
    character in it made one session look like another in every listing."""
    if not isinstance(session_id, str):
        raise UserError(f"session_id must be a str, got {type(session_id).__name__}")
    if not session_id.strip() or session_id != session_id.strip():
        raise UserError(
            f"session_id {session_id!r} is empty or has spaces around it; "
            "give a non-empty id (or leave it out for a new one)"
        )
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in session_id):
        raise UserError(f"session_id {session_id!r} holds a control character")
    return session_id


def as_message(value: str | Message, what: str) -> Message:
    """The prompt ``value`` of a run entry point (``run``, ``start``, ``steer``...) as a
    user message; an empty text or another type is a ``UserError`` naming ``what``."""
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        if not value.strip():
            # an empty user turn is refused by some providers mid-run (Anthropic: "text
            # content blocks must be non-empty") and answered with noise by others
            raise UserError(f"{what} is empty; pass the question, e.g. agent.run('What is 2 + 2?')")
        return Message.user(value)
    raise UserError(f"{what} must be a str or a Message, got {type(value).__name__}")


def in_running_loop() -> bool:
    """Whether this thread is running an event loop (so ``asyncio.run`` would refuse).

    A bool rather than the ``try: get_running_loop() except RuntimeError`` callers used to
    write out: the caller then runs its coroutine *after* the check, not inside the
    ``except`` block, where every exception the run raised would carry this RuntimeError
    as its context ("During handling of the above exception ...: no running event loop"
    atop every logged traceback and error chain)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


_T = TypeVar("_T")


def run_sync(start: Callable[[], Coroutine[Any, Any, _T]], call: str, instead: str) -> _T:
    """Run the coroutine ``start()`` builds with ``asyncio.run``: the one way a synchronous
    entry point (``Agent.run``, ``Strategy.run``, ``DurableRunner.run`` ...) runs its async
    twin. Inside a running event loop it is a :class:`UserError` naming ``call`` and the
    awaitable to use ``instead``, raised before the coroutine exists (``asyncio.run``'s
    own RuntimeError left a never-awaited coroutine warning behind it)."""
    if in_running_loop():
        raise UserError(
            f"{call} was called inside a running event loop; use `await {instead}` there"
        )
    return asyncio.run(start())


class LoopState(enum.StrEnum):
    """The control loop's states (docs/loop.md). DONE, ERROR and PAUSED are terminal for one run."""

    OBSERVE = "observe"
    THINK = "think"
    ACT = "act"
    DONE = "done"
    ERROR = "error"
    PAUSED = "paused"


class RunStop(enum.StrEnum):
    """Why a whole run stopped. (The command line maps each to an exit code in
    :mod:`loopwright.cli.exit_codes`.)"""

    FINAL_ANSWER = "final_answer"
    MAX_TURNS = "max_turns"
    TOKEN_BUDGET = "token_budget"
    COST_BUDGET = "cost_budget"
    TOO_MANY_ERRORS = "too_many_errors"
    LOOP_DETECTED = "loop_detected"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    AWAITING_CONFIRMATION = "awaiting_confirmation"
    MODEL_ERROR = "model_error"
    MAX_TOKENS = "max_tokens"
    REFUSAL = "refusal"
    CONTEXT_ERROR = "context_error"
    OUTPUT_INVALID = "output_invalid"
    """The model's final answer did not validate against the agent's ``output_type``
    within ``output_retries`` re-asks (``detail`` holds the last validation errors)."""


@dataclass(frozen=True, slots=True)
class ErrorRecord:
    """One failure seen during a run. ``source`` is ``"model"``, ``"tool"`` or ``"reply"``
    (malformed model output); ``kind`` is the provider error kind or tool error kind."""

    turn: int
    source: str
    kind: str
    message: str


@dataclass(frozen=True, slots=True)
class TaintSource:
    """An untrusted tool result the model has read in this run: the tool, the call and
    a short excerpt of the content. While a state holds one, side-effect tools need a
    person's confirmation (docs/security.md, "Taint")."""

    tool: str
    call_id: str
    excerpt: str


@dataclass(slots=True)
class RunState:
    """Everything a run needs to continue, in this process or another.

    * ``messages`` -- the canonical history; the loop only appends to it (it never copies
      or rewrites it), so a state can be checkpointed after any event.
    * ``turn`` -- model turns completed so far; ``usage`` -- the running total over all
      model calls (including failed ones that reported usage).
    * ``pending_calls`` -- tool calls waiting for a confirmation decision (status
      ``PAUSED``); ``held_results`` -- results of the same batch that already completed.
    * ``steering`` / ``follow_ups`` -- queued user messages (``Run.steer`` /
      ``Run.follow_up``), not yet in the history.
    * ``stop`` / ``detail`` -- why the last run over this state ended (``None`` while it
      runs); ``parent`` -- ``"<session>@<checkpoint>"`` for a forked session;
      ``metadata`` -- the caller's JSON data kept with the session.
    * ``taint`` -- the untrusted tool results read so far (empty: the run is clean); it
      persists with the state so a paused run resumes as tainted as it was.
    * ``output_retries_used`` -- invalid structured answers re-asked since the last valid
      one (``Agent(output_retries=...)`` caps it); it persists so a resumed run does not
      get its retries back.
    * ``created_at`` / ``updated_at`` -- ``time.time()`` stamps.
    """

    session_id: str = field(default_factory=new_session_id)
    status: LoopState = LoopState.OBSERVE
    turn: int = 0
    messages: list[Message] = field(default_factory=list)
    usage: Usage = _NO_USAGE  # frozen: one shared zero value, no allocation per run
    consecutive_errors: int = 0
    # The five queues below are empty in almost every run. They start as the shared empty
    # tuple and are replaced, never mutated in place, when something writes them: a list
    # each cost every in-flight run five objects the garbage collector tracks (1,000
    # concurrent runs held 57 tracked objects each, 52 after; benchmarks/notes/loop.md).
    error_log: Sequence[ErrorRecord] = ()
    pending_calls: Sequence[ToolCallPart] = ()
    held_results: Sequence[ToolResultPart] = ()
    steering: Sequence[Message] = ()
    follow_ups: Sequence[Message] = ()
    stop: RunStop | None = None
    detail: str = ""
    parent: str | None = None
    metadata: Mapping[str, JSONValue] = field(default_factory=dict)
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    taint: tuple[TaintSource, ...] = ()  # a tuple: no allocation for the clean runs
    output_retries_used: int = 0

    def mark_tainted(self, source: TaintSource) -> None:
        """Record an untrusted result read, keeping the last :data:`TAINT_LOG_SIZE`."""
        self.taint = (*self.taint[1 - TAINT_LOG_SIZE :], source)

    def log_error(self, record: ErrorRecord) -> None:
        """Add to ``error_log``, keeping only the last :data:`ERROR_LOG_SIZE` records."""
        self.error_log = (*self.error_log[1 - ERROR_LOG_SIZE :], record)

    def queue_steering(self, message: Message) -> None:
        """Queue ``message`` to be taken into the history at the next turn."""
        self.steering = (*self.steering, message)

    def queue_follow_up(self, message: Message) -> None:
        """Queue ``message`` to be delivered after the next final answer."""
        self.follow_ups = (*self.follow_ups, message)

    def next_follow_up(self) -> Message:
        """Take the oldest queued follow-up (the queue must not be empty)."""
        first, *rest = self.follow_ups
        self.follow_ups = tuple(rest)
        return first

    @property
    def paused(self) -> bool:
        return self.status is LoopState.PAUSED

    @property
    def awaiting_confirmation(self) -> bool:
        return self.stop is RunStop.AWAITING_CONFIRMATION and bool(self.pending_calls)

    def best_answer(self) -> str:
        """The text of the latest assistant message that has text ("" if none). Scans
        backwards and stops at the first hit, so it is cheap at the end of a run."""
        for message in reversed(self.messages):
            if message.role == "assistant":
                text = message.text
                if text:
                    return text
        return ""

    def result(
        self,
        stop: RunStop | None = None,
        detail: str | None = None,
        *,
        answer: str | None = None,
        output: object = None,
    ) -> RunResult:
        """The :class:`RunResult` of this state (its own ``stop``/``detail`` unless given;
        ``answer``: the best answer of the history unless given)."""
        return RunResult(
            self.best_answer() if answer is None else answer,
            stop or self.stop or RunStop.FINAL_ANSWER,
            self.turn,
            self.usage,
            tuple(self.messages),
            self.session_id,
            self.detail if detail is None else detail,
            tuple(self.pending_calls),
            output,
            self,
        )

    def snapshot(self) -> RunState:
        """A copy that later changes to this state do not reach (its lists are new, its
        queues are tuples; the messages in them are immutable values, shared)."""
        return RunState(
            self.session_id,
            self.status,
            self.turn,
            list(self.messages),
            self.usage,
            self.consecutive_errors,
            tuple(self.error_log),
            tuple(self.pending_calls),
            tuple(self.held_results),
            tuple(self.steering),
            tuple(self.follow_ups),
            self.stop,
            self.detail,
            self.parent,
            dict(self.metadata),
            self.created_at,
            self.updated_at,
            self.taint,
            self.output_retries_used,
        )


@slot_init  # built once per run: 16.3k -> ~8k instructions (benchmarks/notes/loop.md, round 10)
@dataclass(frozen=True, slots=True, repr=False)
class RunResult(Generic[OutputT_co]):
    """What a run returns. ``answer`` is the final answer, or the best text so far when a
    limit stopped the run (``stop`` says which). ``output`` is the final answer as the
    agent's ``output_type`` (validated; the answer text when the agent has none), or
    ``None`` when the run did not end with a final answer (see ``docs/loop.md``)."""

    answer: str
    stop: RunStop
    turns: int
    usage: Usage
    messages: Sequence[Message]
    session_id: str | None = None
    detail: str = ""
    pending_calls: Sequence[ToolCallPart] = field(default_factory=tuple)
    output: OutputT_co | None = None
    state: RunState | None = field(default=None, compare=False)
    """The run's :class:`RunState` (the live object, not a copy), to continue it: a run
    paused on confirmation resumes with ``agent.resume_sync(result.state, decisions)`` /
    ``await agent.aresume(...)``. The history alone (``messages``) is not enough: the
    pending calls and the results their batch already holds are in the state only.
    ``None`` for results that no agent run produced (a strategy's)."""

    @property
    def ok(self) -> bool:
        return self.stop is RunStop.FINAL_ANSWER

    def __repr__(self) -> str:
        # Short and O(1): asyncio.run() calls repr() on the value it returns, and the
        # generated repr of a 1,000-step history cost 4 ms per Agent.run() call.
        return (
            f"RunResult(stop={self.stop.value!r}, turns={self.turns}, "
            f"answer={_clip(self.answer)!r}, messages={len(self.messages)}, "
            f"session_id={self.session_id!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "stop_reason": self.stop.value,
            "turns": self.turns,
            "usage": self.usage.to_dict(),
            "messages": messages_to_list(self.messages),
            "session_id": self.session_id,
            "detail": self.detail,
        }


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
