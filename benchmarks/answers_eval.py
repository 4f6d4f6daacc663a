"""Useful answers from the embedded model: does the final answer state the tool result?

Questions over the built-in tools (calculator, get_weather, read_file on a fixture
directory, sql_query on a fixture database, two-step add/multiply/divide), run exactly as
``loopwright run`` runs them: the embedded model inside its CLI strategy
(``loopwright.strategies.embedded``). Each question has an automatic check:

* **right call**: the expected tool was called with the argument that matters (the
  city, the file, a query returning the asked value, an expression with that value);
* **states the result**: the final answer contains the asked value of the tool result
  (the number, the weather field asked about, the fact from the file or the row;
  for a question about one row, the answer names that row too);
* **contradicts nothing**: every number in the answer appears in a tool result or in the
  question; a number written right after a field's name is that field's value ("the
  humidity is 14" when humidity_pct is 35 fails; so does "14% humidity"); no other weather condition (and
  no "Yes" to the one a question asks about: "Is it raining?" -> "Yes, it is raining"
  when the result says sunny), no "real forecast" for demo data, no Fahrenheit; no
  repeated clause;
* **reads fluently** (:func:`_fluency`): no word cut at its front ("ondon"), no bare
  run of three numbers, no quantity stated twice, not a whole tool result when the
  question asks one value in it.

An answer replaced by the strategy's fallback ("I could not state a reliable answer ...
<tool> returned: ...") is counted separately: it shows the result but is not a
model-written answer. An answer the strategy cut to its grounded leading sentences is
model-written (counted as ``trimmed``). ``pass`` = right call + states the result +
contradicts nothing + reads fluently, model-written.

``DEV`` questions were used while tuning the prompt, grammar and strategy; ``HELD_OUT``
questions were written at the same time and only run for the report; ``HELD_OUT_2`` was
written later, before a further tuning round, and is run once at its end. ``HELD_OUT_3``
was written before the next round and kept out of the repository until that round's code
was final; it was then committed unchanged and run once. ``DEV_2`` is a second tuning set,
written (and its baseline recorded) before the round that tuned on it. ``HELD_OUT_4``
was kept out of the repository like ``HELD_OUT_3`` and committed after its one run;
so were ``HELD_OUT_5`` and ``HELD_OUT_6``.
``DEV_3`` is a third tuning set, its baseline recorded before the round that tuned on it;
so is ``DEV_4``.

Prints one line per question, then ONE JSON line.
Run: python benchmarks/answers_eval.py [--set dev|held_out|held_out_2|held_out_3|dev_2|held_out_4|dev_3|held_out_5|held_out_6|dev_4|dev_5|all] [--match REGEX]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from loopwright.agent import Agent
from loopwright.core.events import ModelEvent, ResponseDone
from loopwright.core.protocols import Model, ModelRequest
from loopwright.core.run import RunResult
from loopwright.core.untrusted import unwrap_untrusted
from loopwright.loop.limits import Limits
from loopwright.providers.local import LocalModel
from loopwright.strategies.embedded import embedded_strategy
from loopwright.tools.builtin import BuiltinConfig, make_tools
from loopwright.tools.builtin.weather import get_weather

FILES = {
    "notes.txt": "The team meeting is on Tuesday at 10 am in room 4.",
    "config.ini": "[server]\nport = 8080\nhost = example.internal\n",
    "todo.txt": "1. Buy milk\n2. Call the plumber\n3. Renew the passport\n",
    "recipe.txt": "Pancakes: 200 g flour, 2 eggs, 300 ml milk. Cook for 3 minutes per side.",
    "status.txt": "Build 512 passed. 0 tests failed.",
    "poem.txt": "Roses are red, violets are blue.",
}
TABLES = {
    "customers": (
        "id INTEGER, name TEXT, city TEXT",
        [(1, "Ana", "Berlin"), (2, "Bo", "Paris"), (3, "Chen", "Berlin"), (4, "Dana", "Oslo")],
    ),
    "orders": (
        "id INTEGER, customer_id INTEGER, total REAL",
        [(i, 1 + i % 4, 10.0 * i) for i in range(1, 8)],
    ),
    "products": (
        "name TEXT, price INTEGER, stock INTEGER",
        [("lamp", 40, 3), ("chair", 85, 12), ("desk", 240, 5)],
    ),
}

Check = Callable[[RunResult], "tuple[bool, list[str], list[str]]"]


@dataclass(frozen=True, slots=True)
class Case:
    question: str
    tools: tuple[str, ...]
    tool: str
    arg_ok: Callable[[dict[str, object]], bool]
    facts: tuple[str, ...]  # the answer must contain one of these (case-insensitive)
    fields: dict[str, str] = field(default_factory=dict)  # field word -> value
    subject: str = ""  # what the question asks about; the answer must name it


def _expr(value: str) -> Callable[[dict[str, object]], bool]:
    from loopwright.tools.builtin.calculator import calculator

    def ok(args: dict[str, object]) -> bool:
        try:
            return str(calculator(str(args.get("expression", "")))) == value
        except Exception:
            return False

    return ok


def calc(question: str, value: str) -> Case:
    return Case(question, ("calculator", "get_weather"), "calculator", _expr(value), (value,))


def weather(question: str, city: str, asked: str) -> Case:
    report = get_weather(city)
    fields = {
        "temperature": str(report["temperature_c"]),
        "humidity": str(report["humidity_pct"]),
        "wind": str(report["wind_kph"]),
    }
    if asked == "any":
        facts: tuple[str, ...] = (fields["temperature"], str(report["condition"]))
    elif asked == "condition":
        facts = (str(report["condition"]),)
    else:
        facts = (fields[asked],)

    def ok(args: dict[str, object]) -> bool:
        return str(args.get("city", "")).strip().lower() == city.lower()

    return Case(question, ("calculator", "get_weather"), "get_weather", ok, facts, fields)


def read(question: str, name: str, fact: str) -> Case:
    def ok(args: dict[str, object]) -> bool:
        return str(args.get("path", "")).strip().lstrip("./") == name

    return Case(question, ("read_file", "calculator"), "read_file", ok, (fact,))


def sql(question: str, value: str, subject: str = "") -> Case:
    """``subject``: the row the question names ("desk"); the answer must name it too, so
    "Ana is in Berlin, Bo is in Paris, and Chen is in Oslo" does not pass for "Which
    city does Dana live in?" (Oslo) by listing wrong rows."""

    def ok(args: dict[str, object]) -> bool:
        return True  # the query is judged by its result: the value must come back

    return Case(question, ("sql_query", "calculator"), "sql_query", ok, (value,), subject=subject)


