"""Model strings, the vendor table and API-key resolution."""

from __future__ import annotations

import sys

import pytest

from loopwright.core.errors import ConfigError
from loopwright.providers import registry
from loopwright.providers.openai_chat import OpenAIChatModel
from loopwright.providers.openai_responses import OpenAIResponsesModel
from loopwright.providers.registry import VENDORS, resolve_model, split_spec


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for vendor in VENDORS.values():
        for var in vendor.key_env:
            monkeypatch.delenv(var, raising=False)


def test_unknown_prefix_lists_valid_ones():
    with pytest.raises(ConfigError) as info:
        resolve_model("nope:model")
    message = str(info.value)
    assert "'nope'" in message and "openai" in message and "local" in message
    assert "\n" not in message


def test_missing_prefix_and_missing_name():
    with pytest.raises(ConfigError, match="needs a provider prefix"):
        resolve_model("gpt-4o")
    with pytest.raises(ConfigError, match="needs a model name"):
        resolve_model("openai:")


@pytest.mark.parametrize("prefix", ["openai", "deepseek", "groq", "anthropic", "gemini"])
def test_missing_key_names_the_variable(prefix):
    with pytest.raises(ConfigError) as info:
        resolve_model(f"{prefix}:m")
    assert VENDORS[prefix].key_env[0] in str(info.value)
    # "(or pass api_key=...)" named no place a CLI or Agent("vendor:model") user has
    assert "resolve_model(..., api_key=...)" in str(info.value)


