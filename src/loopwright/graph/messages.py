"""``add_messages``: the reducer for a conversation kept in graph state.

Messages are loopwright :class:`~loopwright.core.Message` values. Like LangGraph's
reducer of the same name, it appends new messages, replaces a message whose id is
already present, and deletes the one a :class:`RemoveMessage` names. A message's id
lives in ``provider_meta["loopwright"]["id"]``; messages without one (on either side)
get a fresh id when they are merged. Like LangGraph's, a merge looks at every message
of the conversation; for a pure append ``operator.add`` (one list copy in C) is far
cheaper. Strings, ``(role, text)`` pairs and ``{"role", "content"}``
dicts are accepted as shorthand and converted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from loopwright.core.messages import ROLES, Message, TextPart
from loopwright.graph.types import InvalidUpdateError

_META = "loopwright"


@dataclass(frozen=True, slots=True)
class RemoveMessage:
    """Write it to a messages key to delete the message with this ``id``."""

    id: str


def message_id(message: Message) -> str | None:
    """The graph id of ``message`` (``None`` when it has none yet)."""
    meta = message.provider_meta.get(_META) if message.provider_meta else None
    value = meta.get("id") if isinstance(meta, Mapping) else None
    return value if isinstance(value, str) else None


def with_id(message: Message, new_id: str | None = None) -> Message:
    """``message`` carrying ``new_id`` (a fresh one by default) as its graph id."""
    meta = dict(message.provider_meta)
    own = dict(meta.get(_META) or {})
    own["id"] = new_id or uuid.uuid4().hex
    meta[_META] = own
    return replace(message, provider_meta=meta)


def as_messages(value: Any) -> list[Message | RemoveMessage]:
    """Coerce one update (a message, shorthand, or a list of them) to a list."""
    items: Iterable[Any] = (
        value if isinstance(value, (list, tuple)) and not _is_pair(value) else [value]
    )
    out: list[Message | RemoveMessage] = []
    for item in items:
        if isinstance(item, (Message, RemoveMessage)):
            out.append(item)
        elif isinstance(item, str):
            out.append(Message.user(item))
        elif _is_pair(item):
            out.append(_from_role(item[0], item[1]))
        elif isinstance(item, Mapping) and "role" in item:
            out.append(_from_role(str(item["role"]), str(item.get("content", ""))))
        else:
            raise InvalidUpdateError(
                f"add_messages: cannot turn {type(item).__name__} into a message; pass a "
                "loopwright Message, a string, a (role, text) pair or a {'role', 'content'} dict"
            )
    return out


def add_messages(left: Any, right: Any) -> list[Message]:
    """Merge ``right`` into ``left`` (see the module doc). Returns a new list."""
    current = [
        m if message_id(m) is not None else with_id(m)
        for m in (as_messages(left) if left else [])
        if isinstance(m, Message)
    ]
    incoming = as_messages(right)
    if not incoming:
        return list(current)
    index: dict[str, int] | None = None
    merged = list(current)
    removed: set[int] = set()
    for item in incoming:
        if isinstance(item, RemoveMessage):
            index = index if index is not None else _index(merged)
            if item.id not in index:
                raise InvalidUpdateError(f"add_messages: no message with id {item.id!r} to remove")
            removed.add(index[item.id])
            continue
        ident = message_id(item)
        if ident is None:
            merged.append(with_id(item))
            continue
        index = index if index is not None else _index(merged)
        at = index.get(ident)
        if at is None or at in removed:
            index[ident] = len(merged)
            merged.append(item)
        else:
            merged[at] = item
    if removed:
        merged = [m for i, m in enumerate(merged) if i not in removed]
    return merged


def _index(messages: list[Message]) -> dict[str, int]:
    return {ident: i for i, m in enumerate(messages) if (ident := message_id(m)) is not None}


def _is_pair(value: Any) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value)


def _from_role(role: str, text: str) -> Message:
    role = {"human": "user", "ai": "assistant"}.get(role, role)
    if role not in ROLES:
        raise InvalidUpdateError(f"add_messages: unknown role {role!r}")
    return Message(role, (TextPart(text),))  # type: ignore[arg-type]


def normalize_messages(value: Any) -> list[Message | RemoveMessage]:
    """One write to a messages key with an id on every message, so that merging it is
    deterministic (a checkpoint replays the normalised write)."""
    return [
        item if isinstance(item, RemoveMessage) or message_id(item) is not None else with_id(item)
        for item in as_messages(value)
    ]
