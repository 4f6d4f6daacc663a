"""The questions of ``answers_eval.py`` and the fixtures they are asked over.

``DEV`` questions were used while tuning the prompt, grammar and strategy; ``HELD_OUT``
questions were written at the same time and only run for the report; ``HELD_OUT_2`` was
written later, before a further tuning round, and is run once at its end. ``HELD_OUT_3``
was written before the next round and kept out of the repository until that round's code
was final; it was then committed unchanged and run once. ``DEV_2`` is a second tuning set,
written (and its baseline recorded) before the round that tuned on it. ``HELD_OUT_4``
was kept out of the repository like ``HELD_OUT_3`` and committed after its one run;
so were ``HELD_OUT_5``, ``HELD_OUT_6``, ``HELD_OUT_7`` and ``HELD_OUT_9``. ``HELD_OUT_8``
was kept out too, but its failure classes were described to the round that tuned on
``DEV_7``, so it is a tuning set.
``DEV_3`` is a third tuning set, its baseline recorded before the round that tunes on it;
so are ``DEV_4``, ``DEV_5``, ``DEV_6`` and ``DEV_7``. Every committed set is a tuning set now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

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


# A sixth tuning set, written and measured on the tree before the round that tunes on it:
# "what needs to be ...", items and ingredients by position ("first", "last", "middle"),
# superlatives and positions that ask for another column ("the stock of the cheapest
# product"), yes/no questions, percentages, counts, sums over a table, chains in words.
DEV_6: list[Case] = [
    calc("What is 40% of 85?", "34"),
    calc("What needs to be added to 58 to make 100?", "42"),
    calc("What is 144 minus 89?", "55"),
    calc("Is 17 * 3 more than 50?", "51"),
    calc("What is 2.5 * 4?", "10"),
    calc("What is the square of 15?", "225"),
    calc("Add 19, 23 and 58.", "100"),
    calc("What is a quarter of 96?", "24"),
    weather("What's the temperature in Edinburgh at the moment?", "Edinburgh", "temperature"),
    weather("Tell me how humid it is in Karachi.", "Karachi", "humidity"),
    weather("What's the wind like in Perth?", "Perth", "wind"),
    weather("Is it snowing in Riga?", "Riga", "condition"),
    weather("What are the weather conditions in Quito?", "Quito", "condition"),
    weather("Should I expect rain in Vancouver today?", "Vancouver", "condition"),
    weather("Weather for Marrakesh?", "Marrakesh", "any"),
    read("What needs to be renewed according to todo.txt?", "todo.txt", "passport"),
    read("What does todo.txt say to buy?", "todo.txt", "milk"),
    read("What is the middle item of todo.txt?", "todo.txt", "plumber"),
    read("How many items are on todo.txt?", "todo.txt", "3"),
    read("Which ingredient comes first in recipe.txt?", "recipe.txt", "flour"),
    read("What is the last ingredient in recipe.txt?", "recipe.txt", "milk"),
    read("Is the build failing according to status.txt?", "status.txt", "passed"),
    read("Which hostname is listed in config.ini?", "config.ini", "example.internal"),
    read("At what hour does the team meet? Look at notes.txt.", "notes.txt", "10"),
    read("What are roses described as in poem.txt?", "poem.txt", "red"),
    sql("What is the stock of the cheapest product? Use the products table.", "3"),
    sql("How much does the most expensive product cost? Check the products table.", "240"),
    sql("What is the total of the last order in the orders table?", "70"),
    sql("Who is the first customer in the customers table?", "Ana"),
    sql("How many orders did customer 2 place? Use the orders table.", "2"),
    sql("What is the total stock of all products in the products table?", "20"),
    sql("How many units of the lamp are left? Use the products table.", "3", "lamp"),
    sql("Which city does the customer with the highest id live in?", "Oslo"),
    replace(
        sql("Is there a customer in Oslo? Check the customers table.", "Dana"),
        facts=("yes", "Dana"),
    ),
    chain("Add 12 and 18, then divide the result by 5.", "6"),
    chain("What is (11 + 4) * 6?", "90"),
    chain("Divide 84 by 7 and then multiply by 3.", "36"),
]


# A seventh tuning set, written (and its baseline recorded) before the round that tunes on
# it: everyday phrasings the earlier sets hold few of (unit conversions, "half of", "a
# quarter of", equal parts, "what must be added", sums of three numbers, "double",
# "triple"; weather asked indirectly; one detail of a file; a table column other than the
# one named first, ranks and counts).
DEV_7: list[Case] = [
    calc("How many seconds are in 15 minutes?", "900"),
    calc("How many hours are in 3 days?", "72"),
    calc("How many minutes are there in 2.5 hours?", "150"),
    calc("How many grams are in 3.5 kilograms?", "3500"),
    calc("How many weeks are in 84 days?", "12"),
    calc("What is half of 358?", "179"),
    calc("What's a quarter of 184?", "46"),
    calc("If I split 126 into 3 equal parts, how big is each part?", "42"),
    calc("What must be added to 37 to make 100?", "63"),
    calc("What is the sum of 14, 27 and 39?", "80"),
    calc("Double 475.", "950"),
    calc("What is triple 64?", "192"),
    calc("I have 250 euros and spend 85. How much is left?", "165"),
    weather("I'm flying to Lisbon tomorrow. What's the weather there now?", "Lisbon", "any"),
    weather("Do I need an umbrella in Helsinki today?", "Helsinki", "condition"),
    weather("Do I need an umbrella in Dublin?", "Dublin", "condition"),
    weather("Is it cold in Wellington right now?", "Wellington", "temperature"),
    weather("My sister lives in Nairobi. How humid is it there?", "Nairobi", "humidity"),
    weather("What's it like outside in Seoul?", "Seoul", "any"),
    read("According to poem.txt, what colour are violets?", "poem.txt", "blue"),
    read("What colour does poem.txt give the roses?", "poem.txt", "red"),
    read("Which room is the team meeting in? See notes.txt.", "notes.txt", "4"),
    read("What time is the meeting according to notes.txt?", "notes.txt", "10"),
    read("How long should each side cook according to recipe.txt?", "recipe.txt", "3"),
    read("How much flour goes into the pancakes? See recipe.txt.", "recipe.txt", "200"),
    read("What host does config.ini name?", "config.ini", "example.internal"),
    read("How many tests failed according to status.txt?", "status.txt", "0"),
    read("Who has to be called according to todo.txt?", "todo.txt", "plumber"),
    sql("How many desks do we still have? Check the products table.", "5", "desk"),
    sql("How much is the lamp? Check the products table.", "40", "lamp"),
    sql("Which product has the least stock? Use the products table.", "lamp"),
    sql("What is the second most expensive product? Use the products table.", "chair"),
    sql("How many customers live in Berlin? Check the customers table.", "2"),
    sql("How many orders are in the orders table?", "7"),
    sql("What is the customer id of order 3 in the orders table?", "4"),
    sql("What is the biggest order total in the orders table?", "70"),
    sql("Where does Ana live? Check the customers table.", "Berlin", "Ana"),
    sql("How many products cost more than 50? Use the products table.", "2"),
    chain("Multiply 6 by 7, then add 8.", "50"),
    chain("Take 90, divide it by 3, and add 12.", "42"),
]


# HELD_OUT_7 likewise: written before the next round, run on the tree before it (29/30)
# and on its final code (29/30, both by the check with the list-item rule), then
# committed unchanged.
HELD_OUT_7: list[Case] = [
    calc("What is 64 times 5?", "320"),
    calc("Add 123 and 456.", "579"),
    calc("What is 1500 divided by 25?", "60"),
    calc("Subtract 88 from 250.", "162"),
    calc("What is 40% of 75?", "30"),
    calc("Calculate 15 squared.", "225"),
    calc("How much is 999 plus 1?", "1000"),
    calc("Compute 72 / 8.", "9"),
    weather("What's the temperature in Vienna?", "Vienna", "temperature"),
    weather("How humid is it in Kyiv?", "Kyiv", "humidity"),
    weather("What is the wind speed in Toronto?", "Toronto", "wind"),
    weather("Is it sunny in Madrid?", "Madrid", "condition"),
    weather("What's the weather like in Hanoi?", "Hanoi", "any"),
    weather("How warm is it in Jakarta right now?", "Jakarta", "temperature"),
    read("What port does the server listen on? See config.ini.", "config.ini", "8080"),
    read("How many eggs are needed for the pancakes? Check recipe.txt.", "recipe.txt", "2"),
    read("What is the last thing on the list in todo.txt?", "todo.txt", "passport"),
    read("Which build does status.txt report on?", "status.txt", "512"),
    read("What day is the meeting? Check notes.txt.", "notes.txt", "Tuesday"),
    read("How much milk do the pancakes need according to recipe.txt?", "recipe.txt", "300"),
    sql("What is Chen's city? Check the customers table.", "Berlin", "Chen"),
    sql("How many products are there? Use the products table.", "3"),
    sql("How many chairs are left? Use the products table.", "12", "chair"),
    sql("What is the total of the smallest order? Use the orders table.", "10"),
    sql("Which product costs 40? Use the products table.", "lamp"),
    sql("What is customer 1's name? Use the customers table.", "Ana"),
    sql("How much did order 5 cost? Check the orders table.", "50"),
    chain("What is (11 + 4) * 2?", "30"),
    chain("What is (64 / 8) + 2?", "10"),
    chain("What is (3 * 9) / 3?", "9"),
]

HELD_OUT_8: list[Case] = [
    calc("What do you get when you take 37 away from 120?", "83"),
    calc("What's half of 346?", "173"),
    calc("If I split 96 into 4 equal parts, how big is each part?", "24"),
    calc("What is 12.5 times 8?", "100"),
    calc("What is the sum of 250 and 175?", "425"),
    calc("Work out 7 cubed.", "343"),
    calc("What is 20 percent of 340?", "68"),
    calc("How many seconds are in 15 minutes?", "900"),
    weather("Give me the current humidity for Nairobi.", "Nairobi", "humidity"),
    weather("What are the sky conditions in Athens?", "Athens", "condition"),
    weather("Can you check how fast the wind is blowing in Dublin?", "Dublin", "wind"),
    weather("What temperature is it in Seoul at the moment?", "Seoul", "temperature"),
    weather("I'm flying to Lisbon; what's the weather there now?", "Lisbon", "any"),
    weather("How cold is it in Helsinki?", "Helsinki", "temperature"),
    read("Which room is the team meeting in, according to notes.txt?", "notes.txt", "room 4"),
    read("What host is configured in config.ini?", "config.ini", "example.internal"),
    read("How long should each side of a pancake cook? See recipe.txt.", "recipe.txt", "3 minutes"),
    read("What is the second item in todo.txt?", "todo.txt", "plumber"),
    read("What time does the meeting in notes.txt start?", "notes.txt", "10"),
    read("What does poem.txt say violets are?", "poem.txt", "blue"),
    sql("Where is customer Bo from? Check the customers table.", "Paris", "Bo"),
    sql("What is the most expensive product? Use the products table.", "desk"),
    sql("How many desks do we have in stock? Use the products table.", "5", "desk"),
    sql("What is the largest order total? Check the orders table.", "70"),
    sql("How many customers live in Berlin? Use the customers table.", "2"),
    sql("What does a lamp cost? Check the products table.", "40", "lamp"),
    sql("Give me the name of the customer whose id is 3 (customers table).", "Chen"),
    chain("What is (7 + 8) * 4?", "60"),
    chain("Divide 90 by 3 and then add 5.", "35"),
    chain("Multiply 6 by 7, then divide the result by 2.", "21"),
]

HELD_OUT_9: list[Case] = [
    calc("I bought 3 shirts at 24 each. What did I spend?", "72"),
    calc("What is 1,200 minus 475?", "725"),
    calc("Take 15% off 80. What's the result?", "68"),
    calc("What is 9 squared plus 19?", "100"),
    calc("How many days are in 6 weeks?", "42"),
    calc("Share 150 equally among 6 people; how much does each get?", "25"),
    calc("What's 2 to the 10th power?", "1024"),
    calc("What is three quarters of 200?", "150"),
    weather("Bangkok weather right now, please.", "Bangkok", "any"),
    weather("Give me Manila's humidity.", "Manila", "humidity"),
    weather("Tell me how strong the wind is in Chicago.", "Chicago", "wind"),
    weather("Is it hot in Dubai right now?", "Dubai", "temperature"),
    weather("Check the current conditions in Zurich.", "Zurich", "any"),
    weather("What's the temperature in Buenos Aires?", "Buenos Aires", "temperature"),
    read("Summarise status.txt in one sentence.", "status.txt", "512"),
    read("Who do I need to call, according to todo.txt?", "todo.txt", "plumber"),
    read("What dish is recipe.txt for?", "recipe.txt", "pancake"),
    read("What colour are roses, according to poem.txt?", "poem.txt", "red"),
    read("Where is the team meeting held? See notes.txt.", "notes.txt", "room 4"),
    read("What is the third task in todo.txt?", "todo.txt", "passport"),
    sql("What is the cheapest product? Use the products table.", "lamp"),
    sql("Which product has the most units in stock? Use the products table.", "chair"),
    sql("Tell me where Chen lives, from the customers table.", "Berlin", "Chen"),
    sql("What is the total of order 2? Check the orders table.", "20"),
    sql("How many orders cost less than 30? Use the orders table.", "2"),
    sql("How much would two desks cost? Use the products table.", "480", "desk"),
    sql("How many customers are in Oslo? Use the customers table.", "1"),
    chain("Add 12 and 18, then multiply by 3.", "90"),
    chain("What is (50 / 5) * 7?", "70"),
    chain("Multiply 9 by 4 and add 14 to the result.", "50"),
]


# name -> questions, in the order ``--set all`` runs them
SETS: dict[str, list[Case]] = {
    "dev": DEV,
    "held_out": HELD_OUT,
    "held_out_2": HELD_OUT_2,
    "held_out_3": HELD_OUT_3,
    "dev_2": DEV_2,
    "held_out_4": HELD_OUT_4,
    "held_out_5": HELD_OUT_5,
    "held_out_6": HELD_OUT_6,
    "held_out_7": HELD_OUT_7,
    "held_out_8": HELD_OUT_8,
    "held_out_9": HELD_OUT_9,
    "dev_3": DEV_3,
    "dev_4": DEV_4,
    "dev_5": DEV_5,
    "dev_6": DEV_6,
    "dev_7": DEV_7,
}
