"""Text crossing a boundary (JSON, terminal, store) is always writable (core.text)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.text import for_terminal, scrub, to_json

# Every code point, surrogates included (hypothesis leaves them out of text() by default).
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF)
ANY_TEXT = st.text(alphabet=ANY_CHAR, max_size=60)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_scrub_repairs_lone_surrogates_and_keeps_valid_text() -> None:
    assert scrub("bad \ud800 text") == "bad \ufffd text"
    assert scrub("\ud83d\ude00") == "\U0001f600"  # a pair split into two code points
    assert scrub("\udcff") == "\ufffd"  # surrogateescape's stand-in for byte 0xff
    valid = "naïve 日本 \U0001f600"
    assert scrub(valid) is valid


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_scrubbed_text_always_encodes_and_valid_text_is_unchanged(text: str) -> None:
    out = scrub(text)
    out.encode("utf-8")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        assert "\ufffd" in out or len(out) < len(text)
    else:
        assert out == text


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_to_json_is_always_valid_utf8_json(value: object) -> None:
    text = to_json(value)
    raw = text.encode("utf-8")  # never raises
    parsed = json.loads(raw, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    assert type(parsed) is type(value) or isinstance(value, tuple | float)


def test_to_json_strict_turns_non_finite_floats_into_null() -> None:
    assert json.loads(to_json({"a": float("nan"), "b": [float("inf"), 1.5]})) == {
        "a": None,
        "b": [None, 1.5],
    }
    assert to_json({"a": float("nan")}, strict=False) == '{"a":NaN}'
    assert to_json({"k": "\ud800"}) == '{"k":"\ufffd"}'


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_for_terminal_leaves_no_control_sequence(text: str) -> None:
    out = for_terminal(text)
    out.encode("utf-8")
    assert _TERMINAL_UNSAFE.search(out) is None
    assert "\x1b" not in out and "\r" not in out


def test_for_terminal_makes_escapes_visible() -> None:
    clear = "\x1b[2J\x1b[H"
    clipboard = "\x1b]52;c;cm0gLXJmIH4=\x07"
    link = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
    assert for_terminal(clear) == "\\x1b[2J\\x1b[H"
    assert for_terminal(clipboard) == "\\x1b]52;c;cm0gLXJmIH4=\\x07"
    assert "\\x1b]8;;https://evil.example" in for_terminal(link)
    assert for_terminal("a\u202eb") == "a\\u202eb"
    assert for_terminal("line 1\r\nline 2\tend") == "line 1\nline 2\tend"
    assert for_terminal("fake\rreal") == "fake\\x0dreal"


@settings(max_examples=40, deadline=None)
@given(ANY_TEXT)
def test_sqlite_store_keeps_any_model_text(tmp_path_factory, text: str) -> None:
    """A durable run whose model writes any string checkpoints and loads back."""
    from loopwright.durable import Durable
    from loopwright.loop import Agent
    from loopwright.providers.scripted import ScriptedModel
    from loopwright.store import SQLiteStore

    store = SQLiteStore(Path(tmp_path_factory.mktemp("db")) / "s.db")
    try:
        result = Durable(Agent(ScriptedModel([text or "x"])), store).run("hi", session_id="s-1")
        assert result.ok
        stored = store.load("s-1").messages[-1].text
        assert stored == scrub(text or "x")
    finally:
        store.close()
