"""Reasoning strategies built on the loop: plan-and-execute with a reflector, and the
strategies for small embedded models (:mod:`loopwright.strategies.embedded`).

Each strategy makes its model calls through one
:class:`~loopwright.strategies.runtime.StrategyContext`, so ``Limits`` bound the whole
strategy run and every call and step is an event. See ``docs/strategies.md``.
"""

from typing import TYPE_CHECKING

from loopwright.core.lazy import lazy_exports

if TYPE_CHECKING:
    from loopwright.strategies.memory import PlanCheckpoints, ReflectionMemory
    from loopwright.strategies.plan_execute import (
        Decision,
        PlanAndExecute,
        PlanConfig,
        PlannerDeclined,
        PlanRun,
        PlanStep,
        StepResult,
        rule_reflector,
    )
    from loopwright.strategies.react_text import ReActText, parse_hermes, parse_react
    from loopwright.strategies.reflexion import Evaluation, Reflexion
    from loopwright.strategies.runtime import Strategy, StrategyContext, StrategyResult
    from loopwright.strategies.self_consistency import SelfConsistency, extract_answer
    from loopwright.strategies.self_refine import SelfRefine
    from loopwright.strategies.tot import SearchConfig, ThoughtHooks, TreeOfThoughts

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "loopwright.strategies.memory": ("PlanCheckpoints", "ReflectionMemory"),
        "loopwright.strategies.plan_execute": (
            "Decision",
            "PlanAndExecute",
            "PlanConfig",
            "PlannerDeclined",
            "PlanRun",
            "PlanStep",
            "StepResult",
            "rule_reflector",
        ),
        "loopwright.strategies.react_text": ("ReActText", "parse_hermes", "parse_react"),
        "loopwright.strategies.reflexion": ("Evaluation", "Reflexion"),
        "loopwright.strategies.runtime": ("Strategy", "StrategyContext", "StrategyResult"),
        "loopwright.strategies.self_consistency": ("SelfConsistency", "extract_answer"),
        "loopwright.strategies.self_refine": ("SelfRefine",),
        "loopwright.strategies.tot": ("SearchConfig", "ThoughtHooks", "TreeOfThoughts"),
    },
)

__all__ = [
    "Decision",
    "Evaluation",
    "PlanAndExecute",
    "PlanCheckpoints",
    "PlanConfig",
    "PlanRun",
    "PlanStep",
    "PlannerDeclined",
    "ReActText",
    "ReflectionMemory",
    "Reflexion",
    "SearchConfig",
    "SelfConsistency",
    "SelfRefine",
    "StepResult",
    "Strategy",
    "StrategyContext",
    "StrategyResult",
    "ThoughtHooks",
    "TreeOfThoughts",
    "extract_answer",
    "parse_hermes",
    "parse_react",
    "rule_reflector",
]
