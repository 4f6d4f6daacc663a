"""The base of the strategies' model wrappers (the embedded strategy's, and the one a
strategy counts an agent run's calls through): each wraps a
:class:`~loopwright.core.protocols.Model` and changes only its ``stream``."""

from __future__ import annotations

from typing import Any

from loopwright.core.protocols import Model


class ModelWrapper:
    """``model`` seen through a wrapper: its ``name`` and other attributes
    (``context_window``, ``count_tokens``, ``load``) are the wrapped model's; a subclass
    defines ``stream``."""

    def __init__(self, model: Model) -> None:
        self.model = model

    @property
    def name(self) -> str:
        return self.model.name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.model, attr)


__all__ = ["ModelWrapper"]
