"""loopwright: a small, fast, typed runtime for LLM agents.

The public facade: :class:`Agent` and the run helpers, tools, limits, hooks and the core
types. Importing it loads no vendor SDK and no embedded-model runtime.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar, overload

from loopwright.core.lazy import lazy_exports

if TYPE_CHECKING:
    from loopwright.agent import Agent, as_model
    from loopwright.core import (
        LoopState,
        Message,
        Model,
        ModelRequest,
        ModelSettings,
        Permission,
        ProviderError,
        ReasoningPart,
        RunResult,
        RunStop,
        StopReason,
        TextPart,
        ToolCallPart,
        ToolError,
        ToolErrorKind,
        ToolResultPart,
        ToolSpec,
        TransientToolError,
        Usage,
        UserError,
    )
    from loopwright.core.events import RunEvent
    from loopwright.loop import Hooks, Limits, Prompt, Run, RunState, ToolLike
    from loopwright.loop.output import OutputMode
    from loopwright.providers.scripted import FunctionModel, Reply, ScriptedModel, tool_call
    from loopwright.tools import Confirmation, DispatchConfig, Tool, ToolRegistry, tool

# The facade's names load on first use: ``import loopwright`` (and ``loopwright --help``)
# does not pay for the loop, the tools and the providers until something needs them.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "loopwright.agent": ("Agent", "as_model"),
        "loopwright.core": (
            "LoopState",
            "Message",
            "Model",
            "ModelRequest",
            "ModelSettings",
            "Permission",
            "ProviderError",
            "ReasoningPart",
            "RunResult",
            "RunStop",
            "StopReason",
            "TextPart",
            "ToolCallPart",
            "ToolError",
            "ToolErrorKind",
            "ToolResultPart",
            "ToolSpec",
            "TransientToolError",
            "Usage",
            "UserError",
        ),
        "loopwright.core.events": ("RunEvent",),
        "loopwright.loop": ("Hooks", "Limits", "Prompt", "Run", "RunState", "ToolLike"),
        "loopwright.providers.scripted": ("FunctionModel", "Reply", "ScriptedModel", "tool_call"),
        "loopwright.tools": ("Confirmation", "DispatchConfig", "Tool", "ToolRegistry", "tool"),
    },
)

__version__ = "0.1.0"


T = TypeVar("T")


def _agent(
    model: Model | str,
    tools: ToolRegistry | Iterable[ToolLike],
    system: str | None,
    limits: Limits | None,
    output_type: type[T] | None,
    output_mode: OutputMode,
) -> Agent[T] | Agent[str]:
    from loopwright.agent import Agent

    if output_type is None:
        return Agent(model, tools, system=system, limits=limits, output_mode=output_mode)
    return Agent(
        model, tools, system=system, limits=limits, output_type=output_type, output_mode=output_mode
    )


def _check_order(model: object, prompt: object, helper: str) -> None:
    """``run("What is 2 + 2?", model)`` read the question as a model string ("needs a
    provider prefix"); name the swap instead."""
    if isinstance(model, str) and callable(getattr(prompt, "stream", None)):
        from loopwright.core.errors import UserError

        raise UserError(
            f"loopwright.{helper}(model, prompt, ...) takes the model first; the arguments "
            f"look swapped: {helper}(model, {model[:40]!r})"
        )


# The one-shot helpers are overloaded like Agent: ``result.output`` is ``T`` for
# ``output_type=T`` and ``str`` without one.
@overload
def run(
    model: Model | str,
    prompt: Prompt,
    *,
    tools: ToolRegistry | Iterable[ToolLike] = (),
    system: str | None = None,
    limits: Limits | None = None,
    history: Sequence[Message] | None = None,
    output_type: None = None,
    output_mode: OutputMode = "auto",
) -> RunResult[str]: ...
@overload
def run(
    model: Model | str,
    prompt: Prompt,
    *,
    tools: ToolRegistry | Iterable[ToolLike] = (),
    system: str | None = None,
    limits: Limits | None = None,
    history: Sequence[Message] | None = None,
    output_type: type[T],
    output_mode: OutputMode = "auto",
) -> RunResult[T]: ...
def run(
    model: Model | str,
    prompt: Prompt,
    *,
    tools: ToolRegistry | Iterable[ToolLike] = (),
    system: str | None = None,
    limits: Limits | None = None,
    history: Sequence[Message] | None = None,
    output_type: type[T] | None = None,
    output_mode: OutputMode = "auto",
) -> RunResult[T] | RunResult[str]:
    """One-shot synchronous run: ``Agent(model, tools, ...).run(prompt)``."""
    _check_order(model, prompt, "run")
    agent = _agent(model, tools, system, limits, output_type, output_mode)
    return agent.run(prompt, history=history)


@overload
async def arun(
    model: Model | str,
    prompt: Prompt,
    *,
    tools: ToolRegistry | Iterable[ToolLike] = (),
    system: str | None = None,
    limits: Limits | None = None,
    history: Sequence[Message] | None = None,
    output_type: None = None,
    output_mode: OutputMode = "auto",
) -> RunResult[str]: ...
@overload
async def arun(
    model: Model | str,
    prompt: Prompt,
    *,
    tools: ToolRegistry | Iterable[ToolLike] = (),
    system: str | None = None,
    limits: Limits | None = None,
    history: Sequence[Message] | None = None,
    output_type: type[T],
    output_mode: OutputMode = "auto",
) -> RunResult[T]: ...
async def arun(
    model: Model | str,
    prompt: Prompt,
    *,
    tools: ToolRegistry | Iterable[ToolLike] = (),
    system: str | None = None,
    limits: Limits | None = None,
    history: Sequence[Message] | None = None,
    output_type: type[T] | None = None,
    output_mode: OutputMode = "auto",
) -> RunResult[T] | RunResult[str]:
    """One-shot async run: ``await Agent(model, tools, ...).arun(prompt)``."""
    _check_order(model, prompt, "arun")
    agent = _agent(model, tools, system, limits, output_type, output_mode)
    return await agent.arun(prompt, history=history)


async def stream(
    model: Model | str,
    prompt: Prompt,
    *,
    tools: ToolRegistry | Iterable[ToolLike] = (),
    system: str | None = None,
    limits: Limits | None = None,
    history: Sequence[Message] | None = None,
    output_type: type[T] | None = None,
    output_mode: OutputMode = "auto",
) -> AsyncIterator[RunEvent]:
    """One-shot event stream: ``Agent(model, tools, ...).stream(prompt)``."""
    _check_order(model, prompt, "stream")
    agent = _agent(model, tools, system, limits, output_type, output_mode)
    async for event in agent.stream(prompt, history=history):
        yield event


__all__ = [
    "Agent",
    "Confirmation",
    "DispatchConfig",
    "FunctionModel",
    "Hooks",
    "Limits",
    "LoopState",
    "Message",
    "Model",
    "ModelRequest",
    "ModelSettings",
    "Permission",
    "ProviderError",
    "ReasoningPart",
    "Reply",
    "Run",
    "RunEvent",
    "RunResult",
    "RunState",
    "RunStop",
    "ScriptedModel",
    "StopReason",
    "TextPart",
    "Tool",
    "ToolCallPart",
    "ToolError",
    "ToolErrorKind",
    "ToolRegistry",
    "ToolResultPart",
    "ToolSpec",
    "TransientToolError",
    "Usage",
    "UserError",
    "__version__",
    "arun",
    "as_model",
    "run",
    "stream",
    "tool",
    "tool_call",
]
