"""A strategy's counts and options are checked where it is configured, naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from loopwright import Agent, ScriptedModel
from loopwright.core.errors import ConfigError
from loopwright.store import open_store
from loopwright.strategies import (
    Evaluation,
    PlanConfig,
    ReActText,
    ReflectionMemory,
    Reflexion,
    SearchConfig,
    SelfConsistency,
    SelfRefine,
    ThoughtHooks,
    TreeOfThoughts,
)

MODEL = ScriptedModel(["x"])
BAD: list[tuple[str, Callable[[], Any]]] = [
    ("SearchConfig.beam", lambda: SearchConfig(beam=0)),
    ("SearchConfig.depth", lambda: SearchConfig(depth=-1)),
    ("SearchConfig.max_concurrency", lambda: SearchConfig(max_concurrency=0)),
    ("SearchConfig.n_generate", lambda: SearchConfig(n_generate=2.5)),  # type: ignore[arg-type]
    ("SearchConfig.method", lambda: SearchConfig(method="best-first")),  # type: ignore[arg-type]
    ("SearchConfig.threshold", lambda: SearchConfig(threshold=float("nan"))),
    ("TreeOfThoughts(generator=", lambda: TreeOfThoughts(MODEL, generator="x")),  # type: ignore[arg-type]
    ("PlanConfig.max_concurrency", lambda: PlanConfig(max_concurrency=0)),
    ("PlanConfig.max_steps", lambda: PlanConfig(max_steps=True)),
    ("PlanConfig.max_replans", lambda: PlanConfig(max_replans=-1)),
    ("SelfRefine(max_rounds=", lambda: SelfRefine(MODEL, max_rounds=-1)),
    ("SelfRefine(threshold=", lambda: SelfRefine(MODEL, threshold=7)),
    ("ReActText(format=", lambda: ReActText(MODEL, [], format="json")),  # type: ignore[arg-type]
    ("ReActText(max_steps=", lambda: ReActText(MODEL, [], max_steps=0)),
    ("SelfConsistency(k=", lambda: SelfConsistency(MODEL, k=0)),
    # min_lead=0 stopped after the first sample (any lead is >= 0); a negative or text
    # concurrency was taken as 1 or raised a TypeError naming nothing
    ("SelfConsistency(min_lead=", lambda: SelfConsistency(MODEL, min_lead=0)),
    ("SelfConsistency(concurrency=", lambda: SelfConsistency(MODEL, concurrency=-2)),
    ("SelfConsistency(concurrency=", lambda: SelfConsistency(MODEL, concurrency="4")),  # type: ignore[arg-type]
    (
        "Reflexion(max_trials=",
        lambda: Reflexion(
            Agent(MODEL),
            lambda task, answer: Evaluation(True),
            ReflectionMemory(open_store("memory")),
            key="k",
            max_trials=0,
        ),
    ),
]


@pytest.mark.parametrize(("field", "build"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_value_is_refused_naming_its_field(field: str, build: Callable[[], Any]) -> None:
    with pytest.raises(ConfigError) as info:
        build()
    assert field in str(info.value)


def test_a_beam_of_zero_no_longer_fails_mid_search() -> None:
    hooks = ThoughtHooks(generate=lambda p, s: ["a", "b"], evaluate=lambda p, s: 0.9)
    assert TreeOfThoughts(hooks=hooks, search=SearchConfig(beam=1)).run("p").answer
    with pytest.raises(ConfigError, match="beam"):  # was an IndexError inside the search
        TreeOfThoughts(hooks=hooks, search=SearchConfig(beam=0))
