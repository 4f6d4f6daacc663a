"""A tool parameter recognised by the examples its schema shows.

The embedded strategy holds a small model's calls to values a request states (a
formula, a file name, a SELECT over described tables) without knowing the tools: a
parameter takes such values when every example its schema shows is one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from loopwright.core.tools import ToolSpec


def example_parameter(
    spec: ToolSpec,
    is_kind: Callable[[object], bool],
    *,
    min_examples: int = 1,
    unpatterned: bool = False,
) -> str | None:
    """The first required string parameter of ``spec`` whose schema shows at least
    ``min_examples`` examples, every one of a kind (``is_kind``); with ``unpatterned``,
    only one without a ``pattern`` of its own (one already held to a pattern is left as
    it is). ``None`` when there is none."""
    props = spec.parameters.get("properties")
    if not isinstance(props, Mapping):
        return None
    for name in spec.parameters.get("required") or ():
        schema = props.get(name)
        if not isinstance(schema, Mapping) or schema.get("type") != "string":
            continue
        if unpatterned and "pattern" in schema:
            continue
        examples = schema.get("examples")
        if (
            isinstance(examples, list)
            and len(examples) >= min_examples
            and all(is_kind(e) for e in examples)
        ):
            return str(name)
    return None


__all__ = ["example_parameter"]
