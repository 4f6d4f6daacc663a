"""What a running tool may know about its call, and the run's typed dependencies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

DepsT = TypeVar("DepsT")


@dataclass(frozen=True, slots=True)
class ToolContext(Generic[DepsT]):
    """Passed to a tool function that declares a parameter annotated ``ToolContext`` or
    ``ToolContext[SomeDeps]`` (that parameter is left out of the tool's JSON Schema).

    ``deps`` is what the run was given as ``agent.run(prompt, deps=...)`` (``None`` when
    none): a database handle, an HTTP client, the current user -- live objects a tool
    needs, typed by the annotation (``ctx: ToolContext[Deps]`` makes ``ctx.deps`` a
    ``Deps`` for the type checker). They belong to the run, not to its stored state: give
    them again to ``resume``.
    ``attempt`` is 1 on the first try and grows on each runtime retry.
    ``idempotency_key`` is the call's key (``@tool(idempotency_key=...)``) or ``None``:
    a tool with side effects can use it to deduplicate on its own side too.
    ``metadata`` is the dispatcher's ``DispatchConfig.metadata`` (shared by every run).
    """

    call_id: str
    idempotency_key: str | None = None
    attempt: int = 1
    session_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    deps: DepsT = None  # type: ignore[assignment]  # None when the run was given none
