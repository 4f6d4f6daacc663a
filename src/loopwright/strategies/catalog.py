"""Strategies by name, built from an agent's model, tools and limits: what
``loopwright run --strategy NAME`` uses (see ``docs/strategies.md``).

Self-consistency and Self-Refine run the agent itself (its tools, dispatch settings and
system prompt) for their "answer the task" step; the tree of thoughts searches over the
model's thoughts alone, and plan-and-execute and ReAct-in-text drive the tools
themselves from the model's text.

Each strategy is built with *settings* (numbers and flags, defaults in
:data:`DEFAULT_SETTINGS`); a stored session records the settings it ran with, so
``loopwright resume`` rebuilds the same strategy even after the defaults change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, TypeAlias

from loopwright.core.errors import ConfigError
from loopwright.core.protocols import FollowsTextFormats
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
    # each sample is a whole run of the agent: its tools are called
    # concurrency 1 saves runs on a model that answers one call at a time: the vote can
    # be decided before the last samples start (adaptive stopping)
    k, workers = int(s["k"]), int(s["concurrency"])
    return SelfConsistency(agent, k=k, concurrency=workers, limits=agent.config.limits)


def _tree_of_thoughts(agent: Agent, s: Settings, progress: Progress | None) -> Strategy:
    # thoughts are proposed and valued by the model alone (docs/strategies.md)
    search = SearchConfig(beam=int(s["beam"]), depth=int(s["depth"]))
    return TreeOfThoughts(agent.model, search=search, limits=agent.config.limits)


def _self_refine(agent: Agent, s: Settings, progress: Progress | None) -> Strategy:
    # the drafts are the agent's runs; the critic is its model
    return SelfRefine(agent, max_rounds=int(s["max_rounds"]), limits=agent.config.limits)


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
    "self_consistency": {"k": 5, "concurrency": 5},
    "tree_of_thoughts": {"beam": 3, "depth": SearchConfig().depth},
    "self_refine": {"max_rounds": 2},
    "react_text": {},
}
STRATEGY_NAMES: Final = tuple(BUILDERS)
TEXT_FORMATS: Final[dict[str, str]] = {
    "plan_execute": "a JSON plan of tool steps",
    "tree_of_thoughts": "proposed steps one per line and a sure/likely/impossible verdict",
    "react_text": "Thought / Action / Action Input lines",
    # the critic's score and STOP decide which draft is the answer: from a model that
    # does not write them they are noise (on the embedded model a rewrite it scored
    # replaced the agent's honest "could not answer" with a wrong sum)
    "self_refine": "feedback ending with a line 'Score: N/10' (and STOP when done)",
}
"""The strategies whose every step needs the model to write a text format the prompt
asks for, and that format: a model declaring ``follows_text_formats = False`` (the
embedded model) cannot run them (:func:`unsupported_reason`)."""
RESUMABLE: Final = frozenset({"plan_execute"})
"""Strategies whose progress is checkpointed: a stored session continues with
``loopwright resume`` (the others have no intermediate state worth keeping)."""


def unsupported_reason(name: str, agent: Agent) -> str | None:
    """Why strategy ``name`` cannot run on ``agent``'s model, or ``None``: a model that
    declares it does not follow text formats (``follows_text_formats = False``, the
    embedded model) cannot run a strategy of :data:`TEXT_FORMATS` -- it would end
    ``output_invalid``, ``max_turns`` or, worse, with a made-up answer."""
    needed = TEXT_FORMATS.get(name)
    model = agent.model
    if needed is None or not isinstance(model, FollowsTextFormats) or model.follows_text_formats:
        return None
    return (
        f"strategy {name!r} needs a model that writes {needed}; {model.name} does not "
        "follow such formats. Give an instruction-following model (--model "
        "openai:gpt-4o-mini, or any --model PROVIDER:NAME), or use self_consistency, "
        "which votes over runs of the agent itself"
    )


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
    resumable strategy (:data:`RESUMABLE`) after every step. A strategy the model cannot
    run (:func:`unsupported_reason`) is a :class:`ConfigError` saying why and what to
    use instead, before any model call."""
    chosen = settings_for(name, settings)
    reason = unsupported_reason(name, agent)
    if reason is not None:
        raise ConfigError(f"--strategy {name}: {reason}")
    return BUILDERS[name](agent, chosen, on_progress)
