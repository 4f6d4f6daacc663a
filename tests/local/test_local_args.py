"""Argument guards of the embedded model's tool calls (no model)."""

from __future__ import annotations

import pytest

from loopwright.core.messages import Message, ToolResultPart
from loopwright.providers import local_prompt as lp
from loopwright.providers.local_args import argument_guard
from loopwright.tools.builtin import make_tools

PREFIX = lp.render_prefix([t.spec for t in make_tools(["read_file", "sql_query"])], None)
HEAD = ' {"tool": "read_file", "arguments": {"path": " '


def _guard(question: str, *results: str):
    history = [Message.user(question)] + [
        Message.tool_results([ToolResultPart(f"c{i}", "t", r)]) for i, r in enumerate(results)
    ]
    return argument_guard(PREFIX, history)


@pytest.mark.parametrize(
    ("question", "so_far", "piece", "refused"),
    [
        # The request says notes.txt; the example shows notes/todo.txt.
        ("What does notes.txt say?", "notes", "/", True),
        ("What does notes.txt say?", "notes", ".", False),
        ("What does notes.txt say?", "", "notes", False),
        # The request itself names the example's file: copying it is right.
        ("Open notes/todo.txt please", "notes", "/", False),
        # An example used as a form (its start is not the request's text) is not refused.
        ("How many orders are there?", "", "SELECT", False),
        ("How many orders are there?", "SELECT COUNT(*) FROM", " orders", False),
    ],
)
def test_a_value_copying_the_request_does_not_turn_into_an_example(
    question: str, so_far: str, piece: str, refused: bool
) -> None:
    assert "notes/todo.txt" in PREFIX  # read_file's schema example
    assert _guard(question)(HEAD + so_far, piece) is refused


@pytest.mark.parametrize(
    ("so_far", "piece", "refused"),
    [
        ("SELECT * FROM t LIMIT 100", "0", True),  # a 4th digit no context number starts
        ("SELECT * FROM t LIMIT 10", "0", False),
        ("SELECT * FROM t WHERE id = 102", "4", False),  # 1024 is in the request
        ("SELECT * FROM t WHERE id = 540", "0", True),
        ("SELECT * FROM t WHERE id = 987", "6", False),  # 9876 came from a result
    ],
)
def test_long_numbers_must_come_from_the_request_or_a_result(
    so_far: str, piece: str, refused: bool
) -> None:
    guard = _guard("Which row has id 1024?", '{"rows": [[9876]]}')
    head = ' {"tool": "sql_query", "arguments": {"query": " '
    assert guard(head + so_far, piece) is refused
