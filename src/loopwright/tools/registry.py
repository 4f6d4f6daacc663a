"""The set of tools an agent may call, keyed by name.

Filtering by permission here only decides what the model is *shown*; the dispatcher
checks the caller's permission again on every call, so hiding a tool is never the only
protection (enforcing permissions only when listing tools would let a model call a tool it was never offered).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

from loopwright.core.tools import Permission, ToolSpec
from loopwright.tools.decorator import Tool, as_tool


class ToolRegistry:
    """Tools by name, in registration order. Not thread-safe (one per agent/loop)."""

    __slots__ = ("_context", "_derived", "_spec_cache", "_tools", "version")

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._spec_cache: dict[tuple[tuple[str, ...] | None, Permission], list[ToolSpec]] = {}
        self._derived: dict[Hashable, dict[str, Any]] = {}
        self.version = 0
        """Grows on every register/unregister (lets callers cache derived views)."""
        self._context = False
        for t in tools:
            self.register(t)

    def register(self, tool_or_function: Tool | Callable[..., Any]) -> Tool:
        """Add a tool (a plain function is wrapped with ``@tool``); returns the Tool, so
        ``@registry.register`` works as a decorator. A duplicate name is a ``ValueError``."""
        t = as_tool(tool_or_function)
        if t.name in self._tools:
            raise ValueError(
                f"a tool named {t.name!r} is already registered; unregister it first or "
                "give the new one another name (@tool(name=...))"
            )
        self._tools[t.name] = t
        self._changed()
        return t

    def unregister(self, name: str) -> Tool:
        """Remove and return the tool ``name``; ``KeyError`` naming the known tools."""
        try:
            t = self._tools.pop(name)
        except KeyError:
            raise KeyError(
                f"no tool named {name!r}; registered: {', '.join(self._tools) or '(none)'}"
            ) from None
        self._changed()
        return t

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(
        self,
        names: Iterable[str] | None = None,
        max_permission: Permission = Permission.ADMIN,
    ) -> list[ToolSpec]:
        """Specs to show a model: in registration order, restricted to ``names`` when
        given (unknown names are ignored) and to tools at or below ``max_permission``.
        Returns a fresh list each time (cached internally per filter)."""
        level = Permission.parse(max_permission)
        key = (tuple(names) if names is not None else None, level)
        cached = self._spec_cache.get(key)
        if cached is None:
            wanted = set(key[0]) if key[0] is not None else None
            cached = [
                t.spec
                for t in self._tools.values()
                if t.spec.permission <= level and (wanted is None or t.name in wanted)
            ]
            if len(self._spec_cache) > 64:
                self._spec_cache.clear()
            self._spec_cache[key] = cached
        return list(cached)

    @property
    def takes_context(self) -> bool:
        """Whether any tool takes a ``ToolContext`` parameter (kept up to date on change)."""
        return self._context

    def derived_table(self, key: Hashable) -> dict[str, Any]:
        """A cache table for facts derived from the current tools, one per ``key``: the
        same dict for every caller asking with an equal key until the registry changes
        (then a fresh, empty one). Used by dispatchers to share per-tool plans; callers
        must store only values that depend on the tools and on ``key`` alone."""
        table = self._derived.get(key)
        if table is None:
            table = self._derived[key] = {}
        return table

    def summaries(self) -> list[str]:
        """One line per tool ("name: first sentence"), for two-stage tool selection."""
        return [t.spec.summary for t in self._tools.values()]

    def _changed(self) -> None:
        self.version += 1
        self._spec_cache.clear()
        self._derived = {}  # tables handed out stay with their holders' old version
        self._context = any(t.context_param is not None for t in self._tools.values())
