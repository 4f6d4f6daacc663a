"""Reversible tool-name mapping.

OpenAI, Anthropic and Bedrock accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``
(Gemini also allows dots and colons, but the common subset keeps histories portable).
Names outside it (``files.read``, ``web search``, 80-character MCP names) are mapped to a
valid wire name: invalid characters become ``_`` and a short hash of the original is
appended so two different names never collide. :class:`ToolNameMap` remembers the pairs
of one request so calls coming back are renamed to the canonical name.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHAR = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LEN = 8


@functools.lru_cache(maxsize=4096)
def wire_name(name: str) -> str:
    """The wire form of ``name``: itself when valid, else sanitised + ``_`` + hash."""
    if VALID_NAME.match(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LEN]
    stem = _INVALID_CHAR.sub("_", name)[: 64 - _HASH_LEN - 1] or "tool"
    return f"{stem}_{digest}"


@dataclass(slots=True)
class ToolNameMap:
    """Canonical <-> wire names for one request (tool specs + names seen in history)."""

    _to_wire: dict[str, str] = field(default_factory=dict)
    _from_wire: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, names: Iterable[str]) -> ToolNameMap:
        mapping = cls()
        for name in names:
            mapping.add(name)
        return mapping

    def add(self, name: str) -> str:
        known = self._to_wire.get(name)
        if known is not None:
            return known
        wire = wire_name(name)
        other = self._from_wire.get(wire)
        if other is not None and other != name:
            # A valid name that happens to equal another name's sanitised form.
            wire = wire_name(name + "\x00" + other)
        self._to_wire[name] = wire
        self._from_wire[wire] = name
        return wire

    def copy(self) -> ToolNameMap:
        """An independent map with the same pairs (same insertion order)."""
        return ToolNameMap(dict(self._to_wire), dict(self._from_wire))

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Every (canonical, wire) pair in insertion order: equal pairs, equal mapping."""
        return tuple(self._to_wire.items())

    def restore(self, other: ToolNameMap) -> None:
        """Become a copy of ``other`` (whose pairs extend this map's: see
        :meth:`EncodeCache.resume <loopwright.providers._common.EncodeCache.resume>`)."""
        self._to_wire.update(other._to_wire)
        self._from_wire.update(other._from_wire)

    def to_wire(self, name: str) -> str:
        return self._to_wire.get(name) or self.add(name)

    def from_wire(self, wire: str) -> str:
        """The canonical name of ``wire``; unknown names come back unchanged."""
        return self._from_wire.get(wire, wire)

    @property
    def renamed(self) -> dict[str, str]:
        """Only the names that changed (canonical -> wire)."""
        return {k: v for k, v in self._to_wire.items() if k != v}
