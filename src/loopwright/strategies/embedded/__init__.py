"""Strategies for small embedded models (see ``docs/providers.md``, "The embedded model").

:func:`embedded_strategy` is what ``loopwright run`` wraps the embedded model in: its
plans run step by step (:class:`FollowPlan`) and its final answers are checked against
the tool results (:class:`GroundedAnswers`).
"""

from __future__ import annotations

from loopwright.core.protocols import Model
from loopwright.strategies.embedded.formula import HoldToFormula
from loopwright.strategies.embedded.grounded import GroundedAnswers, ungrounded
from loopwright.strategies.embedded.plan_steps import FollowPlan, progress


def embedded_strategy(model: Model) -> GroundedAnswers:
    """``model`` with formula checking, plan following and grounded-answer checking."""
    return GroundedAnswers(FollowPlan(HoldToFormula(model)))


__all__ = [
    "FollowPlan",
    "GroundedAnswers",
    "HoldToFormula",
    "embedded_strategy",
    "progress",
    "ungrounded",
]
