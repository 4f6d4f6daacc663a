"""Token counting: exact where we can, a labelled estimate where we cannot, cached.

Three sources, chosen by :func:`counter_for`:

* **Exact BPE** for OpenAI-family models, offline, through ``bpe-openai`` (it ships
  ``o200k_base`` and ``cl100k_base``; ``tiktoken`` would download them at first use).
  Install with ``pip install 'loopwright[tokens]'``.
* **The model's own tokenizer** for local GGUF models: pass a ``tokenize`` callable
  ``str -> int`` (a local model exposes one as ``count_tokens``), so this package never
  imports ``llama_cpp``.
* **An explicit estimate** for everything else. It is labelled (``exact`` is ``False``,
  ``label`` starts with ``"estimate"``) and script-aware: CJK text costs about one token
  per character, Latin words about one token per six letters, digits one per three,
  punctuation runs about one per 1.5 characters. Measured against ``o200k_base`` it
  over-counts by 0-45% (English prose +14%, code +14%, Chinese +23..43%) and
  under-counts dense JSON by about 5%; see ``docs/context.md``. Over-counting is the
  safe side: a policy that believes it has less room leaves the output reserve intact.

Counting is cached per message: messages are frozen, so a count never changes. The
cache is keyed by object identity and holds a strong reference to the message it
counted (so an id can never be recycled under a live entry) and is bounded (LRU), so
the loop's per-turn cost is a dictionary lookup per message, never re-tokenization.

Message framing follows OpenAI's published accounting for chat models: each message
costs ``MESSAGE_OVERHEAD`` tokens on top of its content, and each tool call a few more
for its name and JSON wrapper. Providers frame messages differently, so only the text
content is exact; framing is a close, documented constant.

Images a tool returned (:class:`~loopwright.core.messages.MediaPart`) are resent with
their tool result on every request, so they are counted too, by the provider's own
published rule from the image's size in pixels (read from its PNG, JPEG, GIF or WebP
header): :func:`image_tokens`. Every rule is an estimate and labelled as such in
``docs/context.md``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol, runtime_checkable

from loopwright.core.estimate import estimate_tokens
from loopwright.core.messages import (
    MediaPart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

MESSAGE_OVERHEAD: Final = 3
"""Tokens of framing per message (role markers), per OpenAI's chat accounting."""
TOOL_CALL_OVERHEAD: Final = 6
"""Tokens of framing per tool call or tool result (id, name wrapper, JSON braces)."""

DEFAULT_CACHE_SIZE: Final = 8192
_BIG_TEXT: Final = 2048
_TEXT_CACHE_SIZE: Final = 256