def chain(question: str, value: str) -> Case:
    return Case(question, ("add", "multiply", "divide"), "*", lambda a: True, (value,))


DEV: list[Case] = [
    calc("What is 45 * 12?", "540"),
    calc("Subtract 199 from 1024.", "825"),
    calc("Compute 1000 / 8 for me.", "125"),
    calc("What is 17 + 26?", "43"),
    calc("How much is 3 to the power of 5?", "243"),
    calc("What is 15% of 80?", "12"),
    weather("Tell me the current temperature in Cairo.", "Cairo", "temperature"),
    weather("How hot is it in Singapore today?", "Singapore", "temperature"),
    weather("What is the humidity in Mumbai?", "Mumbai", "humidity"),
    weather("Is it raining in Lima?", "Lima", "condition"),
    weather("How windy is it in Oslo?", "Oslo", "wind"),
    weather("What's the weather in Beijing?", "Beijing", "any"),
    read("What does notes.txt say?", "notes.txt", "Tuesday"),
    read("Which port is set in config.ini?", "config.ini", "8080"),
    read("Read todo.txt and tell me the first item.", "todo.txt", "milk"),
    read("How much flour does recipe.txt need?", "recipe.txt", "200"),
    sql("How many customers are in the customers table?", "4"),
    sql("What is the price of the desk in the products table?", "240", "desk"),
    sql("How many chairs are in stock? Look in the products table.", "12", "chair"),
    sql("How many orders are in the orders table?", "7"),
    chain("What is (3 + 5) * 8?", "64"),
    chain("What is (20 / 5) * 6?", "24"),
    chain("What is (6 * 4) + 9?", "33"),
    chain("What is (15 + 9) / 3?", "8"),
    calc("Multiply 23 by 19.", "437"),
    weather("What is the temperature in Madrid?", "Madrid", "temperature"),
    read("What does status.txt say about the build?", "status.txt", "512"),
    sql("Which city does Dana live in? Use the customers table.", "Oslo", "Dana"),
]

HELD_OUT: list[Case] = [
    calc("What is 81 / 9?", "9"),
    calc("Add 250 and 375.", "625"),
    calc("What is 12 squared?", "144"),
    calc("What is 7 * 8 * 9?", "504"),
    calc("What is 300 minus 58?", "242"),
    weather("What's the temperature in Toronto?", "Toronto", "temperature"),
    weather("How humid is it in Bangkok?", "Bangkok", "humidity"),
    weather("What is the wind speed in Chicago?", "Chicago", "wind"),
    weather("Is it sunny in Rome?", "Rome", "condition"),
    weather("What's the weather like in Nairobi?", "Nairobi", "any"),
    read("What is the host in config.ini?", "config.ini", "example.internal"),
    read("What does poem.txt say?", "poem.txt", "Roses"),
    read("How many eggs does recipe.txt use?", "recipe.txt", "2"),
    read("Where is the meeting? See notes.txt.", "notes.txt", "room 4"),
    sql("How many products are in the products table?", "3"),
    sql("What is the stock of the lamp in the products table?", "3", "lamp"),
    sql("What is the price of the chair? Use the products table.", "85", "chair"),
    chain("What is (4 + 9) * 2?", "26"),
    chain("What is (18 / 3) + 7?", "13"),
    chain("What is (7 * 8) + 4?", "60"),
]

# Written after the dev and held-out sets had been tuned on and looked at, before the
# round that tunes on dev again; run once, at the end of that round. Same kinds and
# fixtures, new phrasings, values, cities, files and rows.
HELD_OUT_2: list[Case] = [
    calc("How much is 64 divided by 4?", "16"),
    calc("What's 125 plus 378?", "503"),
    calc("Calculate 9 times 14.", "126"),
    calc("Raise 3 to the power of 4.", "81"),
    calc("Take 45 away from 200.", "155"),
    calc("What is 25% of 360?", "90"),
    weather("What's the temperature in Berlin right now?", "Berlin", "temperature"),
    weather("How humid is Sydney today?", "Sydney", "humidity"),
    weather("Give me the wind speed for Dublin.", "Dublin", "wind"),
    weather("Is it snowing in Helsinki?", "Helsinki", "condition"),
    weather("What's the weather in Lisbon today?", "Lisbon", "any"),
    weather("How cold is it in Moscow?", "Moscow", "temperature"),
    read("What time is the meeting according to notes.txt?", "notes.txt", "10 am"),
    read("What is the second item in todo.txt?", "todo.txt", "plumber"),
    read("How long should pancakes cook per side? Check recipe.txt.", "recipe.txt", "3 minutes"),
    read("How many tests failed according to status.txt?", "status.txt", "0"),
    sql("What is the price of the lamp? Check the products table.", "40", "lamp"),
    sql("How many desks are in stock in the products table?", "5", "desk"),
    sql("Which city is Bo from? Use the customers table.", "Paris", "Bo"),
    sql("How many customers live in Berlin? Use the customers table.", "2"),
    chain("What is (12 + 8) / 4?", "5"),
    chain("What is (9 * 3) + 6?", "33"),
    chain("What is (14 / 2) * 5?", "35"),
    chain("What is (100 / 4) + 15?", "40"),
]

# Written before the round that followed HELD_OUT_2, kept outside the repository while
# that round tuned on the other three sets, committed unchanged and run once at its end.
HELD_OUT_3: list[Case] = [
    calc("What is 56 + 87?", "143"),
    calc("Divide 144 by 12.", "12"),
    calc("What do you get when you multiply 13 by 7?", "91"),
    calc("What is 1000 minus 1?", "999"),
    calc("Find 10% of 450.", "45"),
    calc("What is 2 to the power of 10?", "1024"),
    calc("How much is 38 * 3?", "114"),
    calc("Compute 7 * 6.", "42"),
    weather("What's the temperature in Vienna?", "Vienna", "temperature"),
    weather("How humid is it in Seoul right now?", "Seoul", "humidity"),
    weather("What is the wind like in Denver?", "Denver", "wind"),
    weather("Is it cloudy in Athens?", "Athens", "condition"),
    weather("What's the weather forecast for Prague?", "Prague", "any"),
    weather("How warm is it in Buenos Aires?", "Buenos Aires", "temperature"),
    read("What room is the meeting in? Read notes.txt.", "notes.txt", "room 4"),
    read("What is the third item in todo.txt?", "todo.txt", "passport"),
    read("How much milk does recipe.txt call for?", "recipe.txt", "300"),
    read("Which build number is mentioned in status.txt?", "status.txt", "512"),
    read("What color are violets according to poem.txt?", "poem.txt", "blue"),
    read("On which day is the team meeting? Check notes.txt.", "notes.txt", "Tuesday"),
    sql("What is the total of order 5 in the orders table?", "50"),
    sql("Which city does Chen live in? Use the customers table.", "Berlin", "Chen"),
    sql("Which product costs 85? Use the products table.", "chair"),
    sql("How many customers live in Paris? Use the customers table.", "1"),
    sql("What is the most expensive product in the products table?", "desk"),
    sql("How many orders in the orders table have a total above 40?", "3"),
    chain("What is (5 + 7) * 3?", "36"),
    chain("What is (40 / 8) + 11?", "16"),
    chain("What is (6 * 6) + 10?", "46"),
    chain("What is (27 + 13) / 5?", "8"),
]

# A tuning set written before the round that tunes on it, over the same tools and
# fixtures, with phrasings, values, cities, files, rows and question shapes that appear
# in none of the sets above (subtraction as "take away", cubes, "how cold", "who lives
# in", cheapest, ordinals, yes/no about a file, rows by id, counts with a condition).
DEV_2: list[Case] = [
    calc("Take 37 away from 500.", "463"),
    calc("What is 6 cubed?", "216"),
    calc("What is the sum of 48 and 77?", "125"),
    calc("What is 99 times 11?", "1089"),
    calc("Please work out 630 / 7.", "90"),
    calc("How much is half of 312?", "156"),
    calc("What is 20% of 150?", "30"),
    calc("Subtract 45 from 91.", "46"),
    calc("What is 8 to the power of 3?", "512"),
    calc("What is 1234 + 4321?", "5555"),
    weather("How cold is it in Stockholm?", "Stockholm", "temperature"),
    weather("What's the humidity like in Hanoi?", "Hanoi", "humidity"),
    weather("How strong is the wind in Boston?", "Boston", "wind"),
    weather("Is it foggy in London?", "London", "condition"),
    weather("Tell me the weather in Tokyo.", "Tokyo", "any"),
    weather("What temperature is it in Zurich today?", "Zurich", "temperature"),
    weather("Is it sunny in Cape Town right now?", "Cape Town", "condition"),
    weather("What's the wind speed in Montreal?", "Montreal", "wind"),
    read("Which task comes second in todo.txt?", "todo.txt", "plumber"),
    read("What is the last item on todo.txt?", "todo.txt", "passport"),
    read("Did the build pass according to status.txt?", "status.txt", "passed"),
    read("What time does the meeting start? See notes.txt.", "notes.txt", "10 am"),
    read("What does recipe.txt make?", "recipe.txt", "Pancakes"),
    read("What section is defined in config.ini?", "config.ini", "server"),
    read("What color are roses in poem.txt?", "poem.txt", "red"),
    read("Summarize status.txt.", "status.txt", "512"),
    read("What is the meeting room number in notes.txt?", "notes.txt", "4"),
    read("How many eggs go into the pancakes in recipe.txt?", "recipe.txt", "2"),
    sql("Who lives in Oslo? Use the customers table.", "Dana"),
    sql("What is the cheapest product in the products table?", "lamp"),
    sql("What is the total of order 3 in the orders table?", "30"),
    sql("How many orders have a total below 30? Use the orders table.", "2"),
    sql("Which customer has id 2 in the customers table?", "Bo"),
    sql("How many products cost more than 50? Check the products table.", "2"),
    sql("What is the highest order total in the orders table?", "70"),
    sql("What is the sum of all order totals in the orders table?", "280"),
    sql("Which product has 12 in stock? Use the products table.", "chair"),
    sql("Which city is Ana in? Check the customers table.", "Berlin", "Ana"),
    sql("How many customers live in Oslo? Use the customers table.", "1"),
    chain("What is (10 + 2) * 4?", "48"),
    chain("What is (50 / 5) + 3?", "13"),
    chain("What is (8 * 7) / 4?", "14"),
    chain("What is (33 + 17) / 10?", "5"),
    chain("What is (9 + 9) * 9?", "162"),
]

_NUMBER = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?(?!\d)")
_CONDITIONS = ("sunny", "cloudy", "rain", "windy", "foggy", "snow")
_NEG = re.compile(r"\b(?:not|no|isn't|n't)\b\W+(?:\w+\W+){0,2}$")


# HELD_OUT_4 was written before a tuning round, kept out of the repository while that round
# ran, run once on the tree before and once after it (22/30 both), then committed unchanged.
HELD_OUT_4: list[Case] = [
    calc("What is 72 + 19?", "91"),
    calc("Take 45 away from 200.", "155"),
    calc("What's 8 multiplied by 12?", "96"),
    calc("How much is 90 divided by 6?", "15"),
    calc("What is 25% of 360?", "90"),
    calc("Work out 11 * 11.", "121"),
    calc("What is the sum of 340 and 66?", "406"),
    calc("What is 5 cubed?", "125"),
    weather("How cold is it in Moscow?", "Moscow", "temperature"),
    weather("What's the humidity like in Jakarta?", "Jakarta", "humidity"),
    weather("Is it windy in Wellington?", "Wellington", "wind"),
    weather("What are the conditions in Dublin?", "Dublin", "condition"),
    weather("Give me the weather for Lisbon.", "Lisbon", "any"),
    weather("What temperature is it in Sydney right now?", "Sydney", "temperature"),
    read("What time is the team meeting? Look in notes.txt.", "notes.txt", "10"),
    read("What is the second item in todo.txt?", "todo.txt", "plumber"),
    read("How long should each side cook according to recipe.txt?", "recipe.txt", "3"),
    read("Did the build pass? Check status.txt.", "status.txt", "passed"),
    read("What port does config.ini use?", "config.ini", "8080"),
    read("What color are roses in poem.txt?", "poem.txt", "red"),
    sql("Who lives in Oslo? Use the customers table.", "Dana"),
    sql("What is the total of order 3 in the orders table?", "30"),
    sql("How many customers live in Berlin? Use the customers table.", "2"),
    sql("How many lamps are in stock? Use the products table.", "3", "lamp"),
    sql("What is the cheapest product in the products table?", "lamp"),
    sql("What is the price of the lamp? Check the products table.", "40", "lamp"),
    chain("What is (9 + 3) * 4?", "48"),
    chain("What is (50 / 10) + 8?", "13"),
    chain("What is (7 * 3) + 12?", "33"),
    chain("What is (14 + 16) / 6?", "5"),
]


def read_any(question: str, name: str, *facts: str) -> Case:
    """A question about a file that more than one fact of it answers ("When does the
    team meet?": the day or the time)."""
    return replace(read(question, name, facts[0]), facts=facts)


# A third tuning set, written (and its baseline recorded) before the round that tunes on
# it: question shapes the earlier sets hold few of (yes/no questions about a file whose
# answer is "no", superlatives, counts with a condition, who/which questions, a row named
# by a number, durations and times in text files, arithmetic in words).
DEV_3: list[Case] = [
    calc("What is seven plus five?", "12"),
    calc("If I have 120 apples and give away 35, how many are left?", "85"),
    calc("What is 18 percent of 250?", "45"),
    calc("Divide 81 by 3.", "27"),
    calc("What is 4 to the power of 4?", "256"),
    calc("What do 250 and 750 add up to?", "1000"),
    weather("Is it windy in Paris?", "Paris", "wind"),
    weather("What's the temperature like in Dubai?", "Dubai", "temperature"),
    weather("How humid is it in Manila today?", "Manila", "humidity"),
    weather("Is it raining in Seattle?", "Seattle", "condition"),
    weather("What is the weather like in Amsterdam?", "Amsterdam", "any"),
    read("Is the meeting on Friday? Check notes.txt.", "notes.txt", "Tuesday"),
    read("Did any tests fail according to status.txt?", "status.txt", "0"),
    read_any("When does the team meet? See notes.txt.", "notes.txt", "10 am", "Tuesday"),
    read("How long do the pancakes cook on each side? See recipe.txt.", "recipe.txt", "3"),
    read("What amount of milk is in recipe.txt?", "recipe.txt", "300"),
    read("What is the first task in todo.txt?", "todo.txt", "milk"),
    read("Is port 9090 used in config.ini?", "config.ini", "8080"),
    read("Which host does config.ini point to?", "config.ini", "example.internal"),
    read("Is renewing the passport on the list in todo.txt?", "todo.txt", "yes"),
    sql("Who lives in Paris? Check the customers table.", "Bo"),
    sql("Which product is the most expensive? Use the products table.", "desk"),
    sql("How many products have fewer than 10 in stock? Use the products table.", "2"),
    sql("What is the total of order 6 in the orders table?", "60"),
    sql("What is the name of customer 3 in the customers table?", "Chen"),
    sql("What does the chair cost? Check the products table.", "85", "chair"),
    sql("Which product has the most stock? Use the products table.", "chair"),
    sql("How many customers are from Berlin? Use the customers table.", "2"),
    sql("What is the lowest order total in the orders table?", "10"),
    chain("What is (6 + 4) * 7?", "70"),
]


# HELD_OUT_6 likewise: written before the next round, run once on the tree before it (24/30)
# and once on its final code (25/30, by the check without the row/column rule), then
# committed unchanged.
HELD_OUT_6: list[Case] = [
    calc("What is 250 + 175?", "425"),
    calc("Take 48 away from 300.", "252"),
    calc("Multiply 23 by 7.", "161"),
    calc("What is 810 divided by 9?", "90"),
    calc("What is 30% of 250?", "75"),
    calc("What is 7 squared?", "49"),
    calc("How much is 1200 minus 450?", "750"),
    calc("What's 11 times 12?", "132"),
    weather("What's the temperature in Havana?", "Havana", "temperature"),
    weather("What is the humidity like in Istanbul?", "Istanbul", "humidity"),
    weather("How strong is the wind in Warsaw?", "Warsaw", "wind"),
    weather("Is it cloudy in Budapest?", "Budapest", "condition"),
    weather("Give me the weather for Santiago.", "Santiago", "any"),
    weather("How cold is it in Bogota right now?", "Bogota", "temperature"),
    read("In which room does the team meet? See notes.txt.", "notes.txt", "4"),
    read("What needs to be bought according to todo.txt?", "todo.txt", "milk"),
    read("Who should be called according to todo.txt?", "todo.txt", "plumber"),
    read("How many grams of flour are in recipe.txt?", "recipe.txt", "200"),
    read("What was the result of build 512? See status.txt.", "status.txt", "passed"),
    read("Which flowers are blue in poem.txt?", "poem.txt", "violets"),
    read("What is the first ingredient in recipe.txt?", "recipe.txt", "flour"),
    sql("Where does Bo live? Check the customers table.", "Paris", "Bo"),
    sql("Who is customer number 4? Use the customers table.", "Dana"),
    sql("How much was order 2? Check the orders table.", "20"),
    sql("What is the stock of the desk? Use the products table.", "5", "desk"),
    sql("What is the price of the most expensive product? Use the products table.", "240"),
    sql("How many orders have a total of at least 50? Use the orders table.", "3"),
    chain("What is (7 + 5) * 3?", "36"),
    chain("What is (90 / 3) + 10?", "40"),
    chain("What is (6 * 7) / 2?", "21"),
]


