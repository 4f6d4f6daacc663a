"""The answer focus on a row a question names by a number (``local_rows``)."""

from __future__ import annotations

import json

import pytest

from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.providers import local_answer as la

PRODUCTS = json.dumps(
    {
        "columns": ["name", "price", "stock"],
        "rows": [["lamp", 40, 3], ["chair", 85, 12], ["desk", 240, 5]],
        "row_count": 3,
    }
)
ORDERS = json.dumps(
    {
        "columns": ["id", "customer_id", "total"],
        "rows": [[i, 1 + i % 4, 10.0 * i] for i in range(1, 8)],
        "row_count": 7,
    }
)


def _ground(question: str, content: str) -> la.Grounding:
    return la.grounding(
        [
            Message.user(question),
            Message("assistant", (ToolCallPart("c1", "sql_query", {"query": "q"}, "{}"),)),
            Message.tool_results([ToolResultPart("c1", "sql_query", content)]),
        ]
    )


@pytest.mark.parametrize(
    "question",
    ["Which product costs 85? Use the products table.", "Which product has 12 in stock?"],
)
def test_a_row_named_by_a_value_is_answered_by_its_name(question: str) -> None:
    ground = _ground(question, PRODUCTS)
    assert ground.labels == ("chair",) and ground.by_label and ground.latest == ()
    # only the row's own numbers may be written: not another row's price
    assert "40" not in ground.allowed and "240" not in ground.allowed


@pytest.mark.parametrize(("order", "total"), [("5", "50.0"), ("3", "30.0")])
def test_a_row_named_by_its_id_is_answered_by_its_value(order: str, total: str) -> None:
    ground = _ground(f"What is the total of order {order} in the orders table?", ORDERS)
    # not the id, not the customer id, not another row's total
    assert ground.latest == (total,)
    assert "10.0" not in ground.allowed
    customer = str(1 + int(order) % 4)
    assert customer not in ground.results


@pytest.mark.parametrize(
    "question",
    [
        "How many orders have a total below 30? Use the orders table.",
        "Which orders have a total above 40?",
    ],
)
def test_a_count_or_a_bound_names_no_row(question: str) -> None:
    assert "10.0" in _ground(question, ORDERS).allowed


def test_a_result_of_only_the_question_numbers_is_answered_by_a_label() -> None:
    row = json.dumps({"columns": ["id", "name", "city"], "rows": [[2, "Bob", "Paris"]]})
    ground = _ground("Which customer has id 2 in the customers table?", row)
    assert ground.by_label and ground.latest == () and "Paris" in ground.labels


def test_only_a_list_item_number_continues_a_sentence() -> None:
    """ "The product costs 85. The price is 85 and the row chair ..." ran one grammar
    sentence on past "85. " to the label it had to state; "1. Buy milk" may."""
    products = _ground("Which product costs 85? Use the products table.", PRODUCTS)
    assert products.positions == ()
    assert 'num ". "' not in la.answer_grammar(products)
    todo = la.grounding(
        [
            Message.user("What does todo.txt say?"),
            Message.tool_results(
                [ToolResultPart("c1", "read_file", "1. Buy milk\n2. Call the plumber\n")]
            ),
        ]
    )
    assert todo.positions == ("1", "2")
    assert 'pos ". "' in la.answer_grammar(todo)


def test_the_one_row_a_query_selected_by_the_question_number_is_named() -> None:
    """'SELECT * FROM products WHERE price = 85' -> one row: 'The product costs 85.'
    restated the question; the row's name is what it asks."""
    row = json.dumps({"columns": ["name", "price", "stock"], "rows": [["chair", 85, 12]]})
    ground = _ground("Which product costs 85? Use the products table.", row)
    assert ground.labels == ("chair",) and ground.by_label


@pytest.mark.parametrize(
    ("question", "row", "value"),
    [
        # the row a superlative picked, and the column the question names in it
        ("What is the stock of the cheapest product? Use the products table.", 0, "3"),
        ("What is the price of the most expensive product?", 2, "240"),
    ],
)
def test_the_column_a_question_names_is_stated_of_the_one_row(
    question: str, row: int, value: str
) -> None:
    """'The cheapest product is lamp.' answered the stock of the cheapest product: the
    row's name, not the asked column."""
    picked = json.loads(PRODUCTS)["rows"][row]
    one = json.dumps({"columns": ["name", "price", "stock"], "rows": [picked]})
    ground = _ground(question, one)
    assert ground.latest == (value,) and not ground.by_label and ground.labels == ()


def test_a_named_column_of_a_named_row_is_its_value() -> None:
    ground = _ground("How much stock does the chair have? Use the products table.", PRODUCTS)
    assert ground.latest == ("12",)


def test_how_many_of_a_named_row_asks_its_quantity_column() -> None:
    """'How many desks do we still have?' was answered 'There are 240 desks left in
    stock.' (240 is the desk's price): counting the row's thing asks its stock."""
    desk = json.dumps({"columns": ["name", "price", "stock"], "rows": [["desk", 240, 5]]})
    ground = _ground("How many desks do we still have? Check the products table.", desk)
    assert ground.latest == ("5",)
    # a count of rows, not of a row's thing, is not a quantity column's value
    assert _ground("How many products cost more than 50?", desk).latest != ("5",)


def test_an_identifier_column_the_question_names_is_its_answer() -> None:
    """'What is the customer id of order 3?' was answered 'The customer id is 3': the
    customer_id column's value was kept out as an identifier."""
    order = json.dumps({"columns": ["id", "customer_id", "total"], "rows": [[3, 4, 30.0]]})
    ground = _ground("What is the customer id of order 3 in the orders table?", order)
    assert "4" in ground.allowed and "4" in ground.latest
    total = _ground("What is the total of order 3 in the orders table?", order)
    assert "4" not in total.allowed  # not named: an identifier, not the total


def test_a_question_asking_which_row_is_not_answered_by_the_sort_column() -> None:
    """'Which product has the most stock?' was answered 'The product with the most stock
    is the chair with a price 12.': the stock the row was picked by is not the answer."""
    one = json.dumps({"columns": ["name", "stock"], "rows": [["chair", 12]]})
    ground = _ground("Which product has the most stock in the products table?", one)
    assert "chair" in ground.labels  # the row's name may be the answer
    asked = _ground("What is the stock of the product with the most stock?", one)
    assert asked.labels == () and asked.latest == ("12",)
