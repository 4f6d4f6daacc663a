"""What the engine consults each turn besides the run state: the request it sends the
model (:class:`Requests`) and the check for a run repeating itself
(:class:`RepetitionDetector`), and how a model's reply enters the history
(:func:`as_reply`, :func:`unique_call_ids`).

**Requests** (context shaping, tool selection and prompt fingerprints). The history list
itself goes into the request (never a copy): when no context policy,
``transform_context`` or tool selection reshapes it, one request object serves every
turn of the run, so building a request costs the same at step 1,000 as at step 1.

**Repetition and cycle detection** over a bounded tail of tool calls and their results.
The detector is a ``deque`` of the last ``repeat_limit * max_cycle_period`` calls (each
followed by its result) and compares only those, so its cost per step does not
depend on how long the run has been going. Two calls repeat each other when they have the same name, equal arguments *and*
the same result: polling a job whose status goes queued -> running -> done makes
progress and is not a loop, while the same call getting the same answer again is.
Arguments are compared by equality (no serialisation, no hashing, so unhashable JSON
values are fine). The tail holds the call parts and result parts themselves (already in
the history: no new object per call).
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import replace

from loopwright.core.messages import JSONValue, Message, Part, ToolCallPart, ToolResultPart
from loopwright.core.protocols import Fingerprinted, ModelRequest
from loopwright.core.run import RunState
from loopwright.core.tools import ToolSpec
from loopwright.loop.config import AgentConfig


class _Unset:
    """The budget not computed yet (``None`` is a budget: no limit)."""


_UNSET = _Unset()


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
        "_fp_tuple",
        "_fps",
        "_scanned",
        "_state",
        "_version",
        "_view",
    )

    def __init__(self, config: AgentConfig, state: RunState, view: AgentView) -> None:
        self._config = config
        self._state = state
        self._view = view
        self._version = -1  # the registry version the cached request was built for
        # only a context policy reads the budget: computed on its first use
        self._budget: int | _Unset | None = _UNSET
        self._cached: ModelRequest | None = None
        # prompt fingerprints seen so far, scanned incrementally (never the whole history)
        self._fps: dict[str, None] = dict.fromkeys(view.system_fingerprints)
        self._fp_tuple: tuple[str, ...] = tuple(self._fps)
        self._scanned = 0

    def reuse(self) -> ModelRequest | None:
        """The last turn's request when it serves this turn too (nothing reshapes the
        history and the tools did not change), else ``None``: then :meth:`build` it.
        A plain call, not a coroutine: most turns need nothing awaited to get it."""
        cached = self._cached
        if cached is not None and self._config.registry.version == self._version:
            return cached
        return None

    async def build(self) -> ModelRequest:
        """This turn's request. Raises :class:`ContextFailure` when user code shaping it
        raised."""
        config = self._config
        registry = config.registry
        cached = self.reuse()
        if cached is not None:
            return cached
        messages: Sequence[Message] = self._state.messages
        reshaped = False
        where = "context_policy"
        try:
            if config.context_policy is not None:
                budget = self._budget
                if isinstance(budget, _Unset):
                    budget = self._budget = config.context_budget()
                messages = config.context_policy(messages, budget)
                reshaped = True
            transform = config.hooks.transform_context
            if transform is not None:
                where = "transform_context"
                out = transform(messages)
                messages = await out if inspect.isawaitable(out) else out
                reshaped = True
            view = self._view
            if registry.version != view.version:  # tools changed (an MCP list_changed)
                view.refresh()
            self._version = view.version
            specs: Sequence[ToolSpec] = view.specs
            if config.tool_selection is not None:
                # per-turn tool selection (docs/tool-selection.md): it only narrows what the
                # model is shown; the dispatcher still checks every call's permission
                where = "tool_selection"
                chosen = config.tool_selection(messages, specs, config.model)
                specs = await chosen if inspect.isawaitable(chosen) else chosen
                output = config.output
                if output is not None and not output.native and output.spec not in specs:
                    specs = [*specs, output.spec]
                reshaped = True
        except Exception as exc:
            raise ContextFailure(where, exc) from exc
        output = config.output
        request = ModelRequest(
            messages,
            config.system,
            specs,
            config.settings,
            {"session_id": self._state.session_id},
            output.format if output is not None and output.native else None,
        )
        self._cached = None if reshaped else request
        return request

    def fingerprints(self) -> tuple[str, ...]:
        """Fingerprints (``name@version#hash``) of the prompts in this run's requests: the
        system prompt's (a ``PromptText``) and those recorded by ``prompt_message`` in a
        message's ``provider_meta["loopwright"]["prompt_fingerprints"]``. Asked at the
        start and the end of each observed model call: only messages added since the last
        call are scanned, and the tuple is rebuilt only when a new fingerprint appears."""
        messages = self._state.messages
        count = len(messages)
        if self._scanned < count:
            seen = self._fps
            known = len(seen)
            for index in range(self._scanned, count):
                meta = messages[index].provider_meta
                own = meta.get("loopwright") if meta else None
                if isinstance(own, dict):
                    for fp in own.get("prompt_fingerprints", ()):
                        seen.setdefault(str(fp), None)
            if len(seen) != known:
                self._fp_tuple = tuple(seen)
        self._scanned = count
        return self._fp_tuple


class AgentView:
    """What all runs of one agent share, derived from its config once instead of per
    run: the tools shown to the model and whether any takes a ``ToolContext`` (rebuilt
    only when the registry changes, its ``version``: e.g. an MCP server's
    ``list_changed``), and the system prompt's fingerprints.

    ``specs`` are the registry's (within the dispatcher's permission) and, with an
    ``output_type`` asked for through the tool, the final-answer tool (last, never
    narrowed away by a tool selection: see :mod:`loopwright.loop.output`); a tuple, since
    every run's requests share it. Measured with 1,000 concurrent runs: the
    ``Fingerprinted`` protocol check of the system prompt alone cost ~30 us per run
    (``isinstance`` on a runtime-checkable protocol walks the protocol's members every
    time)."""

    __slots__ = ("_config", "specs", "system_fingerprints", "takes_context", "version")

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self.version = -1
        self.specs: tuple[ToolSpec, ...] = ()
        self.takes_context = False
        system = config.system
        self.system_fingerprints: tuple[str, ...] = (
            tuple(system.fingerprints) if isinstance(system, Fingerprinted) else ()
        )

    def refresh(self) -> None:
        config = self._config
        registry = config.registry
        specs = registry.specs(max_permission=config.dispatch.permission)
        if config.output is not None and not config.output.native:
            specs.append(config.output.spec)
        self.specs = tuple(specs)
        self.takes_context = registry.takes_context
        self.version = registry.version

    def current(self) -> AgentView:
        """This view, refreshed first if the registry changed since."""
        if self._config.registry.version != self.version:
            self.refresh()
        return self


def describe(exc: BaseException) -> str:
    """``"Type: message"`` for an exception (just the type if ``str()`` fails or is empty)."""
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not hide the original failure
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class RepetitionDetector(deque[ToolCallPart | ToolResultPart | None]):
    """Detects the same call ``repeat_limit`` times in a row, or (with ``cycles``) a
    cycle of ``2..max_period`` calls repeated ``repeat_limit`` times in a row.

    Feed it every tool call in order with :meth:`add`; :meth:`check` returns a
    description of the repetition found, or ``None``. :meth:`observe` does both for one
    turn (what the loop calls).

    The detector *is* its tail: a bounded ``deque`` of each call followed by its result
    (``None`` when unknown), not an object holding one. A run with repetition detection
    on (the default) keeps its detector all run long, so a thousand waiting runs hold a
    thousand objects less for the collector to walk: 31.4 -> 30.6 GC-tracked objects per
    waiting run (``benchmarks/loop.py``'s census); the instructions of a burst of 1,000
    runs x 6 calls are unchanged (1,261.9 M -> 1,261.5 M; ``benchmarks/notes/loop.md``,
    round 8). Only the methods below are its interface.
    """

    __slots__ = ("_cycles", "_max_period", "_repeat")

    def __init__(self, repeat_limit: int, *, cycles: bool = True, max_period: int = 4) -> None:
        if repeat_limit < 2:
            raise ValueError(f"repeat_limit must be >= 2, got {repeat_limit}")
        max_period = max_period if cycles else 1
        super().__init__((), 2 * repeat_limit * max_period)
        self._repeat = repeat_limit
        self._cycles = cycles
        self._max_period = max_period

    def add(
        self, calls: Sequence[ToolCallPart], results: Sequence[ToolResultPart] | None = None
    ) -> None:
        """Record ``calls`` in order, with their ``results`` (in call order) when known.
        The result parts themselves are kept (their text is compared only when a call
        repeats an earlier one): no list per step. With the pre-check reading from the
        right end of the tail, ``add`` + ``check`` of one call per step went from 13.7k
        to 11.2k instructions (valgrind; ``benchmarks/notes/loop.md``, round 6)."""
        tail = self
        known = results is not None and len(results) == len(calls)
        if len(calls) == 1:  # most turns: no loop
            tail.append(calls[0])
            tail.append(results[0] if known else None)  # type: ignore[index]
            return
        for index, call in enumerate(calls):
            tail.append(call)
            tail.append(results[index] if known else None)  # type: ignore[index]

    def observe(
        self, calls: Sequence[ToolCallPart], results: Sequence[ToolResultPart]
    ) -> str | None:
        """:meth:`add` then :meth:`check`, what the loop asks after every turn that ran
        tools, in one call: the tail is compared in full (:meth:`check`) only when the
        newest call has the name and arguments of the call one period before it, which
        every repetition needs; otherwise nothing repeats and ``None`` is returned at
        once. A turn of one call appends directly. Same answers as ``add`` + ``check``
        for two calls less per turn (benchmarks/notes/loop.md, round 10)."""
        if len(calls) == 1 and len(results) == 1:
            self.append(calls[0])
            self.append(results[0])
        else:
            self.add(calls, results)
        n = len(self) // 2
        repeat = self._repeat
        if n < repeat:
            return None
        last: ToolCallPart = self[-2]  # type: ignore[assignment]
        name, arguments = last.name, last.arguments
        for period in range(1, min(self._max_period, n // repeat) + 1):
            prior: ToolCallPart = self[-2 - 2 * period]  # type: ignore[assignment]
            if prior.arguments == arguments and prior.name == name:
                return self.check()
        return None

    def prime(self, messages: list[Message]) -> None:
        """Refill the tail from the end of a history (used when a run resumes)."""
        need = (self.maxlen or 0) // 2
        found: list[ToolCallPart] = []
        answers: dict[str, ToolResultPart] = {}
        i = len(messages) - 1
        while i >= 0 and len(found) < need:
            message = messages[i]
            for result in message.tool_results_parts:
                answers.setdefault(result.call_id, result)
            found[:0] = message.tool_calls
            i -= 1
        self.clear()
        for call in found[-need:] if need else []:
            self.append(call)
            self.append(answers.get(call.id))

    def _call(self, k: int) -> ToolCallPart:
        """The ``k``-th call of the tail (0 = the oldest kept)."""
        return self[2 * k]  # type: ignore[return-value]

    def check(self) -> str | None:
        tail = self
        n = len(tail) // 2
        repeat = self._repeat
        if n < repeat:
            return None
        last: ToolCallPart = tail[-2]  # type: ignore[assignment]
        name, arguments = last.name, last.arguments
        for period in range(1, min(self._max_period, n // repeat) + 1):
            prior: ToolCallPart = tail[-2 - 2 * period]  # type: ignore[assignment]
            if prior.arguments != arguments or prior.name != name:  # cheap pre-check
                continue
            start = n - period * repeat
            if all(self._same(k, k + period) for k in range(start, n - period)):
                return self._describe(period, start)
        return None

    def _same(self, i: int, j: int) -> bool:
        tail = self
        a, b = self._call(i), self._call(j)
        return (
            a.name == b.name
            and a.arguments == b.arguments
            and _content(tail[2 * i + 1]) == _content(tail[2 * j + 1])  # type: ignore[arg-type]
        )

    def _describe(self, period: int, start: int) -> str:
        if period == 1:
            last = self._call(len(self) // 2 - 1)
            name, args = last.name, last.arguments
            return (
                f"tool {name!r} was called with the same arguments {self._repeat} times "
                f"in a row and got the same result each time ({_short(args)})"
            )
        names = " -> ".join(self._call(start + k).name for k in range(period))
        return f"the cycle {names} repeated {self._repeat} times in a row"


def _content(result: ToolResultPart | None) -> str | None:
    return None if result is None else result.content


def _short(args: Mapping[str, JSONValue], limit: int = 120) -> str:
    text = repr(dict(args))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def unique_call_ids(
    message: Message, calls: tuple[ToolCallPart, ...]
) -> tuple[Message, tuple[ToolCallPart, ...]]:
    """Give empty or duplicate call ids a unique value, so each result pairs with one call."""
    if len(calls) == 1:
        if calls[0].id:
            return message, calls
    else:
        ids = {c.id for c in calls}
        if len(ids) == len(calls) and "" not in ids:
            return message, calls
    seen: set[str] = set()
    parts: list[Part] = []
    for index, part in enumerate(message.parts):
        if isinstance(part, ToolCallPart):
            if not part.id or part.id in seen:
                new_id = f"{part.id or 'call'}_{index}"
                while new_id in seen:
                    new_id += "_"
                part = replace(part, id=new_id)
            seen.add(part.id)
        parts.append(part)
    message = replace(message, parts=tuple(parts))
    return message, message.tool_calls


def as_reply(message: Message) -> Message:
    """A model's reply as the history must hold it: role ``assistant`` and no tool results
    (a model must not be able to speak as the user, or answer its own tool calls)."""
    parts = tuple(p for p in message.parts if type(p) is not ToolResultPart)
    return replace(message, role="assistant", parts=parts)
