"""What the embedded strategy shows the model of a text result (``strategies.embedded.
focus``), and how an answer is held to the polarity of the results (``core.polarity``,
``strategies.embedded.grounded``)."""

from __future__ import annotations

import pytest

from loopwright.core.messages import Message, ToolResultPart
from loopwright.core.polarity import contradiction, verdict, yes_no
from loopwright.core.protocols import ModelRequest
from loopwright.core.untrusted import unwrap_untrusted, wrap_untrusted
from loopwright.strategies.embedded.focus import focused_request, relevant_text
from loopwright.strategies.embedded.grounded import current_turn, fallback_text, ungrounded

NOTES = "The team meeting is on Tuesday at 10 am in room 4."
RECIPE = "Pancakes: 200 g flour, 2 eggs, 300 ml milk. Cook for 3 minutes per side."
CONFIG = "[server]\nport = 8080\nhost = example.internal\n"
STATUS = "Build 512 passed. 0 tests failed."
TODO = "1. Buy milk\n2. Call the plumber\n3. Renew the passport\n"


@pytest.mark.parametrize(
    ("question", "text", "shown"),
    [
        # the sentence sharing the most words with the question, not the first
        ("How long should each side cook?", RECIPE, "Cook for 3 minutes per side."),
        # a clause of that sentence, when one shares more than the others
        ("How many eggs go in?", RECIPE, "Pancakes: 2 eggs."),  # with the list's lead-in
        ("How much flour is needed?", RECIPE, "Pancakes: 200 g flour."),
        ("How many eggs go into the pancakes?", RECIPE, "Pancakes: 2 eggs."),
        # a line of a file written as lines; a dot inside a name ends nothing
        ("Which host is set?", CONFIG, "host = example.internal"),
        ("Which port is set?", CONFIG, "port = 8080"),
        # a list item keeps its number
        ("Is renewing the passport on it?", TODO, "3. Renew the passport"),
        # one sentence: its head and the phrase of the kind asked for
        ("What time is the meeting?", NOTES, "The team meeting is at 10 am."),
        ("Which day is the meeting?", NOTES, "The team meeting is on Tuesday."),
        ("When does the team meet?", NOTES, "The team meeting is on Tuesday at 10 am."),
        ("Where is the meeting?", NOTES, "The team meeting is in room 4."),
        ("What room is the meeting in?", NOTES, "The team meeting is in room 4."),
        # the whole, when the question asks for it or no part is more relevant
        ("What does notes.txt say?", NOTES, NOTES),
        ("Summarize status.txt.", STATUS, STATUS),
        ("What is the second item in todo.txt?", TODO, TODO),
        # an irregular past form names the item its base form writes
        ("What needs to be bought according to todo.txt?", TODO, "1. Buy milk"),
        ("What does todo.txt say to buy?", TODO, "1. Buy milk"),
        ("Is the meeting on Friday?", NOTES, NOTES),
    ],
)
def test_the_model_is_shown_the_part_of_a_text_the_question_asks_about(
    question: str, text: str, shown: str
) -> None:
    assert relevant_text(question, text) == shown


def test_only_the_request_is_focused_json_and_errors_stay_whole() -> None:
    wrapped = wrap_untrusted(RECIPE, "tool result")
    messages = [
        Message.user("How long should each side cook? See recipe.txt."),
        Message.tool_results(
            [
                ToolResultPart("a", "read_file", wrapped),
                ToolResultPart("b", "sql_query", '{"rows": [[1, "Cook for 3"]]}'),
                ToolResultPart("c", "read_file", RECIPE, is_error=True),
            ]
        ),
    ]
    request = ModelRequest(messages)
    focused = focused_request(request)
    text, table, error = focused.messages[1].tool_results_parts
    assert unwrap_untrusted(text.content) == "Cook for 3 minutes per side."
    assert table.content == messages[1].tool_results_parts[1].content
    assert error.content == RECIPE
    # the conversation itself keeps the whole result
    assert request.messages[1].tool_results_parts[0].content == wrapped


@pytest.mark.parametrize(
    ("claim", "found"),
    [
        ("Build failed.", "passed"),
        ("Build 512 did not pass.", "passed"),
        ("Some tests failed.", "failed"),  # "0 tests failed": none did
        ("The build passed.", None),
        ("No, tests failed.", "failed"),  # "No," answers; it negates nothing
        ("No tests failed.", None),
        ("The build passed and the port is open.", None),
    ],
)
def test_a_claim_contradicting_a_sentence_on_its_topic(claim: str, found: str | None) -> None:
    assert contradiction(claim, [STATUS]) == found


