"""PromptTemplate: strict variables, JSON values, escaped braces, fingerprints."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core import UserError
from loopwright.prompts import PromptTemplate, PromptText, TemplateError, fingerprints_of


def router() -> PromptTemplate:
    return PromptTemplate(
        "router",
        "2.0",
        'Tools:\n{tool_descriptions}\nRequest: {user_input}\nJSON: {{"tool_name": "..."}}',
    )


def test_variables_are_discovered_in_order() -> None:
    assert router().variables == ("tool_descriptions", "user_input")


def test_typo_in_variable_is_named_with_suggestion_and_expected_list() -> None:
    with pytest.raises(TemplateError) as info:
        router().render(tool_descriptions="x", user_inpt="hi")
    msg = str(info.value)
    assert "'user_inpt'" in msg and "did you mean 'user_input'" in msg
    assert "expects: tool_descriptions, user_input" in msg
    assert isinstance(info.value, UserError)


def test_missing_variable_is_an_error() -> None:
    with pytest.raises(TemplateError, match=r"missing variable.*'user_input'"):
        router().render(tool_descriptions="x")


def test_values_render_as_json_and_braces_stay_literal() -> None:
    t = PromptTemplate("t", "1", "{a} {b} {c} {d} {{x}}")
    out = t.render(a={"k": [1, 2]}, b=True, c=None, d="plain")
    assert out.startswith('{\n  "k": [\n    1,\n    2\n  ]\n}')
    assert out.endswith(" true null plain {x}")


def test_unrenderable_value_is_named() -> None:
    with pytest.raises(TemplateError, match="variable 'a' is a set"):
        PromptTemplate("t", "1", "{a}").render(a={1, 2})


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a {b c}", "line 1 column 3"),
        ("ok\n  } oops", "line 2 column 3"),
        ("{1x}", "line 1 column 1"),
    ],
)
def test_malformed_braces_fail_at_build_time_with_position(text: str, where: str) -> None:
    with pytest.raises(TemplateError, match=where):
        PromptTemplate("bad", "1.0", text)


def test_fingerprint_names_version_and_content_hash() -> None:
    a = router()
    assert a.fingerprint.startswith("router@2.0#") and len(a.hash) == 12
    b = PromptTemplate("router", "2.0", a.text + " ")
    assert a.fingerprint != b.fingerprint
    rendered = a.render(tool_descriptions="x", user_input="y")
    assert isinstance(rendered, PromptText) and rendered.fingerprints == (a.fingerprint,)
    assert fingerprints_of(rendered, "plain", rendered) == (a.fingerprint,)


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=200))
def test_text_without_braces_renders_unchanged(text: str) -> None:
    assert PromptTemplate("t", "1", text).render() == text


@settings(max_examples=300)
@given(st.text(max_size=200), st.text(max_size=50))
def test_escaped_text_round_trips_and_values_are_inserted_verbatim(text: str, value: str) -> None:
    escaped = text.replace("{", "{{").replace("}", "}}")
    t = PromptTemplate("t", "1", escaped + "{v}")
    assert t.variables == ("v",)
    assert t.render(v=value) == text + value


def test_request_fingerprints_collects_system_and_prompt_messages() -> None:
    from loopwright.core import Message
    from loopwright.prompts import prompt_message, request_fingerprints

    system = router().render(tool_descriptions="x", user_input="y")
    other = PromptTemplate("planner", "1.0", "plan {x}")
    msg = prompt_message(other.render(x=1))
    assert msg.provider_meta["loopwright"]["prompt_fingerprints"] == [other.fingerprint]
    fps = request_fingerprints(system, [Message.user("hi"), msg, msg])
    assert fps == (router().fingerprint, other.fingerprint)
    assert request_fingerprints("plain", []) == ()


# -- JSON values render exactly as json.dumps(indent=2, ensure_ascii=False) -------------
_json_data = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(value=_json_data)
def test_json_values_render_exactly_like_json_dumps(value: object) -> None:
    template = PromptTemplate("t", "1", "<{v}>")
    if not isinstance(value, (dict, list, tuple)):
        value = [value]
    expected = json.dumps(value, indent=2, ensure_ascii=False)
    assert template.render(v=value) == f"<{expected}>"


def test_unusual_json_values_take_the_standard_path() -> None:
    template = PromptTemplate("t", "1", "{v}")
    assert template.render(v={1: [True, None]}) == '{\n  "1": [\n    true,\n    null\n  ]\n}'
    cyclic: list[object] = []
    cyclic.append(cyclic)
    with pytest.raises(TemplateError, match="Circular reference"):
        template.render(v=cyclic)
    with pytest.raises(TemplateError, match="cannot be rendered as JSON"):
        template.render(v={"a": object()})


@pytest.mark.parametrize(
    ("name", "version", "text", "field"),
    [
        ("", "1.0", "hi", "name"),
        ("  ", "1.0", "hi", "name"),
        ("a@b", "1.0", "hi", "name"),
        ("router", "", "hi", "version"),
        ("router", "1#2", "hi", "version"),
        ("router", 1.0, "hi", "version"),
        ("router", "1.0", None, "text"),
    ],
)
def test_a_template_that_its_fingerprint_cannot_name_is_refused(
    name: object, version: object, text: object, field: str
) -> None:
    with pytest.raises(TemplateError, match=field):
        PromptTemplate(name, version, text)  # type: ignore[arg-type]
