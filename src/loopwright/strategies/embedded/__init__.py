"""Strategies for small embedded models (see ``docs/providers.md``, "The embedded model").

:func:`embedded_strategy` is what ``loopwright run`` wraps the embedded model in: its
calls are held to what the request states verbatim, a formula or a file name
(:class:`HoldToRequest`), its plans run step by step (:class:`FollowPlan`) and its final
answers are checked against the tool results (:class:`GroundedAnswers`).
"""

from __future__ import annotations

from loopwright.core.protocols import Model
from loopwright.strategies.embedded.grounded import GroundedAnswers, ungrounded
from loopwright.strategies.embedded.plan_steps import FollowPlan, progress
from loopwright.strategies.embedded.requested import HoldToRequest


def embedded_strategy(model: Model) -> GroundedAnswers:
    """``model`` with request checking, plan following and grounded-answer checking."""
    return GroundedAnswers(FollowPlan(HoldToRequest(model)))


__all__ = [
    "FollowPlan",
    "GroundedAnswers",
    "HoldToRequest",
    "embedded_strategy",
    "progress",
    "ungrounded",
]
