"""Tool choice by name log-probability: the text the scorer assumes, and the grammar's
leading space (no model needed)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopwright.providers import local_prompt as lp
from loopwright.providers.local import LocalConfig, LocalModel
from loopwright.providers.local_grammar import spaced_root
from loopwright.providers.local_turn import TurnPlan
from loopwright.tools.builtin import BUILTIN_TOOLS, make_tools

SPECS = [t.spec for t in make_tools(BUILTIN_TOOLS)]
BOUNDS = lp.GrammarBounds()


def test_scored_text_is_what_the_worked_examples_write() -> None:
    prefix = lp.render_prefix(SPECS, None)
    for spec in SPECS:
        if lp.has_examples(spec.parameters):
            assert "Assistant:" + lp.CALL_HEAD + lp.name_option(spec.name) in prefix
    call, answer = lp.kind_options()
    assert "Assistant:" + answer in prefix  # the no-tool example answers directly
    assert call + ' "' == lp.CALL_HEAD
    plan_prefix = lp.render_prefix(SPECS, None, plan=True)
    plan_call, plan_answer = lp.kind_options("Plan:")
    assert "Assistant:" + plan_call in plan_prefix
    assert "Assistant:" + plan_answer in plan_prefix


@given(st.text(min_size=1, max_size=30))
def test_name_option_continues_the_call_json(name: str) -> None:
    rendered = lp.render("assistant", json=lp._call_json(name, {}))
    assert (lp.CALL_HEAD + lp.name_option(name)) in rendered


def test_spaced_root_prefixes_one_space_and_keeps_the_rest() -> None:
    gbnf = 'root ::= "{" space x "}"\nx ::= "a"\nsub-root ::= x\nspace ::= " "?\n'
    out = spaced_root(gbnf)
    lines = out.splitlines()
    assert lines[0] == 'root ::= " " json-root'
    assert 'json-root ::= "{" space x "}"' in lines
    assert "sub-root ::= x" in lines  # only the root rule is renamed
    assert sum(line.startswith("root ::=") for line in lines) == 1


def test_spaced_root_without_a_root_rule_is_an_error() -> None:
    with pytest.raises(ValueError, match="root"):
        spaced_root('x ::= "a"\n')


@pytest.mark.parametrize("mode", ["tools", "answer", "both"])
def test_spaced_grammar_compiles_and_accepts_a_spaced_output(mode: lp.Mode) -> None:
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    schema = lp.output_schema(SPECS, mode, BOUNDS)
    text = spaced_root(llama_grammar.json_schema_to_gbnf(json.dumps(schema)))
    grammar = llama_grammar.LlamaGrammar.from_string(text, verbose=False)
    assert grammar._root == "root"
    assert text.startswith('root ::= " " json-root')


def test_narrow_leaves_the_plan_alone_when_there_is_nothing_to_choose() -> None:
    one = TurnPlan([1, 2], {}, 16, 0, ("calculator",), mode="tools", choices=(SPECS[0],))
    many = TurnPlan([1, 2], {}, 16, 0, ("a", "b"), mode="tools", choices=tuple(SPECS[:2]))
    model = LocalModel()
    off = LocalModel(config=LocalConfig(score_tools=False))
    sampling = LocalModel(config=LocalConfig(temperature=0.7))
    answer = TurnPlan([1, 2], {}, 16, 0, ("a", "b"), mode="answer", choices=tuple(SPECS[:2]))
    fake_llm = object()  # never touched on these paths
    assert model._narrow(fake_llm, one) is one
    assert model._narrow(fake_llm, answer) is answer
    assert off._narrow(fake_llm, many) is many
    assert sampling._narrow(fake_llm, many) is many


def test_call_grammar_strings_hold_no_raw_control_characters() -> None:
    """llama-cpp-python's schema converter let a JSON string hold a raw newline; the
    call was then invalid JSON and shown to the user as the answer (' {"tool":
    "sql_query", "arguments": {"query": " SELECT ...\\n" }}')."""
    import json

    from llama_cpp.llama_grammar import json_schema_to_gbnf

    from loopwright.providers import local_grammar

    stock = json_schema_to_gbnf(json.dumps({"type": "string"}))
    fixed = local_grammar.no_control_chars(stock)
    char = next(line for line in fixed.splitlines() if line.startswith("char ::="))
    assert r"\x00-\x1F" in char and r"\x7F" in char
    assert fixed != stock


