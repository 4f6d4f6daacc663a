"""Plan lines for the embedded model: grammar, parser, examples, progress (no model)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.messages import Message, ToolCallPart
from loopwright.core.tools import ToolSpec
from loopwright.providers import local_plan as pl
from loopwright.providers import local_prompt as lp
from loopwright.tools.builtin import make_tools

ARITH = [t.spec for t in make_tools(["add", "multiply", "divide"])]
SINGLE = [t.spec for t in make_tools(["calculator", "get_weather", "read_file", "sql_query"])]
MIXED = ARITH + [t.spec for t in make_tools(["get_weather"])]
BY_NAME = {t.name: t for t in MIXED}


def test_parse_two_steps_with_result_reference() -> None:
    steps = pl.parse_plan("Plan: 3 + 5 = add(3, 5), then result * 8 = multiply(result, 8)", ARITH)
    assert steps is not None
    assert [(s.expr, s.tool) for s in steps] == [("3 + 5", "add"), ("result * 8", "multiply")]
    assert steps[0].arguments == {"a": 3, "b": 5}
    assert steps[1].arguments["a"] is pl.RESULT_REF
    assert steps[1].arguments["b"] == 8


def test_parse_strips_the_leading_space_of_strings() -> None:
    steps = pl.parse_plan('Plan: weather in Oslo = get_weather(" Oslo")', MIXED)
    assert steps == [pl.PlanStep("weather in Oslo", "get_weather", {"city": "Oslo"})]


@pytest.mark.parametrize(
    "line",
    [
        "",
        "3 + 5 = add(3, 5)",  # no prefix
        "Plan: 3 + 5 = add(3, 5",  # unfinished
        "Plan: 3 + 5 = nope(3, 5)",  # unknown tool
        "Plan: 3 + 5 = add(3)",  # missing argument
        "Plan: 3 + 5 = add(3, 5) and more",
        "Plan: = add(3, 5)",  # empty expr
        "Plan: 3 + 5 = add(3, x)",
    ],
)
def test_malformed_plans_are_none(line: str) -> None:
    assert pl.parse_plan(line, ARITH) is None


_values = st.one_of(
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False).map(lambda f: round(f, 3)),
)
_exprs = st.text(
    st.characters(blacklist_characters='="\n', blacklist_categories=("Cs", "Cc")),
    min_size=1,
    max_size=30,
).map(lambda t: t.strip() or "x")


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(_exprs, st.sampled_from(["add", "multiply", "divide"]), _values, _values),
        min_size=1,
        max_size=pl.MAX_STEPS,
    ),
    st.data(),
)
def test_render_then_parse_round_trips(raw: list, data: st.DataObject) -> None:
    steps = []
    for i, (expr, tool, a, b) in enumerate(raw):
        if i and data.draw(st.booleans()):
            a = pl.RESULT_REF
        steps.append(pl.PlanStep(expr, tool, {"a": a, "b": b}))
    line = pl.render_plan(steps, ARITH)
    parsed = pl.parse_plan(line, ARITH)
    assert parsed is not None
    assert [s.tool for s in parsed] == [s.tool for s in steps]
    for got, want in zip(parsed, steps, strict=True):
        assert got.expr == want.expr.strip()
        for key in ("a", "b"):
            if want.arguments[key] is pl.RESULT_REF:
                assert got.arguments[key] is pl.RESULT_REF
            else:
                assert got.arguments[key] == want.arguments[key]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120))
def test_parser_never_raises_on_arbitrary_text(text: str) -> None:
    result = pl.parse_plan("Plan: " + text, MIXED)
    assert result is None or all(s.tool in BY_NAME for s in result)


def test_grammar_compiles_and_forbids_result_in_the_first_step() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    text = pl.plan_grammar(MIXED + SINGLE)
    llama_cpp.LlamaGrammar.from_string(text, verbose=False)
    first = [ln for ln in text.splitlines() if ln.startswith("f0a")]
    later = [ln for ln in text.splitlines() if ln.startswith("l0a")]
    assert first and all('"result"' not in ln for ln in first)
    assert later and all('"result"' in ln for ln in later)


def test_result_expression_comes_from_the_description() -> None:
    add = BY_NAME["add"]
    assert pl.result_expression(add, {"a": 12, "b": pl.RESULT_REF}) == "12 + result"
    assert pl.result_expression(BY_NAME["get_weather"], {"city": "Paris"}) is None
    odd = ToolSpec("t", "Returns nothing useful.", {"type": "object", "properties": {}})
    assert pl.result_expression(odd, {}) is None


def test_can_chain_needs_a_numeric_parameter() -> None:
    assert pl.can_chain(ARITH)
    assert not pl.can_chain(SINGLE)
    assert not pl.can_chain(ARITH[:1])


def _call(name: str, args: dict, cid: str) -> ToolCallPart:
    return ToolCallPart(cid, name, args, json.dumps(args))


def test_plan_part_lists_parsed_steps_with_result_references() -> None:
    line = "Plan: 3 + 5 = add(3, 5), then result * 8 = multiply(result, 8)"
    steps = pl.parse_plan(line, ARITH)
    assert steps is not None
    part = pl.plan_part(line, steps)
    assert part.text == line
    assert part.provider_meta["local_plan"]["steps"] == [
        {"tool": "add", "arguments": {"a": 3, "b": 5}},
        {"tool": "multiply", "arguments": {"a": pl.RESULT_JSON, "b": 8}},
    ]
    json.dumps(part.provider_meta)  # the meta is plain JSON (it is checkpointed)


def test_plan_message_renders_as_its_plan_line_only() -> None:
    line = "Plan: 3 + 5 = add(3, 5)"
    message = Message("assistant", (pl.plan_part(line), _call("add", {"a": 3, "b": 5}, "c1")))
    assert lp.render_message(message) == "\nAssistant: " + line


def test_plan_prefix_examples_chain_and_parse() -> None:
    text = lp.render_prefix(ARITH, None, plan=True)
    plans = [ln[len("Assistant: ") :] for ln in text.splitlines() if "Assistant: Plan:" in ln]
    assert len(plans) == 6  # every ordered pair of the three tools
    for plan in plans:
        steps = pl.parse_plan(plan, ARITH)
        assert steps is not None and len(steps) == 2
        assert steps[1].arguments["a"] is pl.RESULT_REF
    assert "a + b = add(a, b)" in text
    # Without plan mode the prefix is the plain one-call-per-turn prompt.
    assert "Plan:" not in lp.render_prefix(SINGLE, None)


def test_local_model_plans_only_for_chainable_tools() -> None:
    from loopwright.providers.local import LocalConfig, LocalModel

    model = LocalModel("/nonexistent/model.gguf")  # never loaded
    assert model._plans(ARITH) and not model._plans(SINGLE)
    assert not LocalModel(config=LocalConfig(plan=False))._plans(ARITH)


def test_a_plan_step_takes_a_tool_whose_notation_shares_its_sign() -> None:
    """'(6 * 4) + 9' was planned as '6 * 4 = divide(6, 4)': the three names are nearly
    tied in the model's logits. After '<expr> = ' the tools whose notation (``Returns a
    * b.``) shares a sign with the step's text are the only ones left."""
    specs = [t.spec for t in make_tools(["add", "multiply", "divide"])]
    guard = pl.step_tool_guard(specs, "What is (6 * 4) + 9?")
    assert guard is not None
    head = " Plan: 6 * 4 = "
    assert guard(head, "div") and guard(head, "add")
    assert guard(head.rstrip(), " divide") and not guard(head.rstrip(), " multiply")
    assert not guard(head, "multiply") and not guard(head, "mult")
    # A step the model restated itself is not guarded: "result + 8" was written for
    # "* 8" more often than the tool after it was wrong.
    later = head + "multiply(6, 4), then result + 9 = "
    assert not guard(later, "divide") and not guard(later, "add")
    # Nothing to go by: no sign in the step, or not at a step's tool.
    assert not guard(" Plan: six times four = ", "divide")
    assert not guard(" Plan: 6 * 4", "divide") and not guard(head + "multiply(", "4")


