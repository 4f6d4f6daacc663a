"""Run model tool calls safely: every outcome becomes a ``ToolResultPart``.

Pipeline of one call (:meth:`Dispatcher.run_one`), each step able to end it with an error
result of a :class:`~loopwright.core.errors.ToolErrorKind`:

1. look up the tool (``not_found``, listing the names the caller may use);
2. permission check against ``DispatchConfig.permission`` (``permission_denied``). This
   comes before argument checks: a caller that may not use a tool learns nothing about
   its schema, and hiding a tool from the model is never the only protection;
3. arguments: the parsed dict, else the raw string through :func:`~loopwright.tools.repair.repair_arguments`
   (``invalid_arguments``);
4. schema + business validation, every violation with its JSON pointer, then conversion
   to the function's Python types, every failure with its pointer (``invalid_arguments``);
5. ``before_tool_call`` hook: a returned string blocks the call (``permission_denied``);
6. confirmation for ``requires_confirmation`` tools, and for side-effect tools while the
   run is tainted by an untrusted result (``denied_by_user`` / ``awaiting_confirmation``;
   see :mod:`loopwright.tools.taint`);
7. idempotency ledger lookup when the tool derives a key from the arguments: a known
   key returns the stored result without running the tool;
8. run with the tool's timeout (``timeout``); classify failures: ``ToolError`` carries
   its kind, ``TimeoutError``/``ConnectionError`` are ``transient``, anything else is
   ``permanent`` with the exception type and message;
9. retry ``transient`` failures with backoff, only for idempotent tools or keyed calls;
   the final message names every failed attempt;
10. record the result in the ledger (keyed calls; successes and permanent failures);
11. render and cut the result to the tool's budget (JSON-aware);
12. ``after_tool_call`` hook (may replace the result).

The steps that end a call early or replace its result (1, 4, 5, 6 and 12) live in
:mod:`loopwright.tools.gates`; running one attempt under its deadline in
:mod:`loopwright.tools.execution`.

Nothing a tool, hook, handler or ledger does escapes as an exception; only cancellation
of the awaiting task propagates.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from loopwright.core.checks import check_function
from loopwright.core.errors import ConfigError, ToolErrorKind
from loopwright.core.messages import ToolCallPart, ToolResultPart
from loopwright.core.run import TaintSource
from loopwright.core.tools import Permission, ToolOutput
from loopwright.core.untrusted import wrap_tool_result
from loopwright.core.values import slot_init
from loopwright.tools import gates, inflight
from loopwright.tools.confirm import Confirmation, ConfirmHandler
from loopwright.tools.decorator import ConversionError, Tool
from loopwright.tools.execution import (
    Attempt,
    Execution,
    attempt,
    being_cancelled,
    describe,
    settled,
)
from loopwright.tools.gates import AfterToolCall, BeforeToolCall
from loopwright.tools.invocation import ToolContext
from loopwright.tools.ledger import IdempotencyLedger, MemoryLedger
from loopwright.tools.registry import ToolRegistry
from loopwright.tools.repair import call_arguments
from loopwright.tools.results import (
    ERROR_CHARS,
    error_result,
    over_cap_result,
    refuse_permission,
    skipped_result,
)
from loopwright.tools.retry import RetryPolicy
from loopwright.tools.taint import TaintConfirmHandler, gated, source_of
from loopwright.tools.truncate import cut_text, truncate_result

log = logging.getLogger("loopwright.tools")

_T = TypeVar("_T")
_DEFAULT_RETRY = RetryPolicy()
# each handler and the arguments the dispatcher calls it with (checked when configured)
_HANDLER_PARAMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("confirm", ("call", "spec")),
    ("confirm_tainted", ("call", "spec", "sources")),
    ("before_tool_call", ("call", "spec")),
    ("after_tool_call", ("call", "result")),
)


@dataclass(frozen=True, slots=True)
class DispatchConfig:
    """How a :class:`Dispatcher` runs calls.

    ``permission`` is the caller's level (tools above it are refused at dispatch).
    ``confirm`` answers for ``requires_confirmation`` tools (``None`` approves all).
    ``sleep``, ``random`` and ``clock`` are injectable for tests (backoff without
    waiting, deterministic jitter). ``metadata`` and ``deps`` are handed to tools in
    ``ToolContext`` (``deps`` is one run's: the agent sets it per run from ``deps=``).
    ``delimit_untrusted`` wraps results of ``untrusted_output`` tools as data (the
    default; turn it off only when something else delimits them).
    ``confirm_when_tainted`` (on by default) makes side-effect calls of a run that has
    read untrusted content wait for a person: ``confirm_tainted`` answers for them
    (``None``: the call is deferred and the run pauses), ``confirm`` is never asked for
    them (see :mod:`loopwright.tools.taint`).
    """

    permission: Permission = Permission.ADMIN
    confirm: ConfirmHandler | None = None
    max_concurrency: int = 8
    retry: RetryPolicy = _DEFAULT_RETRY  # frozen, immutable fields: one shared default
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    session_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    deps: object = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    random: Callable[[], float] = random.random
    clock: Callable[[], float] = time.perf_counter
    max_violations: int = 20
    delimit_untrusted: bool = True
    confirm_when_tainted: bool = True
    confirm_tainted: TaintConfirmHandler | None = None

    def __post_init__(self) -> None:
        for name in ("max_concurrency", "max_violations"):
            limit = getattr(self, name)
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ValueError(f"DispatchConfig.{name} must be an int >= 1, got {limit!r}")
        # here, where the config is written, not when an agent is first built from it; kept
        # parsed: permission="read" was checked but stored as the str, and every call then
        # failed comparing a Permission with it
        object.__setattr__(self, "permission", Permission.parse(self.permission))
        for name, params in _HANDLER_PARAMS:
            value = getattr(self, name)
            if value is not None:
                check_function(f"DispatchConfig.{name}", value, params)


@slot_init
@dataclass(frozen=True, slots=True)
class DispatchOutcome:
    """One call's result. ``attempts`` is 0 when the tool never ran (refused, invalid,
    answered from the ledger). ``repairs`` names argument repairs that were applied.
    ``taint`` is set when the result is untrusted content the model will read (the
    caller adds it to the run's taint: :mod:`loopwright.tools.taint`)."""

    call: ToolCallPart
    result: ToolResultPart
    attempts: int
    duration_s: float
    repairs: tuple[str, ...] = ()
    from_ledger: bool = False
    taint: TaintSource | None = None


_Step = tuple[ToolResultPart, int, tuple[str, ...], bool]


@dataclass(frozen=True, slots=True)
class _Plan:
    """What the hot path needs to know about one tool under one config, computed once
    per registry version (see :meth:`Dispatcher._plan`)."""

    tool: Tool
    allowed: bool
    """The caller's permission covers the tool."""
    accepts: Callable[[Any], bool] | None
    """The compiled schema fast check when the tool has no business validators: true
    means certainly valid (anything else goes through :meth:`Tool.validate`)."""
    guarded: bool
    """A before-hook, a confirmation or an idempotency key applies (steps 5-7)."""
    direct: bool
    """No converters and no context parameter: the arguments are the keyword arguments."""
    gated: bool
    """Calls need a person's approval while the run is tainted (:func:`gated`)."""

    @classmethod
    def of(cls, t: Tool, permission: Permission, hooked: bool) -> _Plan:
        """The plan of ``t`` for a caller at ``permission``, with a before-hook when
        ``hooked``: the only two facts of a :class:`DispatchConfig` a plan depends on."""
        return cls(
            tool=t,
            allowed=t.spec.permission <= permission,
            accepts=None if t.validators else t.schema_validator.fast_check,
            guarded=hooked or t.spec.requires_confirmation or t.idempotency_key is not None,
            direct=not t.converters and t.context_param is None,
            gated=gated(t),
        )


class _Track:
    """The execution of a keyed call's latest worker run (see :meth:`_run_keyed`)."""

    __slots__ = ("execution",)

    def __init__(self) -> None:
        self.execution: Execution[Any] | None = None


_TIMEOUT = ToolErrorKind.TIMEOUT.value
_STILL_RUNNING = (
    "an earlier call with the same idempotency key is still running; this call was not "
    "started again. Call again later to get that call's result"
)
_LATE_NOTE = (
    "it is still running and was not stopped; calling again with the same arguments "
    "returns its result once it ends, it will not run twice"
)
_LATE: set[asyncio.Task[None]] = set()  # strong references to late-record tasks


_NO_PLANS: dict[str, _Plan] = {}  # placeholder until the first call (never written to)


class Dispatcher:
    """Runs tool calls against a registry. One dispatcher may serve many runs."""

    __slots__ = ("_ledger", "_plans", "_plans_config", "_plans_version", "config", "registry")

    def __init__(
        self,
        registry: ToolRegistry,
        config: DispatchConfig | None = None,
        ledger: IdempotencyLedger | None = None,
    ) -> None:
        # a list of tools (what make_tools returns) failed every call with "dispatch
        # failed: AttributeError: 'list' object has no attribute 'version'"
        if not isinstance(registry, ToolRegistry):
            raise ConfigError(
                f"Dispatcher(registry=...) needs a ToolRegistry, got {type(registry).__name__}; "
                "wrap the tools: Dispatcher(ToolRegistry(tools))"
            )
        if config is not None and not isinstance(config, DispatchConfig):
            raise ConfigError(
                f"Dispatcher(config=...) needs a DispatchConfig, got {type(config).__name__}"
            )
        self.registry = registry
        self.config = config if config is not None else DispatchConfig()
        self._ledger = ledger  # None: a MemoryLedger, made on first use (see ``ledger``)
        # the registry's plan table for this config's (permission, before-hook): shared by
        # every dispatcher over the same registry (see :meth:`_plan`)
        self._plans: dict[str, _Plan] = _NO_PLANS
        self._plans_version = -1
        self._plans_config: DispatchConfig | None = None

    @property
    def ledger(self) -> IdempotencyLedger:
        """The idempotency ledger: the one given, else this dispatcher's own
        :class:`MemoryLedger` (created on first use: most dispatchers never need one)."""
        ledger = self._ledger
        if ledger is None:
            ledger = self._ledger = MemoryLedger()
        return ledger

    @ledger.setter
    def ledger(self, ledger: IdempotencyLedger) -> None:
        self._ledger = ledger

    # -- batches ------------------------------------------------------------------------
    async def run_batch(
        self,
        calls: Sequence[ToolCallPart],
        *,
        interrupted: Callable[[], bool] | None = None,
        on_start: Callable[[ToolCallPart], None] | None = None,
        decisions: Mapping[str, Confirmation] | None = None,
        max_calls: int | None = None,
        taint: Sequence[TaintSource] = (),
    ) -> list[DispatchOutcome]:
        """Run ``calls`` concurrently (at most ``max_concurrency`` at once); outcomes in
        call order. A call not yet started when ``interrupted()`` is true gets a
        ``skipped`` result. ``decisions`` maps call ids to confirmations already given
        (resuming a paused run); they replace the confirm handler for those calls.
        ``taint`` is the run's taint when the model wrote these calls (non-empty: the
        side-effect calls among them need a person's approval).
        Calls past the first ``max_calls`` are not run: each gets a ``skipped`` result
        naming the cap (see :func:`over_cap_result`)."""
        if max_calls is not None and (
            isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 0
        ):
            # -1 ran every call but the last, which was reported over a cap of -1
            raise ValueError(f"run_batch(max_calls=...) must be an int >= 0, got {max_calls!r}")
        if len(calls) == 1 and (max_calls is None or max_calls > 0):  # most batches
            return [await self._slot(calls[0], interrupted, on_start, decisions, taint)]
        return await self._run_many(calls, interrupted, on_start, decisions, max_calls, taint)

    async def _run_many(
        self,
        calls: Sequence[ToolCallPart],
        interrupted: Callable[[], bool] | None,
        on_start: Callable[[ToolCallPart], None] | None,
        decisions: Mapping[str, Confirmation] | None,
        max_calls: int | None,
        taint: Sequence[TaintSource],
    ) -> list[DispatchOutcome]:
        """:meth:`run_batch` of any other batch: none, several calls, or calls over the
        cap. A method of its own because its closures (the semaphore's ``limited``, the
        over-cap comprehension) make every variable they read a cell, created when the
        frame starts: in ``run_batch`` itself that was 9 cells allocated for every
        one-call batch, which reads none of them (benchmarks/notes/loop.md, round 12)."""
        if not calls:
            return []
        over: Sequence[DispatchOutcome] = ()
        if max_calls is not None and len(calls) > max_calls:
            over = [
                DispatchOutcome(c, over_cap_result(c, max_calls, len(calls)), 0, 0.0)
                for c in calls[max_calls:]
            ]
            calls = calls[:max_calls]
        if len(calls) == 1:
            return [await self._slot(calls[0], interrupted, on_start, decisions, taint), *over]
        sem = asyncio.Semaphore(self.config.max_concurrency)

        async def limited(call: ToolCallPart) -> DispatchOutcome:
            async with sem:
                return await self._slot(call, interrupted, on_start, decisions, taint)

        return [*await asyncio.gather(*(limited(c) for c in calls)), *over]

    def _slot(
        self,
        call: ToolCallPart,
        interrupted: Callable[[], bool] | None,
        on_start: Callable[[ToolCallPart], None] | None,
        decisions: Mapping[str, Confirmation] | None,
        taint: Sequence[TaintSource],
    ) -> Awaitable[DispatchOutcome]:
        """The awaitable outcome of one call of a batch (a plain function returning
        ``run_one``'s coroutine: one coroutine frame less per call on the hot path).
        ``interrupted()`` is asked right here, not through a helper: one Python-level
        call per tool call less (``benchmarks/notes/loop.md``, round 9)."""
        if interrupted is not None:
            try:
                skip = interrupted()
            except Exception:
                log.exception("interrupted() raised; continuing")
                skip = False
            if skip:
                return _ready(DispatchOutcome(call, skipped_result(call), 0, 0.0))
        if on_start is not None:
            try:
                on_start(call)
            except Exception:
                log.exception("on_start raised; continuing")
        decision = decisions.get(call.id) if decisions else None
        return self.run_one(call, confirmation=decision, taint=taint)

    async def run_results(
        self,
        calls: Sequence[ToolCallPart],
        *,
        interrupted: Callable[[], bool] | None = None,
        on_start: Callable[[ToolCallPart], None] | None = None,
        decisions: Mapping[str, Confirmation] | None = None,
        max_calls: int | None = None,
        taint: Sequence[TaintSource] = (),
    ) -> list[ToolResultPart]:
        """:meth:`run_batch`, returning only each call's result (in call order)."""
        outcomes = await self.run_batch(
            calls,
            interrupted=interrupted,
            on_start=on_start,
            decisions=decisions,
            max_calls=max_calls,
            taint=taint,
        )
        return [o.result for o in outcomes]

    # -- one call -----------------------------------------------------------------------
    async def run_one(
        self,
        call: ToolCallPart,
        *,
        confirmation: Confirmation | None = None,
        taint: Sequence[TaintSource] = (),
    ) -> DispatchOutcome:
        """Run one call through the whole pipeline (module doc). Never raises for tool
        faults. ``confirmation`` is a decision already made (skips the handler);
        ``taint`` the run's taint (see :meth:`run_batch`).

        The pipeline's steps run in :meth:`_dispatch`; faults it did not turn into results
        and the after-hook are handled here, in the same coroutine (a level of its own
        was one more coroutine per call)."""
        config = self.config
        started = config.clock()
        try:
            result, attempts, repairs, cached = await self._dispatch(call, confirmation, taint)
        except asyncio.CancelledError:
            if being_cancelled():
                raise
            result = error_result(call, ToolErrorKind.PERMANENT, "the call was cancelled")
            attempts, repairs, cached = 1, (), False
        except Exception as exc:  # defensive: a fault in a callback we did not wrap
            log.exception("tool dispatch failed for %r", getattr(call, "name", call))
            msg = f"dispatch failed: {describe(exc)}"
            result = error_result(call, ToolErrorKind.PERMANENT, msg)
            attempts, repairs, cached = 0, (), False
        if config.after_tool_call is not None:
            result = await gates.after(config.after_tool_call, call, result)
        source = None
        if attempts or cached:  # the tool's content reached the result (module doc, 8)
            plan = self._plans.get(call.name) or self._plan(call.name)
            if plan is not None and plan.tool.untrusted_output:
                source = source_of(result)
        return DispatchOutcome(
            call, result, attempts, config.clock() - started, repairs, cached, source
        )

    def _plan(self, name: str) -> _Plan | None:
        """The cached :class:`_Plan` of tool ``name`` (``None``: no such tool). Plans are
        rebuilt when the registry changes or ``config`` is replaced."""
        registry, config = self.registry, self.config
        if self._plans_version != registry.version or self._plans_config is not config:
            # plans depend on the tools and on two facts of the config only, so dispatchers
            # of many agents over one registry share one table (no plans built per agent)
            hooked = config.before_tool_call is not None
            self._plans = registry.derived_table(("dispatch-plans", config.permission, hooked))
            self._plans_version = registry.version
            self._plans_config = config
        plans = self._plans
        plan = plans.get(name)
        if plan is None:
            t = registry.get(name)
            if t is None:
                return None
            plan = plans[name] = _Plan.of(t, config.permission, config.before_tool_call is not None)
        return plan

    async def _dispatch(
        self, call: ToolCallPart, confirmation: Confirmation | None, taint: Sequence[TaintSource]
    ) -> _Step:
        plan = (
            self._plans.get(call.name)
            if self._plans_version == self.registry.version and self._plans_config is self.config
            else None
        ) or self._plan(call.name)
        if plan is None:
            return gates.not_found(call, self.registry, self.config.permission), 0, (), False
        t = plan.tool
        if not plan.allowed:
            return refuse_permission(call, t.spec, self.config.permission), 0, (), False
        args = call.arguments
        repairs: tuple[str, ...] = ()
        if not args or type(args) is not dict:
            args, repairs, problem = call_arguments(call)
            if problem is not None:
                return (
                    error_result(call, ToolErrorKind.INVALID_ARGUMENTS, problem),
                    0,
                    repairs,
                    False,
                )
        accepts = plan.accepts  # fast path: the schema certainly accepts, no business rules
        if accepts is None or not accepts(args):
            violations = t.validate(args)
            if violations:
                return (
                    gates.invalid(call, violations, self.config.max_violations),
                    0,
                    repairs,
                    False,
                )
        if plan.direct:  # no converters, no context: ``fn(**args)`` copies, never mutates
            kwargs = args
        else:  # before the guard: nobody is asked to approve a call that cannot run
            try:
                kwargs = t.bind(args, None)
            except ConversionError as exc:  # says each failure at its pointer
                msg = str(exc)
                return error_result(call, ToolErrorKind.INVALID_ARGUMENTS, msg), 0, repairs, False
        key: str | None = None
        if taint and (not plan.gated or not self.config.confirm_when_tainted):
            taint = ()  # the gate does not apply to this call
        if plan.guarded or confirmation is not None or taint:
            # arguments read from the raw text: hooks and confirmation handlers judge
            # ``call.arguments``, so they must be the ones that will run (left empty, a
            # policy on them let a call through by its JSON being broken)
            seen = replace(call, arguments=args) if args and not call.arguments else call
            early, key = await self._guard(seen, t, args, confirmation, taint)
            if early is not None:
                return early[0], 0, repairs, early[1]
        if key is not None:
            result, attempts, joined = await self._run_keyed(call, t, kwargs, key)
            return result, attempts, repairs, joined
        if t.context_param is None:  # attempt 1 right here: most calls need no other
            first = attempt(t, kwargs)
            if not isinstance(first, tuple):  # the tool suspended: wait for the rest
                first = await first
            if first[1] is None:
                result, attempts = self._success(call, t, first[0]), 1
            else:
                result, attempts = await self._run_with_retry(call, t, kwargs, None, first)
        else:
            result, attempts = await self._run_with_retry(call, t, kwargs, None, None)
        return result, attempts, repairs, False

    def _success(self, call: ToolCallPart, t: Tool, value: object) -> ToolResultPart:
        """The result of a successful run: rendered and cut to budget. A tool marked
        ``untrusted_output`` returns outside content, so its result is delimited as data
        (this is the one place that does it; the wrapper counts against the budget)."""
        budget = t.spec.max_result_chars
        if type(value) is ToolOutput:  # text plus images (an MCP tool's, for one)
            return replace(self._success(call, t, value.text), media=value.media)
        if not t.untrusted_output or not self.config.delimit_untrusted:
            return ToolResultPart(call.id, call.name, truncate_result(value, budget))
        room = budget - len(wrap_tool_result("", call.name))
        text = truncate_result(value, max(room, 1))
        return ToolResultPart(call.id, call.name, wrap_tool_result(text, call.name))

    # -- idempotency keys ------------------------------------------------------------------
    async def _run_keyed(
        self, call: ToolCallPart, t: Tool, kwargs: dict[str, Any], key: str
    ) -> tuple[ToolResultPart, int, bool]:
        """Run a keyed call at most once at a time per key (see inflight.py): join an
        execution already in flight, else run, record in the ledger, then release.
        Returns ``(result, attempts, answered_without_running)``."""
        slot, mine = inflight.claim(t.name, key)
        if not mine:
            return await self._join(call, t, key, slot), 0, True
        track = _Track()
        result: ToolResultPart | None = None
        try:
            result, attempts = await self._run_with_retry(call, t, kwargs, key, None, track)
        finally:
            running = track.execution is not None and track.execution.running()
            if running and not track.execution.done():  # type: ignore[union-attr]
                # a timed-out (or cancelled) worker run goes on: its end settles the key
                self._settle_late(call, t, key, slot, track.execution)  # type: ignore[arg-type]
            else:
                if result is not None:
                    await self._record(key, result)
                inflight.resolve(slot, result)
                inflight.release(t.name, key, slot)
        return result, attempts, False

    async def _join(
        self, call: ToolCallPart, t: Tool, key: str, slot: inflight.Slot[ToolResultPart | None]
    ) -> ToolResultPart:
        """The result of the execution holding ``key``, waited for up to the tool's
        timeout; it is never started a second time."""
        if not slot.done():
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()

            def set_waiter() -> None:
                if not waiter.done():
                    waiter.set_result(None)

            def wake(_: object) -> None:
                try:
                    loop.call_soon_threadsafe(set_waiter)
                except RuntimeError:  # this loop closed meanwhile
                    pass

            slot.add_done_callback(wake)
            try:
                await asyncio.wait_for(waiter, t.spec.timeout)
            except TimeoutError:
                return error_result(call, ToolErrorKind.TIMEOUT, _STILL_RUNNING)
        found = slot.result()
        if found is None:  # the claiming call was cancelled before its tool ran to an end
            msg = "an earlier call with the same idempotency key was cancelled; call again"
            return error_result(call, ToolErrorKind.TRANSIENT, msg)
        await self._record(key, found)  # a late result whose own loop could not record it
        inflight.release(t.name, key, slot)
        return replace(found, call_id=call.id, name=call.name)

    async def _record(self, key: str, result: ToolResultPart) -> None:
        """Put a known outcome (success or permanent failure) in the ledger."""
        if result.is_error and result.error_kind != ToolErrorKind.PERMANENT.value:
            return
        try:
            await gates.maybe_await(self.ledger.put(key, result))
        except Exception:
            log.exception("idempotency ledger put failed for key %r", key)

    def _settle_late(
        self,
        call: ToolCallPart,
        t: Tool,
        key: str,
        slot: inflight.Slot[ToolResultPart | None],
        execution: Execution[Any],
    ) -> None:
        """When the abandoned worker run of a keyed call ends: hand its result to calls
        waiting on the key, record it in the ledger (on this loop, if it still runs),
        then release the key. If the loop is gone the claim stays, resolved, for the next
        call with the key to record (:meth:`_join`)."""
        loop = asyncio.get_running_loop()

        async def record(result: ToolResultPart) -> None:
            await self._record(key, result)
            inflight.release(t.name, key, slot)

        def ended(_: object) -> None:
            value, kind, message = settled(execution)
            if kind is None:
                result = self._success(call, t, value)
            else:
                result = error_result(call, kind, message)
            inflight.resolve(slot, result)

            def start() -> None:
                task = loop.create_task(record(result))
                _LATE.add(task)
                task.add_done_callback(_LATE.discard)

            try:
                loop.call_soon_threadsafe(start)
            except RuntimeError:  # the loop closed: the next call with the key records it
                pass

        execution.add_done_callback(ended)

    async def _guard(
        self,
        call: ToolCallPart,
        t: Tool,
        args: Mapping[str, Any],
        confirmation: Confirmation | None,
        taint: Sequence[TaintSource],
    ) -> tuple[tuple[ToolResultPart, bool] | None, str | None]:
        """Steps 5-7 (hook, confirmation, ledger lookup): ``((result, from_ledger), key)``
        when the call ends here, else ``(None, key)``. A non-empty ``taint`` means the
        call is gated by it (one approval answers both that and ``requires_confirmation``)."""
        spec = t.spec
        if self.config.before_tool_call is not None:
            blocked = await gates.before(self.config.before_tool_call, call, spec)
            if blocked is not None:
                return (blocked, False), None
        if taint or spec.requires_confirmation or confirmation is not None:
            refused = await gates.confirm(self.config, call, spec, confirmation, taint)
            if refused is not None:
                return (refused, False), None
        if t.idempotency_key is None:
            return None, None
        try:
            key = t.idempotency_key(args)
        except Exception as exc:
            msg = f"could not derive the idempotency key: {describe(exc)}"
            return (error_result(call, ToolErrorKind.PERMANENT, msg), False), None
        if key is None:
            return None, None
        key = str(key)
        try:
            stored = await gates.maybe_await(self.ledger.get(key))
        except Exception as exc:
            msg = f"idempotency ledger failed ({describe(exc)}); the call was not run"
            return (error_result(call, ToolErrorKind.TRANSIENT, msg), False), key
        if stored is not None:
            return (replace(stored, call_id=call.id, name=call.name), True), key
        return None, key

    async def _run_with_retry(
        self,
        call: ToolCallPart,
        t: Tool,
        kwargs: dict[str, Any],
        key: str | None,
        first: Attempt | None,
        track: _Track | None = None,
    ) -> tuple[ToolResultPart, int]:
        """Attempts (with retries) until a result; ``first`` is attempt 1's outcome when
        the caller already ran it. With ``track`` (keyed calls) each worker run gets an
        execution: a timeout whose thread still runs ends the retries (running it again
        would duplicate it), and one that finished after all reports its real outcome."""
        cfg = self.config
        context_param = t.context_param
        failures: list[str] = []
        n = 1
        while True:
            if first is not None:
                (value, kind, message), first = first, None
            else:
                if context_param is not None:
                    kwargs[context_param] = ToolContext(
                        call.id, key, n, cfg.session_id, cfg.metadata, cfg.deps
                    )
                execution = None
                if track is not None and not t.is_async:
                    execution = track.execution = Execution()
                outcome = attempt(t, kwargs, execution)
                if not isinstance(outcome, tuple):
                    outcome = await outcome
                value, kind, message = outcome
                if execution is not None and kind == _TIMEOUT:
                    if execution.done():
                        value, kind, message = settled(execution)
                    elif execution.running():
                        return error_result(call, kind, f"{message}; {_LATE_NOTE}"), n
            if kind is None:
                return self._success(call, t, value), n
            policy = cfg.retry
            repeatable = t.spec.idempotent or key is not None
            if policy.should_retry(kind, n, repeatable=repeatable):
                failures.append(message)
                await cfg.sleep(policy.delay(n, cfg.random()))
                n += 1
                continue
            if failures:
                earlier = "; ".join(f"attempt {i}: {m}" for i, m in enumerate(failures, 1))
                message = f"{message} (failed {n} attempts; {earlier})"
            elif kind in policy.retry_on and not repeatable and policy.max_attempts > 1:
                message += " (not retried: the tool is not idempotent and the call has no key)"
            budget = min(t.spec.max_result_chars, ERROR_CHARS)
            res = error_result(call, kind, message)
            return replace(res, content=cut_text(res.content, budget)), n


# -- helpers ------------------------------------------------------------------------------
async def _ready(value: _T) -> _T:
    return value