# HELD_OUT_5 likewise: written before the next round, run once on the tree before it (24/30)
# and once on its final code (27/30), then committed unchanged.
HELD_OUT_5: list[Case] = [
    calc("What is 64 + 36?", "100"),
    calc("Subtract 75 from 310.", "235"),
    calc("What do you get when you multiply 14 by 6?", "84"),
    calc("What is 156 divided by 4?", "39"),
    calc("What is 20% of 450?", "90"),
    calc("Calculate 2 to the power of 10.", "1024"),
    calc("What is 999 - 111?", "888"),
    calc("How much is 13 times 13?", "169"),
    weather("What's the temperature like in Nairobi?", "Nairobi", "temperature"),
    weather("How humid is Manila right now?", "Manila", "humidity"),
    weather("What's the wind speed in Reykjavik?", "Reykjavik", "wind"),
    weather("Is it sunny in Athens?", "Athens", "condition"),
    weather("Weather report for Seoul, please.", "Seoul", "any"),
    weather("How warm is it in Rome today?", "Rome", "temperature"),
    read("On which day is the team meeting? See notes.txt.", "notes.txt", "Tuesday"),
    read("Which room is the meeting in, according to notes.txt?", "notes.txt", "4"),
    read("What host is configured in config.ini?", "config.ini", "example.internal"),
    read("What is the last item in todo.txt?", "todo.txt", "passport"),
    read("How many eggs does recipe.txt call for?", "recipe.txt", "2"),
    read("How much milk goes into the pancakes? See recipe.txt.", "recipe.txt", "300"),
    read("What color are violets in poem.txt?", "poem.txt", "blue"),
    sql("Which city is Ana from? Use the customers table.", "Berlin", "Ana"),
    sql("Which product costs the most in the products table?", "desk"),
    sql("How much does the chair cost? Check the products table.", "85", "chair"),
    sql("What is the largest order total in the orders table?", "70"),
    sql("Which customer lives in Paris? Use the customers table.", "Bo"),
    sql("Which product has the most stock in the products table?", "chair"),
    chain("What is (12 + 8) * 5?", "100"),
    chain("What is (100 / 4) + 5?", "30"),
    chain("What is (9 * 6) + 6?", "60"),
]


# A fourth tuning set, written and measured on the tree before the round that tunes on
# it (the round that checks which field a number is, what things an answer names, a
# value said twice and acts a result only names): prices and stocks asked in other
# words, rows named by a city or a number, list items by position, weather in full.
DEV_4: list[Case] = [
    calc("What is 88 + 12?", "100"),
    calc("Subtract 16 from 64.", "48"),
    calc("What is 9 squared?", "81"),
    calc("How much is 350 divided by 7?", "50"),
    calc("What is 30% of 90?", "27"),
    calc("Multiply 15 by 15.", "225"),
    weather("How humid is it in Lagos right now?", "Lagos", "humidity"),
    weather("What's the wind speed in Lima today?", "Lima", "wind"),
    weather("Describe the weather in Cairo.", "Cairo", "any"),
    weather("How hot is it in Manila?", "Manila", "temperature"),
    weather("What's the weather like in Oslo right now?", "Oslo", "any"),
    weather("Is it foggy in Seoul?", "Seoul", "condition"),
    weather("How windy is Nairobi today?", "Nairobi", "wind"),
    read("What is the first item on todo.txt?", "todo.txt", "milk"),
    read("Which item comes third in todo.txt?", "todo.txt", "passport"),
    read("What is the final task in todo.txt?", "todo.txt", "passport"),
    read("How much flour goes into the pancakes? See recipe.txt.", "recipe.txt", "200"),
    read("Which port does config.ini set?", "config.ini", "8080"),
    read("How many tests failed? See status.txt.", "status.txt", "0"),
    read("Where does the team meet according to notes.txt?", "notes.txt", "room 4"),
    sql("What does the lamp cost? Use the products table.", "40", "lamp"),
    sql("How much is the desk? Check the products table.", "240", "desk"),
    sql("How much stock does the chair have? Use the products table.", "12", "chair"),
    sql("Which customer lives in Oslo? Use the customers table.", "Dana"),
    sql("Who is the customer in Paris? Check the customers table.", "Bo"),
    sql("Which city does Bo live in? Use the customers table.", "Paris", "Bo"),
    sql("What is the price of the lamp in the products table?", "40", "lamp"),
    sql("How many desks are left in stock? Use the products table.", "5", "desk"),
    sql("What is the total of order 7 in the orders table?", "70"),
    sql("Which customer has id 4 in the customers table?", "Dana"),
    sql("How many customers live in Paris? Check the customers table.", "1"),
    chain("What is (8 + 4) * 3?", "36"),
    chain("What is (60 / 6) + 5?", "15"),
]


