"""Strategies by name, built from an agent's model, tools and limits: what
``loopwright run --strategy NAME`` uses (see ``docs/strategies.md``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from loopwright.loop.agent import Agent
from loopwright.strategies.plan_execute import PlanAndExecute
from loopwright.strategies.react_text import ReActText
from loopwright.strategies.runtime import Strategy
from loopwright.strategies.self_consistency import SelfConsistency
from loopwright.strategies.self_refine import SelfRefine
from loopwright.strategies.tot import SearchConfig, TreeOfThoughts


def _plan_execute(agent: Agent) -> Strategy:
    # the agent's model plans and reflects; its tools are what steps may call
    return PlanAndExecute(
        agent.model, agent.tools, reflector=agent.model, limits=agent.config.limits
    )


def _self_consistency(agent: Agent) -> Strategy:
    return SelfConsistency(agent.model, k=5, concurrency=5, limits=agent.config.limits)


def _tree_of_thoughts(agent: Agent) -> Strategy:
    return TreeOfThoughts(agent.model, search=SearchConfig(beam=3), limits=agent.config.limits)


def _self_refine(agent: Agent) -> Strategy:
    return SelfRefine(agent.model, max_rounds=2, limits=agent.config.limits)


def _react_text(agent: Agent) -> Strategy:
    return ReActText(agent.model, agent.tools, limits=agent.config.limits)


BUILDERS: Final[dict[str, Callable[[Agent], Strategy]]] = {
    "plan_execute": _plan_execute,
    "self_consistency": _self_consistency,
    "tree_of_thoughts": _tree_of_thoughts,
    "self_refine": _self_refine,
    "react_text": _react_text,
}
STRATEGY_NAMES: Final = tuple(BUILDERS)


def for_agent(name: str, agent: Agent) -> Strategy:
    """The strategy ``name`` over ``agent``'s model, tools and limits."""
    try:
        return BUILDERS[name](agent)
    except KeyError:
        raise LookupError(
            f"unknown strategy {name!r}; expected one of: {', '.join(STRATEGY_NAMES)}"
        ) from None
