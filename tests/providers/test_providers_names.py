"""Reversible tool-name mapping and id normalisation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.providers._common import VALID_NAME, ToolNameMap, normalize_call_id, wire_name

names = st.text(min_size=1, max_size=100)


@settings(deadline=None)
@given(st.lists(names, max_size=20, unique=True))
def test_round_trip_unique_and_valid(canonical):
    mapping = ToolNameMap.build(canonical)
    wires = [mapping.to_wire(n) for n in canonical]
    assert all(VALID_NAME.fullmatch(w) for w in wires)
    assert len(set(wires)) == len(wires), "two names must never share a wire name"
    assert [mapping.from_wire(w) for w in wires] == canonical


@settings(deadline=None)
@given(names)
def test_valid_names_are_unchanged_and_mapping_is_deterministic(name):
    if VALID_NAME.fullmatch(name):  # as wire_name tests it ('A\n' matches, is not valid)
        assert wire_name(name) == name
    assert wire_name(name) == wire_name(name)


def test_examples():
    assert wire_name("get_weather") == "get_weather"
    dotted = wire_name("files.read")
    assert dotted.startswith("files_read_") and VALID_NAME.match(dotted)
    assert VALID_NAME.match(wire_name("x" * 200))
    assert wire_name("web search") != wire_name("web_search")


def test_collision_between_valid_name_and_sanitised_form():
    clash = wire_name("a.b")  # e.g. "a_b_<hash>": also a valid name by itself
    mapping = ToolNameMap.build(["a.b", clash])
    assert mapping.to_wire("a.b") != mapping.to_wire(clash)
    assert mapping.from_wire(mapping.to_wire(clash)) == clash


def test_unknown_wire_name_comes_back_unchanged():
    assert ToolNameMap().from_wire("hallucinated_tool") == "hallucinated_tool"


@settings(deadline=None)
@given(st.text(max_size=120), st.integers(8, 64))
def test_normalize_call_id(call_id, max_len):
    out = normalize_call_id(call_id, max_len)
    assert 0 < len(out) <= max_len
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in out)
    assert out == normalize_call_id(call_id, max_len)


def test_an_id_or_name_with_a_trailing_newline_is_not_taken_as_valid() -> None:
    # "^...$" matches before a final "\n": both checks use fullmatch
    assert "\n" not in normalize_call_id("0\n", 8)
    assert normalize_call_id("0\n", 8) != "0\n"
    assert "\n" not in wire_name("add\n")
    assert VALID_NAME.fullmatch(wire_name("add\n"))


GEMINI_NAME = r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$"
"""Gemini's FunctionDeclaration.name: it must start with a letter or an underscore."""


@settings(deadline=None)
@given(names)
def test_every_wire_name_is_one_every_protocol_accepts(name):
    import re

    wire = wire_name(name)
    assert VALID_NAME.fullmatch(wire)
    assert re.fullmatch(GEMINI_NAME, wire), f"{name!r} -> {wire!r} (Gemini refuses it)"


def test_a_name_starting_with_a_digit_or_a_dash_is_mapped_and_back():
    mapping = ToolNameMap.build(["7zip_extract", "-flag", "_private", "ok"])
    wires = [mapping.to_wire(n) for n in ("7zip_extract", "-flag", "_private", "ok")]
    assert wires[2:] == ["_private", "ok"]
    assert all(w[0].isalpha() or w[0] == "_" for w in wires)
    assert [mapping.from_wire(w) for w in wires] == ["7zip_extract", "-flag", "_private", "ok"]
