"""LocalModel.count_tokens without the real model: it must use the loaded llama's
tokenizer (no BOS) and be what counter_for picks."""

from __future__ import annotations

import pytest

from loopwright.context.tokens import counter_for
from loopwright.providers import local, local_load


class _FakeLlama:
    def __init__(self) -> None:
        self.calls: list[tuple[bytes, bool, bool]] = []

    def tokenize(self, data: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        self.calls.append((data, add_bos, special))
        return list(range(len(data.split()) + (1 if add_bos else 0)))


def _model_with(fake: _FakeLlama) -> local.LocalModel:
    model = local.LocalModel("/nonexistent/model.gguf")
    model._loaded = local_load.Loaded(fake)
    return model


def test_count_tokens_calls_the_tokenizer_without_bos() -> None:
    fake = _FakeLlama()
    model = _model_with(fake)
    assert model.count_tokens("one two three") == 3
    assert fake.calls == [(b"one two three", False, False)]
    assert model.count_tokens("") == 0
    assert len(fake.calls) == 1  # empty text never reaches llama.cpp


def test_count_tokens_rejects_non_text() -> None:
    model = _model_with(_FakeLlama())
    with pytest.raises(TypeError, match="text must be str"):
        model.count_tokens(b"bytes")  # type: ignore[arg-type]


def test_counter_for_uses_count_tokens_and_is_exact() -> None:
    fake = _FakeLlama()
    counter = counter_for(_model_with(fake))
    assert counter.exact
    assert counter.label == "tokenizer:local:/nonexistent/model.gguf"
    assert counter.count_text("a b c d") == 4
    assert fake.calls[-1][0] == b"a b c d"


def test_count_tokens_on_a_missing_file_is_a_config_error() -> None:
    from loopwright.core.errors import ConfigError

    with pytest.raises(ConfigError, match="does not exist"):
        local.LocalModel("/nonexistent/model.gguf").count_tokens("hello")
