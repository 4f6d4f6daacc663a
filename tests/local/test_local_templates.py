"""Values of a call the runtime completes from the request or the call itself (no model):
placeholders of a template filled, a span named next to the parameter's own word, the
"to" side of a change, a quoted span copied from its start."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from loopwright.core.messages import Message
from loopwright.core.tools import ToolSpec
from loopwright.providers.local_args import argument_guard
from loopwright.providers.local_ground import Grounding, grounded_arguments
from loopwright.providers.local_names import changed_to, named_span
from loopwright.providers.local_spans import starts_inside_quote
from loopwright.providers.local_templates import PLACEHOLDER, fill, fill_templates

NODES_URL = "https://<ip>/api/telemetry/nodes?fabricName={fabricName}"
URL_TOOL = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "default": NODES_URL},
        "fabricName": {"type": "string"},
    },
    "required": ["fabricName"],
}


def test_a_left_out_default_template_is_added_filled_from_the_call_and_the_request() -> None:
    request = "get list of nodes for fabric fab-ed and ip is 3.321.3232.2"
    out = fill_templates(URL_TOOL, {"fabricName": "fab-ed"}, request)
    assert out == {
        "fabricName": "fab-ed",
        "url": "https://3.321.3232.2/api/telemetry/nodes?fabricName=fab-ed",
    }


def test_a_template_the_model_copied_from_the_request_is_filled() -> None:
    request = (
        "Get the summary using the URL formatted as 'https://{ip}/v1/summary', "
        "where {ip} is the IP address '192.168.1.1'"
    )
    params = {"type": "object", "properties": {"url": {"type": "string"}}}
    out = fill_templates(params, {"url": "https://{ip}/v1/summary"}, request)
    assert out == {"url": "https://192.168.1.1/v1/summary"}


def test_a_template_with_a_placeholder_nothing_fills_is_left_as_it_was() -> None:
    # no IP address in the request: the default stays the tool's own
    assert fill_templates(URL_TOOL, {"fabricName": "x"}, "nodes of fabric x") == {"fabricName": "x"}
    # two different addresses: which one is meant is not known
    assert fill("http://<ip>/", {}, "from 10.0.0.1 to 10.0.0.2") is None
    # an e-mail placeholder takes the one address the request writes
    assert fill("to:{email}", {}, "mail bo@example.org now") == "to:bo@example.org"


def test_values_without_placeholders_and_non_string_defaults_are_untouched() -> None:
    params = {
        "type": "object",
        "properties": {"n": {"type": "integer", "default": 3}, "s": {"type": "string"}},
    }
    assert fill_templates(params, {"s": "plain {"}, "x") == {"s": "plain {"}


_NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,10}", fullmatch=True)
_PLAIN = st.text(alphabet=st.characters(blacklist_characters="{}<>"), max_size=30)


@given(_PLAIN, st.dictionaries(_NAME, _PLAIN, max_size=3), _PLAIN)
def test_text_without_placeholders_is_never_changed(
    text: str, arguments: dict[str, Any], request: str
) -> None:
    assert fill(text, arguments, request) is None
    assert fill_templates({"type": "object"}, {**arguments, "v": text}, request)["v"] == text


@given(
    st.lists(st.tuples(_NAME, _PLAIN), min_size=1, max_size=3, unique_by=lambda p: p[0].lower()),
    st.lists(_PLAIN, min_size=1, max_size=4),
    st.booleans(),
)
def test_every_placeholder_naming_an_argument_takes_its_value(
    pairs: list[tuple[str, str]], glue: list[str], angled: bool
) -> None:
    keys = {re.sub(r"[\W_]+", "", k).lower() for k, _ in pairs}
    if len(keys) < len(pairs):
        return  # two names the same without case and separators
    names = [k for k, _ in pairs]
    marks = [f"<{n}>" if angled else "{" + n + "}" for n in names]
    template = glue[0] + "".join(m + g for m, g in zip(marks, glue[1:] + [""] * 3, strict=False))
    filled = fill(template, dict(pairs), "")
    assert filled is not None
    assert PLACEHOLDER.search(filled) is None
    assert all(value in filled for _, value in pairs)


def test_a_name_or_code_between_an_article_and_the_parameters_word_is_its_value() -> None:
    free = {"type": "string"}
    assert named_span("command", free, "show the date using the echo %date% command") == (
        "echo %date%"
    )
    assert named_span("fabricName", free, "in pod 10 of the Network1 fabric") == "Network1"
    # a plain modifier, an enum, or a word that only says the kind: no value
    assert named_span("city", free, "restaurants in the nearby city") is None
    assert named_span("command", {"type": "string", "enum": ["ls"]}, "the ls -l command") is None
    assert named_span("user_name", free, "the Admin name") is None
    # the word capitalized is part of a name; a function word joins two phrases
    assert named_span("city", free, "the distance between New York City and Rome") is None
    assert named_span("case_id", free, "details of the R vs Adams legal case") is None
    assert named_span("rank", free, "Find a Card of rank 'Queen'") is None
    assert named_span("season", free, "stats in the 2019-2020 season") == "2019-2020"
    # two different spans: which one is meant is not known
    assert named_span("command", free, "the ls -l command or the dir /w command") is None


def test_an_optional_parameter_named_so_becomes_required_with_that_value() -> None:
    spec = ToolSpec(
        "execute",
        "Run a command.",
        {
            "type": "object",
            "properties": {"command": {"type": "string"}, "note": {"type": "string"}},
        },
    )
    ground = Grounding("open camera, using the start microsoft.windows.camera: command")
    schema = grounded_arguments(spec, ground)
    assert schema["properties"]["command"]["enum"] == ["start microsoft.windows.camera:"]
    assert "command" in schema["required"]


def test_of_two_named_values_a_change_asks_for_the_one_after_to() -> None:
    values = ["PIZZA", "BURGER", "SALAD"]
    request = "I would like to switch my order from pizza to a BURGER."
    assert changed_to(["PIZZA", "BURGER"], "TheFod", request) == ["BURGER"]
    # a parameter that is the start of the change keeps both (it is not narrowed here)
    assert changed_to(["PIZZA", "BURGER"], "from_food", request) == ["PIZZA", "BURGER"]
    # no "from ... to" between them: unchanged
    assert changed_to(["PIZZA", "SALAD"], "food", "pizza and salad please") == ["PIZZA", "SALAD"]
    spec = ToolSpec(
        "order",
        "Change the order.",
        {
            "type": "object",
            "properties": {"food": {"type": "string", "enum": values}},
            "required": ["food"],
        },
    )
    schema = grounded_arguments(spec, Grounding(request))
    assert schema["properties"]["food"]["enum"] == ["BURGER"]


TODO = "hi, my name is charlie. remove the 'todo random' item from my todo list"


def test_a_copy_of_a_quoted_span_starts_where_the_span_does() -> None:
    assert starts_inside_quote("random", TODO)
    assert not starts_inside_quote("todo random", TODO)
    assert not starts_inside_quote("todo", TODO)  # also written outside the quote
    marked = "it replied with '**logistic regression is absent, so i cannot answer.**' ok?"
    assert starts_inside_quote("regression", marked)
    assert not starts_inside_quote("logistic", marked)  # the markup is not the start
    assert not starts_inside_quote("random", "no quotes here: random")


def test_the_guard_refuses_a_first_word_from_inside_a_quote() -> None:
    spec = ToolSpec(
        "todo",
        "Manage a todo list.",
        {
            "type": "object",
            "properties": {"content": {"type": "string"}},
            "required": ["content"],
        },
    )
    guard = argument_guard("", [Message.user(TODO.capitalize())], [spec])
    text = '{"tool": "todo", "arguments": {"content": "'
    assert guard(text, " random")
    assert not guard(text, " todo")
    assert not guard(text + " todo", " random")


_WORDS = st.lists(st.from_regex(r"[a-z]{2,8}", fullmatch=True), min_size=1, max_size=6)


@given(_WORDS, _WORDS, _WORDS)
def test_a_copy_from_the_start_of_a_quoted_span_is_never_refused(
    before: list[str], quoted: list[str], after: list[str]
) -> None:
    context = " ".join(before) + " '" + " ".join(quoted) + "' " + " ".join(after)
    for n in range(1, len(quoted) + 1):
        assert not starts_inside_quote(" ".join(quoted[:n]), context)


def test_a_value_does_not_start_with_a_run_of_spaces() -> None:
    # refused a first word from inside a quote, the model padded a list item with
    # spaces ("                   "); one space (the prompt's own) is all a value starts with
    guard = argument_guard("", [Message.user(TODO.capitalize())], [])
    text = '{"tool": "todo", "arguments": {"content": "'
    assert guard(text, "  ")
    assert guard(text + " ", " ")
    assert not guard(text, " todo")
    assert not guard(text + " todo", " random")  # spaces inside a value are fine
