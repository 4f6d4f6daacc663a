"""Checking the final answer of an agent with an ``output_type`` (``loop/output.py``
owns the schema and its validation): a ``final_result`` call or a JSON text answer.

A valid answer is kept in ``engine.output``; an invalid one is reported (why it does not
validate) and the engine (``loop/steps.py``) re-asks the model or, the retries spent,
stops the run with ``output_invalid``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopwright.core.errors import ToolErrorKind
from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.loop.notices import FINAL_ACCEPTED, NOT_RUN_AFTER_FINAL
from loopwright.loop.output import OutputInvalid

if TYPE_CHECKING:
    from loopwright.loop.steps import RunEngine

_SKIPPED = ToolErrorKind.SKIPPED.value
_INVALID = ToolErrorKind.INVALID_ARGUMENTS.value


def check_call(
    engine: RunEngine, final: ToolCallPart, calls: tuple[ToolCallPart, ...]
) -> str | None:
    """The model called ``final_result``: keep a valid answer (the reply's other calls
    are not run) or return what to fix. Every call gets its result (the invalid
    answer's result tells the model what to fix)."""
    output = engine.config.output
    assert output is not None
    try:
        engine.output = output.from_call(final)
        invalid = None
    except OutputInvalid as exc:
        invalid = str(exc)
    results = tuple(
        ToolResultPart(c.id, c.name, NOT_RUN_AFTER_FINAL, True, _SKIPPED)
        if c is not final
        else ToolResultPart(c.id, c.name, FINAL_ACCEPTED)
        if invalid is None
        else ToolResultPart(c.id, c.name, invalid, True, _INVALID)
        for c in calls
    )
    engine.append(Message("tool", results), "tools")
    return invalid


def check_text(engine: RunEngine, text: str) -> str | None:
    """A text answer: keep it when it is JSON that validates, else return why not."""
    output = engine.config.output
    assert output is not None
    try:
        engine.output = output.from_text(text)
    except OutputInvalid as exc:
        return str(exc)
    return None
