"""What the two OpenAI adapters share: the SDK client, keyword splitting, settings.

The ``openai`` package is imported only inside functions (it is an optional extra).
Clients are built with ``max_retries=0`` (the loop owns retries, see ``docs/providers.md``)
and the bounded HTTP client of :mod:`.transport` (call limits, size cap, no ``__del__``
scheduling ``aclose`` on a foreign event loop).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loopwright.core.errors import ConfigError
from loopwright.providers.registry import PLACEHOLDER_KEY
from loopwright.providers.transport import CallLimits, bounded_client


@dataclass(frozen=True, slots=True)
class ClientConfig:
    base_url: str | None
    api_key: str | None
    limits: CallLimits
    headers: Mapping[str, str]


def make_client(config: ClientConfig) -> Any:
    """An ``AsyncOpenAI`` client for ``config``, with the SDK's own retries off."""
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "the openai adapters need the openai SDK: pip install 'loopwright[openai]'"
        ) from exc
    return openai.AsyncOpenAI(
        base_url=config.base_url,
        api_key=config.api_key or PLACEHOLDER_KEY,
        max_retries=0,
        timeout=config.limits.read_timeout,
        default_headers=dict(config.headers) or None,
        http_client=bounded_client(openai.DefaultAsyncHttpxClient, config.limits),
    )


_KNOWN: dict[str, frozenset[str]] = {}


def known_params(method: Callable[..., Any]) -> frozenset[str]:
    """Keyword names a SDK ``create`` method accepts (cached per method)."""
    key = f"{method.__module__}.{method.__qualname__}"
    known = _KNOWN.get(key)
    if known is None:
        params = inspect.signature(method).parameters
        known = frozenset(p for p in params if p not in ("self", "extra_body", "extra_headers"))
        _KNOWN[key] = known
    return known


def split_payload(payload: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """SDK keyword arguments for ``payload``: known keys as keywords, the rest (vendor
    extensions, ``settings.extra``) in ``extra_body`` so the wire body equals ``payload``."""
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in payload.items():
        (kwargs if key in known else extra)[key] = value
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def effort(reasoning: str | int | None) -> str | None:
    """A neutral reasoning setting as an OpenAI effort level (token budgets bucketed)."""
    if reasoning is None:
        return None
    if isinstance(reasoning, int):
        if reasoning <= 0:
            return "minimal"
        return "low" if reasoning <= 2048 else "medium" if reasoning <= 8192 else "high"
    return reasoning


async def single(value: Any) -> AsyncIterator[Any]:
    """A non-streamed response as a one-chunk stream (one decoding path)."""
    yield value


def dump(obj: Any) -> Any:
    """A JSON-able view of an SDK object for ``on_payload("response", ...)``."""
    to_dict = getattr(obj, "model_dump", None)
    if to_dict is not None:
        return to_dict(mode="json", exclude_unset=True)
    return obj


def field(obj: Any, name: str) -> Any:
    """``obj.name`` for SDK models (vendor extra fields included) or dicts; ``None`` when
    absent. Hot path of decoding: pydantic v2 keeps fields in ``__dict__`` and extras in
    ``__pydantic_extra__``, read directly to avoid ``__getattr__`` misses."""
    if obj is None:
        return None
    if type(obj) is dict:
        return obj.get(name)
    attrs = getattr(obj, "__dict__", None)
    if attrs is not None:
        value = attrs.get(name)
        if value is None:
            extra = getattr(obj, "__pydantic_extra__", None)
            if extra:
                value = extra.get(name)
        return value
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def get(obj: Any, name: str) -> Any:
    """A declared field of an SDK model (or a dict key); faster than :func:`field`."""
    if type(obj) is dict:
        return obj.get(name)
    return getattr(obj, name, None)


def extra(obj: Any, name: str) -> Any:
    """A vendor extension field (not declared by the SDK model), e.g. ``reasoning_content``."""
    if type(obj) is dict:
        return obj.get(name)
    extras = getattr(obj, "__pydantic_extra__", None)
    if extras is None:  # not a pydantic model allowing extras: plain attribute lookup
        return getattr(obj, name, None)
    return extras.get(name)
