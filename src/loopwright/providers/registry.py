"""Model strings -> adapters. Vendors are data, not code.

``resolve_model("deepseek:deepseek-chat")`` looks the prefix up in :data:`VENDORS`, finds
the wire protocol it speaks, the default base URL, the environment variable holding the
key and the vendor's quirk flags, and builds the adapter for that protocol. Adding an
OpenAI-compatible vendor is one :class:`Vendor` entry (see ``docs/providers.md``).

Adapter constructor convention (every protocol module follows it)::

    Adapter(model: str, *, base_url: str | None, api_key: str | None,
            on_payload: PayloadHook | None, vendor: Vendor, call_limits: CallLimits | None)

Adapters make one request per ``stream()`` (SDK retries off); the loop owns retries.

Adapters are imported lazily so ``import loopwright`` never pulls a vendor SDK.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias
from urllib.parse import parse_qsl, urlsplit

from loopwright.core.errors import ConfigError
from loopwright.core.protocols import Model, PayloadHook
from loopwright.providers.transport import DEFAULT_CALL_LIMITS, OPTION_NAMES, CallLimits

Protocol: TypeAlias = Literal["openai-chat", "openai-responses", "anthropic", "gemini", "bedrock"]

# protocol -> (module, class). Modules are imported only when a model is resolved.
ADAPTERS: Mapping[str, tuple[str, str]] = {
    "openai-chat": ("loopwright.providers.openai_chat", "OpenAIChatModel"),
    "openai-responses": ("loopwright.providers.openai_responses", "OpenAIResponsesModel"),
    "anthropic": ("loopwright.providers.anthropic", "AnthropicModel"),
    "gemini": ("loopwright.providers.gemini", "GeminiModel"),
    "bedrock": ("loopwright.providers.bedrock", "BedrockModel"),
}

LOCAL_DEFAULT = "gemma-3-270m"
"""``local`` / ``local:`` with no name runs the embedded default model."""


@dataclass(frozen=True, slots=True)
class Vendor:
    """One vendor's wire facts.

    * ``protocol``: which adapter speaks to it.
    * ``base_url``: default endpoint (``None``: the SDK's own default).
    * ``key_env``: environment variables tried in order for the API key.
    * ``key_required``: ``False`` for local servers (ollama, vLLM, llama.cpp ...);
      a placeholder key is sent because the OpenAI SDK insists on one.
    * ``max_tokens_field``: ``"max_completion_tokens"`` (OpenAI, Groq) or ``"max_tokens"``.
    * ``system_role``: ``"system"`` or ``"developer"`` for the system prompt message.
    * ``reasoning_field``: the assistant-message field carrying reasoning text in Chat
      Completions (``"reasoning_content"``: DeepSeek, vLLM, llama.cpp; ``"reasoning"``:
      OpenRouter, Ollama, Groq). Responses are parsed leniently (both are read); this
      field decides what is *sent back* when echoing reasoning.
    * ``supports_strict``: accepts ``strict: true`` on function tools.
    * ``native_output``: takes a JSON schema for the answer (Chat Completions
      ``response_format: {type: json_schema}``; the Responses API's ``text.format``), so
      an agent's ``output_type`` is asked for natively (docs/loop.md).
    * ``supports_reasoning_effort``: accepts ``reasoning_effort`` / ``reasoning.effort``.
    * ``stream_usage``: accepts ``stream_options: {"include_usage": true}``.
    * ``extra_headers``: sent with every request.
    """

    name: str
    protocol: Protocol
    base_url: str | None = None
    key_env: tuple[str, ...] = ()
    key_required: bool = True
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    system_role: Literal["system", "developer"] = "system"
    reasoning_field: str | None = "reasoning_content"
    supports_strict: bool = True
    native_output: bool = True
    supports_reasoning_effort: bool = True
    stream_usage: bool = True
    extra_headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def key_hint(self) -> str:
        return " or ".join(self.key_env) if self.key_env else "(no key variable)"


def _compat(name: str, base_url: str, key_env: str | None, **flags: object) -> Vendor:
    """An OpenAI-compatible Chat Completions vendor."""
    keys = (key_env,) if key_env else ()
    return Vendor(name, "openai-chat", base_url, keys, **flags)  # type: ignore[arg-type]


_OPENAI_URL = "https://api.openai.com/v1"

VENDORS: dict[str, Vendor] = {
    v.name: v
    for v in (
        Vendor(
            "openai",
            "openai-chat",
            _OPENAI_URL,
            ("OPENAI_API_KEY",),
            max_tokens_field="max_completion_tokens",
            reasoning_field=None,
        ),
        Vendor(
            "openai-responses",
            "openai-responses",
            _OPENAI_URL,
            ("OPENAI_API_KEY",),
            max_tokens_field="max_completion_tokens",
            reasoning_field=None,
        ),
        Vendor("anthropic", "anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",)),
        Vendor(
            "gemini",
            "gemini",
            "https://generativelanguage.googleapis.com",
            ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        ),
        # Bedrock authenticates with AWS credentials (env, profile, role) through boto3,
        # or a bearer token; the adapter resolves them, so no key is required here.
        Vendor(
            "bedrock",
            "bedrock",
            None,
            ("AWS_BEARER_TOKEN_BEDROCK",),
            key_required=False,
        ),
        # DeepSeek's response_format takes only {"type": "json_object"} (no schema)
        _compat(
            "deepseek",
            "https://api.deepseek.com/v1",
            "DEEPSEEK_API_KEY",
            supports_strict=False,
            native_output=False,
        ),
        # Groq, Together and OpenRouter take a json_schema response_format for some of
        # their models only (others answer 400): the final-answer tool works with all
        _compat(
            "groq",
            "https://api.groq.com/openai/v1",
            "GROQ_API_KEY",
            max_tokens_field="max_completion_tokens",
            reasoning_field="reasoning",
            native_output=False,
        ),
        _compat("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY", native_output=False),
        _compat(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
            reasoning_field="reasoning",
            native_output=False,
        ),
        _compat(
            "mistral",
            "https://api.mistral.ai/v1",
            "MISTRAL_API_KEY",
            supports_strict=False,
            stream_usage=False,
            supports_reasoning_effort=False,
        ),
        _compat("xai", "https://api.x.ai/v1", "XAI_API_KEY"),
        _compat("fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
        _compat("cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
        # Local servers: no key needed.
        _compat(
            "ollama",
            "http://127.0.0.1:11434/v1",
            "OLLAMA_API_KEY",
            key_required=False,
            reasoning_field="reasoning",
        ),
        _compat("vllm", "http://127.0.0.1:8000/v1", "VLLM_API_KEY", key_required=False),
        _compat("llamacpp", "http://127.0.0.1:8080/v1", "LLAMACPP_API_KEY", key_required=False),
        _compat("lmstudio", "http://127.0.0.1:1234/v1", "LMSTUDIO_API_KEY", key_required=False),
    )
}

# "openai:" pointed at a non-OpenAI server (llama.cpp, a proxy, ...) speaks the generic
# OpenAI-compatible dialect: ``max_tokens`` is the field every server understands, and
# reasoning is read from ``reasoning_content`` (vLLM/llama.cpp/DeepSeek convention). Not
# every such server takes a json_schema response_format (llama-cpp-python's server takes
# only json_object), so structured output goes through the final-answer tool.
GENERIC_OPENAI_COMPAT = replace(
    VENDORS["openai"],
    name="openai-compatible",
    max_tokens_field="max_tokens",
    reasoning_field="reasoning_content",
    native_output=False,
)

PLACEHOLDER_KEY = "not-needed"
"""Sent to keyless local servers: the OpenAI SDK refuses to build a client without a key."""


def valid_prefixes() -> tuple[str, ...]:
    return (*VENDORS, "local")


def _is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in {"localhost", "127.0.0.1", "::1"} or host.startswith("127.")


def _is_official(vendor: Vendor, base_url: str | None) -> bool:
    if base_url is None or vendor.base_url is None:
        return True
    return urlsplit(base_url).hostname == urlsplit(vendor.base_url).hostname


def resolve_key(vendor: Vendor, api_key: str | None, base_url: str | None) -> str | None:
    """The API key for ``vendor``: explicit > environment > placeholder (keyless servers).

    Raises :class:`ConfigError` naming the environment variable when a key is required
    and missing. A loopback ``base_url`` never requires a key (local servers, test fakes).
    A key of only whitespace counts as missing (an ``export OPENAI_API_KEY=" "`` would
    otherwise be sent and fail as a 401 far from its cause), and surrounding whitespace
    (a key read from a file with its newline) is stripped: it is never part of a key.
    """
    if api_key and api_key.strip():
        return api_key.strip()
    blank: list[str] = []
    for var in vendor.key_env:
        value = os.environ.get(var)
        if value and value.strip():
            return value.strip()
        if value is not None:
            blank.append(var)
    keyless = not vendor.key_required or (base_url is not None and _is_loopback(base_url))
    if keyless:
        return PLACEHOLDER_KEY if vendor.protocol in ("openai-chat", "openai-responses") else None
    found = f" ({' and '.join(blank)} {'is' if len(blank) == 1 else 'are'} set but blank)"
    raise ConfigError(
        f"missing API key for {vendor.name}: set the {vendor.key_hint} environment variable"
        # the CLI and Agent("vendor:model") read keys only from the environment: say where
        # api_key= is taken, not a bare "(or pass api_key=...)" they have no place for
        f"{found if blank else ''} (in Python, resolve_model(..., api_key=...) also takes"
        " one)"
    )


def split_spec(spec: str) -> tuple[str, str]:
    """``"ollama:llama3:8b"`` -> ``("ollama", "llama3:8b")`` (split on the first colon)."""
    prefix, sep, name = spec.strip().partition(":")
    prefix = prefix.strip().lower()
    if prefix == "local":
        return prefix, name.strip() or LOCAL_DEFAULT
    valid = ", ".join(valid_prefixes())
    if not sep:
        raise ConfigError(
            f"model string {spec!r} needs a provider prefix, e.g. openai:{spec.strip()};"
            f" valid prefixes: {valid}"
        )
    if prefix not in VENDORS:
        raise ConfigError(f"unknown model prefix {prefix!r} in {spec!r}; valid prefixes: {valid}")
    if not name.strip():
        raise ConfigError(f"model string {spec!r} needs a model name after the colon")
    return prefix, name.strip()


def _load(module: str, cls: str) -> type:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"cannot load {module} ({exc}); install the provider extra, e.g."
            " pip install 'loopwright[providers]'"
        ) from exc
    loaded: type = getattr(mod, cls)
    return loaded


# The SDK each protocol's adapter imports on its first call (imported late: loading one
# takes up to a second) and the extra that installs it.
_SDKS: Mapping[Protocol, tuple[str, str]] = {
    "openai-chat": ("openai", "openai"),
    "openai-responses": ("openai", "openai"),
    "anthropic": ("anthropic", "anthropic"),
    "gemini": ("google.genai", "gemini"),
    "bedrock": ("boto3", "bedrock"),
}


def _check_sdk(spec: str, vendor: Vendor) -> None:
    """A missing vendor SDK fails when the model is built, naming the extra to install
    (found without importing it); at the first call it failed only after every retry,
    as a ``malformed_response``."""
    module, extra = _SDKS[vendor.protocol]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # its parent package (google) is missing too
        found = False
    if not found:
        raise ConfigError(
            f"model {spec!r} needs the {module} package, which is not installed: "
            f"pip install 'loopwright[{extra}]'"
        )


def vendor_for(prefix: str, base_url: str | None) -> Vendor:
    """The vendor entry for ``prefix``, switched to the generic OpenAI-compatible dialect
    when ``openai:`` is pointed at another server."""
    vendor = VENDORS[prefix]
    if prefix == "openai" and not _is_official(vendor, base_url):
        return GENERIC_OPENAI_COMPAT
    return vendor


def split_options(spec: str) -> tuple[str, dict[str, str]]:
    """``"openai:gpt-4o?total_timeout=60"`` -> ``("openai:gpt-4o", {"total_timeout": "60"})``.

    Options are the call limits of :data:`~loopwright.providers.transport.OPTION_NAMES`;
    a malformed query raises :class:`ConfigError`."""
    base, sep, query = spec.partition("?")
    if not sep:
        return spec, {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise ConfigError(
            f"cannot read the options in {spec!r}; write them as ?name=value&name=value"
            f" with names from: {', '.join(OPTION_NAMES)}"
        ) from None
    return base, dict(pairs)


# The path each protocol's client appends to its base URL. A user who pastes the full
# endpoint URL from a vendor's documentation would get it twice (a 404 after every
# retry), so such a URL is refused with the base URL to use instead.
_ENDPOINT_PATHS: Mapping[Protocol, re.Pattern[str]] = {
    "openai-chat": re.compile(r"/(?:chat/completions|completions|responses)$"),
    "openai-responses": re.compile(r"/(?:responses|chat/completions|completions)$"),
    "anthropic": re.compile(r"/v1/(?:messages(?:/count_tokens)?|complete)$"),
    # the google-genai client adds the REST version itself (GeminiOptions.api_version)
    "gemini": re.compile(r"/v1(?:beta|alpha)?(?:/models(?:/[^/]*)?)?$"),
    "bedrock": re.compile(
        r"/model/[^/]+/(?:converse|converse-stream|invoke|invoke-with-response-stream)$"
    ),
}


def _check_endpoint_path(url: str, vendor: Vendor) -> None:
    """Refuse a base URL that ends in the path the client adds itself, naming the base
    URL to use (``.../v1/chat/completions`` -> ``.../v1``)."""
    pattern = _ENDPOINT_PATHS.get(vendor.protocol)
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    found = pattern.search(path) if pattern is not None else None
    if found is None:
        return
    base = parts._replace(path=path[: found.start()], query="", fragment="").geturl()
    shown = parts._replace(query="", fragment="").geturl()  # a pasted ?key=... stays out
    raise ConfigError(
        f"--base-url / base_url {shown!r} is a full endpoint URL: the {vendor.name} client "
        f"adds {found.group(0)!r} itself; give the base URL instead: --base-url {base}"
    )


def _check_base_url(url: str) -> None:
    """An endpoint that is no http(s) URL fails now, as a :class:`ConfigError`, not
    after every retry of every request as a connection error."""
    try:
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname
        _ = parts.port  # "localhost:abc" or a port > 65535 raises here, as it would per call
    except (TypeError, ValueError, AttributeError):  # an unclosed IPv6 bracket, not a str
        scheme, host = "", None
    if scheme not in ("http", "https") or not host:
        raise ConfigError(
            f"--base-url / base_url {url!r} is not an http(s) URL; give the endpoint, "
            "e.g. http://127.0.0.1:8080/v1"
        )


def resolve_model(
    spec: str,
    *,
    base_url: str | None = None,
    on_payload: PayloadHook | None = None,
    api_key: str | None = None,
    call_limits: CallLimits | None = None,
) -> Model:
    """Build the model adapter named by ``spec`` (``"prefix:model"``, optionally followed by
    ``?option=value&...`` call-limit options, see :mod:`loopwright.providers.transport`).

    ``base_url`` overrides the vendor's endpoint (any protocol); ``api_key`` overrides the
    environment; ``call_limits`` replaces the default deadlines and size cap (options in the
    string then adjust it). Unknown prefixes or options and missing keys raise
    :class:`ConfigError` (one line).
    """
    spec, options = split_options(spec)
    prefix, name = split_spec(spec)
    if prefix == "local" and options:
        raise ConfigError(
            f"call-limit options ({', '.join(options)}) apply to network providers, not to"
            f" the in-process model {spec!r}"
        )
    if prefix == "local":
        if base_url is not None:
            raise ConfigError(
                f"--base-url / base_url does not apply to {spec!r} (an in-process model);"
                " use openai:MODEL or llamacpp:MODEL for a llama.cpp server"
            )
        cls = _load("loopwright.providers.local", "LocalModel")
        model: Model = cls(name)
        return model
    if base_url is not None:
        _check_base_url(base_url)
    vendor = vendor_for(prefix, base_url)
    if base_url is not None:
        _check_endpoint_path(base_url, vendor)
    _check_sdk(spec, vendor)
    key = resolve_key(vendor, api_key, base_url)
    module, cls_name = ADAPTERS[vendor.protocol]
    cls = _load(module, cls_name)
    model = cls(
        name,
        base_url=base_url or vendor.base_url,
        api_key=key,
        on_payload=on_payload,
        vendor=vendor,
        call_limits=(call_limits or DEFAULT_CALL_LIMITS).with_options(options),
    )
    return model
