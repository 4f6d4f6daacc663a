"""Each turn's model request: context shaping, tool selection and prompt fingerprints.

The history list itself goes into the request (never a copy): when no context policy,
``transform_context`` or tool selection reshapes it, one request object serves every
turn of the run, so building a request costs the same at step 1,000 as at step 1.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from loopwright.core.messages import Message
from loopwright.core.protocols import Fingerprinted, ModelRequest
from loopwright.core.run import RunState
from loopwright.core.tools import ToolSpec
from loopwright.loop.config import AgentConfig


class ContextFailure(Exception):
    """A context policy, ``transform_context`` or tool selection raised (``where`` names
    it; the original exception is the ``__cause__``). The run stops with
    ``context_error``."""

    def __init__(self, where: str, exc: Exception) -> None:
        super().__init__(f"{where} raised {describe(exc)}")
        self.where = where


class Requests:
    """Builds the requests of one run over ``state``."""

    __slots__ = (
        "_budget",
        "_cached",
        "_config",
        "_fps",
        "_scanned",
        "_specs",
        "_state",
        "_version",
    )

    def __init__(self, config: AgentConfig, state: RunState) -> None:
        self._config = config
        self._state = state
        registry = config.registry
        self._specs = _specs(config)
        self._version = registry.version
        self._budget = config.context_budget()
        self._cached: ModelRequest | None = None
        system = config.system
        # prompt fingerprints seen so far, scanned incrementally (never the whole history)
        self._fps: dict[str, None] = (
            dict.fromkeys(system.fingerprints) if isinstance(system, Fingerprinted) else {}
        )
        self._scanned = 0

    async def build(self) -> ModelRequest:
        """This turn's request. Raises :class:`ContextFailure` when user code shaping it
        raised."""
        config = self._config
        registry = config.registry
        cached = self._cached
        if cached is not None and registry.version == self._version:
            return cached
        messages: Sequence[Message] = self._state.messages
        reshaped = False
        where = "context_policy"
        try:
            if config.context_policy is not None:
                messages = config.context_policy(messages, self._budget)
                reshaped = True
            transform = config.hooks.transform_context
            if transform is not None:
                where = "transform_context"
                out = transform(messages)
                messages = await out if inspect.isawaitable(out) else out
                reshaped = True
            if registry.version != self._version:  # tools changed (an MCP list_changed)
                self._specs = _specs(config)
                self._version = registry.version
            specs: Sequence[ToolSpec] = self._specs
            if config.tool_selection is not None:
                # per-turn tool selection (docs/tool-selection.md): it only narrows what the
                # model is shown; the dispatcher still checks every call's permission
                where = "tool_selection"
                chosen = config.tool_selection(messages, specs, config.model)
                specs = await chosen if inspect.isawaitable(chosen) else chosen
                output = config.output
                if output is not None and output.spec not in specs:
                    specs = [*specs, output.spec]
                reshaped = True
        except Exception as exc:
            raise ContextFailure(where, exc) from exc
        request = ModelRequest(
            messages, config.system, specs, config.settings, {"session_id": self._state.session_id}
        )
        self._cached = None if reshaped else request
        return request

    def fingerprints(self) -> tuple[str, ...]:
        """Fingerprints (``name@version#hash``) of the prompts in this run's requests: the
        system prompt's (a ``PromptText``) and those recorded by ``prompt_message`` in a
        message's ``provider_meta["loopwright"]["prompt_fingerprints"]``."""
        messages = self._state.messages
        seen = self._fps
        for m in messages[self._scanned :]:
            own = m.provider_meta.get("loopwright") if m.provider_meta else None
            if isinstance(own, dict):
                for fp in own.get("prompt_fingerprints", ()):
                    seen.setdefault(str(fp), None)
        self._scanned = len(messages)
        return tuple(seen)


def _specs(config: AgentConfig) -> list[ToolSpec]:
    """The tools the model is shown: the registry's (within the dispatcher's permission)
    and, with an ``output_type``, the final-answer tool (last, never narrowed away by a
    tool selection: see :mod:`loopwright.loop.output`)."""
    specs = config.registry.specs(max_permission=config.dispatch.permission)
    if config.output is not None:
        specs.append(config.output.spec)
    return specs


def describe(exc: BaseException) -> str:
    """``"Type: message"`` for an exception (just the type if ``str()`` fails or is empty)."""
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not hide the original failure
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