def test_pattern_strings_hold_no_raw_control_characters() -> None:
    """A string held to a pattern (a comma-joined format: 'City, State') became a
    negated class that allowed a raw newline: "Lang Son in fahrenheit}}\\nThe ..." was
    invalid JSON, so the turn made no call. A literal spelling "[^" is left alone."""
    import json
    import re

    from llama_cpp.llama_grammar import json_schema_to_gbnf

    from loopwright.providers import local_grammar

    schema = {
        "type": "object",
        "properties": {
            "location": {"type": "string", "pattern": '^ ?[^,"\\\\]{1,60}(, ?[^,"\\\\]{1,60}){1}$'},
            "mark": {"const": "[^x]"},
        },
        "required": ["location", "mark"],
    }
    stock = json_schema_to_gbnf(json.dumps(schema))
    fixed = local_grammar.no_control_chars(stock)
    rules = dict(line.split(" ::= ", 1) for line in fixed.splitlines())
    classes = re.findall(r"\[\^[^\]]*\]", rules["location-1"])
    assert classes and all(r"\x00-\x1F" in c and r"\x7F" in c for c in classes)
    assert rules["mark"] == dict(line.split(" ::= ", 1) for line in stock.splitlines())["mark"]


def test_narrow_keeps_only_the_tools_the_words_leave() -> None:
    """A tool sharing two of the request's words wins over tools sharing none without
    the model's name score (the fake model is never touched)."""
    from loopwright.core.tools import ToolSpec
    from loopwright.providers import local_ground as lgr

    def tool(name: str, description: str) -> ToolSpec:
        params = {"type": "object", "properties": {"name": {"type": "string"}}}
        return ToolSpec(name, description, {**params, "required": ["name"]})

    traffic = tool("get_traffic_info", "Retrieve current traffic conditions for a route.")
    athlete = tool("sports_db.find_athlete", "Find the profile information of an athlete.")
    ground = lgr.Grounding("Find me the profile of the tennis player Ann Smith")
    plan = TurnPlan(
        [1, 2], {}, 16, 0, ("a", "b"), mode="tools", choices=(traffic, athlete), ground=ground
    )
    narrowed = LocalModel()._narrow(object(), plan)
    assert narrowed.schema["properties"]["tool"] == {"const": "sports_db.find_athlete"}


