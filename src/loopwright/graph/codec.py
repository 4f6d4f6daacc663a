"""JSON encoding of graph state values for checkpoints.

State values are arbitrary Python objects; checkpoints are JSON. Plain JSON values pass
through unchanged; everything else is written as ``{"__lw__": tag, ...}``:
tuples, sets, dicts with non-string keys, loopwright :class:`~loopwright.core.Message`
objects, dataclass and pydantic instances and enums (rebuilt from their importable
class), :class:`~loopwright.graph.types.Send`, bytes and datetimes. A value of any other
type fails with a :class:`CheckpointEncodeError` naming the key, so a run never stores
a checkpoint it could not load back.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import importlib
from collections.abc import Mapping
from typing import Any

from loopwright.core.messages import JSONValue, Message, message_from_dict
from loopwright.graph.types import GraphError, Interrupt, Send

TAG = "__lw__"
_PLAIN = (str, int, float, bool, type(None))


class CheckpointEncodeError(GraphError):
    """A state value cannot be written to a checkpoint."""


def encode(value: Any, where: str = "value") -> JSONValue:
    """``value`` as JSON (see the module doc); raises :class:`CheckpointEncodeError`."""
    if isinstance(value, _PLAIN):
        return value
    if type(value) is list:
        return [encode(v, where) for v in value]
    if type(value) is dict:
        if all(type(k) is str for k in value) and TAG not in value:
            return {k: encode(v, where) for k, v in value.items()}
        return {
            TAG: "dict",
            "items": [[encode(k, where), encode(v, where)] for k, v in value.items()],
        }
    return _encode_object(value, where)


def _encode_object(value: Any, where: str) -> JSONValue:
    if isinstance(value, Message):
        return {TAG: "message", "v": value.to_dict()}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return {TAG: "tuple", "v": [encode(v, where) for v in value]}
    if isinstance(value, (set, frozenset)):
        tag = "frozenset" if isinstance(value, frozenset) else "set"
        return {TAG: tag, "v": [encode(v, where) for v in value]}
    if isinstance(value, Send):
        return {TAG: "send", "node": value.node, "arg": encode(value.arg, where)}
    if isinstance(value, Interrupt):
        return {TAG: "interrupt", "id": value.id, "value": encode(value.value, where)}
    if isinstance(value, enum.Enum):
        return {
            TAG: "enum",
            "cls": _class_path(type(value), where),
            "v": encode(value.value, where),
        }
    if isinstance(value, bytes):
        return {TAG: "bytes", "v": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dt.datetime):
        return {TAG: "datetime", "v": value.isoformat()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = {
            f.name: encode(getattr(value, f.name), where)
            for f in dataclasses.fields(value)
            if f.init
        }
        return {TAG: "dataclass", "cls": _class_path(type(value), where), "v": data}
    if hasattr(value, "model_dump") and hasattr(type(value), "model_validate"):
        data = {k: encode(getattr(value, k), where) for k in type(value).model_fields}
        return {TAG: "pydantic", "cls": _class_path(type(value), where), "v": data}
    if isinstance(value, list | dict):  # subclasses of list/dict: store as the plain type
        return encode(list(value) if isinstance(value, list) else dict(value), where)
    raise CheckpointEncodeError(
        f"cannot checkpoint {where}: values of type {type(value).__name__} are not supported; "
        "use JSON types, tuples, sets, dataclasses, pydantic models, enums or Messages"
    )


def decode(data: JSONValue) -> Any:
    """The inverse of :func:`encode`."""
    if isinstance(data, _PLAIN):
        return data
    if type(data) is list:
        return [decode(v) for v in data]
    if isinstance(data, Mapping):
        tag = data.get(TAG)
        if tag is None:
            return {k: decode(v) for k, v in data.items()}
        return _decode_tagged(str(tag), data)
    raise CheckpointEncodeError(f"unexpected JSON value {data!r} in a checkpoint")


def _decode_tagged(tag: str, data: Mapping[str, Any]) -> Any:
    if tag == "dict":
        return {decode(k): decode(v) for k, v in data["items"]}
    if tag == "message":
        return message_from_dict(data["v"])
    if tag == "tuple":
        return tuple(decode(v) for v in data["v"])
    if tag == "set":
        return {decode(v) for v in data["v"]}
    if tag == "frozenset":
        return frozenset(decode(v) for v in data["v"])
    if tag == "send":
        return Send(data["node"], decode(data["arg"]))
    if tag == "interrupt":
        return Interrupt(decode(data["value"]), data["id"])
    if tag == "bytes":
        return base64.b64decode(data["v"])
    if tag == "datetime":
        return dt.datetime.fromisoformat(data["v"])
    if tag not in ("enum", "dataclass", "pydantic"):
        raise CheckpointEncodeError(f"unknown value tag {tag!r} in a checkpoint")
    cls = _load_class(str(data["cls"]), tag)
    if tag == "enum":
        return cls(decode(data["v"]))
    fields = {k: decode(v) for k, v in data["v"].items()}
    try:
        return cls(**fields) if tag == "dataclass" else cls.model_validate(fields)
    except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        # the class changed since the checkpoint was written
        raise CheckpointEncodeError(
            f"checkpoint holds a {data['cls']} with the fields {sorted(fields)}, which the "
            f"class no longer accepts ({exc}); give the class those fields back (a default "
            "for a new one), or read the thread with the version of the class that wrote it"
        ) from exc


def _class_path(cls: type, where: str) -> str:
    if "<locals>" in cls.__qualname__:
        raise CheckpointEncodeError(
            f"cannot checkpoint {where}: class {cls.__qualname__} is defined inside a "
            "function; define it at module level so a checkpoint can rebuild it"
        )
    return f"{cls.__module__}:{cls.__qualname__}"


def _load_class(path: str, tag: str) -> Any:
    """The class a checkpoint names -- only if it is of the kind the tag says: a stored
    row must never be able to call an arbitrary importable function (``os:system``)."""
    module, _, qualname = path.partition(":")
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise CheckpointEncodeError(
            f"checkpoint names class {path!r}, which cannot be imported: {exc}"
        ) from exc
    ok = isinstance(target, type) and (
        (tag == "enum" and issubclass(target, enum.Enum))
        or (tag == "dataclass" and dataclasses.is_dataclass(target))
        or (
            tag == "pydantic"
            and hasattr(target, "model_validate")
            and hasattr(target, "model_fields")
        )
    )
    if not ok:
        raise CheckpointEncodeError(f"checkpoint names {path!r} as a {tag} class, which it is not")
    return target
