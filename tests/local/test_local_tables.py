"""SQL held to the tables a tool describes (``strategies.embedded.tables``,
``tools.builtin.sql_pattern.select_pattern``) and the grammar honouring it (``local_prompt``)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from loopwright.core.messages import Message
from loopwright.core.protocols import ModelRequest
from loopwright.providers import local_prompt as lp
from loopwright.strategies.embedded.tables import (
    asked_tables,
    held_to_tables,
    query_shape,
    request_held_to_tables,
    request_literals,
    request_values,
)
from loopwright.tools.builtin import BuiltinConfig, make_tools
from loopwright.tools.builtin.sql import described_tables, described_values
from loopwright.tools.builtin.sql_pattern import select_pattern


@pytest.fixture()
def spec(tmp_path: Path):  # type: ignore[no-untyped-def]
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER, customer_id INTEGER, total REAL)")
        conn.execute("CREATE TABLE products (name TEXT, price INTEGER, stock INTEGER)")
        conn.execute("INSERT INTO orders VALUES (1, 2, 10.0)")
        conn.execute("INSERT INTO products VALUES ('lamp', 40, 3)")
    (tool,) = make_tools(["sql_query"], BuiltinConfig(root=tmp_path, database=db))
    return tool.spec


def test_the_described_tables_are_read_back(spec) -> None:  # type: ignore[no-untyped-def]
    assert described_tables(spec.description) == {
        "orders": {"id": "INTEGER", "customer_id": "INTEGER", "total": "REAL"},
        "products": {"name": "TEXT", "price": "INTEGER", "stock": "INTEGER"},
    }
    untyped = "the database tables t(a, b)"
    assert described_tables(untyped) == {"t": {"a": "", "b": ""}}
    # a description may give a column's kind: it takes literals of that kind only
    typed = "the database tables t(a INTEGER, b TEXT)"
    assert described_tables(typed) == {"t": {"a": "INTEGER", "b": "TEXT"}}
    pattern = select_pattern(described_tables(typed), ["5", "desk"])
    assert re.fullmatch(pattern, "SELECT * FROM t WHERE a > 5")
    assert not re.fullmatch(pattern, "SELECT * FROM t WHERE a > 'desk'")
    assert described_tables("Query the database with one read-only SQL SELECT.") == {}


@pytest.mark.parametrize(
    ("query", "fits"),
    [
        ("SELECT * FROM orders", True),
        (" SELECT COUNT(*) FROM orders WHERE total > 40", True),
        ("SELECT total FROM orders WHERE id = 5", True),
        ("SELECT name FROM products ORDER BY price DESC LIMIT 1", True),
        ("SELECT name FROM products WHERE price >= 50 AND stock < 10", True),
        ("SELECT name FROM products WHERE name = 'desk'", True),
        ("SELECT SUM(total) FROM orders", True),
        # what the model wrote before: a FROM list that runs on, a comparison SQL
        # lacks, a column of another table
        ("SELECT * FROM products, orders, customers, stock as stock", False),
        ("SELECT COUNT(*) FROM orders WHERE total ABOVE 40", False),
        ("SELECT price FROM orders", False),
        # an aggregate to sort by, without GROUP BY: "misuse of aggregate"
        ("SELECT * FROM orders ORDER BY COUNT(*) DESC LIMIT 3", False),
    ],
)
def test_the_pattern_takes_plain_selects_on_the_tables(spec, query: str, fits: bool) -> None:  # type: ignore[no-untyped-def]
    pattern = select_pattern(described_tables(spec.description))
    assert (re.fullmatch(pattern, query) is not None) is fits


def test_the_model_sees_the_pattern_the_tool_keeps_its_schema(spec) -> None:  # type: ignore[no-untyped-def]
    held = held_to_tables(spec)
    assert "pattern" in held.parameters["properties"]["query"]
    assert "pattern" not in spec.parameters["properties"]["query"]
    request = ModelRequest([Message.user("How many orders?")], tools=[spec])
    assert request_held_to_tables(request).tools[0] == held_to_tables(spec, "How many orders?")
    # the provider's grammar schema holds the string to it
    bounded = lp._bounded(held.parameters, lp.GrammarBounds(), 0)
    assert (
        bounded["properties"]["query"]["pattern"]
        == held.parameters["properties"]["query"]["pattern"]
    )


def test_the_model_is_shown_no_kinds_and_its_grammar_keeps_them(spec) -> None:  # type: ignore[no-untyped-def]
    """'What is the price of the desk?' was written "WHERE price = 'desk' AND price >
    'desk'" (no rows): the kinds the tool describes hold a number column to numbers,
    while the small model's prompt lists the columns as before, without kinds."""
    asked = "What is the price of the desk in the products table?"
    held = held_to_tables(spec, asked)
    assert "products(name, price, stock)" in held.description
    assert "INTEGER" not in held.description and "INTEGER" in spec.description
    pattern = held.parameters["properties"]["query"]["pattern"]
    assert re.fullmatch(pattern, "SELECT * FROM products WHERE name = 'desk'")
    assert not re.fullmatch(pattern, "SELECT * FROM products WHERE price = 'desk'")
    assert not re.fullmatch(pattern, "SELECT * FROM products WHERE price > 'desk'")


def test_tools_without_described_tables_are_unchanged() -> None:
    (calc,) = make_tools(["calculator"])
    assert held_to_tables(calc.spec) is calc.spec


def test_a_declared_pattern_is_honoured_only_when_llama_cpp_can_convert_it() -> None:
    assert lp.declared_pattern({"type": "string", "pattern": "^[a-z]+$"}) == "^[a-z]+$"
    assert lp.declared_pattern({"type": "string", "pattern": "[a-z]+"}) is None
    assert lp.declared_pattern({"type": "string", "pattern": "^(?i)[a-z]+$"}) is None


def test_comparisons_take_only_the_values_the_request_states(spec) -> None:  # type: ignore[no-untyped-def]
    asked = "What is the price of the desk in the products table?"
    held = held_to_tables(spec, asked)
    pattern = held.parameters["properties"]["query"]["pattern"]
    assert re.fullmatch(pattern, "SELECT price FROM products WHERE name = 'desk'")
    # the value the model made up before
    assert not re.fullmatch(pattern, "SELECT * FROM products WHERE price = 100.000")
    numbered = held_to_tables(spec, "What is the total of order 5?")
    pattern = numbered.parameters["properties"]["query"]["pattern"]
    assert re.fullmatch(pattern, "SELECT total FROM orders WHERE id = 5")
    assert not re.fullmatch(pattern, "SELECT total FROM orders WHERE id = 50")
    # a plural word's singular too: a row holds one ("WHERE name = 'lamp'" for "lamps")
    assert request_literals("Who lives in Oslo? 2.5") == ["2.5", "lives", "Oslo", "live"]
    # neither a word for the database's parts nor an instruction's opening word
    asked = "Which product costs 85? Use the products table."
    assert request_literals(asked, ["products"]) == ["85", "costs", "cost"]
    # a table's name in the singular is not a value ("WHERE name = 'product'")
    assert request_literals("Which product has 12?", ["products"]) == ["12"]
    # the tables' and columns' own names are not values ("WHERE price > 'price'")
    assert not re.fullmatch(
        held.parameters["properties"]["query"]["pattern"],
        "SELECT * FROM products WHERE price > 'price'",
    )


@pytest.mark.parametrize(
    ("asked", "query", "fits"),
    [
        # the count of every row answered "How many ... below 30?" with 7
        ("How many orders have a total below 30?", "SELECT COUNT(*) FROM orders", False),
        (
            "How many orders have a total below 30?",
            "SELECT COUNT(*) FROM orders WHERE total < 30",
            True,
        ),
        ("List the 3 cheapest products.", "SELECT * FROM products ORDER BY price LIMIT 3", True),
        ("What is the price of the desk?", "SELECT * FROM products", True),
    ],
)
def test_a_query_uses_a_number_the_request_states(spec, asked: str, query: str, fits: bool) -> None:  # type: ignore[no-untyped-def]
    pattern = held_to_tables(spec, asked).parameters["properties"]["query"]["pattern"]
    assert (re.fullmatch(pattern, query) is not None) is fits


@pytest.fixture()
def shop(tmp_path: Path):  # type: ignore[no-untyped-def]
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER, name TEXT, city TEXT)")
        conn.execute("CREATE TABLE orders (id INTEGER, customer_id INTEGER, total REAL)")
        conn.execute("CREATE TABLE products (name TEXT, price INTEGER, stock INTEGER)")
        conn.execute("INSERT INTO customers VALUES (1, 'Ana', 'Berlin')")
        conn.execute("INSERT INTO orders VALUES (1, 2, 10.0)")
        conn.execute("INSERT INTO products VALUES ('lamp', 40, 3)")
    (tool,) = make_tools(["sql_query"], BuiltinConfig(root=tmp_path, database=db))
    return tool.spec


@pytest.mark.parametrize(
    ("asked", "query", "fits"),
    [
        # a number next to a table's noun names a row by its key, never the LIMIT
        ("What is the total of order 3?", "SELECT total FROM orders WHERE id = 3", True),
        (
            "What is the total of order 3?",
            "SELECT * FROM orders ORDER BY customer_id LIMIT 3",
            False,
        ),
        ("What is the total of order 3?", "SELECT * FROM orders WHERE total = 3", False),
        ("Which customer has id 2?", "SELECT name, id FROM customers WHERE id = 2", True),
        ("Which customer has id 2?", "SELECT * FROM customers LIMIT 2", False),
        ("List the orders of customer 2.", "SELECT * FROM orders WHERE customer_id = 2", True),
        ("What is the name of customer 3?", "SELECT name FROM customers WHERE id = 3", True),
        # a count of rows is the LIMIT
        ("Show the first 2 orders.", "SELECT * FROM orders LIMIT 2", True),
        ("Show the first 2 orders.", "SELECT * FROM orders WHERE id = 2", False),
        # a superlative sorts by a quantity and takes the first row, or its MIN/MAX
        (
            "Which product is the cheapest?",
            "SELECT name, price FROM products ORDER BY price LIMIT 1",
            True,
        ),
        # ... the row's name when the request asks which row
        ("Which product is the cheapest?", "SELECT MIN(price) FROM products", False),
        ("What is the lowest price?", "SELECT MIN(price) FROM products", True),
        ("Which product is the cheapest?", "SELECT * FROM products", False),
        (
            "Which product is the cheapest?",
            "SELECT * FROM products ORDER BY price DESC LIMIT 1",
            False,
        ),
        ("Which product is the cheapest?", "SELECT * FROM products ORDER BY name LIMIT 1", False),
        (
            "Which product has the most stock?",
            "SELECT name, stock FROM products ORDER BY stock DESC LIMIT 1",
            True,
        ),
        (
            "Which product has the most stock?",
            "SELECT * FROM products ORDER BY price DESC LIMIT 1",
            False,
        ),
        ("What is the highest order total?", "SELECT MAX(total) FROM orders", True),
        ("What is the oldest order?", "SELECT * FROM orders ORDER BY id LIMIT 1", False),
        # "how many" of a table's rows is its count, of the rows a name selects
        (
            "How many customers live in Berlin?",
            "SELECT COUNT(*) FROM customers WHERE city = 'Berlin'",
            True,
        ),
        ("How many customers live in Berlin?", "SELECT COUNT(*) FROM customers", False),
        ("How many customers live in Berlin?", "SELECT * FROM customers", False),
        ("How many customers are there?", "SELECT COUNT(*) FROM customers", True),
        (
            "How many products have fewer than 10 in stock?",
            "SELECT COUNT(*) FROM products WHERE stock < 10",
            True,
        ),
        # ... but "how many" of something a row holds is that row's value
        ("How many lamps are in stock?", "SELECT stock FROM products WHERE name = 'lamp'", True),
        # a name the request writes: a count compares it with a column the question does
        # not ask for, once
        (
            "How many customers live in Berlin?",
            "SELECT COUNT(*) FROM customers WHERE city = 'Berlin' AND name = 'Berlin'",
            False,
        ),
        # "who" asks for the name of the row the written name selects
        ("Who lives in Oslo? Use the customers table.", "SELECT * FROM customers", False),
        (
            "Who lives in Oslo? Use the customers table.",
            "SELECT * FROM customers WHERE name = 'Oslo'",
            False,
        ),
        # not a row's own name in a count, unless the request says "named"
        (
            "How many customers live in Berlin?",
            "SELECT COUNT(*) FROM customers WHERE name = 'Berlin'",
            False,
        ),
        (
            "How many customers are named Bo?",
            "SELECT COUNT(*) FROM customers WHERE name = 'Bo'",
            True,
        ),
        # a question naming a row by a name is otherwise free to read every row
        ("Which city does Dana live in?", "SELECT * FROM customers", True),
        (
            "Who lives in Oslo? Use the customers table.",
            "SELECT name, city FROM customers WHERE city = 'Oslo'",
            True,
        ),
        # a table the request names is the one read
        ("How many orders are in the orders table?", "SELECT * FROM customers", False),
        ("How many orders are in the orders table?", "SELECT COUNT(*) FROM orders", True),
        # the operator the request's words give, on the column it names
        (
            "How many products have fewer than 10 in stock?",
            "SELECT COUNT(*) FROM products WHERE price > 10",
            False,
        ),
        (
            "How many products have fewer than 10 in stock?",
            "SELECT COUNT(*) FROM products WHERE stock > 10",
            False,
        ),
        # order words are no values ("WHERE name = 'cheapest'")
        (
            "Which product is the cheapest?",
            "SELECT * FROM products WHERE name = 'cheapest' ORDER BY price LIMIT 1",
            False,
        ),
        (
            "Who lives in Oslo? Use the customers table.",
            "SELECT * FROM customers WHERE name = 'table'",
            False,
        ),
    ],
)
def test_the_query_takes_the_shape_the_request_asks_for(
    shop, asked: str, query: str, fits: bool
) -> None:  # type: ignore[no-untyped-def]
    pattern = held_to_tables(shop, asked).parameters["properties"]["query"]["pattern"]
    assert (re.fullmatch(pattern, query) is not None) is fits