def test_a_call_is_scored_with_its_likeliest_offered_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Call vs answer: the call's log-probability counts the likeliest offered tool's
    name. A request no offered tool fits ("What is the capital of Italy?") starts a
    call far likelier than an answer (-0.2 vs -2.9), to a tool the model imagines;
    with the best offered name (-3.4) the answer wins."""
    from loopwright.providers import local as local_module

    names = {"kind": (-0.2, -2.9), "name": (-3.4, -5.4)}

    def scores(llm: object, tokens: list[int], options: list[list[int]]) -> list[float]:
        return list(names["name" if tokens[-1] == 99 else "kind"])

    def tokenize(llm: object, text: str, *, bos: bool) -> list[int]:
        return [99] if text == lp.CALL_HEAD else [len(text)]

    monkeypatch.setattr(local_module.ls, "continuation_logprobs", scores)
    monkeypatch.setattr(local_module.lh, "tokenize", tokenize)
    plan = TurnPlan([1, 2], {}, 16, 0, ("a", "b"), mode="both", choices=tuple(SPECS[:2]))
    model = LocalModel()
    assert model._choose_kind(object(), plan, {}).mode == "answer"
    names["name"] = (-5.5, -1.9)  # "Is it sunny in Sydney?": get_weather is likely
    known: dict[str, float] = {}
    assert model._choose_kind(object(), plan, known).mode == "tools"
    assert known == {SPECS[0].name: -5.5, SPECS[1].name: -1.9}


def test_names_are_scored_once_per_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kind choice scores every offered name; picking the tool reuses those scores
    instead of decoding the names a second time (each scoring costs model evaluations
    on every first turn with several tools)."""
    from loopwright.providers import local as local_module

    calls: list[int] = []

    def scores(llm: object, tokens: list[int], options: list[list[int]]) -> list[float]:
        if tokens[-1] == 99:  # the names, after the call head
            calls.append(len(options))
            return [-3.0, -1.0][: len(options)]
        return [-0.2, -2.9]  # call vs answer: the call wins

    def tokenize(llm: object, text: str, *, bos: bool) -> list[int]:
        return [99] if text == lp.CALL_HEAD else [len(text)]

    monkeypatch.setattr(local_module.ls, "continuation_logprobs", scores)
    monkeypatch.setattr(local_module.lh, "tokenize", tokenize)
    monkeypatch.setattr(local_module.ls, "supported", lambda llm: True)
    plan = TurnPlan([1, 2], {}, 16, 0, ("a", "b"), mode="both", choices=tuple(SPECS[:2]))
    model = LocalModel()
    narrowed = model._narrow(object(), plan)
    assert narrowed.schema["properties"]["tool"] == {"const": SPECS[1].name}
    assert calls == [2, 2]  # the names after a content-free request, then after this one
    model._narrow(object(), plan)
    assert calls == [2, 2, 2]  # the content-free scores are kept for the same prompt


def _kind_scores(
    monkeypatch: pytest.MonkeyPatch, kind: tuple[float, float], names: tuple[float, float]
) -> None:
    """Mocked scores: call vs answer ``kind``; the names after the request ``names``;
    after the content-free request (its tokens hold 7) the calculator -3.7, the weather
    tool -2.5 (what the model gives them after "N/A")."""
    from loopwright.providers import local as local_module

    def scores(llm: object, tokens: list[int], options: list[list[int]]) -> list[float]:
        if tokens[-1] == 99:  # the names, after the call head
            return [-3.7, -2.5] if 7 in tokens else list(names)
        return list(kind)

    def tokenize(llm: object, text: str, *, bos: bool) -> list[int]:
        if text == lp.CALL_HEAD:
            return [99]
        return [7] if local_module.NEUTRAL_REQUEST in text else [len(text)]

    monkeypatch.setattr(local_module.ls, "continuation_logprobs", scores)
    monkeypatch.setattr(local_module.lh, "tokenize", tokenize)


def test_a_name_counts_by_its_gain_over_a_content_free_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The request "What do you get when you multiply 13 by 7?" with calculator and
    get_weather:
    call -0.28, answer -2.05, calculator's name -1.97. The name alone put the call
    (-2.25) below the answer and no tool was called; the request raises the name by
    1.7 over "N/A" (-3.7), evidence the request is about that tool. "What is the capital
    of Italy?" raises it by 0.4 only, and is still answered."""
    _kind_scores(monkeypatch, (-0.28, -2.05), (-1.97, -10.29))
    plan = TurnPlan([1, 2], {}, 16, 0, ("a", "b"), mode="both", choices=tuple(SPECS[:2]))
    assert SPECS[0].name == "calculator" and SPECS[1].name == "get_weather"
    assert LocalModel()._choose_kind(object(), plan, {}).mode == "tools"
    _kind_scores(monkeypatch, (-0.19, -3.07), (-3.26, -5.41))
    assert LocalModel()._choose_kind(object(), plan, {}).mode == "answer"
    without = LocalModel(config=LocalConfig(name_gain=False, answer_margin=0.0))
    _kind_scores(monkeypatch, (-0.28, -2.05), (-1.97, -10.29))
    assert without._choose_kind(object(), plan, {}).mode == "answer"