# Written before any tuning on it, to tune the call side (queries, paths, argument
# spans) on: other phrasings and question shapes over the same fixtures, most without
# naming the table or using a column's own name ("cost" for price, "where ... live" for
# city), lookups by a number after a table's noun, counts and superlatives.
DEV_5: list[Case] = [
    sql("Where does Chen live?", "Berlin", "Chen"),
    sql("In which city is Dana?", "Oslo", "Dana"),
    sql("What does the lamp cost?", "40", "lamp"),
    sql("How much is the desk?", "240", "desk"),
    sql("How many chairs do we have in stock?", "12", "chair"),
    sql("Who is the customer from Oslo?", "Dana"),
    sql("Which customer is from Paris?", "Bo"),
    sql("What is the total of order number 4?", "40"),
    sql("How much was order 7?", "70"),
    sql("What is the customer id of order 6?", "3"),
    sql("How many customers do we have?", "4"),
    sql("How many orders are there in total?", "7"),
    sql("How many products are in the database?", "3"),
    sql("Which item has the lowest price?", "lamp"),
    sql("What is the most expensive item we sell?", "desk"),
    sql("Which product has the least stock?", "lamp"),
    sql("How many orders are over 50?", "2"),
    sql("How many products cost less than 100?", "2"),
    sql("What is the biggest order total?", "70"),
    sql("Who is customer number 1?", "Ana"),
    sql("What is the price of a chair?", "85", "chair"),
    sql("How many customers are based in Paris?", "1"),
    sql("What city is customer 2 in?", "Paris"),
    sql("Which product is priced at 240?", "desk"),
    sql("What's the stock level for desks?", "5", "desk"),
    read("Open notes.txt and tell me where the meeting is.", "notes.txt", "room 4"),
    read("What port number is configured in config.ini?", "config.ini", "8080"),
    read("According to todo.txt, what is the first thing to do?", "todo.txt", "milk"),
    read("What is the build number in status.txt?", "status.txt", "512"),
    read("Check recipe.txt: how much flour is needed for the pancakes?", "recipe.txt", "200"),
    read("What is the host setting of the server in config.ini?", "config.ini", "example.internal"),
    read("Tell me what the poem in poem.txt says about violets.", "poem.txt", "blue"),
    calc("A ticket costs 12 and I need 7 of them. What is 12 * 7?", "84"),
    calc("Divide 144 by 12.", "12"),
    weather(
        "My sister is flying to Toronto tomorrow; what's the temperature there?",
        "Toronto",
        "temperature",
    ),
    weather("How windy is it in Nairobi?", "Nairobi", "wind"),
    chain("Multiply 7 by 6, then add 10.", "52"),
]


def _canon(n: str) -> str:
    return n.rstrip("0").rstrip(".") if "." in n else n


def _contradictions(answer: str, case: Case, result: RunResult) -> list[str]:
    text = answer.lower()
    results = " ".join(p.content for m in result.messages for p in m.tool_results_parts)
    known = {_canon(n) for n in _NUMBER.findall(results + " " + case.question)}
    found = [f"number {n}" for n in _NUMBER.findall(answer) if _canon(n) not in known]
    for word, value in case.fields.items():
        for m in re.finditer(rf"\b{word}\w*\b(?:\W+[a-z]+){{0,5}}?\W+(-?\d+(?:\.\d+)?)", text):
            if _canon(m.group(1)) != value:
                found.append(f"{word} is {m.group(1)}")
        # The field named right after a number and at most one unit word: "62 pct
        # wind speed" says the wind is 62.
        for m in re.finditer(rf"(-?\d+(?:\.\d+)?)\s*(?:%|[a-z]+)?\s+{word}", text):
            if _canon(m.group(1)) != value:
                found.append(f"{word} is {m.group(1)}")
        if value != case.fields["temperature"] and re.search(
            rf"\b{value}\s*(?:degree|°|celsius)", text
        ):
            found.append(f"{word} in degrees")
    if case.tool == "get_weather":
        actual = next((c for c in _CONDITIONS if c in results), "")
        for other in _CONDITIONS:
            if other in actual or other not in text:
                continue
            if other in case.question.lower():
                # The question's word restated ("How windy is it?" -> "It is windy, 22
                # kph") is not a claim, but "Yes" to "Is it raining?" (sunny) is.
                if re.match(r"\W*yes\b", text):
                    found.append(f"yes to {other}")
                continue
            at = text.find(other)
            if not _NEG.search(text[:at]):
                found.append(f"condition {other}")
        if "fahrenheit" in text or "°f" in text:
            found.append("fahrenheit")
        at = text.find("real forecast")
        if at != -1 and not _NEG.search(text[:at]):
            found.append("real forecast")
    words = re.findall(r"\w+", text)
    grams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    if len(grams) != len(set(grams)):
        found.append("repetition")
    return found


_ALPHA = re.compile(r"[A-Za-z]+")
_NUMBER_RUN = re.compile(r"-?\d+(?:\.\d+)?[a-z%°]*(?:\s*,\s*-?\d+(?:\.\d+)?[a-z%°]*){2,}", re.I)
_QUANTITY = re.compile(r"(-?\d+(?:\.\d+)?)\s*(%|°|[a-z]+)", re.I)
# Questions that ask for what a file or result says as a whole, not for one value in it.
_WHOLE = re.compile(r"^\s*(?:what does \S+ (?:say|contain)\b|summari[sz]e|read|show)", re.I)
MIN_DUMP_WORDS = 6
# Shorter cut words are often words of their own ("day" of "today", "here" of "where").
MIN_FRAGMENT = 5


