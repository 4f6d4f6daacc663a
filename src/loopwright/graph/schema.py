"""State schemas: which keys a graph's state has and how writes to each are merged.

A schema is a ``TypedDict``, a dataclass or a pydantic model. A key annotated
``Annotated[T, reducer]`` merges writes with ``reducer(current, write)``; its value
before any write is ``T()`` when ``T`` can be built without arguments (``[]``, ``0``,
``{}``), as in LangGraph. Any other key is overwritten, and two writes to it in one
superstep are an error.
"""

from __future__ import annotations

import collections.abc
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Literal, NotRequired, Required, get_args, get_origin, get_type_hints

from loopwright.graph.types import MISSING, GraphBuildError, InvalidUpdateError

Reducer = Callable[[Any, Any], Any]
SchemaKind = Literal["dict", "dataclass", "pydantic"]

_ABSTRACT = {
    collections.abc.Sequence: list,
    collections.abc.MutableSequence: list,
    collections.abc.Set: set,
    collections.abc.MutableSet: set,
    collections.abc.Mapping: dict,
    collections.abc.MutableMapping: dict,
}


@dataclass(frozen=True, slots=True)
class Schema:
    """The parsed form of one state (or node input) schema."""

    cls: type
    kind: SchemaKind
    keys: tuple[str, ...]
    reducers: Mapping[str, Reducer]
    initial: Mapping[str, Any]
    """Value of each reducer key before its first write (keys whose type has no
    zero-argument constructor are absent: they start unset)."""

    def coerce(self, values: Mapping[str, Any]) -> Any:
        """The state as a node reads it: a dict of the set keys, or a schema instance."""
        if self.kind == "dict":
            return {k: values[k] for k in self.keys if k in values}
        present = {k: values[k] for k in self.keys if k in values}
        try:
            return self.cls(**present)
        except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise InvalidUpdateError(
                f"the state cannot be read as {self.cls.__name__} from its keys that have a "
                f"value ({', '.join(map(repr, present))}): {exc}; give the missing fields a "
                "default (or a value in the input), and write values the class accepts"
            ) from exc

    def object_updates(self, value: object) -> list[tuple[str, Any]]:
        """Writes carried by a returned schema instance: every field that is not
        ``None`` (or is ``None`` where the default is not, or was set explicitly on a
        pydantic model) -- LangGraph's rule for object updates."""
        defaults = _defaults(type(value))
        explicit = getattr(value, "model_fields_set", None)
        out: list[tuple[str, Any]] = []
        for key in _annotated_keys(type(value)):
            item = getattr(value, key, MISSING)
            if item is MISSING:
                continue
            if (
                item is not None
                or defaults.get(key, MISSING) is not None
                or (explicit is not None and key in explicit)
            ):
                out.append((key, item))
        return out


def parse_schema(cls: type) -> Schema:
    """Parse ``cls`` (TypedDict, dataclass or pydantic model) into a :class:`Schema`."""
    kind = schema_kind(cls)
    if kind is None:
        raise GraphBuildError(
            f"state schema {getattr(cls, '__name__', cls)!r} must be a TypedDict, a dataclass "
            "or a pydantic model"
        )
    try:
        hints = get_type_hints(cls, include_extras=True)
    except Exception as exc:  # a forward reference that cannot be resolved
        raise GraphBuildError(
            f"cannot read the annotations of state schema {cls.__name__}: {exc}"
        ) from exc
    keys: list[str] = []
    reducers: dict[str, Reducer] = {}
    initial: dict[str, Any] = {}
    for key, hint in hints.items():
        if key.startswith("__") or get_origin(hint) is typing.ClassVar:
            continue
        keys.append(key)
        reducer = _reducer_of(hint)
        if reducer is not None:
            reducers[key] = reducer
            start = _zero_value(hint)
            if start is not MISSING:
                initial[key] = start
    return Schema(cls, kind, tuple(keys), reducers, initial)


def schema_kind(cls: object) -> SchemaKind | None:
    if not isinstance(cls, type):
        return None
    if is_dataclass(cls):
        return "dataclass"
    if hasattr(cls, "model_fields") and hasattr(cls, "model_validate"):
        return "pydantic"
    if isinstance(getattr(cls, "__annotations__", None), dict) and issubclass(cls, dict):
        return "dict"
    return None


def _strip(hint: Any) -> Any:
    while get_origin(hint) in (Required, NotRequired):
        hint = get_args(hint)[0]
    return hint


def _reducer_of(hint: Any) -> Reducer | None:
    hint = _strip(hint)
    metadata = getattr(hint, "__metadata__", None)
    if not metadata:
        return None
    candidate = metadata[-1]
    if not callable(candidate):
        return None
    try:
        params = [
            p
            for p in inspect.signature(candidate).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):  # builtins such as operator.add have no signature
        return candidate
    if len(params) != 2:
        raise GraphBuildError(
            f"reducer {getattr(candidate, '__name__', candidate)!r} must take two arguments "
            f"(current value, update), it takes {len(params)}"
        )
    return candidate


def _zero_value(hint: Any) -> Any:
    base = _strip(hint)
    base = get_args(base)[0] if getattr(base, "__metadata__", None) else base
    base = _strip(base)
    origin = get_origin(base) or base
    origin = _ABSTRACT.get(origin, origin)
    if not isinstance(origin, type):
        return MISSING
    try:
        return origin()
    except Exception:
        return MISSING


def _annotated_keys(cls: type) -> tuple[str, ...]:
    keys: list[str] = []
    for base in reversed(cls.__mro__):
        annotations = inspect.get_annotations(base)
        if isinstance(annotations, dict):
            keys.extend(k for k in annotations if k not in keys)
    return tuple(keys)


def _defaults(cls: type) -> dict[str, Any]:
    model_fields = getattr(cls, "model_fields", None)
    if isinstance(model_fields, dict):
        return {k: getattr(v, "default", MISSING) for k, v in model_fields.items()}
    if is_dataclass(cls):
        return {f.name: f.default for f in fields(cls)}
    return {}
