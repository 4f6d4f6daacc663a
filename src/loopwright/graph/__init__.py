"""State graphs: LangGraph's programming model on loopwright's runtime.

``from loopwright.graph import StateGraph, START, END, Send, Command, interrupt,
add_messages`` -- the same names and semantics as LangGraph, so a LangGraph program
ports by changing its imports. Checkpoints go to loopwright's stores. See
``docs/graph.md``.
"""

from typing import TYPE_CHECKING

from loopwright.core.lazy import lazy_exports

if TYPE_CHECKING:
    from loopwright.graph.builder import StateGraph
    from loopwright.graph.engine import CompiledStateGraph
    from loopwright.graph.messages import RemoveMessage, add_messages
    from loopwright.graph.task import get_stream_writer, interrupt
    from loopwright.graph.types import (
        END,
        START,
        Command,
        EmptyInputError,
        GraphBuildError,
        GraphError,
        GraphEvent,
        GraphRecursionError,
        GraphTask,
        Interrupt,
        InvalidUpdateError,
        NodeRunEvent,
        Overwrite,
        RetryPolicy,
        Send,
        StateSnapshot,
        StepFinished,
        TaskFinished,
        TaskStarted,
        ThreadBusy,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "loopwright.graph.builder": ("StateGraph",),
        "loopwright.graph.engine": ("CompiledStateGraph",),
        "loopwright.graph.messages": ("RemoveMessage", "add_messages"),
        "loopwright.graph.task": ("get_stream_writer", "interrupt"),
        "loopwright.graph.types": (
            "END",
            "START",
            "Command",
            "EmptyInputError",
            "GraphBuildError",
            "GraphError",
            "GraphEvent",
            "GraphRecursionError",
            "GraphTask",
            "Interrupt",
            "InvalidUpdateError",
            "NodeRunEvent",
            "Overwrite",
            "RetryPolicy",
            "Send",
            "StateSnapshot",
            "StepFinished",
            "TaskFinished",
            "TaskStarted",
            "ThreadBusy",
        ),
    },
)

__all__ = [
    "END",
    "START",
    "Command",
    "CompiledStateGraph",
    "EmptyInputError",
    "GraphBuildError",
    "GraphError",
    "GraphEvent",
    "GraphRecursionError",
    "GraphTask",
    "Interrupt",
    "InvalidUpdateError",
    "NodeRunEvent",
    "Overwrite",
    "RemoveMessage",
    "RetryPolicy",
    "Send",
    "StateGraph",
    "StateSnapshot",
    "StepFinished",
    "TaskFinished",
    "TaskStarted",
    "ThreadBusy",
    "add_messages",
    "get_stream_writer",
    "interrupt",
]
