"""Merging a superstep's writes into the state through the reducers (and recording
how each key changed, for delta checkpoints)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from loopwright.graph.checkpoint import Change
from loopwright.graph.messages import normalize_messages
from loopwright.graph.types import MISSING, GraphError, InvalidUpdateError, Overwrite

if TYPE_CHECKING:
    from loopwright.graph.engine import CompiledStateGraph


def merge_writes(
    graph: CompiledStateGraph,
    values: dict[str, Any],
    task_writes: Sequence[Sequence[tuple[str, Any]]],
    record: bool,
) -> dict[str, Change] | None:
    """Apply the writes of one superstep's tasks (in task order) to ``values`` in place;
    with ``record``, return how each written key changed (for a delta checkpoint)."""
    grouped: dict[str, list[Any]] = {}
    for writes in task_writes:
        for key, value in writes:
            grouped.setdefault(key, []).append(value)
    changes: dict[str, Change] | None = {} if record else None
    reducers = graph.reducers
    for key, items in grouped.items():
        reducer = reducers.get(key)
        if reducer is None:
            if len(items) > 1:
                raise InvalidUpdateError(
                    f"At key '{key}': Can receive only one value per step. Use an "
                    "Annotated key to handle multiple values."
                )
            value = items[0]
            value = value.value if isinstance(value, Overwrite) else value
            values[key] = value
            if changes is not None:
                changes[key] = Change(value=value)
            continue
        if key in graph.message_keys:
            items = [w if isinstance(w, Overwrite) else normalize_messages(w) for w in items]
        value = _reduce(reducer, values.get(key, MISSING), items, key)
        values[key] = value
        if changes is not None:
            changes[key] = Change(writes=tuple(items), value=value)
    return changes


def chain_changes(first: dict[str, Change], then: dict[str, Change]) -> dict[str, Change]:
    """The change of two successive merges (a resume's Command update, then the
    superstep) as one delta from the checkpoint before both."""
    out = dict(first)
    for key, change in then.items():
        before = out.get(key)
        if before is not None and before.writes is not None and change.writes is not None:
            out[key] = Change(writes=before.writes + change.writes, value=change.value)
        elif before is not None:
            out[key] = Change(value=change.value)
        else:
            out[key] = change
    return out


def _reduce(
    reducer: Callable[[Any, Any], Any], current: Any, writes: Sequence[Any], key: str
) -> Any:
    overwritten = False
    for write in writes:
        if isinstance(write, Overwrite):
            if overwritten:
                raise InvalidUpdateError("Can receive only one Overwrite value per super-step.")
            current, overwritten = write.value, True
        elif not overwritten and current is MISSING:
            current = write
        elif not overwritten:
            try:
                current = reducer(current, write)
            except GraphError:
                raise
            except Exception as exc:  # a bare TypeError would name neither key nor value
                name = getattr(reducer, "__name__", repr(reducer))
                raise InvalidUpdateError(
                    f"At key '{key}': its reducer {name} refused the write {write!r:.80} "
                    f"({type(exc).__name__}: {exc}); write a value the reducer takes"
                ) from exc
    return current
