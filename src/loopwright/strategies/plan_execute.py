"""Plan-and-execute: a planner writes a step DAG, an executor runs it, a reflector judges.

1. The **planner** (the built-in ``planner`` prompt pattern) answers with steps -- id,
   tool, input, ``depends_on`` -- and may refer to an earlier step's result as
   ``$step_N_result``. The pattern's parser refuses references to later or missing steps
   and cycles with a message addressed to the planner, which is sent back (up to
   ``planner_attempts`` tries).
2. The **executor** runs every step whose dependencies are finished, all at once (at
   most ``max_concurrency`` at a time), through the tool dispatcher (validation,
   permissions and timeouts apply as in an agent run). References are resolved first: an
   input that *is* ``$step_N_result`` gets the result's value (parsed JSON when it is
   JSON), a reference inside a longer string gets the result's text.
3. After each batch the **reflector** (the built-in ``reflector`` pattern, or rules when
   no reflector model is given) decides: ``accept`` (go on), ``retry_step`` (run a step
   again -- its dependents too; ``retry_details.modification`` may be a JSON object
   replacing the step's input), ``replan`` (the planner revises the plan, keeping the
   finished steps and their results) or ``escalate``: the run pauses with
   ``awaiting_confirmation`` and a JSON ``state`` holding the plan and results so far;
   :meth:`PlanAndExecute.aresume` continues it (with a person's guidance: a replan).

Retries per step and replans per run are bounded; past either bound the run escalates.
See ``docs/strategies.md``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, TypeAlias

from loopwright.core.checks import check_count
from loopwright.core.errors import ToolErrorKind
from loopwright.core.events import RunStarted
from loopwright.core.messages import JSONValue, Message, ToolCallPart
from loopwright.core.protocols import Model
from loopwright.core.run import TaintSource, run_sync
from loopwright.loop.agent import ToolLike
from loopwright.loop.limits import Limits
from loopwright.prompts import OutputParseError, Pattern, PromptText, load_pattern
from loopwright.prompts import tool_descriptions as describe_tools
from loopwright.prompts.patterns import STRICT_JSON
from loopwright.prompts.template import render_value
from loopwright.strategies.prompts import ask_parsed, strategy_prompt
from loopwright.strategies.runtime import (
    EventSink,
    Outcome,
    Paused,
    Strategy,
    StrategyContext,
    StrategyResult,
)
from loopwright.tools import DispatchConfig, Dispatcher, ToolRegistry
from loopwright.tools.confirm import Confirmation
from loopwright.tools.taint import describe as describe_taint

_REF: Final = "$step_{}_result"


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One step of a plan: a tool call whose input may name earlier results."""

    step_id: int
    description: str
    tool_name: str
    tool_input: Mapping[str, JSONValue]
    depends_on: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "step_id": self.step_id,
            "description": self.description,
            "tool_name": self.tool_name,
            "tool_input": dict(self.tool_input),
            "depends_on": list(self.depends_on),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> PlanStep:
        tool_input = data.get("tool_input") or {}
        deps = data.get("depends_on") or []
        assert isinstance(tool_input, dict) and isinstance(deps, list)
        return cls(
            int(data["step_id"]),  # type: ignore[arg-type]
            str(data.get("description", "")),
            str(data["tool_name"]),
            tool_input,
            tuple(int(d) for d in deps),  # type: ignore[arg-type]
        )


@dataclass(frozen=True, slots=True)
class StepResult:
    """What a step produced: the tool's result text, whether it failed, and how many times
    the step has run; ``error_kind`` is the failed result's
    :class:`~loopwright.core.errors.ToolErrorKind` value."""

    step_id: int
    output: str
    ok: bool
    attempts: int
    error_kind: str | None = None

    @property
    def waiting(self) -> bool:
        """The step's call was not run: it waits for a person's approval (a side effect
        after the run read untrusted content)."""
        return self.error_kind == ToolErrorKind.AWAITING_CONFIRMATION

    def to_dict(self) -> dict[str, JSONValue]:
        data: dict[str, JSONValue] = {
            "step_id": self.step_id,
            "output": self.output,
            "ok": self.ok,
            "attempts": self.attempts,
        }
        if self.error_kind is not None:
            data["error_kind"] = self.error_kind
        return data