def test_tools_without_a_notation_get_no_step_guard() -> None:
    plain = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {}})
    assert pl.step_tool_guard([plain, *[t.spec for t in make_tools(["add"])]], "q") is None


def test_a_digit_dropped_copying_the_expression_is_restored() -> None:
    # the model wrote "result + 14" and then copied 4 into the call
    line = "Plan: 9 * 4 = multiply(9, 4), then result + 14 = add(result, 4)"
    steps = pl.agreed(pl.parse_plan(line, ARITH) or [])
    assert [s.arguments for s in steps] == [
        {"a": 9, "b": 4},
        {"a": pl.RESULT_REF, "b": 14},
    ]


@pytest.mark.parametrize(
    "line",
    [
        "Plan: 3 + 5 = add(3, 5)",  # every argument stated
        "Plan: 3 + 5 = add(3, 55)",  # 55 is no part of a stated number: the model's choice
        "Plan: add the numbers = add(3, 5)",  # nothing stated
        "Plan: 14 + 41 = add(4, 41)",  # 4 is in both 14 and 41, and 41 is used: only 14
    ],
)
def test_arguments_the_expression_does_not_contradict_stay(line: str) -> None:
    steps = pl.parse_plan(line, ARITH) or []
    fixed = pl.agreed(steps)
    if line.startswith("Plan: 14 + 41"):
        assert fixed[0].arguments == {"a": 14, "b": 41}
    else:
        assert fixed == steps


def test_a_restored_number_keeps_its_decimal_point() -> None:
    steps = pl.agreed(pl.parse_plan("Plan: 12.5 * 8 = multiply(2.5, 8)", ARITH) or [])
    assert steps[0].arguments == {"a": 12.5, "b": 8}
