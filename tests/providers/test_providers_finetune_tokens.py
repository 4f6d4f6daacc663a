"""A fine-tuned OpenAI model (``openai:ft:BASE:ORG:SUFFIX:ID``) gets exact counts with its
base model's encoding, not the labelled estimate."""

from __future__ import annotations

import pytest

from loopwright.context.tokens import counter_for, encoding_for_model
from loopwright.providers.registry import resolve_model

FT = "ft:gpt-4o-mini-2024-07-18:acme:support-bot:9abcDEF1"


@pytest.mark.parametrize(
    ("name", "encoding"),
    [
        (f"openai:{FT}", "o200k_base"),
        (FT, "o200k_base"),
        ("openai-responses:ft:gpt-4.1-nano-2025-04-14:acme::x1", "o200k_base"),
        ("openai:ft:gpt-3.5-turbo-0125:acme::x2", "cl100k_base"),
        ("openai:ft:unknown-base:acme::x3", None),
    ],
)
def test_fine_tuned_names_map_to_the_base_encoding(name, encoding):
    assert encoding_for_model(name) == encoding


def test_a_fine_tuned_adapter_is_counted_exactly():
    model = resolve_model(f"openai:{FT}", api_key="k")
    assert model.name == f"openai:{FT}"
    counter = counter_for(model)
    assert counter.exact and counter.label == "bpe:o200k_base", counter.label