@dataclass(slots=True)
class PlanRun:
    """The progress of one plan: JSON round-trips through :meth:`to_dict` /
    :meth:`from_dict` (what a paused run's ``state`` holds). ``taint`` lists the
    untrusted results the run has read (docs/security.md, "Taint"): a resumed run is as
    tainted as it was. ``decisions`` are a person's answers for the calls of steps that
    wait for one (given when the run resumes; not stored)."""

    request: str
    steps: list[PlanStep] = field(default_factory=list)
    results: dict[int, StepResult] = field(default_factory=dict)
    retries: dict[int, int] = field(default_factory=dict)
    replans: int = 0
    taint: tuple[TaintSource, ...] = ()
    decisions: dict[int, Confirmation] = field(default_factory=dict)
    _shown: tuple[list[PlanStep], str] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "request": self.request,
            "plan": [s.to_dict() for s in self.steps],
            "results": [r.to_dict() for r in self.results.values()],
            "retries": {str(k): v for k, v in self.retries.items()},
            "replans": self.replans,
            "taint": [
                {"tool": t.tool, "call_id": t.call_id, "excerpt": t.excerpt} for t in self.taint
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> PlanRun:
        plan = data.get("plan") or []
        results = data.get("results") or []
        retries = data.get("retries") or {}
        assert isinstance(plan, list) and isinstance(results, list) and isinstance(retries, dict)
        run = cls(str(data["request"]), [PlanStep.from_dict(s) for s in plan])  # type: ignore[arg-type]
        for r in results:
            assert isinstance(r, dict)
            sid = int(r["step_id"])  # type: ignore[arg-type]
            run.results[sid] = StepResult(
                sid,
                str(r["output"]),
                bool(r["ok"]),
                int(r["attempts"]),
                _text(r.get("error_kind")),  # type: ignore[arg-type]
            )
        for t in data.get("taint") or []:  # type: ignore[union-attr]
            assert isinstance(t, dict)
            run.taint += (TaintSource(str(t["tool"]), str(t["call_id"]), str(t["excerpt"])),)
        run.retries = {int(k): int(v) for k, v in retries.items()}  # type: ignore[arg-type]
        run.replans = int(data.get("replans") or 0)  # type: ignore[arg-type]
        return run

    def plan_json(self) -> str:
        """The plan as a prompt shows it (indented JSON), written once per plan: the
        reflector sees the same plan after every batch. ``steps`` is replaced, never
        changed in place, when the plan changes."""
        cached = self._shown
        if cached is None or cached[0] is not self.steps:
            cached = self._shown = (self.steps, render_value([s.to_dict() for s in self.steps]))
        return cached[1]

    def ready(self) -> list[PlanStep]:
        """Steps not yet finished whose dependencies all finished successfully."""
        done = {sid for sid, r in self.results.items() if r.ok}
        return [
            s
            for s in self.steps
            if s.step_id not in self.results and all(d in done for d in s.depends_on)
        ]

    def finished(self) -> bool:
        return all(s.step_id in self.results and self.results[s.step_id].ok for s in self.steps)

    def forget(self, step_id: int) -> None:
        """Drop a step's result and those of every step depending on it."""
        self.results.pop(step_id, None)
        for s in self.steps:
            if step_id in s.depends_on and s.step_id in self.results:
                self.forget(s.step_id)

    def answer(self) -> str:
        """The results no finished step consumed: the plan's outputs once it is finished,
        the latest results before (what a limit-stopped run returns)."""
        done = [s for s in self.steps if s.step_id in self.results and self.results[s.step_id].ok]
        used = {d for s in done for d in s.depends_on}
        return "\n".join(self.results[s.step_id].output for s in done if s.step_id not in used)


@dataclass(frozen=True, slots=True)
class Decision:
    """A reflector's verdict on the plan so far."""

    action: str  # accept | retry_step | replan | escalate
    step_id: int | None = None
    modification: str = ""


def resolve(value: JSONValue, results: Mapping[int, StepResult]) -> JSONValue:
    """``value`` with every ``$step_N_result`` replaced (see the module docstring)."""
    if isinstance(value, str):
        for sid, result in results.items():
            ref = _REF.format(sid)
            if value == ref:
                try:
                    parsed: JSONValue = json.loads(result.output)
                except (ValueError, RecursionError):
                    return result.output
                return parsed
            if ref in value:
                value = value.replace(ref, result.output)
        return value
    if isinstance(value, dict):
        return {k: resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    return value


def rule_reflector(run: PlanRun, max_retries: int) -> Decision:
    """The reflector used when no reflector model is given: a failed step is retried
    while it has retries left, then the run escalates; a step whose call a person denied
    escalates at once (asking again is for the person to choose); otherwise accept."""
    for sid, result in run.results.items():
        if result.error_kind == ToolErrorKind.DENIED_BY_USER:
            return Decision("escalate", sid, f"step {sid}: {result.output}")
        if not result.ok:
            if run.retries.get(sid, 0) < max_retries:
                return Decision("retry_step", sid, "the tool reported an error")
            return Decision("escalate", sid, f"step {sid} failed {result.attempts} times")
    return Decision("accept")


Review: TypeAlias = Callable[[list[PlanStep]], "str | Awaitable[str | None] | None"]
Progress: TypeAlias = Callable[[Mapping[str, JSONValue]], None]


@dataclass(frozen=True, slots=True)
class PlanConfig:
    """Bounds and hooks of :class:`PlanAndExecute`: steps in a plan, tries for a valid
    plan, steps run at once, retries per step, replans per run; ``reflect_each_batch``
    asks the reflector after every batch (else only when the plan is finished or a step
    failed).

    ``review(steps)`` sees every plan before it runs (a person approving it): ``None``
    approves, a text is feedback for a revised plan (a replan). ``on_progress(state)``
    receives the JSON state after every plan and batch: save it, and
    :meth:`PlanAndExecute.aresume` continues a crashed run from it without running
    finished steps again."""

    max_steps: int = 8
    planner_attempts: int = 3
    max_concurrency: int = 4
    max_retries: int = 2
    max_replans: int = 2
    reflect_each_batch: bool = True
    review: Review | None = None
    on_progress: Progress | None = None

    def __post_init__(self) -> None:
        for name in ("max_steps", "planner_attempts", "max_concurrency"):
            check_count(f"PlanConfig.{name}", getattr(self, name))
        for name in ("max_retries", "max_replans"):
            check_count(f"PlanConfig.{name}", getattr(self, name), minimum=0)


class PlanAndExecute(Strategy):
    """Plan-and-execute with a reflector (module docstring).

    ``planner`` writes the plan; ``reflector`` judges results (``None``: the rules of
    :func:`rule_reflector`); ``tools`` are what steps may call (an agent wrapped with
    ``Agent.as_tool`` makes a step a small ReAct loop of its own).
    """

    name = "plan_execute"

    def __init__(
        self,
        planner: Model,
        tools: ToolRegistry | Iterable[ToolLike],
        *,
        reflector: Model | None = None,
        limits: Limits | None = None,
        config: PlanConfig | None = None,
        dispatch: DispatchConfig | None = None,
    ) -> None:
        super().__init__(limits)
        self.planner = planner
        self.reflector = reflector
        self.config = config or PlanConfig()
        registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.dispatcher = Dispatcher(registry, dispatch)
        self._planner_pattern: Pattern = load_pattern("planner")
        self._reflector_pattern: Pattern = load_pattern("reflector")

    # -- entry points -----------------------------------------------------------------
    async def _solve(self, ctx: StrategyContext, prompt: str) -> Outcome:
        run = PlanRun(prompt)
        ctx.record = run.to_dict  # encoded only if a limit stops the run
        return await self._guarded(ctx, run, self._plan(ctx, run, feedback=""))

    async def _guarded(
        self, ctx: StrategyContext, run: PlanRun, prepare: Awaitable[None]
    ) -> Outcome:
        """Await ``prepare`` (planning, or readying a resumed plan), then run the plan;
        a planner that declines answers, a plan refused at review pauses the run."""
        try:
            await prepare
            return await self._drive(ctx, run)
        except PlannerDeclined as exc:
            return exc.text, {"action": exc.action, **run.to_dict()}
        except PlanRejected as exc:
            return run.answer(), self._pause(ctx, run, str(exc))

    async def aresume(
        self,
        state: Mapping[str, JSONValue],
        guidance: str | None = None,
        *,
        decision: Confirmation | None = None,
        on_event: EventSink | None = None,
        session_id: str | None = None,
    ) -> StrategyResult:
        """Continue a paused (or crashed) run from its ``state``. With ``guidance`` (a
        person's instructions) the planner revises the plan first; without, failed steps
        get a fresh set of retries. Finished steps are never run again. ``decision``
        answers the calls of steps waiting for a person's approval (without one they wait
        again). ``session_id`` keeps the run's id (a fresh one by default)."""
        run = PlanRun.from_dict(state)
        if decision is not None:
            run.decisions = {sid: decision for sid, r in run.results.items() if r.waiting}
        ctx = self._context(on_event, session_id)
        ctx.taint = run.taint
        ctx.record = run.to_dict
        ctx.emit(RunStarted(ctx.session_id, Message.user(run.request)))
        ctx.step("resumed", guidance=guidance or "")

        async def ready() -> None:
            run.retries.clear()
            if guidance or not run.steps:  # no plan yet: the run stopped while planning
                run.replans = 0
                await self._plan(ctx, run, feedback=guidance or "")
            else:
                for sid in [s for s, r in run.results.items() if not r.ok]:
                    run.forget(sid)

        return await self._finish(ctx, self._guarded(ctx, run, ready()))

    def resume(
        self,
        state: Mapping[str, JSONValue],
        guidance: str | None = None,
        *,
        decision: Confirmation | None = None,
        on_event: EventSink | None = None,
        session_id: str | None = None,
    ) -> StrategyResult:
        """Synchronous :meth:`aresume` (``asyncio.run``)."""
        return run_sync(
            lambda: self.aresume(
                state, guidance, decision=decision, on_event=on_event, session_id=session_id
            ),
            f"{type(self).__name__}.resume()",
            "strategy.aresume(...)",
        )

    # -- the cycle --------------------------------------------------------------------
    async def _drive(self, ctx: StrategyContext, run: PlanRun) -> Outcome:
        while True:
            batch = run.ready()
            if batch:
                await self._execute(ctx, run, batch)
                ctx.best = run.answer()
                self._progress(run)
                waiting = [str(sid) for sid, r in run.results.items() if r.waiting]
                if waiting:  # a person decides; retrying or replanning would not help
                    reason = f"step(s) {', '.join(waiting)} wait for a person to approve their call"
                    held = self._pause(ctx, run, f"{reason}; {describe_taint(run.taint)}")
                    return run.answer(), held
            failed = any(not r.ok for r in run.results.values())
            if not batch and not failed and run.finished():
                return run.answer(), run.to_dict()
            if batch and not failed and not run.finished() and not self.config.reflect_each_batch:
                continue
            decision = await self._reflect(ctx, run)
            paused = await self._apply(ctx, run, decision)
            if paused is not None:
                return run.answer(), paused
            if decision.action == "accept" and run.finished():
                return run.answer(), run.to_dict()
            if decision.action == "accept" and not run.ready():
                # accepted, yet nothing can run (a failed step the reflector let stand)
                return run.answer(), self._pause(ctx, run, "no step can run: a step failed")

    async def _apply(self, ctx: StrategyContext, run: PlanRun, decision: Decision) -> Paused | None:
        cfg = self.config
        if decision.action == "retry_step":
            sid = _retry_target(run, decision.step_id)
            if sid is None:
                return self._pause(ctx, run, "the reflector asked to retry a step the plan lacks")
            if run.retries.get(sid, 0) >= cfg.max_retries:
                return self._pause(ctx, run, f"step {sid} is out of retries ({cfg.max_retries})")
            run.retries[sid] = run.retries.get(sid, 0) + 1
            self._modify(run, sid, decision.modification)
            run.forget(sid)
        elif decision.action == "replan":
            if run.replans >= cfg.max_replans:
                return self._pause(ctx, run, f"out of replans ({cfg.max_replans})")
            run.replans += 1
            await self._plan(ctx, run, feedback=decision.modification)
        elif decision.action == "escalate":
            return self._pause(ctx, run, decision.modification or "the reflector escalated")
        return None

    def _pause(self, ctx: StrategyContext, run: PlanRun, reason: str) -> Paused:
        ctx.step("escalated", reason=reason)
        self._progress(run)
        data = run.to_dict()
        return Paused(f"escalated: {reason}", data, data)

    @staticmethod
    def _modify(run: PlanRun, sid: int, modification: str) -> None:
        """A modification that is a JSON object replaces the step's input."""
        try:
            new_input = STRICT_JSON.decode(modification)
        except (ValueError, RecursionError):
            return
        if isinstance(new_input, dict):
            run.steps = [
                replace(s, tool_input=new_input) if s.step_id == sid else s for s in run.steps
            ]

    # -- planning ---------------------------------------------------------------------
    def _progress(self, run: PlanRun) -> None:
        if self.config.on_progress is not None:
            self.config.on_progress(run.to_dict())

    async def _plan(self, ctx: StrategyContext, run: PlanRun, feedback: str) -> None:
        """Write a plan (revising the current one when there is one) and have it reviewed."""
        await self._write_plan(ctx, run, feedback)
        review = self.config.review
        while review is not None:
            verdict = review(list(run.steps))
            if inspect.isawaitable(verdict):
                verdict = await verdict
            ctx.step("review", approved=verdict is None, feedback=verdict or "")
            if verdict is None:
                break
            if run.replans >= self.config.max_replans:
                raise PlanRejected(f"the plan was not approved: {verdict}")
            run.replans += 1
            await self._write_plan(ctx, run, verdict)
        self._progress(run)

    async def _write_plan(self, ctx: StrategyContext, run: PlanRun, feedback: str) -> None:
        registry = self.dispatcher.registry
        # described once per set of tools (the table is fresh after the registry changes)
        known = registry.derived_table("strategies.plan_execute")
        described = known.get("descriptions")
        if described is None:
            described = known["descriptions"] = describe_tools(registry.specs())
        prompt: PromptText = self._planner_pattern.render(
            max_steps=self.config.max_steps, tool_descriptions=described, user_request=run.request
        )
        if run.steps:
            prompt = strategy_prompt(
                "replan",
                prefix=prompt,
                plan=[s.to_dict() for s in run.steps],
                finished=[r.to_dict() for r in run.results.values() if r.ok],
                feedback=feedback or "(none)",
            )
        parsed = await ask_parsed(
            ctx,
            self.planner,
            prompt,
            lambda text: self._planner_pattern.parse(text, allowed_tools=registry.names()),
            self.config.planner_attempts,
        )
        value = parsed.value
        if value["action"] != "plan":
            text = value.get("question") or value.get("reason") or ""
            raise PlannerDeclined(str(value["action"]), str(text))
        steps = [PlanStep.from_dict(s) for s in value["plan"]]  # type: ignore[union-attr, arg-type]
        self._keep_finished(run, steps)
        ctx.step("plan", steps=[s.to_dict() for s in steps], replans=run.replans)

    @staticmethod
    def _keep_finished(run: PlanRun, steps: Sequence[PlanStep]) -> None:
        """Install a new plan, keeping results of finished steps it repeats unchanged."""
        old = {s.step_id: s for s in run.steps}
        kept = {
            s.step_id: run.results[s.step_id]
            for s in steps
            if s.step_id in run.results and run.results[s.step_id].ok and old.get(s.step_id) == s
        }
        run.steps, run.results = list(steps), kept

    # -- execution --------------------------------------------------------------------
    async def _execute(self, ctx: StrategyContext, run: PlanRun, batch: Sequence[PlanStep]) -> None:
        ctx.check()
        ctx.step("batch", step_ids=[s.step_id for s in batch])
        sem = asyncio.Semaphore(self.config.max_concurrency)
        # the batch's steps were planned before any of its results were read: what the
        # run had read before the batch is what gates their side effects (as in the loop)
        read_before = ctx.taint

        async def one(step: PlanStep) -> StepResult:
            async with sem:
                return await self._run_step(ctx, run, step, read_before)

        for result in await asyncio.gather(*(one(s) for s in batch)):
            run.results[result.step_id] = result
        run.taint = ctx.taint

    async def _run_step(
        self, ctx: StrategyContext, run: PlanRun, step: PlanStep, taint: Sequence[TaintSource]
    ) -> StepResult:
        arguments = resolve(dict(step.tool_input), run.results)
        assert isinstance(arguments, dict)
        attempts = run.retries.get(step.step_id, 0) + 1
        call = ToolCallPart(f"step_{step.step_id}_{attempts}", step.tool_name, arguments)
        decision = run.decisions.pop(step.step_id, None)
        outcome = await ctx.call_tool(self.dispatcher, call, taint=taint, confirmation=decision)
        result = outcome.result
        ok = not result.is_error
        ctx.step("step_finished", step_id=step.step_id, ok=ok, attempts=attempts)
        return StepResult(step.step_id, result.content, ok, attempts, result.error_kind)

    # -- reflection -------------------------------------------------------------------
    async def _reflect(self, ctx: StrategyContext, run: PlanRun) -> Decision:
        if self.reflector is None:
            decision = rule_reflector(run, self.config.max_retries)
        else:
            decision = await self._model_reflection(ctx, run, self.reflector)
        ctx.step(
            "reflection",
            action=decision.action,
            step_id=decision.step_id,
            modification=decision.modification,
        )
        return decision

    async def _model_reflection(self, ctx: StrategyContext, run: PlanRun, model: Model) -> Decision:
        prompt = self._reflector_pattern.render(
            user_request=run.request,
            plan=run.plan_json(),
            results=[r.to_dict() for r in run.results.values()],
            retry_count=sum(run.retries.values()),
        )
        try:
            parsed = await ask_parsed(
                ctx, model, prompt, self._reflector_pattern.parse, self.config.planner_attempts
            )
        except OutputParseError as exc:
            return Decision("escalate", None, f"the reflector's reply was unusable: {exc}")
        value = parsed.value
        details = value.get("retry_details")
        step_id: int | None = None
        modification = ""
        if isinstance(details, dict):
            raw_id = details.get("step_id")
            step_id = raw_id if isinstance(raw_id, int) else None
            modification = str(details.get("modification") or "")
        return Decision(str(value["action"]), step_id, modification or _low_scores(value))


def _low_scores(value: Mapping[str, JSONValue]) -> str:
    """The reflector's reasons for scores below 4: what a replan must fix."""
    evaluation = value.get("evaluation")
    if not isinstance(evaluation, dict):
        return ""
    reasons = []
    for name, item in evaluation.items():
        if isinstance(item, dict) and isinstance(item.get("score"), int) and item["score"] < 4:  # type: ignore[operator]
            reasons.append(f"{name} {item['score']}/5: {item.get('reason', '')}")
    return "; ".join(reasons)


def _text(value: JSONValue) -> str | None:
    return None if value is None else str(value)


def _retry_target(run: PlanRun, step_id: int | None) -> int | None:
    """The step a ``retry_step`` names, else the first failed step, else ``None``."""
    if step_id is not None and any(s.step_id == step_id for s in run.steps):
        return step_id
    return next((sid for sid, r in run.results.items() if not r.ok), None)


class PlanRejected(Exception):
    """The reviewer did not approve a plan within ``max_replans`` revisions."""


class PlannerDeclined(Exception):
    """The planner answered ``clarify`` or ``refuse`` instead of a plan: the run ends with
    the planner's question or reason as its answer."""

    def __init__(self, action: str, text: str) -> None:
        super().__init__(f"the planner chose {action}: {text}")
        self.action = action
        self.text = text
