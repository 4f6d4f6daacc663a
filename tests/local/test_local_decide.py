"""Call or answer from the request's words (``providers/local_decide``; no model needed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.protocols import NamedTool
from loopwright.core.tools import ToolSpec
from loopwright.providers import local_decide as ld
from loopwright.providers import local_prompt as lp
from loopwright.providers.local import LocalConfig
from loopwright.tools.builtin import BUILTIN_TOOLS, make_tools

SPECS = [t.spec for t in make_tools(BUILTIN_TOOLS)]
BUILT = {spec.name: spec for spec in SPECS}
OVERLAP = LocalConfig().call_overlap


def _tool(name: str, description: str, **params: str) -> ToolSpec:
    props = {key: {"type": kind} for key, kind in params.items()}
    return ToolSpec(
        name, description, {"type": "object", "properties": props, "required": list(props)}
    )


DIRECTIONS = _tool(
    "get_directions", "Get driving directions between two places.", start="string", end="string"
)
FORECAST = _tool("forecast", "Weather forecast for a city.", city="string", days="integer")
WEATHER = _tool(
    "get_current_weather",
    "Retrieves the current weather conditions for a specified city and state.",
    location="string",
)
TRAINS = _tool(
    "find_trains",
    "Finds available train options for a route on a given date.",
    _from="string",
    to="string",
    date_of_journey="string",
)
FETCH = _tool(
    "http_get", "Sends a GET request to the specified URL to retrieve data.", url="string"
)
FOOD = ToolSpec(
    "order_food",
    "Order a dish from the menu.",
    {
        "type": "object",
        "properties": {"dish": {"type": "string", "enum": ["PIZZA", "BURGER", "SALAD"]}},
        "required": ["dish"],
    },
)
ORDER = _tool("check_order_status", "Check the status of a customer's order.", order_id="string")


@pytest.mark.parametrize(
    ("tools", "request_text", "decided"),
    [
        # tools the prompt only describes: the request's words decide
        ([DIRECTIONS], "Get directions from Sydney to Melbourne", "tools"),
        ([DIRECTIONS], "Who painted the Mona Lisa?", "answer"),
        ([DIRECTIONS, FORECAST], "The forecast for Oslo for the next 3 days", "tools"),
        # talks about the tool but gives no number for its required `days`
        ([FORECAST], "I want a weather forecast", "answer"),
        # ... or no place, URL, id or date for a required string of that kind
        ([WEATHER], "Can you get me the current exchange rate for the euro?", "answer"),
        ([WEATHER], "What is the current weather in Alpharetta, GA?", "tools"),
        ([TRAINS], "Is it possible for you to find me a train?", "answer"),
        ([TRAINS], "Find a train from Portland to Seattle on March 3rd", "tools"),
        ([FETCH], "write a python script that retrieves data and renames files", "answer"),
        ([FETCH], "Retrieve the data from https://api.example.com/v1/items", "tools"),
        ([ORDER], "I recently ordered pants and need a different size.", "answer"),
        ([ORDER], "What is the status of my order ORD-4521?", "tools"),
        # tools shown in worked examples: words can force a call, else the model decides
        (SPECS, "What is the weather in Beijing?", "tools"),
        (SPECS, "What is 45 * 12?", None),
        (SPECS, "Who wrote Hamlet?", None),
        (SPECS, "Is it sunny in Sydney right now?", None),
        # ... unless no tool's required parameters are given at all
        ([BUILT["get_weather"]], "Is it sunny in Sydney right now?", None),
        ([BUILT["get_weather"]], "Find me the way to the station.", "answer"),
        # an enum-only tool's worked example shows no example values: not scored
        ([FOOD], "Whopper", "answer"),
        ([FOOD], "Find me a good restaurant.", "answer"),
        ([FOOD], "A salad, please", "answer"),
        ([FOOD], "Order a salad from the menu", "tools"),
    ],
)
def test_first_turn_kind_from_the_requests_words(
    tools: list[ToolSpec], request_text: str, decided: str | None
) -> None:
    assert ld.first_turn_kind(tools, request_text, OVERLAP) == decided
    assert ld.first_turn_kind(tools, request_text, float("inf")) in (None, "answer")


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("url", "url"),
        ("endpoint", "url"),
        ("user_id", "id"),
        ("projectUuid", "id"),
        ("origin_airport", "place"),
        ("_from", "place"),
        ("location", "place"),
        ("date_of_journey", "date"),  # the head noun is the word before "of"
        ("departure_time", "time"),
        ("UrlName", "name"),  # the head noun is the last word, not the first
        ("email", "email"),
        ("spouse_of", None),
        ("query", None),
        ("content", None),
    ],
)
def test_value_kind_reads_the_head_noun(key: str, kind: str | None) -> None:
    assert ld.value_kind(key) == kind


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Find a salon in Berkeley", True),
        ("book a flight to NYC", True),
        ("remind me to 'water the plants'", True),
        ("明天北京的天气", True),  # a script without capitals: case says nothing
        ("Find me a salon to go to.", False),  # a sentence's first word is not a name
        ("I want to find a train. Soon please", False),
        ("what is your name?", False),
        ("The return date is March 8th", False),  # months and weekdays are not names
        ("Leaving on Friday from Oslo", True),
    ],
)
def test_names_something(text: str, named: bool) -> None:
    assert ld.names_something(text) is named


@pytest.mark.parametrize(
    ("kind", "text", "shown"),
    [
        ("url", "see example.com for details", True),
        ("url", "the server at 192.168.1.10", True),
        ("url", "fetch the latest data", False),
        ("id", "ticket AB1010CD", True),
        ("id", "my last ticket", False),
        ("date", "next Friday", True),
        ("date", "on 2024-03-01", True),
        ("date", "some day soon", False),
        ("date", "1 train ticket", False),  # a lone number is not a date
        ("date", "on the 8th", True),
        ("time", "at noon", True),
        ("time", "later", False),
        ("email", "write to ann@example.com", True),
        ("email", "write to Ann", False),
    ],
)
def test_shows_kind(kind: str, text: str, shown: bool) -> None:
    assert ld.shows_kind(kind, text) is shown


def test_shows_values_needs_example_values_in_the_schema() -> None:
    for name in ("calculator", "get_weather", "read_file", "sql_query", "add"):
        assert ld.shows_values(BUILT[name])
    assert not ld.shows_values(FOOD)  # enum members only
    assert not ld.shows_values(ToolSpec("ping", "Check the service is up."))
    assert not ld.shows_values(WEATHER)  # described only


def test_turn_mode_from_tool_choice() -> None:
    assert ld.turn_mode("auto", SPECS) == "both"
    assert ld.turn_mode("auto", []) == "answer"
    assert ld.turn_mode("none", SPECS) == "answer"
    assert ld.turn_mode("required", SPECS) == "tools"
    assert ld.turn_mode(NamedTool("calculator"), SPECS) == "tools"


DEFAULT_CLI_TOOLS = [BUILT["calculator"], BUILT["get_weather"]]


@pytest.mark.parametrize(
    ("request_text", "decided"),
    [
        # the calculator's examples all hold digits, the weather's are place names: a
        # request with neither a number nor a name fills no tool
        ("Hello, who are you?", "answer"),
        ("How many days are in a leap year?", "answer"),
        ("tell me a joke", "answer"),
        # a number (digits or words) or a name leaves the choice to the model
        ("What is 45 * 12?", None),
        ("What is twenty plus thirty?", "tools"),  # "plus" is in the calculator's text
        ("What is the capital of France?", None),
        ("Is it raining in Lima?", None),
    ],
)
def test_example_values_tell_what_a_free_text_parameter_needs(
    request_text: str, decided: str | None
) -> None:
    assert ld.first_turn_kind(DEFAULT_CLI_TOOLS, request_text, OVERLAP) == decided


@pytest.mark.parametrize(
    ("examples", "kind"),
    [
        (["(2 + 3) * 4", "20% of 50"], "number"),
        (["Paris", "New York", "Washington, DC"], "name"),
        (["Paris", "the moon"], None),
        (["Meeting moved"], None),  # a sentence, not a name
        (["The meeting is now at 3 pm."], None),  # a sentence with a number in it
        (["123 Main St, Springfield, IL"], "number"),  # led by its number
        (["20% of 50 plus 2 to the power of 3"], "number"),
        (["SELECT * FROM t", "x 1"], None),
        ([], None),
    ],
)
def test_example_kind(examples: list[str], kind: str | None) -> None:
    assert ld.example_kind({"type": "string", "examples": examples}) == kind


PLAYLISTS = ToolSpec("list_playlists", "List the saved playlists of the user.")
PODCASTS = ToolSpec(
    "find_podcasts",
    "Find podcasts.",
    {
        "type": "object",
        "properties": {"genre": {"type": "string", "enum": ["comedy", "news", "science"]}},
    },
)
LOOKUP = ToolSpec(
    "lookup_city",
    "Look up facts about a city.",
    {"type": "object", "properties": {"topic": {"type": "string"}}},
)
REPORT = _tool(
    "get_weather_report", "Retrieves the current weather report for a city.", location="string"
)


@pytest.mark.parametrize(
    ("tools", "request_text", "decided"),
    [
        # a tool without required parameters: one shared word is not enough ...
        ([PLAYLISTS], "Put on a playlist for my run", "answer"),
        ([PODCASTS], "I love podcasts", "answer"),
        # ... two are, and so is a value for an optional parameter
        ([PLAYLISTS], "Which playlists have I saved?", "tools"),
        ([PODCASTS], "Any science podcasts?", "tools"),
        ([LOOKUP], "Tell me about Lisbon", "tools"),
        # an address the request hands over needs a parameter that can take it
        ([REPORT], "Get the current report for 203.0.113.7 from Shodan", "answer"),
        ([REPORT], "Fetch the report of example.org on Censys", "answer"),
        ([REPORT], "Get the current weather report for Lisbon", "tools"),
        ([FETCH], "Retrieve the report from https://api.example.com/v1/report", "tools"),
    ],
)
def test_first_turn_kind_needs_evidence_beyond_one_word(
    tools: list[ToolSpec], request_text: str, decided: str
) -> None:
    assert ld.first_turn_kind(tools, request_text, OVERLAP) == decided


_PLAIN = st.lists(
    st.sampled_from(["saved", "playlists", "user", "please", "music", "list", "quiet", "show"]),
    min_size=1,
    max_size=8,
)


@given(words=_PLAIN)
@settings(max_examples=200, deadline=None)
def test_a_parameterless_tool_needs_two_shared_words(words: list[str]) -> None:
    """Lower-case words name no value, so only the shared words decide."""
    text = " ".join(words)
    shared = lp.shared_words(PLAYLISTS, text, notes=True)
    called = ld.first_turn_kind([PLAYLISTS], text, OVERLAP) == "tools"
    assert called == (len(shared) >= ld.MIN_SHARED_WORDS)


@given(text=st.text(max_size=60), address=st.sampled_from(["10.0.0.8", "ann@example.com"]))
@settings(max_examples=200, deadline=None)
def test_a_handed_over_address_needs_a_parameter_for_it(text: str, address: str) -> None:
    assert ld.first_turn_kind([REPORT], f"{text} {address}", OVERLAP) == "answer"
    assert ld.takes_addresses(FETCH, f"{text} {address}")


GAP = ToolSpec(
    "measure_gap",
    "Measure the gap to the vehicle ahead from the detected boxes of a camera frame.",
    {
        "type": "object",
        "properties": {"boxes": {"type": "array", "items": {"type": "object"}}},
        "required": ["boxes"],
    },
)
SUMMARY = _tool("summarize_text", "Shorten a text using a small language model.", text="string")


@pytest.mark.parametrize(
    ("tools", "request_text", "decided"),
    [
        # one shared word only the description uses, and no value for the list
        ([GAP], "tell me something about the camera in my car", "answer"),
        ([GAP], "what is ahead of us", "answer"),
        # ... a value the request shows (a name, a quoted span, a number) ...
        ([GAP], "the camera sees boxes at 3.5 and 7 metres", "tools"),
        ([GAP], "what is ahead of us on Route 66", "tools"),
        # ... or a word of the tool's name is evidence enough
        ([GAP], "measure it", "tools"),
        # free text takes what the request says
        ([SUMMARY], "I am using my phone right now", "tools"),
    ],
)
def test_one_description_word_needs_a_value(
    tools: list[ToolSpec], request_text: str, decided: str
) -> None:
    assert ld.first_turn_kind(tools, request_text, OVERLAP) == decided


@given(
    words=st.lists(
        st.sampled_from(["about", "camera", "measure", "the", "phone", "today", "please"]),
        min_size=1,
        max_size=8,
    )
)
@settings(max_examples=200, deadline=None)
def test_lower_case_talk_needs_two_words_or_a_name_word(words: list[str]) -> None:
    """Lower-case words show no value, so one shared word calls only if the name has it."""
    text = " ".join(words)
    shared = lp.shared_words(GAP, text, notes=True)
    share = lp.tool_overlaps([GAP], text, notes=True)[0]
    expected = share >= OVERLAP and (
        len(shared) >= ld.MIN_SHARED_WORDS or bool(lp.shared_words(GAP, text, name_only=True))
    )
    assert (ld.first_turn_kind([GAP], text, OVERLAP) == "tools") == expected


def test_word_candidates_drop_tools_sharing_under_half_the_best() -> None:
    hotel = _tool("book_hotel_room", "Book a hotel room in a city.", city="string")
    flight = _tool("book_flight", "Book a flight between two airports.", origin="string")
    weather = _tool("get_forecast", "Weather forecast for a city.", city="string")
    tools = [hotel, flight, weather]
    # "hotel", "room" for the first; nothing for the others
    assert ld.word_candidates(tools, "Please find a hotel room for me") == [hotel]
    # "book", "room" for the first; "book" (half as many) for the second
    assert ld.word_candidates(tools, "I want to book a room") == [hotel, flight]
    # one shared word at most: the model's name score chooses among them all
    assert ld.word_candidates(tools, "Something in Oslo please") == tools
    assert ld.word_candidates(tools, "A hotel in Oslo") == tools


def test_an_email_tool_fits_a_request_that_gives_the_address_and_no_number() -> None:
    # was: no call ("Email ann@example.org hello" answered "Hi, I'm Ann."): the body's
    # example holds a "3" so the request had to give a number, and the parameter named
    # "to" wanted a place although its examples are email addresses
    from loopwright.tools.builtin import BuiltinConfig, make_tools

    spec = next(iter(make_tools(("send_email",), BuiltinConfig()))).spec
    assert ld.address_kind(spec.parameters["properties"]["to"]) == "email"
    assert ld.gives_required(spec, "Email ann@example.org hello")
    assert ld.gives_required(spec, "Send an email to bo@example.com saying the build passed")
    assert not ld.gives_required(spec, "Email Ann about the meeting")  # no address
    assert not ld.gives_required(spec, "Hello, who are you?")


@pytest.mark.parametrize(
    ("examples", "kind"),
    [
        (["ana@example.com"], "email"),
        (["ana@example.com", "bo@example.org"], "email"),
        (["ana@example.com", "Paris"], None),
        (["write to ana@example.com"], None),
        ([], None),
    ],
)
def test_address_kind(examples: list[str], kind: str | None) -> None:
    assert ld.address_kind({"type": "string", "examples": examples}) == kind
