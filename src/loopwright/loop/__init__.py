"""The control loop: states, limits, steering/follow-ups, hooks and the Agent facade.

See ``docs/loop.md`` for concepts and examples.
"""

from typing import TYPE_CHECKING

from loopwright.core.lazy import lazy_exports

if TYPE_CHECKING:
    from loopwright.core.run import ErrorRecord, RunState
    from loopwright.loop.agent import Agent, Prompt, Run, ToolLike
    from loopwright.loop.config import AgentConfig, Sleep
    from loopwright.loop.hooks import (
        AfterToolCall,
        BeforeToolCall,
        EventCallback,
        Hooks,
        TransformContext,
    )
    from loopwright.loop.limits import Limits
    from loopwright.loop.notices import EMPTY_REPLY_OBSERVATION
    from loopwright.loop.resumption import Resume
    from loopwright.loop.steps import RunEngine, Stop
    from loopwright.loop.turn import RepetitionDetector

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "loopwright.core.run": ("ErrorRecord", "RunState"),
        "loopwright.loop.agent": ("Agent", "Prompt", "Run", "ToolLike"),
        "loopwright.loop.config": ("AgentConfig", "Sleep"),
        "loopwright.loop.hooks": (
            "AfterToolCall",
            "BeforeToolCall",
            "EventCallback",
            "Hooks",
            "TransformContext",
        ),
        "loopwright.loop.limits": ("Limits",),
        "loopwright.loop.notices": ("EMPTY_REPLY_OBSERVATION",),
        "loopwright.loop.resumption": ("Resume",),
        "loopwright.loop.steps": ("RunEngine", "Stop"),
        "loopwright.loop.turn": ("RepetitionDetector",),
    },
)

__all__ = [
    "EMPTY_REPLY_OBSERVATION",
    "AfterToolCall",
    "Agent",
    "AgentConfig",
    "BeforeToolCall",
    "ErrorRecord",
    "EventCallback",
    "Hooks",
    "Limits",
    "Prompt",
    "RepetitionDetector",
    "Resume",
    "Run",
    "RunEngine",
    "RunState",
    "Sleep",
    "Stop",
    "ToolLike",
    "TransformContext",
]
