"""``@tool`` and :class:`Tool`: a function plus the contract a model sees.

A :class:`Tool` is callable like the function it wraps (handy in tests). The dispatcher
runs it through :meth:`Tool.invoke`, which converts validated JSON arguments into the
function's Python types (Enums, tuples, sets, dataclasses, pydantic models), injects a
:class:`ToolContext` when the function asks for one, and awaits the result.

Where a sync function runs is its ``inline`` flag: ``True`` always on the event loop
(fast, CPU-light functions; a timeout cannot interrupt them, a run past it fails as
``timeout``), ``False`` always on a worker thread, ``None`` (the default) on workers
until its own runs prove it short and non-blocking, then on the event loop (:class:`~loopwright.tools.execution.SyncProfile`).
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import inspect
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar, get_origin, overload

from loopwright.core.checks import check_function
from loopwright.core.errors import ConfigError
from loopwright.core.tools import Permission, ToolSpec, UnknownOutcomePolicy
from loopwright.tools.execution import Execution, SyncProfile, run_tool
from loopwright.tools.invocation import ToolContext
from loopwright.tools.schema import Converter, function_schema
from loopwright.tools.validation import (
    SchemaValidator,
    Violation,
    check_schema,
    pointer_from_path,
)

BusinessValidator = Callable[[Mapping[str, Any]], "str | Iterable[Violation] | None"]
"""Checks validated arguments; returns ``None`` when fine, else a message or violations
(raising ``ValueError`` counts as a violation carrying its message)."""
IdempotencyKeyFn = Callable[[Mapping[str, Any]], "str | None"]
OutcomeCheck = Callable[[str], Any]
_P = ParamSpec("_P")
_R = TypeVar("_R")

# Dots are common in real tool sets (``math.factorial``, ``files.read``); providers whose
# wire format refuses them map the name reversibly at their boundary
# (``providers._common``), so the canonical name may keep them.
_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$")


def strict_keywords(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fn`` refusing an unknown keyword with a ``TypeError`` that names the closest valid
    one and lists them all (Python's own message names only the unknown keyword)."""
    params = inspect.signature(fn).parameters
    valid = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    accepted = frozenset(
        n for n, p in params.items() if p.kind is not inspect.Parameter.POSITIONAL_ONLY
    )

    @functools.wraps(fn)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        unknown = [k for k in kwargs if k not in accepted]
        if unknown:
            raise TypeError(_unknown_keywords(fn.__qualname__, unknown, valid))
        return fn(*args, **kwargs)

    return checked