@pytest.mark.parametrize(
    ("question", "texts", "answer"),
    [
        ("Did the build pass according to status.txt?", [STATUS], "Yes"),
        ("Did the build fail? Check status.txt.", [STATUS], "No"),
        ("Did any tests fail according to status.txt?", [STATUS], "No"),
        ("Is port 9090 used in config.ini?", [CONFIG], "No"),
        ("Is port 8080 used in config.ini?", [CONFIG], "Yes"),
        # every word of the question in one sentence of a text that negates nothing
        ("Is renewing the passport on the list in todo.txt?", [TODO], "Yes"),
        ("Is buying bread on the list in todo.txt?", [TODO], ""),
        ("Is the lamp in stock?", ['{"columns": ["name", "stock"], "rows": [["lamp", 0]]}'], ""),
        # not answered plainly by the text: left to the model
        ("Is the meeting on Friday?", [NOTES], ""),
        ("What does status.txt say?", [STATUS], ""),
    ],
)
def test_a_yes_no_question_the_text_answers_plainly(
    question: str, texts: list[str], answer: str
) -> None:
    assert verdict(yes_no(question), texts) == answer


def _turn(question: str, *results: str) -> object:
    return current_turn(
        [Message.user(question)]
        + [
            Message.tool_results([ToolResultPart(f"c{i}", "read_file", r)])
            for i, r in enumerate(results)
        ]
    )


@pytest.mark.parametrize(
    ("answer", "question", "why"),
    [
        ("Build 512 failed.", "What does status.txt say about the build?", "opposite"),
        ("Yes, tests failed.", "Did any tests fail according to status.txt?", "opposite"),
        ("Yes, 0 tests failed.", "Did any tests fail according to status.txt?", "answers"),
        ("No, build 512 passed.", "Did the build pass according to status.txt?", ""),
        ("Yes, build 512 passed.", "Did the build pass according to status.txt?", None),
        ("No, 0 tests failed.", "Did any tests fail according to status.txt?", None),
        # the question's framing ("on the list in todo.txt") is no claim of a given "Yes"
        ("Yes, renew the passport.", "Is renewing the passport on the list in todo.txt?", None),
    ],
)
def test_an_answer_against_the_polarity_of_the_result_is_not_grounded(
    answer: str, question: str, why: str | None
) -> None:
    text = TODO if "todo" in question else STATUS
    reason = ungrounded(answer, _turn(question, text))  # type: ignore[arg-type]
    assert (reason is None) if why is None else (reason is not None and why in reason)


def test_the_fallback_shows_the_part_of_a_text_the_question_asks_about() -> None:
    turn = _turn("How long should each side cook? See recipe.txt.", RECIPE)
    shown = fallback_text(turn)  # type: ignore[arg-type]
    assert "Cook for 3 minutes per side." in shown
    assert "flour" not in shown


def test_the_fallback_shows_the_rows_the_question_names() -> None:
    table = (
        '{"columns": ["id", "name", "city"], "rows": [[1, "Ana", "Berlin"], [2, "Bo", "Paris"]]}'
    )
    shown = fallback_text(_turn("Which city is Bo from?", table))  # type: ignore[arg-type]
    assert '[[2, "Bo", "Paris"]]' in shown and "Ana" not in shown
    assert "Ana" in fallback_text(_turn("Which cities are listed?", table))  # type: ignore[arg-type]


def test_a_failing_answer_is_cut_to_its_leading_clauses_that_pass() -> None:
    """'There are 1,  respectively .' (a blank left after the count) was replaced by the
    fallback; its first clause states the result."""
    from loopwright.strategies.embedded.grounded import grounded_head

    count = '{"columns": ["COUNT(*)"], "rows": [[1]]}'
    turn = current_turn(
        [
            Message.user("How many customers live in Paris?"),
            Message.tool_results([ToolResultPart("c", "sql_query", count)]),
        ]
    )
    assert grounded_head("There are 1,  respectively .", turn) == "There are 1."
    assert grounded_head("It is,  respectively .", turn) is None  # too short, no value


def test_the_shown_part_of_a_list_is_the_item_the_question_names() -> None:
    """A fallback for 'What is the last item in todo.txt?' showed the whole list."""
    from loopwright.strategies.embedded.focus import shown_part

    todo = "1. Buy milk\n2. Call the plumber\n3. Renew the passport\n"
    assert shown_part("What is the last item in todo.txt?", todo) == "3. Renew the passport"
    assert shown_part("What is the second item in todo.txt?", todo) == "2. Call the plumber"
    assert shown_part("What does todo.txt say?", todo) == todo


@pytest.mark.parametrize(
    ("question", "text", "shown"),
    [
        ("What is the first ingredient in recipe.txt?", RECIPE, "Pancakes: 200 g flour."),
        ("What is the last ingredient in recipe.txt?", RECIPE, "Pancakes: 300 ml milk."),
        ("What is the middle item of todo.txt?", TODO, "2. Call the plumber"),
        ("What is the first item on todo.txt?", TODO, "1. Buy milk"),
        ("How long should each side cook?", RECIPE, None),
    ],
)
def test_the_item_named_by_position_is_what_the_model_reads(
    question: str, text: str, shown: str | None
) -> None:
    """'The first ingredient in recipe is pancakes: 200 g flour, ...': the model read
    the whole list and took its lead-in for the first item."""
    from loopwright.strategies.embedded.focus import item_text

    assert item_text(question, text) == shown
    if shown is not None:
        request = ModelRequest(
            messages=(
                Message.user(question),
                Message.tool_results((ToolResultPart("c1", "read_file", text),)),
            )
        )
        assert focused_request(request).messages[1].tool_results_parts[0].content == shown
