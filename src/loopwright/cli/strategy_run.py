"""``loopwright run --strategy NAME``: run a reasoning strategy over the agent the other
options describe, and print its result like an agent run's (docs/strategies.md); and
``loopwright resume`` of such a run.

A resumable strategy (plan-and-execute) runs as a stored session: its progress is
checkpointed after the plan and after every batch of steps, next to the sealed recipe of
the agent -- which records the strategy and its settings. A run that escalates pauses
(``awaiting_confirmation``); a run whose process died stays unfinished. Either way
``loopwright resume SESSION`` rebuilds the agent and the strategy in a new process and
continues from the last checkpoint without running finished steps again (with
``--guidance TEXT`` the planner revises the plan first; ``--approve`` / ``--deny REASON``
answer the steps waiting for a person's approval: side effects after the run read
untrusted content, docs/security.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace

from loopwright.cli.output import CliError, emit_json, say
from loopwright.cli.recipe import AgentRecipe
from loopwright.cli.results import print_result, result_json
from loopwright.cli.stored import metadata_for
from loopwright.core.messages import JSONValue
from loopwright.core.run import RunState, RunStop, new_session_id
from loopwright.loop import Agent
from loopwright.store import CheckpointStore, open_store
from loopwright.strategies.catalog import RESUMABLE, for_agent, settings_for
from loopwright.strategies.memory import PlanCheckpoints
from loopwright.strategies.plan_execute import PlanAndExecute
from loopwright.strategies.runtime import StrategyResult
from loopwright.tools.confirm import Confirmation


def run_strategy(
    name: str,
    agent: Agent,
    prompt: str,
    recipe: AgentRecipe,
    *,
    as_json: bool,
    streamed: bool,
) -> RunStop:
    """Run strategy ``name`` on ``prompt``; its events reach the agent's subscribers. A
    resumable strategy is checkpointed to the session store as it goes."""
    settings = settings_for(name, recipe.strategy_settings or None)
    if name not in RESUMABLE:
        strategy = for_agent(name, agent, settings)
        outcome = strategy.run(prompt, on_event=agent.config.hooks.on_event)
        return report(outcome, as_json=as_json, streamed=streamed)
    recorded = replace(recipe, strategy=name, strategy_settings=settings)
    store = open_store()
    try:
        checkpoints = PlanCheckpoints(
            store, new_session_id(), metadata=metadata_for(recorded), lock=True
        )
        strategy = for_agent(name, agent, settings, on_progress=checkpoints)
        run = strategy.arun(
            prompt, on_event=agent.config.hooks.on_event, session_id=checkpoints.session_id
        )
        outcome = asyncio.run(checkpoints.hold(run))  # the lock is kept alive meanwhile
    finally:
        store.close()
    return report(outcome, as_json=as_json, streamed=streamed)


def parse_settings(
    name: str | None, pairs: tuple[str, ...], batch: bool
) -> dict[str, int | float | bool]:
    """``--strategy-setting NAME=VALUE`` options as the settings of strategy ``name``
    (whole numbers, numbers, ``true``/``false``); a bad one is a :class:`CliError`."""
    if name is None or batch:
        raise CliError(
            "--strategy-setting applies to a single run with --strategy NAME; "
            + ("drop --batch" if batch else "add --strategy")
        )
    given: dict[str, int | float | bool] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        value = _setting_value(text.strip())
        if not sep or not key.strip() or value is None:
            raise CliError(
                f"--strategy-setting {pair!r}: write NAME=VALUE with a number or "
                "true/false (e.g. k=3)"
            )
        given[key.strip()] = value
    try:
        settings_for(name, given)
    except LookupError as exc:  # an unknown setting: the message lists the known ones
        raise CliError(f"--strategy-setting: {exc}") from None
    defaults = settings_for(name)
    for key, value in given.items():
        kind = type(defaults[key])
        if type(value) is not kind and not (kind is float and type(value) is int):
            wanted = {bool: "true or false", int: "a whole number"}.get(kind, "a number")
            raise CliError(f"--strategy-setting {key}: {name}'s {key} is {wanted}")
    return given


def _setting_value(text: str) -> int | float | bool | None:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return value if value == value and abs(value) != float("inf") else None
    return None


def is_strategy_session(state: RunState) -> bool:
    """Whether a stored session is a strategy run's (its progress is in the metadata)."""
    return PlanCheckpoints.KEY in state.metadata


def strategy_decision(approve: bool, deny: str | None) -> Confirmation | None:
    """A person's answer for the steps waiting for approval (``--approve`` / ``--deny``)."""
    if approve and deny is not None:
        raise CliError("use --approve or --deny REASON, not both")
    if approve:
        return Confirmation.approve()
    return None if deny is None else Confirmation.deny(deny)


def resume_strategy(
    agent: Agent,
    recipe: AgentRecipe,
    store: CheckpointStore,
    state: RunState,
    guidance: str | None,
    decision: Confirmation | None = None,
    *,
    break_lock: bool = False,
) -> StrategyResult:
    """Continue the strategy session ``state`` (see the module docstring): under the
    session's lock, so two processes never continue one plan at once."""
    name = recipe.strategy or PlanAndExecute.name
    if state.stop is not None and state.stop is not RunStop.AWAITING_CONFIRMATION:
        raise CliError(
            f"session {state.session_id!r} is a {name} run that already ended "
            f"({state.stop.value}); start a new run instead"
        )
    kept: Mapping[str, JSONValue] = {
        k: v for k, v in state.metadata.items() if k != PlanCheckpoints.KEY
    }
    checkpoints = PlanCheckpoints(store, state.session_id, metadata=kept, lock=True)
    if break_lock:
        store.break_lock(state.session_id)
    checkpoints.lock()  # SessionLocked while another live process runs it
    try:
        progress = checkpoints.load()
        settings = settings_for(name, recipe.strategy_settings or None)
        strategy = for_agent(name, agent, settings, on_progress=checkpoints)
        assert isinstance(strategy, PlanAndExecute)  # the one resumable strategy (RESUMABLE)
        run = strategy.aresume(
            progress,
            guidance,
            decision=decision,
            on_event=agent.config.hooks.on_event,
            session_id=state.session_id,
        )
    except BaseException:
        # nothing ran yet: a later resume must not wait ``ttl`` for this lock to expire
        assert checkpoints.owner is not None  # lock=True
        store.release_lock(state.session_id, checkpoints.owner)
        raise
    return asyncio.run(checkpoints.hold(run))  # released if it raises (progress is saved)


def report(outcome: StrategyResult, *, as_json: bool, streamed: bool = False) -> RunStop:
    """Print a strategy run's result (and how to continue it when it paused)."""
    result = outcome.run_result()
    if outcome.state is None:
        print_result(result, as_json=as_json, streamed=streamed)
        return outcome.stop
    sid = outcome.session_id
    hint = (
        f"the run paused ({outcome.detail}); its progress is stored as session {sid}: "
        f"continue it with `loopwright resume {sid}` (add --guidance TEXT to have the "
        "plan revised first; docs/strategies.md)"
    )
    if as_json:
        data = result_json(result)
        data["hint"] = hint
        emit_json(data)
    else:
        if result.answer and not streamed:
            say(result.answer)
        say(hint, err=True)
    return outcome.stop