def test_the_shape_of_a_request() -> None:
    tables = {"orders": {"id": "INTEGER", "total": "REAL"}}
    assert query_shape("the total of order number 5", tables).keys == (("order", "5"),)
    assert query_shape("the 3 largest orders", tables).limits == ("3",)
    assert query_shape("the 3 largest orders", tables).order == "DESC"
    assert query_shape("the smallest total", tables).sort_columns == ("total",)
    assert query_shape("a total of 5", tables).keys == ()


@pytest.fixture()
def staff(tmp_path: Path):  # type: ignore[no-untyped-def]
    db = tmp_path / "staff.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE employees (id INTEGER, name TEXT, department TEXT, salary INTEGER,"
            " city TEXT)"
        )
        conn.execute("CREATE TABLE books (id INTEGER, title TEXT, author TEXT, pages INTEGER)")
        conn.executemany(
            "INSERT INTO employees VALUES (?, ?, ?, ?, ?)",
            [(1, "Alice", "Sales", 52000, "Denver"), (2, "Marco", "Engineering", 91000, "Austin")],
        )
        conn.execute("INSERT INTO books VALUES (1, 'Dune', 'Herbert', 412)")
    (tool,) = make_tools(["sql_query"], BuiltinConfig(root=tmp_path, database=db))
    return tool.spec


@pytest.mark.parametrize(
    ("asked", "query", "fits"),
    [
        # a value a column lists selects the rows holding it, in that column only
        ("What is Alice's salary?", "SELECT * FROM employees WHERE name = 'Alice'", True),
        ("What is Alice's salary?", "SELECT * FROM employees", False),
        (
            "What is Alice's salary?",
            "SELECT * FROM employees WHERE name = 'Alice' AND city = 'Alice'",
            False,
        ),
        ("Which department is Marco in?", "SELECT * FROM employees WHERE city = 'Marco'", False),
        (
            "Which department is Marco in?",
            "SELECT department FROM employees WHERE name = 'Marco'",
            True,
        ),
        # in the case the column holds it
        (
            "How many employees work in engineering?",
            "SELECT COUNT(*) FROM employees WHERE department = 'Engineering'",
            True,
        ),
        # the table holding the value is the one read
        ("Who wrote Dune?", "SELECT * FROM books WHERE title = 'Dune'", True),
        ("Who wrote Dune?", "SELECT * FROM employees", False),
        # a value of a row, not a count of rows
        ("How many pages does Dune have?", "SELECT pages FROM books WHERE title = 'Dune'", True),
        (
            "How many pages does Dune have?",
            "SELECT COUNT(*) FROM books WHERE title = 'Dune'",
            False,
        ),
        # a superlative among the rows a value selects
        (
            "Who earns the most in Sales?",
            "SELECT * FROM employees WHERE department = 'Sales' ORDER BY salary DESC LIMIT 1",
            True,
        ),
        (
            "Who earns the most in Sales?",
            "SELECT * FROM employees WHERE department = 'Sales'",
            False,
        ),
    ],
)
def test_a_value_the_columns_hold_selects_its_rows(
    staff, asked: str, query: str, fits: bool
) -> None:  # type: ignore[no-untyped-def]
    pattern = held_to_tables(staff, asked).parameters["properties"]["query"]["pattern"]
    assert (re.fullmatch(pattern, query) is not None) is fits


