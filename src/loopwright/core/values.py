"""A cheaper ``__init__`` for the frozen values a run builds on every step.

A step of a run builds about ten frozen, slotted dataclass instances (a run of six model
calls: ~60): the model's reply (``Message`` and its parts), the stream events
(``ToolCallDelta``, ``ResponseDone``), the tool result (``ToolResultPart``, the
dispatcher's ``DispatchOutcome``, the ``tool`` message) and the step the loop takes
next. The ``__init__`` that :func:`dataclasses.dataclass` generates for a frozen class
writes each field with ``object.__setattr__``, which looks the attribute up through the
class hierarchy on every call; :func:`slot_init` gives the class an ``__init__`` that
writes each slot through its member descriptor instead.

Measured (CPython 3.11.7 on the benchmark machine, ``timeit``, min of 5 x 200,000,
load ~3): ``Message("tool", parts)`` 1,452 -> 618 ns, ``ToolResultPart(id, name,
text)`` 2,060 -> 767 ns, a 3-field event 983 -> 501 ns; in ``benchmarks/loop.py``, 1,000
concurrent runs x 6 model calls: see ``benchmarks/notes/loop.md`` ("values").

The instance is the same frozen value: assignment still raises ``FrozenInstanceError``,
``replace``, equality, ``repr``, pickling and ``match`` are the dataclass's. Parameters,
defaults (``default_factory`` included: called per instance, as the dataclass does) and
annotations come from the dataclass's own fields, so the two cannot drift apart.
"""

from __future__ import annotations

import inspect
from dataclasses import MISSING, fields
from typing import TypeVar

__all__ = ["slot_init"]

_V = TypeVar("_V")


class _Missing:
    """No argument given for a field with a ``default_factory``."""

    def __repr__(self) -> str:
        return "<factory>"  # what the dataclass's own signature shows for such a field


_NOTHING = _Missing()


def slot_init(cls: type[_V]) -> type[_V]:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that writes each slot
    through its member descriptor (module doc). Apply it on top of
    ``@dataclass(frozen=True, slots=True)``. Fields must be plain init fields
    (no ``init=False``, no ``kw_only``); a ``__post_init__`` without parameters is called
    as the dataclass would."""
    env: dict[str, object] = {"__name__": cls.__module__, "_NOTHING": _NOTHING}
    params: list[str] = []
    body: list[str] = []
    for f in fields(cls):  # type: ignore[arg-type]
        if not f.init or f.kw_only:
            raise TypeError(f"{cls.__name__}.{f.name}: slot_init takes plain init fields only")
        env[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        value = f.name
        if f.default_factory is not MISSING:
            env[f"_make_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_NOTHING")
            value = f"_make_{f.name}() if {f.name} is _NOTHING else {f.name}"
        elif f.default is not MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        else:
            params.append(f.name)
        body.append(f"    _set_{f.name}(self, {value})")
    post_init = getattr(cls, "__post_init__", None)
    if post_init is not None:
        if len(inspect.signature(post_init).parameters) != 1:
            raise TypeError(f"{cls.__name__}: slot_init takes no InitVar fields")
        body.append("    self.__post_init__()")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"]), env)
    init = env["__init__"]
    generated = cls.__init__
    init.__qualname__ = generated.__qualname__  # type: ignore[attr-defined]
    init.__annotations__ = generated.__annotations__  # type: ignore[attr-defined]
    init.__doc__ = generated.__doc__
    cls.__init__ = init  # type: ignore[assignment]
    return cls
