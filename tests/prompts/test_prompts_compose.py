"""PromptComposer and PromptAssembler (layers, priorities, budgets, constraint layer)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.estimate import estimate_tokens
from loopwright.prompts import (
    Layer,
    PromptAssembler,
    PromptBudgetError,
    PromptComposer,
    PromptError,
    PromptTemplate,
    TemplateError,
)


def composer() -> PromptComposer:
    return (
        PromptComposer()
        .add("Identity", PromptTemplate("identity", "1.0", "You are {agent_role}."))
        .add("Tools", PromptTemplate("tools", "1.0", "Available tools:\n{tool_descriptions}"))
        .add("Constraints", PromptTemplate("constraints", "1.1", "Constraints:\n{constraint_list}"))
    )


def test_each_module_gets_only_its_variables_in_order() -> None:
    out = composer().compose(
        agent_role="a router", tool_descriptions="1. calc", constraint_list="- JSON only"
    )
    assert out == (
        "## Identity\nYou are a router.\n\n## Tools\nAvailable tools:\n1. calc\n\n"
        "## Constraints\nConstraints:\n- JSON only"
    )
    assert [fp.split("#")[0] for fp in out.fingerprints] == [
        "identity@1.0",
        "tools@1.0",
        "constraints@1.1",
    ]


def test_composer_rejects_unknown_and_missing_variables() -> None:
    with pytest.raises(TemplateError, match="no module uses: 'agent_rol'"):
        composer().compose(agent_rol="x", tool_descriptions="", constraint_list="")
    with pytest.raises(
        TemplateError, match=r"constraints@1.1 is missing variable.*constraint_list"
    ):
        composer().compose(agent_role="x", tool_descriptions="")


def seed_layers(history: str) -> list[Layer]:
    return [
        Layer("system", "You are a careful agent. " * 20, "system", priority=100),
        Layer(
            "tools",
            "tool: does things. " * 30,
            "context",
            priority=60,
            compressible=True,
            min_tokens=20,
        ),
        Layer("history", history, "context", priority=40, compressible=True, keep="tail"),
        Layer("user", "Please summarise the sales report.", "user", priority=90),
        Layer("constraints", "Never delete data. Output JSON only.", "constraints", priority=100),
    ]


def test_over_budget_cuts_lowest_priority_compressible_layer_first() -> None:
    asm = PromptAssembler(400)
    for layer in seed_layers("turn: something happened. " * 200):
        asm.add(layer)
    out = asm.assemble()
    by = {r.name: r for r in out.layers}
    assert out.total_tokens <= 400
    assert by["history"].cut and not by["system"].cut and not by["constraints"].cut
    assert out.text.endswith("Never delete data. Output JSON only.")
    assert "cut to fit" in out.text


def test_budget_smaller_than_fixed_layers_is_a_precise_error() -> None:
    asm = PromptAssembler(80)
    for layer in seed_layers("h"):
        asm.add(layer)
    with pytest.raises(PromptBudgetError) as info:
        asm.assemble()
    msg = str(info.value)
    assert "system" in msg and "constraints" in msg and "tools 20 (min)" in msg
    assert "budget 80" in msg


def test_constraint_layer_can_never_be_compressible() -> None:
    with pytest.raises(PromptError, match="constraint layer is never cut"):
        Layer("rules", "x", "constraints", compressible=True)


def test_layer_over_its_own_budget() -> None:
    fixed = PromptAssembler(10_000).add(Layer("system", "word " * 100, "system", max_tokens=10))
    with pytest.raises(PromptBudgetError, match=r"'system' .* over its max_tokens 10"):
        fixed.assemble()
    flexible = PromptAssembler(10_000).add(
        Layer("rag", "word " * 100, compressible=True, max_tokens=10)
    )
    assert flexible.assemble().layers[0].tokens <= 10


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(
        st.tuples(st.integers(0, 300), st.booleans(), st.integers(0, 100)), min_size=1, max_size=6
    ),
    budget=st.integers(20, 1500),
)
def test_assembler_fits_or_explains(sizes: list[tuple[int, bool, int]], budget: int) -> None:
    asm = PromptAssembler(budget)
    for i, (n, compressible, priority) in enumerate(sizes):
        asm.add(
            Layer(
                f"l{i}",
                "alpha beta " * n,
                compressible=compressible,
                priority=priority,
                min_tokens=5,
            )
        )
    asm.add(Layer("rules", "Never do harm.", "constraints"))
    try:
        out = asm.assemble()
    except PromptBudgetError:
        fixed = sum(estimate_tokens("alpha beta " * n) for n, c, _ in sizes if not c)
        assert fixed + estimate_tokens("Never do harm.") > budget - 30 * len(sizes)
        return
    assert estimate_tokens(out.text) <= budget
    assert "Never do harm." in out.text
    for (_n, compressible, _), r in zip(sizes, out.layers, strict=False):
        if not compressible:
            assert not r.cut
