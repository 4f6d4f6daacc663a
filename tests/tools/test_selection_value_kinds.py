"""The value kinds read from a request (selection_lexical.query_text) take time linear
in its length: the request is the user's, of any size."""

from __future__ import annotations

import time

import pytest

from loopwright.tools.selection_lexical import query_text


@pytest.mark.parametrize("unit", ["a-", "a.", "a+", "1"])
def test_long_runs_of_name_characters_are_read_in_linear_time(unit: str) -> None:
    # "[\w.+-]+@" and "\b[\w-]+\." were tried from every position of a run and each
    # scanned the rest of it: 20,000 "a-" took 27 s
    text = unit * 20_000
    started = time.perf_counter()
    query_text(text)
    assert time.perf_counter() - started < 5.0


@pytest.mark.parametrize(
    ("request_text", "kind"),
    [
        ("mail bob.smith+x@example.com the notes", "email"),
        ("open quarterly-report.pdf please", "file"),
        ("read notes.txt", "file"),
        ("what is in data_2024.csv?", "file"),
    ],
)
def test_emails_and_file_names_are_still_found(request_text: str, kind: str) -> None:
    assert query_text(request_text).endswith(kind)


def test_a_word_without_a_file_extension_is_no_file() -> None:
    assert "file" not in query_text("a-b-c-d.e and x@y")
