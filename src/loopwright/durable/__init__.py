"""Durable agents: checkpoints, approvals that survive restarts, crash-safe side effects.

This package sits above the loop and the stores (it wires one into the other), next to
the facade. See ``docs/durable.md``.

* :class:`Durable` -- ``run`` / ``resume`` (approve, deny) / crash recovery;
* :class:`Checkpointer` -- the event subscriber that checkpoints a live run;
* :class:`IntentRecorder` -- intent/result records around non-idempotent tools;
* :func:`plan_recovery` -- what to do with calls left without results after a crash.
"""

from typing import TYPE_CHECKING

from loopwright.core.lazy import lazy_exports

if TYPE_CHECKING:
    from loopwright.core.tools import NOT_RUN
    from loopwright.durable.checkpointer import (
        CheckpointConfig,
        Checkpointer,
        CheckpointPolicy,
    )
    from loopwright.durable.runner import Durable, DurableConfig
    from loopwright.loop.intents import IntentRecorder
    from loopwright.loop.recovery import (
        UNKNOWN_OUTCOME_TEXT,
        Recovery,
        plan_recovery,
        unanswered_calls,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "loopwright.core.tools": ("NOT_RUN",),
        "loopwright.durable.checkpointer": (
            "CheckpointConfig",
            "Checkpointer",
            "CheckpointPolicy",
        ),
        "loopwright.loop.intents": ("IntentRecorder",),
        "loopwright.loop.recovery": (
            "UNKNOWN_OUTCOME_TEXT",
            "Recovery",
            "plan_recovery",
            "unanswered_calls",
        ),
        "loopwright.durable.runner": ("Durable", "DurableConfig"),
    },
)

__all__ = [
    "NOT_RUN",
    "UNKNOWN_OUTCOME_TEXT",
    "CheckpointConfig",
    "CheckpointPolicy",
    "Checkpointer",
    "Durable",
    "DurableConfig",
    "IntentRecorder",
    "Recovery",
    "plan_recovery",
    "unanswered_calls",
]
