"""The public API surface, pinned: the names ``loopwright`` exports and the signatures of
its entry points. A failure here means the API changed; if that is deliberate, update the
pinned text below (and the docs and README) in the same commit."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable

import pytest

import loopwright

ALL = [
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

SIGNATURES: dict[str, str] = {
    "run": (
        "(model: 'Model | str', prompt: 'Prompt', *, "
        "tools: 'ToolRegistry | Iterable[ToolLike]' = (), system: 'str | None' = None, "
        "limits: 'Limits | None' = None, "
        "history: 'Sequence[Message] | None' = None, "
        "output_type: 'type[T] | None' = None, "
        "output_mode: 'OutputMode' = 'auto') -> 'RunResult[T] | RunResult[str]'"
    ),
    "arun": (
        "(model: 'Model | str', prompt: 'Prompt', *, "
        "tools: 'ToolRegistry | Iterable[ToolLike]' = (), system: 'str | None' = None, "
        "limits: 'Limits | None' = None, "
        "history: 'Sequence[Message] | None' = None, "
        "output_type: 'type[T] | None' = None, "
        "output_mode: 'OutputMode' = 'auto') -> 'RunResult[T] | RunResult[str]'"
    ),
    "stream": (
        "(model: 'Model | str', prompt: 'Prompt', *, "
        "tools: 'ToolRegistry | Iterable[ToolLike]' = (), system: 'str | None' = None, "
        "limits: 'Limits | None' = None, "
        "history: 'Sequence[Message] | None' = None, "
        "output_type: 'type[T] | None' = None, "
        "output_mode: 'OutputMode' = 'auto') -> 'AsyncIterator[RunEvent]'"
    ),
    "tool": (
        "(fn: 'Callable[..., Any] | None' = None, /, *, name: 'str | None' = None, "
        "description: 'str | None' = None, requires_confirmation: 'bool' = False, "
        "permission: 'Permission | str | int' = <Permission.READ: 0>, "
        "idempotent: 'bool' = False, timeout: 'float | None' = 30.0, "
        "max_result_chars: 'int' = 20000, validators: 'Sequence[BusinessValidator]' = (), "
        "idempotency_key: 'IdempotencyKeyFn | None' = None, "
        "unknown_outcome: 'UnknownOutcomePolicy | str' = <UnknownOutcomePolicy.REPORT: 'report'>, "
        "outcome_check: 'OutcomeCheck | None' = None, inline: 'bool | None' = None, "
        "untrusted_output: 'bool' = False, "
        "confirm_when_tainted: 'bool | None' = None) -> 'Tool | Callable[[Callable[..., "
        "Any]], Tool]'"
    ),
    "Limits": (
        "(max_turns: 'int | None' = 20, token_budget: 'int | None' = None, "
        "cost_budget: 'float | None' = None, max_consecutive_errors: 'int | None' = 3, "
        "timeout: 'float | None' = None, repeat_limit: 'int | None' = 3, "
        "cycle_detection: 'bool' = True, max_cycle_period: 'int' = 4, "
        "model_retries: 'int' = 3, retry_base_delay: 'float' = 0.5, "
        "retry_max_delay: 'float' = 30.0, context_budget: 'int | None' = None, "
        "max_tool_calls_per_turn: 'int | None' = 32) -> None"
    ),
    "Agent.__init__": (
        "(self, model: 'Model | str', tools: 'ToolRegistry | Iterable[ToolLike]' = (), *, "
        "system: 'str | None' = None, limits: 'Limits | None' = None, "
        "settings: 'ModelSettings | None' = None, "
        "dispatch: 'DispatchConfig | None' = None, hooks: 'Hooks | None' = None, "
        "context_policy: 'ContextPolicy | None' = None, "
        "ledger: 'IdempotencyLedger | None' = None, sleep: 'Sleep | None' = None, "
        "tool_selection: 'ToolSelection | None' = None, "
        "output_type: 'type[OutputT] | None' = None, output_retries: 'int' = 2, "
        "output_mode: 'OutputMode' = 'auto') -> 'None'"
    ),
    "Agent.run": (
        "(self, prompt: 'Prompt', *, history: 'Sequence[Message] | None' = None, "
        "session_id: 'str | None' = None, deps: 'object' = None) -> 'RunResult[OutputT]'"
    ),
    "Agent.arun": (
        "(self, prompt: 'Prompt', *, history: 'Sequence[Message] | None' = None, "
        "session_id: 'str | None' = None, deps: 'object' = None) -> "
        "'Coroutine[object, object, RunResult[OutputT]]'"
    ),
    "Agent.start": (
        "(self, prompt: 'Prompt', *, history: 'Sequence[Message] | None' = None, "
        "session_id: 'str | None' = None, events: 'bool' = True, "
        "deps: 'object' = None) -> 'Run[OutputT]'"
    ),
    "Agent.stream": (
        "(self, prompt: 'Prompt', *, history: 'Sequence[Message] | None' = None, "
        "session_id: 'str | None' = None, "
        "deps: 'object' = None) -> 'AsyncIterator[RunEvent]'"
    ),
    "Agent.resume": (
        "(self, state: 'RunState', decisions: 'Mapping[str, Confirmation] | None' = None, "
        "*, prompt: 'Prompt | None' = None, events: 'bool' = True, "
        "deps: 'object' = None) -> 'Run[OutputT]'"
    ),
    "Agent.aresume": (
        "(self, state: 'RunState', decisions: 'Mapping[str, Confirmation] | None' = None, "
        "*, prompt: 'Prompt | None' = None, "
        "deps: 'object' = None) -> 'Coroutine[object, object, RunResult[OutputT]]'"
    ),
    "Agent.from_config": ("(config: 'AgentConfig') -> 'Self'"),
    "Agent.as_tool": ("(self, name: 'str', description: 'str') -> 'Tool'"),
}


def _resolve(path: str) -> Callable[..., object]:
    obj: object = loopwright
    for part in path.split("."):
        obj = getattr(obj, part)
    assert callable(obj)
    return obj


def test_exported_names() -> None:
    assert sorted(loopwright.__all__) == ALL
    for name in ALL:
        assert hasattr(loopwright, name), name


@pytest.mark.parametrize("path", sorted(SIGNATURES))
def test_signature(path: str) -> None:
    found = str(inspect.signature(_resolve(path)))
    assert found == SIGNATURES[path], (
        f"loopwright.{path} changed signature; if deliberate, pin the new one here:\n{found}"
    )


# How a type checker sees ``output_type``: the overloads (``None`` -> text, ``type[T]`` ->
# ``T``); tests/loop/test_loop_output_typing.py checks what mypy infers from them.
OVERLOADS: dict[str, list[tuple[str, str]]] = {
    "run": [("None", "RunResult[str]"), ("type[T]", "RunResult[T]")],
    "arun": [("None", "RunResult[str]"), ("type[T]", "RunResult[T]")],
    "Agent.__init__": [("None", "None"), ("type[OutputT]", "None")],
}


@pytest.mark.parametrize("path", sorted(OVERLOADS))
def test_output_type_overloads(path: str) -> None:
    found = [
        (
            str(inspect.signature(o).parameters["output_type"].annotation),
            str(inspect.signature(o).return_annotation),
        )
        for o in typing.get_overloads(_resolve(path))
    ]
    assert found == OVERLOADS[path], f"loopwright.{path}: overloads changed: {found}"
