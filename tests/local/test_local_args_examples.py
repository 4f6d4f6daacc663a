"""Argument guards on values a worked example shows but the request does not ask for,
and on a copied word's case (no model)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopwright.core.messages import Message
from loopwright.core.tools import ToolSpec
from loopwright.providers import local_prompt as lp
from loopwright.providers.local_args import argument_guard
from loopwright.tools.builtin.email import SPEC as EMAIL

EMAIL_PREFIX = lp.render_prefix([EMAIL], None)


def _email_guard(question: str):
    return argument_guard(EMAIL_PREFIX, [Message.user(question)], [EMAIL])


def _head(key: str) -> str:
    return f' {{"tool": "send_email", "arguments": {{"to": " ana@example.com", "{key}": " '


@pytest.mark.parametrize(
    ("question", "key", "so_far", "piece", "refused"),
    [
        # The examples' subject and body say nothing this request says.
        ("Email ana@example.com that I will be late today.", "subject", "", "Meeting", True),
        ("Email ana@example.com that I will be late today.", "subject", "Me", "eting", True),
        ("Email ana@example.com that I will be late today.", "body", "The", " meeting", True),
        # "The" is a function word: a body may start with it.
        ("Email ana@example.com that I will be late today.", "body", "", "The", False),
        # The request's own words are copied as it writes them.
        ("Email ana@example.com that I will be late today.", "subject", "", "I", False),
        (
            "Email ana@example.com that I will be late today.",
            "subject",
            "I will be",
            " late",
            False,
        ),
        # A request about the meeting may use the example's words it writes ...
        ("Email ana@example.com: the meeting moved to Friday.", "subject", "", "Meeting", False),
        (
            "Email ana@example.com: the meeting moved to Friday.",
            "subject",
            "Meeting",
            " moved",
            False,
        ),
        # ... but not the ones it does not: "now" of "The meeting is now at 3 pm."
        (
            "Email ana@example.com: the meeting is cancelled.",
            "body",
            "The meeting is",
            " now",
            True,
        ),
        ("Email ana@example.com: the meeting is cancelled.", "body", "The meeting is", " c", False),
    ],
)
def test_an_example_value_the_request_does_not_ask_for_is_not_copied(
    question: str, key: str, so_far: str, piece: str, refused: bool
) -> None:
    assert "Meeting moved" in EMAIL_PREFIX and "The meeting is now at 3 pm." in EMAIL_PREFIX
    assert _email_guard(question)(_head(key) + so_far, piece) is refused


def test_an_example_that_is_a_form_is_still_followed() -> None:
    """``Asia/Tokyo`` shows a form (one token with a sign): the request names Tokyo, and
    the value takes the example's form, region included."""
    spec = ToolSpec(
        "convert_time",
        "Convert a time to another timezone.",
        {
            "type": "object",
            "properties": {"timezone": {"type": "string", "examples": ["Asia/Tokyo"]}},
            "required": ["timezone"],
        },
    )
    prefix = lp.render_prefix([spec], None)
    guard = argument_guard(prefix, [Message.user("What time is it in Tokyo?")], [spec])
    head = ' {"tool": "convert_time", "arguments": {"timezone": " '
    assert not guard(head, "Asia")
    assert not guard(head + "Asia", "/")


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)


@given(st.lists(_WORD, min_size=1, max_size=8), st.integers(0, 7), st.integers(1, 8))
def test_a_copy_of_the_request_is_never_refused_as_an_example(
    words: list[str], start: int, length: int
) -> None:
    """Whatever the examples show, a value that copies a span of the request (every
    prefix of it, cut anywhere) is not an unasked example."""
    question = "Email ana@example.com " + " ".join(words)
    guard = _email_guard(question)
    span = " ".join(words[start % len(words) :][:length])
    for cut in range(1, len(span) + 1):
        assert not guard._copies_example("subject", span[:cut].lower())


@pytest.mark.parametrize(
    ("question", "so_far", "piece", "refused"),
    [
        ("Forecast house prices from interest rates.", "interest rate", "S", True),
        ("Forecast house prices from interest rates.", "interest rate", "s", False),
        ("Include points, assists and minutes.", "assist", "Sa", True),
        # The request writes the word with inner capitals: copied as written.
        ("Query the fabricName field.", "fabric", "Name", False),
    ],
)
def test_a_copied_word_keeps_the_requests_case_inside_it(
    question: str, so_far: str, piece: str, refused: bool
) -> None:
    guard = argument_guard(EMAIL_PREFIX, [Message.user(question)], [EMAIL])
    assert guard(_head("body") + so_far, piece) is refused


def test_capitals_in_a_word_the_request_does_not_write_are_left_to_other_rules() -> None:
    guard = argument_guard(EMAIL_PREFIX, [Message.user("Forecast house prices.")], [EMAIL])
    assert not guard._switches_case("house", "Hold")


@given(st.lists(st.text(alphabet="abcXYZ", min_size=1, max_size=6), min_size=1, max_size=6))
def test_a_value_written_as_the_request_writes_it_keeps_its_case(words: list[str]) -> None:
    question = " ".join(words)
    guard = argument_guard(EMAIL_PREFIX, [Message.user(question)], [EMAIL])
    for cut in range(1, len(question)):
        assert not guard._switches_case(question[:cut], question[cut:])
