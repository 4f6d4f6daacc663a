"""Strategies by name, built from an agent's model, tools and limits: what
``loopwright run --strategy NAME`` uses (see ``docs/strategies.md``).

Each strategy is built with *settings* (numbers and flags, defaults in
:data:`DEFAULT_SETTINGS`); a stored session records the settings it ran with, so
``loopwright resume`` rebuilds the same strategy even after the defaults change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, TypeAlias

from loopwright.loop.agent import Agent
from loopwright.strategies.plan_execute import PlanAndExecute, PlanConfig, Progress
from loopwright.strategies.react_text import ReActText
from loopwright.strategies.runtime import Strategy
from loopwright.strategies.self_consistency import SelfConsistency
from loopwright.strategies.self_refine import SelfRefine
from loopwright.strategies.tot import SearchConfig, TreeOfThoughts

Settings: TypeAlias = Mapping[str, int | float | bool]


def _plan_execute(agent: Agent, s: Settings, progress: Progress | None) -> Strategy:
    # the agent's model plans and reflects; its tools are what steps may call
    config = PlanConfig(
        max_steps=int(s["max_steps"]),
        max_concurrency=int(s["max_concurrency"]),
        max_retries=int(s["max_retries"]),
        max_replans=int(s["max_replans"]),
        reflect_each_batch=bool(s["reflect_each_batch"]),
        on_progress=progress,
    )
    # the agent's dispatch settings too: its confirmation handlers answer for the steps
    return PlanAndExecute(
        agent.model,
        agent.tools,
        reflector=agent.model,
        limits=agent.config.limits,
        config=config,
        dispatch=agent.config.dispatch,
    )


def _self_consistency(agent: Agent, s: Settings, progress: Progress | None) -> Strategy:
    k = int(s["k"])
    return SelfConsistency(agent.model, k=k, concurrency=k, limits=agent.config.limits)


def _tree_of_thoughts(agent: Agent, s: Settings, progress: Progress | None) -> Strategy:
    search = SearchConfig(beam=int(s["beam"]), depth=int(s["depth"]))
    return TreeOfThoughts(agent.model, search=search, limits=agent.config.limits)


def _self_refine(agent: Agent, s: Settings, progress: Progress | None) -> Strategy:
    return SelfRefine(agent.model, max_rounds=int(s["max_rounds"]), limits=agent.config.limits)


def _react_text(agent: Agent, s: Settings, progress: Progress | None) -> Strategy:
    return ReActText(
        agent.model, agent.tools, limits=agent.config.limits, dispatch=agent.config.dispatch
    )


_Builder: TypeAlias = Callable[[Agent, Settings, "Progress | None"], Strategy]
_PLAN_DEFAULTS = PlanConfig()
BUILDERS: Final[dict[str, _Builder]] = {
    "plan_execute": _plan_execute,
    "self_consistency": _self_consistency,
    "tree_of_thoughts": _tree_of_thoughts,
    "self_refine": _self_refine,
    "react_text": _react_text,
}
DEFAULT_SETTINGS: Final[dict[str, dict[str, int | float | bool]]] = {
    "plan_execute": {
        "max_steps": _PLAN_DEFAULTS.max_steps,
        "max_concurrency": _PLAN_DEFAULTS.max_concurrency,
        "max_retries": _PLAN_DEFAULTS.max_retries,
        "max_replans": _PLAN_DEFAULTS.max_replans,
        "reflect_each_batch": _PLAN_DEFAULTS.reflect_each_batch,
    },
    "self_consistency": {"k": 5},
    "tree_of_thoughts": {"beam": 3, "depth": SearchConfig().depth},
    "self_refine": {"max_rounds": 2},
    "react_text": {},
}
STRATEGY_NAMES: Final = tuple(BUILDERS)
RESUMABLE: Final = frozenset({"plan_execute"})
"""Strategies whose progress is checkpointed: a stored session continues with
``loopwright resume`` (the others have no intermediate state worth keeping)."""


def settings_for(name: str, given: Settings | None = None) -> dict[str, int | float | bool]:
    """The defaults of strategy ``name`` with ``given`` on top; an unknown name or
    setting is a :class:`LookupError` naming the known ones."""
    defaults = DEFAULT_SETTINGS.get(name)
    if defaults is None:
        raise LookupError(
            f"unknown strategy {name!r}; expected one of: {', '.join(STRATEGY_NAMES)}"
        )
    unknown = sorted(set(given or {}) - set(defaults))
    if unknown:
        raise LookupError(
            f"strategy {name!r} has no setting(s) {', '.join(unknown)}; "
            f"its settings: {', '.join(defaults) or '(none)'}"
        )
    return {**defaults, **(given or {})}


def for_agent(
    name: str,
    agent: Agent,
    settings: Settings | None = None,
    *,
    on_progress: Progress | None = None,
) -> Strategy:
    """The strategy ``name`` over ``agent``'s model, tools and limits, built with
    ``settings`` (see :func:`settings_for`); ``on_progress`` receives the progress of a
    resumable strategy (:data:`RESUMABLE`) after every step."""
    return BUILDERS[name](agent, settings_for(name, settings), on_progress)