def _fluency(answer: str, question: str, results: list[str]) -> list[str]:
    """Defects of form a reader sees at once, whatever the facts: a word cut from the
    front of one the question or results use ("ondon" for "London"), a bare run of
    three or more numbers ("9, 72, 10, 72c"), one quantity stated twice ("22 kph and
    22kph"), and a tool result repeated whole when the question asks for one value
    in it ("The team meeting is on Tuesday at 10 am in room 4." for "What time is the
    meeting?")."""
    found: list[str] = []
    source = question + " " + " ".join(results)
    known = {w.lower() for w in _ALPHA.findall(source)}
    for word in _ALPHA.findall(answer):
        low = word.lower()
        if len(low) < 3 or low in known:
            continue
        if len(low) >= MIN_FRAGMENT and any(
            len(k) - 2 <= len(low) < len(k) and k.endswith(low) for k in known
        ):
            found.append(f"fragment {word}")
    if _NUMBER_RUN.search(answer):
        found.append("number run")
    quantities = [(n, u.lower()) for n, u in _QUANTITY.findall(answer)]
    if len(quantities) != len(set(quantities)):
        found.append("quantity repeated")
    if not _WHOLE.search(question):
        said = " ".join(_ALPHA.findall(answer.lower()))
        for content in results:
            whole = " ".join(_ALPHA.findall(content.lower()))
            if len(whole.split()) >= MIN_DUMP_WORDS and whole in said:
                found.append("result dump")
                break
    return found


_CLAUSE_CUT = re.compile(r"[,;:!?]|\.(?!\d)")
_SENTENCE_CUT = re.compile(r"[.!?](?!\d)")
_LABEL_WORDS = 6


def _tables(results: list[str]) -> list[tuple[list[str], list[list[object]]]]:
    """The (columns, rows) of every table result (``{"columns": [...], "rows": [...]}``)."""
    found = []
    for content in results:
        try:
            data = json.loads(content)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("columns"), list):
            rows = [r for r in data.get("rows") or [] if isinstance(r, list)]
            found.append(([str(c).lower() for c in data["columns"]], rows))
    return found


def _names_column(word: str, column: str) -> bool:
    parts = re.findall(r"[a-z]+", column)
    return any(
        len(p) >= 3 and (word.startswith(p) or (len(word) >= 4 and p.startswith(word)))
        for p in parts
    )


def _cell(value: object) -> str:
    return _canon(json.dumps(value)) if isinstance(value, int | float) else str(value).lower()


def _row_claims(answer: str, case: Case, results: list[str]) -> list[str]:
    """Numbers stated about a table row that are not that row's value of the column the
    sentence names (the strict check, added after "The chair cost is $12." passed for
    the chair's price, 85: 12 is its stock). The column a word names: a column whose
    name it starts (or starts with), else, for a word of the question that names no
    column, the column holding the asked value in the asked row ("cost" -> price, where
    the chair's 85 is). The row: the one the sentence names by a text value, else the
    case's subject row."""
    found: list[str] = []
    asked_numbers = {_canon(n) for n in _NUMBER.findall(case.question)}
    for columns, rows in _tables(results):
        texts = [[_cell(v) for v in row] for row in rows]
        subject = [t for t in texts if case.subject and case.subject.lower() in t]
        # the question's words that name no column, mapped through the asked value
        mapped: dict[str, str] = {}
        if subject and case.facts and _NUMBER.fullmatch(case.facts[0]):
            at = [i for i, v in enumerate(subject[0]) if v == _canon(case.facts[0])]
            for word in re.findall(r"[a-z]+", case.question.lower()):
                cells = {v for t in texts for v in t}
                if (
                    len(at) == 1
                    and len(word) >= 4
                    and word.rstrip("s") not in cells
                    and not any(_names_column(word, c) for c in columns)
                ):
                    mapped[word] = columns[at[0]]
        for sentence in _SENTENCE_CUT.split(answer.lower()):
            words = set(re.findall(r"[a-z]+", sentence))
            named = [t for t in texts if any(v in words or f"{v}s" in words for v in t)]
            if len(named) > 1:
                continue  # several rows in one sentence: which number is whose is open
            row = named[0] if named else (subject[0] if subject else None)
            if row is None and len(texts) == 1:
                row = texts[0]
            if row is None:
                continue
            for m in _NUMBER.finditer(sentence):
                number = _canon(m.group(0))
                if number in asked_numbers:
                    continue
                head = _CLAUSE_CUT.split(sentence[: m.start()])[-1]
                before = list(reversed(re.findall(r"[a-z]+", head)))[:_LABEL_WORDS]
                after = re.findall(r"[a-z]+", _CLAUSE_CUT.split(sentence[m.end() :])[0])
                column = _label(before, columns, mapped) or _label(after[:3], columns, {})
                if column is None:
                    continue
                value = row[columns.index(column)]
                if value != number:
                    found.append(f"row {row[0]}: {column} is {value}, not {number}")
    return found


def _label(words: list[str], columns: list[str], mapped: dict[str, str]) -> str | None:
    for word in words:
        if word in ("and", "or", "but", "with"):
            return None
        for column in columns:
            if _names_column(word, column):
                return column
        for asked, column in mapped.items():
            if word[:4] == asked[:4]:
                return column
    return None


def _states(answer: str, fact: str) -> bool:
    """``fact`` appears in ``answer``; a number must stand alone ("7", not "1,7")."""
    if _NUMBER.fullmatch(fact):
        # "280.0" states 280 (a REAL column's value as the result writes it)
        written = re.finditer(r"(?<![\d.,])\d+(?:\.\d+)?(?![\d]|[.,]\d)", answer)
        return any(_canon(m.group(0)) == _canon(fact) for m in written)
    return fact.lower() in answer.lower()


def check(case: Case, result: RunResult, *, strict: bool = True) -> dict[str, object]:
    """The verdict on one answer; ``strict`` adds the row-and-column check
    (:func:`_row_claims`), which the checker before it lacked (``strict=False`` gives
    that older check, for figures comparable with earlier rounds)."""
    calls = [(c.name, dict(c.arguments)) for m in result.messages for c in m.tool_calls]
    answer = result.answer or ""
    fallback = any("grounding" in m.provider_meta for m in result.messages)
    trimmed = any("grounding_trimmed" in m.provider_meta for m in result.messages)
    if case.tool == "*":
        right_call = len(calls) >= 2
    else:
        right_call = any(n == case.tool and case.arg_ok(a) for n, a in calls)
    states = any(_states(answer, f) for f in case.facts)
    states = states and case.subject.lower() in answer.lower()
    if case.tool == "sql_query":
        results = " ".join(p.content for m in result.messages for p in m.tool_results_parts)
        right_call = right_call and any(f in results for f in case.facts)
    bad = [] if fallback else _contradictions(answer, case, result)
    if not fallback:
        parts = [p.content for m in result.messages for p in m.tool_results_parts]
        contents = [unwrap_untrusted(c) or c for c in parts]
        bad += _fluency(answer, case.question, contents)
        if strict:
            bad += _row_claims(answer, case, contents)
    ok = right_call and states and not bad and not fallback
    return {
        "pass": ok,
        "right_call": right_call,
        "states": states,
        "bad": bad,
        "fallback": fallback,
        "trimmed": trimmed,
    }