def _unknown_keywords(owner: str, unknown: Sequence[str], valid: Sequence[str]) -> str:
    names = ", ".join(repr(k) for k in unknown)
    close = difflib.get_close_matches(unknown[0], valid, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    plural = "s" if len(unknown) > 1 else ""
    return (
        f"{owner}() got unknown keyword argument{plural} {names}{hint}; "
        f"valid keywords: {', '.join(valid)}"
    )


@dataclass(frozen=True, slots=True, eq=False)
class Tool:
    """An executable tool. Build it with :func:`tool` or :meth:`Tool.from_schema`.

    Tools compare and hash by identity (they hold functions and mutable schemas)."""

    spec: ToolSpec
    fn: Callable[..., Any]
    validators: tuple[BusinessValidator, ...] = ()
    idempotency_key: IdempotencyKeyFn | None = None
    outcome_check: OutcomeCheck | None = None
    inline: bool | None = None
    context_param: str | None = None
    converters: tuple[tuple[str, Converter], ...] = ()
    check_parameters: bool = field(default=True, repr=False)
    """Check ``spec.parameters`` against the metaschema (skipped for derived schemas)."""
    untrusted_output: bool = False
    """The result carries outside content (files, rows, web pages...): the dispatcher
    delimits it as data and the run becomes tainted (see docs/tools.md, "Untrusted output").
    """
    confirm_when_tainted: bool | None = None
    """Whether calls need a person's approval once the run has read untrusted content:
    ``None`` decides from the spec (write/admin permission or not idempotent), ``True``
    always, ``False`` never (a tool without side effects that is not marked idempotent).
    See :func:`loopwright.tools.taint.gated`."""
    argument_schema: Mapping[str, Any] | None = field(default=None, repr=False)
    """The schema arguments are validated against when it is not ``spec.parameters``:
    ``@tool`` advertises ``uniqueItems`` for a set but collapses repeated items instead of
    refusing them (see :func:`loopwright.tools.schema.function_schema`)."""
    schema_validator: SchemaValidator = field(init=False, repr=False, compare=False)
    is_async: bool = field(init=False, repr=False, compare=False)
    profile: SyncProfile = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = self.spec.name
        if not isinstance(name, str) or not _NAME.match(name):
            # a lambda is named "<lambda>", a functools.partial not at all: say how to name it
            raise ValueError(
                f"tool name {name!r} is invalid; use 1-64 letters, digits, '_', '-' or '.' "
                "(name a lambda or partial with tool(name='lookup')(fn))"
            )
        if not isinstance(self.spec.description, str):
            raise ValueError(
                f"tool {name!r}: description must be a str (what the model reads to choose "
                f"the tool), got {type(self.spec.description).__name__}"
            )
        if not callable(self.fn):
            raise ValueError(f"tool {name!r}: fn must be callable, got {type(self.fn).__name__}")
        if _is_generator_callable(self.fn):
            # calling one only builds a generator: the model would read its repr as the
            # result and the body would never run
            raise ValueError(
                f"tool {name!r}: fn is a generator function (it uses yield); a tool returns "
                "its result: collect the items and return a list"
            )
        _check_helpers(self)
        if self.check_parameters:
            check_schema(self.spec.parameters, owner=f"tool {name!r}")
            _check_signature(name, self.fn, self.spec.parameters, self.context_param)
        checked = self.spec.parameters if self.argument_schema is None else self.argument_schema
        object.__setattr__(self, "schema_validator", SchemaValidator(checked))
        object.__setattr__(self, "is_async", _is_async_callable(self.fn))
        object.__setattr__(self, "profile", SyncProfile(self.spec.name))

    # -- construction ---------------------------------------------------------------------
    @classmethod
    @strict_keywords
    def from_schema(
        cls,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        fn: Callable[..., Any],
        *,
        requires_confirmation: bool = False,
        permission: Permission | str | int = Permission.READ,
        idempotent: bool = False,
        timeout: float | None = 30.0,
        max_result_chars: int = 20_000,
        validators: Sequence[BusinessValidator] = (),
        idempotency_key: IdempotencyKeyFn | None = None,
        unknown_outcome: UnknownOutcomePolicy | str = UnknownOutcomePolicy.REPORT,
        outcome_check: OutcomeCheck | None = None,
        inline: bool | None = None,
        untrusted_output: bool = False,
        confirm_when_tainted: bool | None = None,
    ) -> Tool:
        """A tool from a raw JSON Schema. ``fn`` receives the validated arguments as
        keyword arguments, unchanged (plus a ``ToolContext`` parameter if it has one).
        The keyword flags are those of :func:`tool`."""
        opts = _ToolOptions(
            requires_confirmation=requires_confirmation,
            permission=permission,
            idempotent=idempotent,
            timeout=timeout,
            max_result_chars=max_result_chars,
            validators=validators,
            idempotency_key=idempotency_key,
            unknown_outcome=unknown_outcome,
            outcome_check=outcome_check,
            inline=inline,
            untrusted_output=untrusted_output,
            confirm_when_tainted=confirm_when_tainted,
        )
        context_param = _context_param_of(fn)
        return cls(
            opts.spec(name, description, parameters),
            fn,
            _validator_list(name, opts.validators),
            opts.idempotency_key,
            opts.outcome_check,
            opts.inline,
            context_param,
            untrusted_output=opts.untrusted_output,
            confirm_when_tainted=opts.confirm_when_tainted,
        )

    # -- use ------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.spec.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def validate(self, arguments: Mapping[str, Any]) -> list[Violation]:
        """Schema violations, then (only if the schema passed) business-rule violations."""
        found = self.schema_validator.violations(arguments)
        if found or not self.validators:
            return found
        for check in self.validators:
            found.extend(_run_business_validator(check, arguments))
        return found

    def bind(self, arguments: Mapping[str, Any], ctx: ToolContext | None) -> dict[str, Any]:
        """Keyword arguments for ``fn``: converted values plus the context if wanted.

        Raises :class:`ConversionError` (a ``ValueError``) listing, at its JSON pointer,
        every value that cannot be converted to its parameter's Python type.
        """
        kwargs = dict(arguments)
        failed: list[Violation] = []
        for name, convert in self.converters:
            if name in kwargs:
                try:
                    kwargs[name] = convert(kwargs[name])
                except Exception as exc:
                    failed.extend(_conversion_violations(name, exc))
        if failed:
            raise ConversionError(failed)
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        return kwargs

    async def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> object:
        """Run the tool with validated ``arguments``; returns what the function returns."""
        return await self.call_bound(self.bind(arguments, ctx))

    async def call_bound(
        self, kwargs: dict[str, Any], execution: Execution[Any] | None = None
    ) -> object:
        """Run ``fn(**kwargs)``: awaited if async, inline or in a worker thread if sync
        (see :func:`loopwright.tools.execution.run_tool`, the one implementation)."""
        return await run_tool(self, kwargs, execution)

    async def check_outcome(self, key: str) -> object | None:
        """Ask the tool whether a call with idempotency ``key`` already ran (used when
        resuming after a crash). ``None``: unknown, or no ``outcome_check`` declared."""
        if self.outcome_check is None:
            return None
        result = self.outcome_check(key)
        if inspect.isawaitable(result):
            result = await result
        return result


class ConversionError(ValueError):
    """Validated arguments that do not convert to the function's Python types
    (:meth:`Tool.bind`): one :class:`Violation` per failure, at its JSON pointer."""

    def __init__(self, violations: Sequence[Violation]) -> None:
        self.violations = tuple(violations)
        lines = "\n".join(map(str, self.violations))
        super().__init__(
            f"arguments do not convert to the tool's types; fix these and call again:\n{lines}"
        )


def _conversion_violations(name: str, exc: Exception) -> list[Violation]:
    """What a converter's failure says, at the pointer of the value that failed (a
    pydantic ``ValidationError`` names a place inside the value for each of its errors)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            found = [(e["loc"], e["msg"]) for e in errors()]
        except Exception:  # an ``errors`` that is not pydantic's
            found = []
        if found:
            return [Violation(pointer_from_path([name, *loc]), msg) for loc, msg in found]
    return [Violation(pointer_from_path([name]), str(exc) or type(exc).__name__)]


@dataclass(frozen=True, slots=True)
class _ToolOptions:
    """The keyword flags shared by :func:`tool` and :meth:`Tool.from_schema` (both list
    them explicitly, in this order, so editors and type checkers see each one)."""

    requires_confirmation: bool = False
    permission: Permission | str | int = Permission.READ
    idempotent: bool = False
    timeout: float | None = 30.0
    max_result_chars: int = 20_000
    validators: Sequence[BusinessValidator] = ()
    idempotency_key: IdempotencyKeyFn | None = None
    unknown_outcome: UnknownOutcomePolicy | str = UnknownOutcomePolicy.REPORT
    outcome_check: OutcomeCheck | None = None
    inline: bool | None = None
    untrusted_output: bool = False
    confirm_when_tainted: bool | None = None

    def spec(self, name: str, description: str, parameters: Mapping[str, Any]) -> ToolSpec:
        timeout = self.timeout
        if timeout is not None and not (
            isinstance(timeout, int | float)
            and not isinstance(timeout, bool)
            and 0 < timeout < math.inf  # nan fails too: it ran the tool without a timeout
        ):
            raise ValueError(
                f"tool {name!r}: timeout must be a finite number of seconds > 0 or None, "
                f"got {timeout!r}"
            )
        chars = self.max_result_chars
        if isinstance(chars, bool) or not isinstance(chars, int) or chars < 1:
            raise ValueError(f"tool {name!r}: max_result_chars must be an int >= 1, got {chars!r}")
        return ToolSpec(
            name=name,
            description=description,
            parameters=parameters,
            requires_confirmation=self.requires_confirmation,
            permission=Permission.parse(self.permission),
            idempotent=self.idempotent,
            timeout=self.timeout,
            max_result_chars=self.max_result_chars,
            unknown_outcome=_outcome_policy(name, self.unknown_outcome),
        )


def _outcome_policy(name: str, value: UnknownOutcomePolicy | str) -> UnknownOutcomePolicy:
    try:
        return UnknownOutcomePolicy(value)
    except ValueError:  # "'bogus' is not a valid UnknownOutcomePolicy" named no choice
        choices = ", ".join(repr(p.value) for p in UnknownOutcomePolicy)
        raise ValueError(
            f"tool {name!r}: unknown_outcome must be one of {choices}, got {value!r}"
        ) from None


def _validator_list(name: str, validators: object) -> tuple[BusinessValidator, ...]:
    """``validators`` as a tuple; a bare function (``validators=check``) was iterated
    ("'function' object is not iterable")."""
    if isinstance(validators, str) or not isinstance(validators, Sequence):
        raise ValueError(
            f"tool {name!r}: validators must be a list of functions, e.g. validators=[check], "
            f"got {type(validators).__name__}"
        )
    return tuple(validators)


def _check_helpers(t: Tool) -> None:
    """The tool's helper functions are functions of what they are given: a validator or an
    idempotency key that is not (``validators=[1]``, ``idempotency_key="to"``) was accepted
    and failed on every call. ``validators`` must be a sequence (a bare function would be
    iterated)."""
    name = t.spec.name
    _validator_list(name, t.validators)
    helpers: list[tuple[str, object, tuple[str, ...]]] = [
        (f"validators[{i}]", v, ("arguments",)) for i, v in enumerate(t.validators)
    ]
    if t.idempotency_key is not None:
        helpers.append(("idempotency_key", t.idempotency_key, ("arguments",)))
    if t.outcome_check is not None:
        helpers.append(("outcome_check", t.outcome_check, ("key",)))
    for field_name, value, params in helpers:
        try:
            check_function(f"tool {name!r}: {field_name}", value, params)
        except ConfigError as exc:  # a ValueError like every other bad tool definition
            raise ValueError(str(exc)) from None


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_confirmation: bool = False,
    permission: Permission | str | int = Permission.READ,
    idempotent: bool = False,
    timeout: float | None = 30.0,
    max_result_chars: int = 20_000,
    validators: Sequence[BusinessValidator] = (),
    idempotency_key: IdempotencyKeyFn | None = None,
    unknown_outcome: UnknownOutcomePolicy | str = UnknownOutcomePolicy.REPORT,
    outcome_check: OutcomeCheck | None = None,
    inline: bool | None = None,
    untrusted_output: bool = False,
    confirm_when_tainted: bool | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


@strict_keywords
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_confirmation: bool = False,
    permission: Permission | str | int = Permission.READ,
    idempotent: bool = False,
    timeout: float | None = 30.0,
    max_result_chars: int = 20_000,
    validators: Sequence[BusinessValidator] = (),
    idempotency_key: IdempotencyKeyFn | None = None,
    unknown_outcome: UnknownOutcomePolicy | str = UnknownOutcomePolicy.REPORT,
    outcome_check: OutcomeCheck | None = None,
    inline: bool | None = None,
    untrusted_output: bool = False,
    confirm_when_tainted: bool | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function (sync or async) into a :class:`Tool`.

    Used bare (``@tool``) or with flags: ``requires_confirmation``, ``permission``
    (``"read"``/``"write"``/``"admin"`` or :class:`Permission`), ``idempotent``,
    ``timeout`` (seconds, ``None`` = no limit), ``max_result_chars``, ``validators``,
    ``idempotency_key`` (``args -> str | None``), ``unknown_outcome``, ``outcome_check``
    (``key -> result | None``), ``inline`` (``True``/``False``/``None``: module doc),
    ``untrusted_output`` (results are outside content, delimited as data; they taint the
    run), ``confirm_when_tainted`` (``True``/``False``/``None``: see :class:`Tool`). The
    schema comes from type hints and the docstring; the description is the docstring
    without its parameter section.
    """

    opts = _ToolOptions(
        requires_confirmation=requires_confirmation,
        permission=permission,
        idempotent=idempotent,
        timeout=timeout,
        max_result_chars=max_result_chars,
        validators=validators,
        idempotency_key=idempotency_key,
        unknown_outcome=unknown_outcome,
        outcome_check=outcome_check,
        inline=inline,
        untrusted_output=untrusted_output,
        confirm_when_tainted=confirm_when_tainted,
    )

    def wrap(func: Callable[..., Any]) -> Tool:
        if not callable(func):  # e.g. the keys of a dict iterated as if they were tools
            raise ValueError(
                f"tool() needs a function or a Tool, got {type(func).__name__} {func!r:.60}"
            )
        if isinstance(func, Tool):
            if name is None and description is None and opts == _DEFAULTS:
                return func
            func = func.fn  # re-wrap the function with the new flags
        tool_name = name or str(getattr(func, "__name__", ""))
        derived = function_schema(func, owner=tool_name)
        return Tool(
            opts.spec(tool_name, description or derived.description, derived.parameters),
            func,
            _validator_list(tool_name, opts.validators),
            opts.idempotency_key,
            opts.outcome_check,
            opts.inline,
            derived.context_param,
            derived.converters,
            check_parameters=False,  # built by schema.py, valid by construction
            untrusted_output=opts.untrusted_output,
            confirm_when_tainted=opts.confirm_when_tainted,
            argument_schema=derived.argument_schema,
        )

    if fn is not None:
        return wrap(fn)
    return wrap


_DEFAULTS = _ToolOptions()


def as_tool(obj: Tool | Callable[..., Any]) -> Tool:
    """``obj`` if it already is a Tool, else ``@tool(obj)``."""
    return obj if isinstance(obj, Tool) else tool(obj)


def _run_business_validator(
    check: BusinessValidator, arguments: Mapping[str, Any]
) -> list[Violation]:
    label = getattr(check, "__name__", type(check).__name__)
    try:
        outcome = check(arguments)
    except ValueError as exc:
        return [Violation("", str(exc) or label)]
    except Exception as exc:
        return [Violation("", f"validator {label} raised {type(exc).__name__}: {exc}")]
    if outcome is None:
        return []
    if isinstance(outcome, str):
        return [Violation("", outcome)]
    if isinstance(outcome, Violation):
        return [outcome]
    try:
        return [v if isinstance(v, Violation) else Violation("", str(v)) for v in outcome]
    except Exception as exc:
        return [Violation("", f"validator {label} returned an unusable value ({exc})")]


def _context_param_of(fn: Callable[..., Any]) -> str | None:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    for p in params:
        annotation = p.annotation
        if isinstance(annotation, str):  # postponed: ``ToolContext`` or ``ToolContext[Deps]``
            if annotation == "ToolContext" or annotation.startswith("ToolContext["):
                return p.name
        elif annotation is ToolContext or get_origin(annotation) is ToolContext:
            return p.name
    return None


def _check_signature(
    name: str, fn: Callable[..., Any], parameters: Mapping[str, Any], context_param: str | None
) -> None:
    """A hand-written schema must fit the function it calls: ``fn`` receives the
    validated arguments as keywords, so a declared property ``fn`` cannot take, or a
    parameter of ``fn`` without a default that the schema never declares, fails every
    call at dispatch time. Said here, when the tool is built, instead."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: nothing to compare
        return
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    properties = parameters.get("properties")
    declared = [*(properties or {}), *(parameters.get("required") or ())]
    taken = {p.name for p in params if p.kind in keyword}
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        unknown = sorted({d for d in declared if d not in taken})
        if unknown:
            raise ValueError(
                f"tool {name!r}: the schema declares {', '.join(map(repr, unknown))} but the "
                f"function takes no such parameter (it takes: {', '.join(sorted(taken)) or 'none'})"
                "; rename the property, add the parameter, or accept **kwargs"
            )
    needed = [
        p.name
        for p in params
        if p.default is inspect.Parameter.empty
        and p.name != context_param
        and (p.kind in keyword or p.kind is inspect.Parameter.POSITIONAL_ONLY)
    ]
    missing = [n for n in needed if n not in declared]
    if missing and isinstance(properties, Mapping):
        raise ValueError(
            f"tool {name!r}: the function requires {', '.join(map(repr, missing))} but the "
            "schema does not declare it; add it to the schema's properties or give the "
            "parameter a default"
        )


def _is_generator_callable(fn: Callable[..., Any]) -> bool:
    while hasattr(fn, "func") and not inspect.isfunction(fn):  # functools.partial
        fn = fn.func
    fn = inspect.unwrap(fn)
    return inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)


def _is_async_callable(fn: Callable[..., Any]) -> bool:
    while hasattr(fn, "func") and not inspect.isfunction(fn):  # functools.partial
        fn = fn.func
    return asyncio.iscoroutinefunction(fn) or asyncio.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )
