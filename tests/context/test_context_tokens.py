"""Token counting: exact BPE offline, model tokenizer, labelled CJK-aware estimate, cache."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.context import (
    CachedCounter,
    bpe_counter,
    counter_for,
    encoding_for_model,
    estimate_counter,
    estimate_tokens,
    tokenizer_counter,
    trim_text,
)
from loopwright.context.tokens import (
    MESSAGE_OVERHEAD,
    UNKNOWN_IMAGE_SIZE,
    ImageRule,
    image_rule_for,
    image_size,
    image_tokens,
)
from loopwright.core import Message, ToolCallPart, ToolResultPart
from loopwright.core.messages import MediaPart

bpe_openai = pytest.importorskip("bpe_openai")


def test_bpe_counts_match_the_reference_tokenizer_exactly() -> None:
    reference = bpe_openai.get_encoding("o200k_base")
    counter = bpe_counter("o200k_base")
    for text in [
        "hello world",
        "上下文窗口有上限，而每一轮循环都会增加消息历史。",
        '{"a": [1, 2, 3]}',
    ]:
        assert counter.count_text(text) == len(reference.encode(text))
    assert counter.exact and counter.label == "bpe:o200k_base"


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("openai:gpt-4o", "o200k_base"),
        ("openai:gpt-4o-mini", "o200k_base"),
        ("openai-responses:o3-mini", "o200k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("openai:gpt-3.5-turbo", "cl100k_base"),
        ("anthropic:claude-3-5-sonnet", None),
        ("local:gemma-3-270m", None),
    ],
)
def test_encoding_for_model(model: str, encoding: str | None) -> None:
    assert encoding_for_model(model) == encoding


def test_counter_for_prefers_explicit_tokenizer_then_model_method_then_bpe() -> None:
    assert counter_for("openai:gpt-4o").label == "bpe:o200k_base"
    est = counter_for("anthropic:claude-3-5-haiku")
    assert not est.exact and est.label.startswith("estimate")

    class Local:
        name = "local:gemma"

        def count_tokens(self, text: str) -> int:
            return len(text.split())

    c = counter_for(Local())
    assert c.exact and c.label == "tokenizer:local:gemma"
    assert c.count_text("a b c") == 3
    assert counter_for("anything", tokenize=lambda s: 7).count_text("x") == 7


def test_estimate_handles_cjk_about_one_token_per_character() -> None:
    zh = "上下文窗口有上限而每一轮循环都会增加消息历史" * 10
    assert estimate_tokens(zh) == len(zh)  # chars/4 would say a quarter of that
    exact = bpe_counter("cl100k_base").count_text(zh)
    assert 0.7 * exact <= estimate_tokens(zh) <= 1.5 * exact


@pytest.mark.parametrize(
    "text",
    [
        "The quick brown fox jumps over the lazy dog. " * 30,
        json.dumps([{"id": i, "name": f"item {i}", "price": i * 1.5} for i in range(40)]),
        "def f(x):\n    return x * 2  # double\n" * 20,
        "Это русский текст для проверки. " * 20,
    ],
)
def test_estimate_is_within_a_labelled_error_of_openai_vocabularies(text: str) -> None:
    o200k = bpe_counter("o200k_base").count_text(text)
    cl100k = bpe_counter("cl100k_base").count_text(text)
    assert 0.8 * min(o200k, cl100k) <= estimate_tokens(text) <= 1.5 * max(o200k, cl100k)


def test_message_counts_are_cached_by_identity_and_never_recounted() -> None:
    calls: list[str] = []

    def tokenize(text: str) -> int:
        calls.append(text)
        return len(text)

    counter = tokenizer_counter(tokenize, "fake")
    msg = Message("assistant", (ToolCallPart("c1", "search", {"q": "x"}, '{"q": "x"}'),))
    first = counter.count_message(msg)
    n_calls = len(calls)
    for _ in range(100):
        assert counter.count_message(msg) == first
    assert len(calls) == n_calls and counter.hits == 100
    # an equal but distinct object is counted again (identity, not equality)
    twin = Message("assistant", msg.parts)
    assert counter.count_message(twin) == first and counter.misses == 2


def test_cache_is_bounded() -> None:
    counter = CachedCounter(len, "len", cache_size=10)
    msgs = [Message.user(f"m{i}") for i in range(50)]
    assert counter.count_messages(msgs) == sum(MESSAGE_OVERHEAD + len(m.text) for m in msgs)
    assert len(counter._cache) == 10


def test_tool_parts_are_counted() -> None:
    counter = CachedCounter(len, "len")
    result = Message.tool_results([ToolResultPart("c1", "search", "x" * 100)])
    assert counter.count_message(result) > 100


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=3000), limit=st.integers(1, 400))
def test_trim_text_always_fits_its_limit(text: str, limit: int) -> None:
    counter = estimate_counter()
    out = trim_text(text, limit, counter)
    assert counter.count_text(out) <= max(limit, 16)
    if counter.count_text(text) <= max(limit, 16):
        assert out is text


@settings(max_examples=80, deadline=None)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=300),
        lambda inner: (
            st.lists(inner, max_size=40) | st.dictionaries(st.text(max_size=8), inner, max_size=30)
        ),
        max_leaves=200,
    ),
    limit=st.integers(40, 400),
)
def test_trimmed_json_stays_valid_json(value: object, limit: int) -> None:
    counter = estimate_counter()
    text = json.dumps(value)
    out = trim_text(text, limit, counter)
    assert counter.count_text(out) <= limit
    if out.startswith(("{", "[")) and "loopwright trimmed" not in out:
        json.loads(out)  # JSON-aware path keeps it parseable


def test_large_json_array_keeps_first_items_and_says_how_many_were_omitted() -> None:
    counter = bpe_counter()
    rows = [{"id": i, "name": f"row {i}"} for i in range(1000)]
    out = trim_text(json.dumps(rows), 300, counter)
    data = json.loads(out)
    assert data[0] == {"id": 0, "name": "row 0"}
    assert "more items omitted" in data[-1]
    assert counter.count_text(out) <= 300


def test_text_keeps_head_and_tail_around_a_marker() -> None:
    counter = bpe_counter()
    log = "\n".join(f"line {i}: ok" for i in range(2000)) + "\nTraceback: boom"
    out = trim_text(log, 200, counter)
    assert out.startswith("line 0: ok") and out.endswith("Traceback: boom")
    assert "loopwright trimmed" in out and counter.count_text(out) <= 200


# -- images in tool results ------------------------------------------------------------


def _png(width: int, height: int) -> MediaPart:
    ihdr = struct.pack(">II", width, height) + b"\x08\x06\x00\x00\x00"
    raw = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\x00" * 4
    return MediaPart("image/png", base64.b64encode(raw + b"\x00" * 64).decode())


def _jpeg(width: int, height: int) -> MediaPart:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    sof0 = b"\xff\xc0" + struct.pack(">HBHH", 17, 8, height, width) + b"\x03" + b"\x00" * 9
    return MediaPart("image/jpeg", base64.b64encode(b"\xff\xd8" + app0 + sof0).decode())


def _gif(width: int, height: int) -> MediaPart:
    raw = b"GIF89a" + struct.pack("<HH", width, height) + b"\x00" * 8
    return MediaPart("image/gif", base64.b64encode(raw).decode())


def _webp(width: int, height: int) -> MediaPart:
    body = b"VP8X" + struct.pack("<I", 10) + b"\x00" * 4
    body += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    raw = b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body
    return MediaPart("image/webp", base64.b64encode(raw).decode())


@pytest.mark.parametrize("make", [_png, _jpeg, _gif, _webp])
def test_image_size_is_read_from_the_header(make: Callable[[int, int], MediaPart]) -> None:
    assert image_size(make(1280, 720)) == (1280, 720)


def test_an_unreadable_image_is_costed_at_the_documented_default_size() -> None:
    junk = MediaPart("image/x-unknown", base64.b64encode(b"not an image").decode())
    assert image_size(junk) is None
    assert image_tokens(junk, "openai") == image_tokens(_png(*UNKNOWN_IMAGE_SIZE), "openai")


@pytest.mark.parametrize(
    ("size", "rule", "tokens"),
    [
        ((1024, 1024), "openai", 765),  # shorter side to 768: 2 x 2 tiles
        ((2048, 4096), "openai", 1105),  # 1024 x 2048, then 768 x 1536: 2 x 3 tiles
        ((300, 200), "openai", 255),
        ((1000, 1000), "anthropic", 1334),  # 1,000,000 / 750
        ((4000, 3000), "anthropic", 1600),  # scaled down to the ~1,600 ceiling
        ((300, 300), "gemini", 258),
        ((1000, 700), "gemini", 516),  # two 768-pixel tiles
    ],
)
def test_image_tokens_follow_each_providers_published_rule(
    size: tuple[int, int], rule: ImageRule, tokens: int
) -> None:
    assert image_tokens(_png(*size), rule) == tokens


def test_unknown_provider_counts_the_largest_rule() -> None:
    image = _png(1000, 1000)
    assert image_tokens(image, "any") == max(
        image_tokens(image, r) for r in ("openai", "anthropic", "gemini")
    )
    assert image_rule_for("anthropic:claude-sonnet-4-5") == "anthropic"
    assert image_rule_for("openai:gpt-4o") == "openai"
    assert image_rule_for("gemini:gemini-2.5-flash") == "gemini"
    assert image_rule_for("ollama:llava") == "any"


def test_images_in_tool_results_count_towards_the_message() -> None:
    counter = counter_for("anthropic:claude-sonnet-4-5")
    text_only = Message.tool_results([ToolResultPart("c1", "shot", "[image 1]")])
    with_image = Message.tool_results(
        [ToolResultPart("c1", "shot", "[image 1]", media=(_png(1000, 1000),))]
    )
    assert counter.count_message(with_image) - counter.count_message(text_only) == 1334
