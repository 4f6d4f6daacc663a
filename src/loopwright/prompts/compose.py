"""Composing prompts from modules, and assembling layered prompts under a token budget.

:class:`PromptComposer` joins template modules in order; each module is
rendered with only its own variables, and a variable no module uses is an error.

:class:`PromptAssembler` builds the final prompt from the four layers --
system, context injection, user input, constraints & guardrails -- each with a priority,
an optional per-layer token budget and a compressible flag. Over budget, compressible
layers are cut from the lowest priority up (never below their ``min_tokens``); fixed
layers are never cut, and the constraint layer can never be made compressible. When the
fixed layers alone exceed the budget the assembler raises :class:`PromptBudgetError`
listing them, instead of sending a prompt without its rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from loopwright.core.estimate import estimate_tokens
from loopwright.prompts.template import (
    PromptError,
    PromptTemplate,
    PromptText,
    TemplateError,
    fingerprints_of,
)

Count = Callable[[str], int]
LayerKind = Literal["system", "context", "user", "constraints"]


class PromptBudgetError(PromptError):
    """The layers that may not be cut do not fit the budget."""


class PromptComposer:
    """Modules rendered in order under ``## <section>`` headings (``headings=False``: none)."""

    def __init__(self, *, separator: str = "\n\n", headings: bool = True) -> None:
        self._modules: list[tuple[str, PromptTemplate]] = []
        self._separator = separator
        self._headings = headings

    def add(self, section: str, template: PromptTemplate) -> PromptComposer:
        if any(s == section for s, _ in self._modules):
            raise PromptError(f"composer already has a section named {section!r}")
        self._modules.append((section, template))
        return self

    @property
    def variables(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for _, t in self._modules:
            for v in t.variables:
                seen.setdefault(v, None)
        return tuple(seen)

    def compose(
        self, values: Mapping[str, object] | None = None, /, **kwargs: object
    ) -> PromptText:
        merged: dict[str, object] = dict(values or {})
        merged.update(kwargs)
        known = set(self.variables)
        unknown = sorted(set(merged) - known)
        if unknown:
            raise TemplateError(
                f"composer got variable(s) no module uses: {', '.join(map(repr, unknown))}; "
                f"modules expect: {', '.join(self.variables) or '(none)'}"
            )
        parts: list[str] = []
        for section, template in self._modules:
            own = {k: merged[k] for k in template.variables if k in merged}
            rendered = template.render(own)  # names the module's template if one is missing
            parts.append(f"## {section}\n{rendered}" if self._headings else str(rendered))
        return PromptText(self._separator.join(parts), (t.fingerprint for _, t in self._modules))


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer of an assembled prompt.

    ``priority``: higher is cut later. ``max_tokens``: the layer's own budget (a
    compressible layer over it is cut to it; a fixed one is an error). ``min_tokens``: a
    compressible layer is never cut below this. ``keep``: which end survives a cut
    (``"tail"`` suits history, where the latest matters).
    """

    name: str
    content: str
    kind: LayerKind = "context"
    priority: int = 50
    max_tokens: int | None = None
    compressible: bool = False
    min_tokens: int = 0
    keep: Literal["head", "tail"] = "head"

    def __post_init__(self) -> None:
        if self.kind == "constraints" and self.compressible:
            raise PromptError(
                f"layer {self.name!r}: the constraint layer is never cut; "
                "set compressible=False (shorten the rules instead)"
            )
        if (self.max_tokens is not None and self.max_tokens < 0) or self.min_tokens < 0:
            raise PromptError(f"layer {self.name!r}: max_tokens and min_tokens must be >= 0")


@dataclass(frozen=True, slots=True)
class LayerResult:
    name: str
    kind: LayerKind
    tokens: int
    original_tokens: int

    @property
    def cut(self) -> bool:
        return self.tokens < self.original_tokens


@dataclass(frozen=True, slots=True)
class AssembledPrompt:
    text: PromptText
    layers: tuple[LayerResult, ...]
    total_tokens: int
    budget: int


def cut_to_tokens(text: str, max_tokens: int, count: Count, keep: str = "head") -> str:
    """``text`` shortened to at most ``max_tokens`` (binary search on length), with a marker."""
    if count(text) <= max_tokens:
        return text
    if max_tokens <= 0:
        return ""
    marker = "\n[... cut to fit the prompt budget ...]\n"
    lo, hi = 0, len(text)
    best = ""
    while lo <= hi:
        mid = (lo + hi) // 2
        piece = text[:mid] + marker if keep == "head" else marker + text[len(text) - mid :]
        if count(piece) <= max_tokens:
            best, lo = piece, mid + 1
        else:
            hi = mid - 1
    return best


class PromptAssembler:
    """Layers joined in the order added, cut to ``budget`` tokens (see module docstring).

    ``count`` defaults to the labelled estimate; pass an exact counter's ``count_text``
    (``loopwright.context.counter_for(model).count_text``) for exact budgets.
    """

    def __init__(
        self, budget: int, *, count: Count = estimate_tokens, separator: str = "\n\n"
    ) -> None:
        if budget <= 0:
            raise PromptBudgetError(
                f"PromptAssembler budget must be a positive token count, got {budget}"
            )
        self.budget = budget
        self._count = count
        self._separator = separator
        self._layers: list[Layer] = []

    def add(self, layer: Layer) -> PromptAssembler:
        if any(existing.name == layer.name for existing in self._layers):
            raise PromptError(f"assembler already has a layer named {layer.name!r}")
        self._layers.append(layer)
        return self

    def assemble(self) -> AssembledPrompt:
        count = self._count
        texts = [self._within_own_budget(layer) for layer in self._layers]
        sizes = [count(t) for t in texts]
        room = self.budget - count(self._separator) * max(0, len(texts) - 1)
        floor = [
            min(size, layer.min_tokens) if layer.compressible else size
            for layer, size in zip(self._layers, sizes, strict=True)
        ]
        if sum(floor) > room:
            raise self._fixed_error(floor, room)
        overflow = sum(sizes) - room
        order = sorted(range(len(texts)), key=lambda i: (self._layers[i].priority, -i))
        for i in order:
            if overflow <= 0:
                break
            layer = self._layers[i]
            if not layer.compressible or sizes[i] <= floor[i]:
                continue
            target = max(floor[i], sizes[i] - overflow)
            texts[i] = cut_to_tokens(texts[i], target, count, layer.keep)
            new = count(texts[i])
            overflow -= sizes[i] - new
            sizes[i] = new
        if overflow > 0:
            raise self._fixed_error(floor, room)
        results = tuple(
            LayerResult(layer.name, layer.kind, sizes[i], count(layer.content))
            for i, layer in enumerate(self._layers)
        )
        joined = self._separator.join(t for t in texts if t)
        fps = fingerprints_of(*(layer.content for layer in self._layers))
        return AssembledPrompt(PromptText(joined, fps), results, count(joined), self.budget)

    def _within_own_budget(self, layer: Layer) -> str:
        if layer.max_tokens is None:
            return layer.content
        size = self._count(layer.content)
        if size <= layer.max_tokens:
            return layer.content
        if not layer.compressible:
            raise PromptBudgetError(
                f"layer {layer.name!r} ({layer.kind}) has {size} tokens, over its max_tokens "
                f"{layer.max_tokens}, and is not compressible; shorten it or raise max_tokens"
            )
        return cut_to_tokens(layer.content, layer.max_tokens, self._count, layer.keep)

    def _fixed_error(self, floor: list[int], room: int) -> PromptBudgetError:
        parts = ", ".join(
            f"{layer.name} {need}" + (" (min)" if layer.compressible else "")
            for layer, need in zip(self._layers, floor, strict=True)
            if need
        )
        return PromptBudgetError(
            f"the layers that cannot be cut need {sum(floor)} tokens ({parts}) but the budget "
            f"leaves {room} (budget {self.budget} minus separators); raise the budget, "
            "shorten the fixed layers, or mark context layers compressible"
        )