def test_the_listed_values_are_read_and_the_model_is_not_shown_them(staff) -> None:  # type: ignore[no-untyped-def]
    described = staff.parameters["properties"]["query"]["description"]
    assert described_values(described)[("employees", "department")] == ("Sales", "Engineering")
    assert ("employees", "salary") not in described_values(described)
    held = held_to_tables(staff, "What is Alice's salary?")
    assert "Alice" not in held.parameters["properties"]["query"]["description"]
    assert request_values("What is Alice's salary?", described_values(described)) == (
        ("employees", "name", "Alice"),
    )


def test_a_request_about_the_tables_is_held_to_the_tool_that_queries_them(staff) -> None:  # type: ignore[no-untyped-def]
    from loopwright.strategies.embedded.requested import stated_tool

    (calculator,) = make_tools(["calculator"])
    tools = [staff, calculator.spec]
    assert asked_tables(staff, "Who wrote Dune?")
    assert asked_tables(staff, "Which book is the longest?")
    assert stated_tool("Who wrote Dune?", tools) == "sql_query"
    assert stated_tool("Where is Marco based?", tools) == "sql_query"
    assert not asked_tables(staff, "What is the weather in Paris?")
    assert asked_tables(staff, "Who earns the most?")
    assert not asked_tables(staff, "What do engineers earn in general?")
    assert stated_tool("What is 4 * 5?", tools) == "calculator"


@pytest.mark.parametrize(
    ("asked", "query", "fits"),
    [
        # a word for a column's kind names it, and the table holding it is read
        (
            "Which item has the lowest price?",
            "SELECT name, price FROM products ORDER BY price LIMIT 1",
            True,
        ),
        # "which <row>" selects the row's name first; by a number the request gives,
        # the row whole (its name and the number alone were echoed)
        ("Which product costs 85?", "SELECT * FROM products WHERE price = 85", True),
        (
            "Which item has the lowest price?",
            "SELECT * FROM products ORDER BY price LIMIT 1",
            False,
        ),
        ("Who is the oldest customer?", "SELECT name FROM customers ORDER BY id LIMIT 1", True),
        (
            "What is the highest order total?",
            "SELECT total FROM orders ORDER BY total DESC LIMIT 1",
            True,
        ),
        ("Which item has the lowest price?", "SELECT * FROM customers ORDER BY id LIMIT 1", False),
        (
            "What is the most expensive item we sell?",
            "SELECT name, price FROM products ORDER BY price DESC LIMIT 1",
            True,
        ),
        ("What is the most expensive item we sell?", "SELECT MAX(price) FROM products", False),
        (
            "What is the most expensive item we sell?",
            "SELECT name FROM products ORDER BY price DESC LIMIT 1",
            False,
        ),
        (
            "What is the most expensive item we sell?",
            "SELECT * FROM products ORDER BY stock DESC LIMIT 1",
            False,
        ),
        # a quantity is not compared with a key
        ("How many orders are over 50?", "SELECT COUNT(*) FROM orders WHERE total > 50", True),
        (
            "How many orders are over 50?",
            "SELECT COUNT(*) FROM orders WHERE customer_id > 50",
            False,
        ),
    ],
)
def test_a_column_named_by_a_word_for_its_kind(shop, asked: str, query: str, fits: bool) -> None:  # type: ignore[no-untyped-def]
    pattern = held_to_tables(shop, asked).parameters["properties"]["query"]["pattern"]
    assert (re.fullmatch(pattern, query) is not None) is fits


def test_the_oldest_row_by_a_point_in_time_or_an_age() -> None:
    books = {"books": {"title": "TEXT", "year": "INTEGER", "pages": "INTEGER"}}
    shape = query_shape("What is the oldest book?", books)
    assert (shape.order, shape.sort_columns) == ("ASC", ("year",))
    people = {"people": {"name": "TEXT", "age": "INTEGER"}}
    assert query_shape("Who is the oldest person?", people).order == "DESC"
    assert query_shape("Who is the youngest person?", people).order == "ASC"