class Timed:
    """Records the wall time and output tokens of every model turn."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.turns: list[tuple[str, float, int]] = []  # (kind, seconds, output tokens)
        self.cpu: list[tuple[str, float]] = []  # (kind, process CPU seconds)

    @property
    def name(self) -> str:
        return self.model.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        start, cpu = time.perf_counter(), time.process_time()
        async for event in self.model.stream(request):
            if isinstance(event, ResponseDone):
                kind = "call" if event.message.tool_calls else "answer"
                spent = time.perf_counter() - start
                self.turns.append((kind, spent, event.usage.output_tokens))
                self.cpu.append((kind, time.process_time() - cpu))
            yield event


def fixtures(root: Path) -> BuiltinConfig:
    files = root / "files"
    files.mkdir()
    for name, text in FILES.items():
        (files / name).write_text(text)
    db = root / "shop.db"
    with sqlite3.connect(db) as conn:
        for table, (columns, rows) in TABLES.items():
            conn.execute(f"CREATE TABLE {table} ({columns})")
            marks = ", ".join("?" * len(rows[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    return BuiltinConfig(root=files, database=db)


def evaluate(cases: list[Case], config: BuiltinConfig, base: LocalModel) -> dict[str, object]:
    """Run ``cases`` grouped by tool set (as a user with one tool set would: the prompt
    prefix stays in llama.cpp's cache between questions)."""
    cases = sorted(cases, key=lambda c: c.tools)
    passed = passed_old = fallbacks = trimmed = 0
    run_s: list[float] = []
    single_s: list[float] = []
    single_cpu: list[float] = []
    answer_cpu: list[float] = []
    answer_s: list[float] = []
    tok_s: list[float] = []
    for case in cases:
        timed = Timed(base)
        agent = Agent(
            embedded_strategy(timed), make_tools(case.tools, config), limits=Limits(max_turns=5)
        )
        start, cpu = time.perf_counter(), time.process_time()
        result = asyncio.run(agent.arun(case.question))
        run_s.append(time.perf_counter() - start)
        run_cpu = time.process_time() - cpu
        verdict = check(case, result)
        passed += bool(verdict["pass"])
        passed_old += bool(check(case, result, strict=False)["pass"])
        fallbacks += bool(verdict["fallback"])
        trimmed += bool(verdict["trimmed"])
        answers = [t for t in timed.turns if t[0] == "answer"]
        answer_s += [t[1] for t in answers]
        tok_s += [t[1] / t[2] for t in answers if t[2]]
        answer_cpu += [c for kind, c in timed.cpu if kind == "answer"]
        if case.tool != "*" and len(timed.turns) == 2:
            single_s.append(run_s[-1])
            single_cpu.append(run_cpu)
        calls = [
            f"{c.name}({json.dumps(dict(c.arguments))})"
            for m in result.messages
            for c in m.tool_calls
        ]
        mark = "OK  " if verdict["pass"] else "MISS"
        extra = "" if verdict["pass"] else f" {verdict}"
        for m in result.messages:
            for key in ("grounding", "grounding_trimmed"):
                if key in m.provider_meta:
                    extra += f" {key}={m.provider_meta[key]}"
        print(f"{mark} {case.question!r}: {' -> '.join(calls)} -> {result.answer!r}{extra}")
    return {
        "questions": len(cases),
        "passed": passed,
        "passed_old_check": passed_old,
        "accuracy": round(passed / len(cases), 3),
        "fallbacks": fallbacks,
        "trimmed": trimmed,
        "median_run_s": round(statistics.median(run_s), 2),
        "mean_single_call_question_s": round(statistics.mean(single_s), 2) if single_s else None,
        "mean_answer_turn_s": round(statistics.mean(answer_s), 2) if answer_s else None,
        "mean_single_call_question_cpu_s": _mean(single_cpu),
        "mean_answer_turn_cpu_s": _mean(answer_cpu),
        "median_answer_s_per_output_token": round(statistics.median(tok_s), 4) if tok_s else None,
    }


def _mean(values: list[float]) -> float | None:
    return round(statistics.mean(values), 2) if values else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--set",
        choices=[
            "dev",
            "held_out",
            "held_out_2",
            "held_out_3",
            "dev_2",
            "held_out_4",
            "dev_3",
            "held_out_5",
            "held_out_6",
            "dev_4",
            "dev_5",
            "all",
        ],
        default="all",
    )
    parser.add_argument("--match", default="", help="only questions matching this regex")
    args = parser.parse_args()
    base = LocalModel()
    base.load()
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        config = fixtures(Path(tmp))
        for name, cases in (
            ("dev", DEV),
            ("held_out", HELD_OUT),
            ("held_out_2", HELD_OUT_2),
            ("held_out_3", HELD_OUT_3),
            ("dev_2", DEV_2),
            ("held_out_4", HELD_OUT_4),
            ("held_out_5", HELD_OUT_5),
            ("held_out_6", HELD_OUT_6),
            ("dev_3", DEV_3),
            ("dev_4", DEV_4),
            ("dev_5", DEV_5),
        ):
            chosen = [c for c in cases if re.search(args.match, c.question)]
            if args.set in (name, "all") and chosen:
                print(f"# {name}")
                out[name] = evaluate(chosen, config, base)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