_O200K_PREFIXES: Final = (
    "gpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "chatgpt-4o",
    "gpt-oss",
    "codex",
)
_CL100K_PREFIXES: Final = (
    "gpt-4",
    "gpt-3.5",
    "gpt-35",
    "text-embedding-3",
    "text-embedding-ada-002",
)


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text and messages. ``exact`` says whether counts are exact."""

    @property
    def label(self) -> str: ...

    @property
    def exact(self) -> bool: ...

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_messages(self, messages: Iterable[Message]) -> int: ...


# -- the counter -------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class CachedCounter:
    """A :class:`TokenCounter` over any ``str -> int`` function, with a per-message cache.

    ``count_message`` looks a message up by identity first; a miss counts it once and
    remembers it (bounded LRU of ``cache_size`` messages). Thread-safe.
    """

    text_counter: Callable[[str], int]
    label: str
    exact: bool = False
    cache_size: int = DEFAULT_CACHE_SIZE
    images: ImageRule = "any"
    _cache: OrderedDict[int, tuple[Message, int]] = field(default_factory=OrderedDict)
    _texts: OrderedDict[int, tuple[str, int]] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    hits: int = 0
    misses: int = 0

    def count_text(self, text: str) -> int:
        if len(text) < _BIG_TEXT:
            return self.text_counter(text) if text else 0
        # Large strings (tool results) are counted once: a trimmer asking for the size
        # of a result the message count already measured gets it from here.
        entry = self._texts.get(id(text))
        if entry is not None and entry[0] is text:
            return entry[1]
        n = self.text_counter(text)
        with self._lock:
            self._texts[id(text)] = (text, n)
            if len(self._texts) > _TEXT_CACHE_SIZE:
                self._texts.popitem(last=False)
        return n

    def count_message(self, message: Message) -> int:
        key = id(message)
        entry = self._cache.get(key)
        if entry is not None and entry[0] is message:
            self.hits += 1
            return entry[1]
        n = MESSAGE_OVERHEAD + sum(self._count_part(p) for p in message.parts)
        with self._lock:
            self.misses += 1
            self._cache[key] = (message, n)
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return n

    def count_messages(self, messages: Iterable[Message]) -> int:
        count = self.count_message
        return sum(count(m) for m in messages)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._texts.clear()

    def _count_part(self, part: Part) -> int:
        match part:
            case TextPart(text=text) | ReasoningPart(text=text):
                return self.count_text(text)
            case ToolCallPart():
                raw = part.raw_arguments or json.dumps(dict(part.arguments), ensure_ascii=False)
                return TOOL_CALL_OVERHEAD + self.count_text(part.name) + self.count_text(raw)
            case ToolResultPart():
                media = sum(image_tokens(m, self.images) for m in part.media)
                return TOOL_CALL_OVERHEAD + self.count_text(part.content) + media
        raise TypeError(f"unknown message part {part!r}")


# -- images ------------------------------------------------------------------------

ImageRule = Literal["openai", "anthropic", "gemini", "any"]
"""Whose published image accounting :func:`image_tokens` applies (``"any"``: the
largest of the three, for a model of unknown provider: over-counting is the safe side)."""

UNKNOWN_IMAGE_SIZE: Final = (1024, 1024)
"""Assumed size of an image whose header cannot be read (a format not parsed here)."""


def image_size(media: MediaPart) -> tuple[int, int] | None:
    """``(width, height)`` in pixels from the header of a base64 PNG, JPEG, GIF or WebP
    (only the first 64 KiB are decoded: a JPEG's size may follow its EXIF block)."""
    head = media.data[:87_384].strip()
    try:
        raw = base64.b64decode(head[: len(head) - len(head) % 4], validate=False)
    except (binascii.Error, ValueError):
        return None
    if raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        return struct.unpack(">II", raw[16:24])
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        return struct.unpack("<HH", raw[6:10])
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP" and len(raw) >= 30:
        return _webp_size(raw)
    if raw[:2] == b"\xff\xd8":
        return _jpeg_size(raw)
    return None


def _webp_size(raw: bytes) -> tuple[int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8X":
        return 1 + int.from_bytes(raw[24:27], "little"), 1 + int.from_bytes(raw[27:30], "little")
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", raw[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(raw[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    return None


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(raw):
        if raw[i] != 0xFF:
            return None
        marker = raw[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length field
            i += 2
            continue
        # SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC)
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", raw[i + 5 : i + 9])
            return width, height
        i += 2 + int.from_bytes(raw[i + 2 : i + 4], "big")
    return None


def image_tokens(media: MediaPart, rule: ImageRule = "any") -> int:
    """Prompt tokens of one image by a provider's published rule.

    * ``"openai"`` (GPT-4o, GPT-4.1, o-series; ``detail: high``/``auto``): scaled to fit
      2048 x 2048, then its shorter side to 768; 85 tokens plus 170 per 512-pixel tile.
    * ``"anthropic"``: scaled so the long edge is at most 1,568 pixels; ``width x height
      / 750``, at most about 1,600.
    * ``"gemini"``: 258 tokens when both sides are at most 384 pixels, otherwise 258 per
      768 x 768 tile.
    """
    width, height = image_size(media) or UNKNOWN_IMAGE_SIZE
    width, height = max(width, 1), max(height, 1)
    if rule == "any":
        return max(_IMAGE_RULES[r](width, height) for r in ("openai", "anthropic", "gemini"))
    return _IMAGE_RULES[rule](width, height)


def _openai_image(width: int, height: int) -> int:
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def _anthropic_image(width: int, height: int) -> int:
    scale = min(1.0, 1568 / max(width, height))
    return min(1600, math.ceil(width * scale * height * scale / 750))


def _gemini_image(width: int, height: int) -> int:
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


_IMAGE_RULES: Final[dict[str, Callable[[int, int], int]]] = {
    "openai": _openai_image,
    "anthropic": _anthropic_image,
    "gemini": _gemini_image,
}


def image_rule_for(model: str) -> ImageRule:
    """The image accounting of a model string (``"anthropic:claude-..."`` ->
    ``"anthropic"``); ``"any"`` when the provider is not recognised."""
    lowered = model.lower()
    if lowered.startswith("anthropic:") or "claude" in lowered:
        return "anthropic"
    if lowered.startswith(("gemini:", "google:")) or "gemini" in lowered:
        return "gemini"
    if lowered.startswith("openai:") or encoding_for_model(model) is not None:
        return "openai"
    return "any"


def estimate_counter(cache_size: int = DEFAULT_CACHE_SIZE) -> CachedCounter:
    """The labelled, script-aware estimate (no tokenizer needed)."""
    return CachedCounter(
        estimate_tokens, "estimate:script-aware(cjk=1/char,latin=1/6 letters)", False, cache_size
    )


def tokenizer_counter(
    tokenize: Callable[[str], int], name: str = "model", cache_size: int = DEFAULT_CACHE_SIZE
) -> CachedCounter:
    """Exact counts from a model's own tokenizer (``tokenize(text) -> number of tokens``)."""
    return CachedCounter(tokenize, f"tokenizer:{name}", True, cache_size)


_BPE_LOCK = threading.Lock()
_BPE_COUNTERS: dict[str, Callable[[str], int]] = {}


def _bpe_count_function(encoding: str) -> Callable[[str], int] | None:
    """``count`` of a ``bpe-openai`` tokenizer, loaded once per process; None if absent."""
    with _BPE_LOCK:
        fn = _BPE_COUNTERS.get(encoding)
        if fn is None:
            try:
                from bpe_openai import _bindings
            except ImportError:
                return None
            fn = _bindings.tokenizer_for_encoding(encoding).count
            _BPE_COUNTERS[encoding] = fn
        return fn


def encoding_for_model(model: str) -> str | None:
    """The OpenAI BPE encoding of a model string (``"openai:gpt-4o"`` -> ``"o200k_base"``).

    Fine-tuned models (``"openai:ft:gpt-4o-mini-2024-07-18:acme::abc123"``, OpenAI's
    ``ft:BASE:ORG:SUFFIX:ID`` ids) use their base model's encoding."""
    name = model.split(":", 1)[1] if ":" in model and not model.startswith("ft:") else model
    if name.startswith("ft:"):
        name = name.split(":", 2)[1]
    name = name.rsplit("/", 1)[-1].lower()
    if name in ("o200k_base", "cl100k_base"):
        return name
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base"
    if name.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    return None


def bpe_counter(
    encoding: str = "o200k_base", cache_size: int = DEFAULT_CACHE_SIZE
) -> CachedCounter:
    """Exact offline counts with an OpenAI BPE encoding.

    Raises :class:`ImportError` with the install command when ``bpe-openai`` is missing.
    """
    fn = _bpe_count_function(encoding)
    if fn is None:
        raise ImportError(
            "exact OpenAI token counts need bpe-openai: pip install 'loopwright[tokens]'"
        )
    return CachedCounter(fn, f"bpe:{encoding}", True, cache_size, images="openai")


def counter_for(
    model: object,
    *,
    tokenize: Callable[[str], int] | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
) -> CachedCounter:
    """The best counter for ``model`` (a model string like ``"openai:gpt-4o"`` or a Model).

    Order: an explicit ``tokenize``; a ``count_tokens(str) -> int`` method on the model
    object (local GGUF models expose their tokenizer so); the exact BPE for OpenAI-family
    names when ``bpe-openai`` is installed; otherwise the labelled estimate. Images in
    tool results are counted by the provider's rule (:func:`image_rule_for`).
    """
    name = model if isinstance(model, str) else str(getattr(model, "name", "") or "")
    if tokenize is None and not isinstance(model, str):
        method = getattr(model, "count_tokens", None)
        if callable(method):
            tokenize = method
    counter = estimate_counter(cache_size)
    encoding = encoding_for_model(name) if name else None
    if tokenize is not None:
        counter = tokenizer_counter(tokenize, name or "model", cache_size)
    elif encoding is not None:
        fn = _bpe_count_function(encoding)
        if fn is not None:
            counter = CachedCounter(fn, f"bpe:{encoding}", True, cache_size)
    counter.images = image_rule_for(name)
    return counter