def test_vendor_is_data(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-d")
    model = resolve_model("deepseek:deepseek-reasoner")
    assert isinstance(model, OpenAIChatModel)
    assert model.name == "deepseek:deepseek-reasoner"
    assert model.vendor.base_url == "https://api.deepseek.com/v1"
    assert model.vendor.max_tokens_field == "max_tokens"


def test_openai_flags_and_responses(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    chat = resolve_model("openai:gpt-4o")
    assert (
        isinstance(chat, OpenAIChatModel)
        and chat.vendor.max_tokens_field == "max_completion_tokens"
    )
    assert isinstance(resolve_model("openai-responses:gpt-5"), OpenAIResponsesModel)


def test_local_servers_need_no_key():
    for prefix in ("ollama", "vllm", "llamacpp", "lmstudio"):
        model = resolve_model(f"{prefix}:llama3:8b")
        assert isinstance(model, OpenAIChatModel)
        assert model.model == "llama3:8b"  # split on the first colon only


def test_openai_prefix_on_another_server_speaks_generic_dialect():
    model = resolve_model("openai:gemma", base_url="http://127.0.0.1:9999/v1")
    assert isinstance(model, OpenAIChatModel)
    assert model.vendor.name == "openai-compatible"
    assert model.vendor.max_tokens_field == "max_tokens"


def test_remote_base_url_still_needs_key():
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        resolve_model("openai:x", base_url="https://proxy.example.com/v1")
    assert isinstance(
        resolve_model("openai:x", base_url="https://proxy.example.com/v1", api_key="k"),
        OpenAIChatModel,
    )


def test_local_prefix_resolves_lazily(monkeypatch):
    built: list[str] = []

    class FakeLocal:
        def __init__(self, name: str) -> None:
            built.append(name)

    monkeypatch.setattr(registry, "_load", lambda module, cls: FakeLocal)
    resolve_model("local")
    resolve_model("local:/models/x.gguf")
    assert built == [registry.LOCAL_DEFAULT, "/models/x.gguf"]
    with pytest.raises(ConfigError, match="does not apply"):
        resolve_model("local", base_url="http://127.0.0.1:1/v1")


def test_split_spec():
    assert split_spec(" Ollama:qwen3:4b ") == ("ollama", "qwen3:4b")
    assert split_spec("local:") == ("local", registry.LOCAL_DEFAULT)


def test_every_vendor_entry_is_consistent():
    for name, vendor in VENDORS.items():
        assert vendor.name == name
        assert vendor.protocol in registry.ADAPTERS
        assert vendor.key_env or not vendor.key_required


@pytest.mark.parametrize(
    "url",
    [
        "not a url",
        "127.0.0.1:8080/v1",
        "ftp://host/v1",
        "http://[::1",
        "http://localhost:abc/v1",  # was retried 4 times as a malformed response
        "http://localhost:99999/v1",
    ],
)
def test_base_url_that_is_not_an_http_url_is_refused_at_once(url):
    with pytest.raises(ConfigError, match="is not an http\\(s\\) URL"):
        resolve_model("openai:gpt-4o", base_url=url, api_key="k")


@pytest.mark.parametrize(
    ("spec", "url", "base"),
    [
        ("openai:gpt-4o", "http://127.0.0.1:8080/v1/chat/completions", "http://127.0.0.1:8080/v1"),
        (
            "openai:gpt-4o",
            "https://api.openai.com/v1/chat/completions/",
            "https://api.openai.com/v1",
        ),
        ("ollama:qwen3", "http://127.0.0.1:11434/v1/chat/completions", "http://127.0.0.1:11434/v1"),
        ("openai-responses:o4", "http://127.0.0.1:9/v1/responses", "http://127.0.0.1:9/v1"),
        (
            "anthropic:claude-x",
            "https://api.anthropic.com/v1/messages",
            "https://api.anthropic.com",
        ),
        (
            "gemini:gemini-2.0-flash",
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash"
            ":generateContent?key=SECRET",
            "https://generativelanguage.googleapis.com",
        ),
        (
            "bedrock:anthropic.claude",
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude/converse",
            "https://bedrock-runtime.us-east-1.amazonaws.com",
        ),
    ],
)
def test_a_pasted_endpoint_url_names_the_base_url_to_use(spec, url, base):
    """The client appends the endpoint path itself: a pasted full URL got it twice and
    failed with a 404 after every retry, with no hint."""
    with pytest.raises(ConfigError, match="is a full endpoint URL") as info:
        resolve_model(spec, base_url=url, api_key="k")
    assert str(info.value).endswith(f"--base-url {base}")
    assert "SECRET" not in str(info.value)


def test_a_base_url_is_accepted():
    assert resolve_model("openai:gpt-4o", base_url="http://127.0.0.1:8080/v1", api_key="k")


@pytest.mark.parametrize("blank", ["  ", "\t\n", ""])
def test_a_blank_key_in_the_environment_is_missing(monkeypatch, blank):
    monkeypatch.setenv("OPENAI_API_KEY", blank)
    with pytest.raises(ConfigError) as info:
        resolve_model("openai:gpt-4o")
    assert "OPENAI_API_KEY" in str(info.value) and "blank" in str(info.value)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o", api_key="   ")


def test_a_blank_first_variable_falls_back_to_the_next(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", " ")
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key\n")
    vendor = VENDORS["gemini"]
    assert registry.resolve_key(vendor, None, None) == "g-key"
    assert registry.resolve_key(vendor, " sk-x ", None) == "sk-x"


@pytest.mark.parametrize(
    ("spec", "missing", "extra"),
    [
        ("openai:gpt-4o", "openai", "openai"),
        ("groq:llama-3.3-70b", "openai", "openai"),
        ("openai-responses:gpt-4o", "openai", "openai"),
        ("anthropic:claude-sonnet-4-5", "anthropic", "anthropic"),
        ("gemini:gemini-2.0-flash", "google.genai", "gemini"),
        ("bedrock:anthropic.claude-3-haiku", "boto3", "bedrock"),
    ],
)
def test_a_missing_sdk_names_the_extra_when_the_model_is_built(monkeypatch, spec, missing, extra):
    # it surfaced at the first call, after every retry, as "malformed_response: anthropic:
    # No module named 'anthropic'"
    monkeypatch.setitem(sys.modules, missing, None)  # as if not installed
    with pytest.raises(ConfigError) as info:
        resolve_model(spec)
    assert str(info.value).endswith(f"is not installed: pip install 'loopwright[{extra}]'")
    assert repr(spec) in str(info.value)
