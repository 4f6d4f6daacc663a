"""The strategies' prompt files and the ask-parse-retry cycle they share.

Every prompt a strategy sends is a versioned file in
``loopwright/prompts/templates/strategies/<name>/v<version>.txt`` (a
:class:`~loopwright.prompts.PromptRegistry` of its own), so its fingerprint is recorded on
the model-call events of a run, like the built-in planner and reflector patterns.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TypeVar

from loopwright.core.protocols import Model, ModelSettings
from loopwright.prompts import (
    OutputParseError,
    PromptRegistry,
    PromptTemplate,
    PromptText,
    templates_dir,
)
from loopwright.prompts.template import fingerprints_of
from loopwright.strategies.runtime import StrategyContext

T = TypeVar("T")


@cache
def strategy_registry() -> PromptRegistry:
    """The strategies' built-in prompts (``templates/strategies``)."""
    return PromptRegistry(templates_dir() / "strategies")


def strategy_prompt(
    name: str, *, prefix: str = "", version: str = "latest", **values: object
) -> PromptText:
    """Render the strategy prompt ``name`` (after ``prefix``, itself a rendered prompt
    whose fingerprints are kept)."""
    text = _template(name, version).render(values)
    if not prefix:
        return text
    return PromptText(f"{prefix}\n\n{text}", fingerprints_of(prefix, text))


@cache
def _template(name: str, version: str) -> PromptTemplate:
    # looked up once: strategies render a prompt for nearly every model call, and the
    # built-in files do not change while the process runs
    return strategy_registry().get(name, version)


async def ask_parsed(
    ctx: StrategyContext,
    model: Model,
    prompt: str,
    parse: Callable[[str], T],
    attempts: int,
    settings: ModelSettings | None = None,
) -> T:
    """Ask ``model`` and parse its reply; on :class:`OutputParseError` ask again with the
    parser's message to the model (up to ``attempts`` calls), then re-raise the last
    error."""
    current = prompt
    for attempt in range(1, attempts + 1):
        reply = await ctx.ask(model, current, settings=settings)
        try:
            return parse(reply)
        except OutputParseError as exc:
            ctx.step("output_rejected", attempt=attempt, problem=str(exc))
            if attempt == attempts:
                raise
            current = PromptText(
                f"{prompt}\n\nYour previous reply:\n{reply}\n\n{exc.retry_message}",
                fingerprints_of(prompt),
            )
    raise AssertionError("unreachable: attempts >= 1")
