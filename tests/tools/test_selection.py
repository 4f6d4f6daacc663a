"""Tool retrieval (BM25, static MiniLM embeddings, hybrid) and the TopK / TwoStage
selections an Agent runs each turn."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from loopwright import Agent, ScriptedModel, tool_call
from loopwright.core.errors import ConfigError
from loopwright.core.messages import Message
from loopwright.core.tools import ToolSpec
from loopwright.tools import ToolRegistry
from loopwright.tools.selection import ToolIndex, TopK, TwoStage, index_for, request_text
from loopwright.tools.selection_lexical import BM25, query_text, stem, tool_text, words

SPECS = [
    ToolSpec(
        "get_weather",
        "Current weather and temperature for a city.",
        {"type": "object", "properties": {"city": {"type": "string"}}},
    ),
    ToolSpec(
        "convertCurrency",
        "Convert an amount of money from one currency to another.",
        {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "from_currency": {"type": "string"},
                "to_currency": {"type": "string"},
            },
        },
    ),
    ToolSpec(
        "send_email",
        "Send an email message to a recipient.",
        {"type": "object", "properties": {"to": {"type": "string"}, "subject": {"type": "string"}}},
    ),
    ToolSpec(
        "flights.search",
        "Find airline flights between two airports on a date.",
        {
            "type": "object",
            "properties": {"origin": {"type": "string"}, "destination": {"type": "string"}},
        },
    ),
    ToolSpec(
        "calculator",
        "Evaluate an arithmetic expression.",
        {"type": "object", "properties": {"expression": {"type": "string"}}},
    ),
    ToolSpec(
        "book_restaurant",
        "Reserve a table at a restaurant.",
        {
            "type": "object",
            "properties": {"restaurant": {"type": "string"}, "party_size": {"type": "integer"}},
        },
    ),
    ToolSpec(
        "translate_text",
        "Translate text into another language.",
        {
            "type": "object",
            "properties": {"text": {"type": "string"}, "target_language": {"type": "string"}},
        },
    ),
    ToolSpec(
        "stock_price",
        "Latest share price of a listed company by ticker symbol.",
        {"type": "object", "properties": {"ticker": {"type": "string"}}},
    ),
]


def test_words_split_names_and_stem() -> None:
    assert words("convertCurrency") == ["convert", "currency"]
    assert words("flights.search_by_DATE") == ["flight", "search", "date"]
    assert stem("bookings") == "booking"
    assert stem("class") == "class" and stem("status") == "status"
    assert "party size" in tool_text(SPECS[5])  # parameter names are searchable


EVENTS = [
    ToolSpec(
        "Events_3_FindEvents",
        "Find cultural events happening in a city.",
        {
            "type": "object",
            "properties": {
                "event_type": {"type": "string", "enum": ["Music", "Theater"]},
                "city": {"type": "string"},
            },
        },
    ),
    ToolSpec(
        "sports.find_games",
        "Find events happening in a city.",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "league": {"type": "string"}},
        },
    ),
    ToolSpec(
        "find_places",
        "Find places in a city.",
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "date": {"type": "string"}},
        },
    ),
]


def test_allowed_values_and_nested_enums_are_searchable() -> None:
    text = tool_text(EVENTS[0])
    assert "Music Theater" in text and "Events 3 FindEvents" in text
    nested = ToolSpec(
        "tag", "Tag it.", {"properties": {"tags": {"type": "array", "items": {"enum": ["urgent"]}}}}
    )
    assert "urgent" in tool_text(nested)
    # the two event finders differ only by what the first one's enum allows
    for method in ("lexical", "hybrid"):
        top = ToolIndex(EVENTS, method).search("any theater shows in Seattle", 1)  # type: ignore[arg-type]
        assert top[0].name == "Events_3_FindEvents"


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("weather in Oslo on March 3rd", "date"),
        ("weather in Oslo on 2023-04-15", "date"),
        ("what is on next Tuesday", "date"),
        ("wake me at 7:30 am", "time"),
        ("open https://example.org", "url"),
        ("write to ana@example.org", "email"),
        ("summarise report.pdf", "file"),
    ],
)
def test_query_text_names_the_kinds_of_value_in_the_request(query: str, kind: str) -> None:
    assert query_text(query).split("\n")[-1].split() == [kind]


def test_query_text_leaves_a_request_without_values_alone() -> None:
    assert query_text("what is the weather in Oslo") == "what is the weather in Oslo"


def test_a_date_in_the_request_favours_the_tool_with_a_date_parameter() -> None:
    city = {"city": {"type": "string"}}
    tools = [
        ToolSpec("find_places", "Places in a city.", {"properties": city}),
        ToolSpec(
            "search_places",
            "Places in a city.",
            {"properties": city | {"date": {"type": "string"}}},
        ),
    ]
    assert ToolIndex(tools, "lexical").search("places in Oslo", 1)[0].name == "find_places"
    top = ToolIndex(tools, "lexical").search("places in Oslo on March 3rd", 1)
    assert top[0].name == "search_places"


@pytest.mark.parametrize("fusion", ["score", "rank"])
def test_hybrid_fusions_agree_on_clear_cases(fusion: str) -> None:
    index = ToolIndex(SPECS, "hybrid", fusion)  # type: ignore[arg-type]
    assert index.search("Translate this sentence into French", 1)[0].name == "translate_text"
    # more than there are tools: every tool once, none invented
    assert sorted(s.name for s in index.search("anything at all", 50)) == sorted(
        s.name for s in SPECS
    )


def test_unknown_fusion_is_refused() -> None:
    with pytest.raises(ValueError, match="fusion"):
        ToolIndex(SPECS, "hybrid", "max")  # type: ignore[arg-type]


def test_bm25_prefers_rare_words_and_scores_only_matches() -> None:
    index = BM25([["weather", "city"], ["city", "flight"], ["currency", "money"]])
    scores = index.scores(["weather", "city"])
    assert set(scores) == {0, 1}
    assert scores[0] > scores[1]  # "weather" is rarer than "city"
    assert index.top(["nothing"], 3) == []


@pytest.mark.parametrize("method", ["lexical", "embedding", "hybrid"])
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("How much is 120 dollars in euros? Convert the currency please", "convertCurrency"),
        ("What's the weather in Oslo today?", "get_weather"),
        ("Find me flights from SFO to JFK next Monday", "flights.search"),
    ],
)
def test_every_method_finds_the_obvious_tool(method: str, query: str, expected: str) -> None:
    index = ToolIndex(SPECS, method)  # type: ignore[arg-type]
    assert index.search(query, 3)[0].name == expected


def test_embeddings_find_a_tool_that_shares_no_word_with_the_request() -> None:
    query = "How expensive is Apple stock right now"
    lexical = [s.name for s in ToolIndex(SPECS, "lexical").search("Apple equities quote", 3)]
    assert "stock_price" not in lexical  # no word in common
    semantic = [s.name for s in ToolIndex(SPECS, "embedding").search("Apple equities quote", 3)]
    assert "stock_price" in semantic
    assert ToolIndex(SPECS, "hybrid").search(query, 1)[0].name == "stock_price"


def test_the_index_is_built_once_per_tool_set() -> None:
    first = index_for(SPECS, "hybrid")
    assert index_for(list(SPECS), "hybrid") is first
    changed = [*SPECS[:-1], ToolSpec("stock_price", "Another description.")]
    assert index_for(changed, "hybrid") is not first


def test_request_text_is_the_last_user_message() -> None:
    history = [
        Message.user("first question"),
        Message.assistant("answer"),
        Message.user("second question"),
        Message("tool", ()),
    ]
    assert request_text(history) == "second question"
    assert request_text(history, turns=2) == "first question\nsecond question"


def _registry() -> ToolRegistry:
    from loopwright.tools import Tool

    def make(spec: ToolSpec) -> Tool:
        def fn(**kwargs: object) -> str:
            return f"{spec.name} ran"

        return Tool.from_schema(spec.name.replace(".", "_"), spec.description, spec.parameters, fn)

    return ToolRegistry(make(spec) for spec in SPECS)


def test_topk_shows_the_best_k_plus_always_on_tools_in_registry_order() -> None:
    model = ScriptedModel([[tool_call("get_weather", {"city": "Oslo"})], "Sunny."])
    agent = Agent(model, _registry(), tool_selection=TopK(k=2, always=("calculator",)))
    result = agent.run("What's the weather in Oslo today?")
    assert result.answer == "Sunny."
    shown = model.requests[0].tool_names
    assert "get_weather" in shown and "calculator" in shown and len(shown) == 3
    registry_order = [n for n in _registry().names() if n in shown]
    assert list(shown) == registry_order
    assert model.requests[1].tool_names == shown  # same request, same selection


async def test_two_stage_asks_the_model_among_summaries_then_sends_full_schemas() -> None:
    model = ScriptedModel(
        [
            "send_email, convertCurrency, not_a_candidate",  # the choice (stage 2)
            [
                tool_call(
                    "convertCurrency", {"amount": 5, "from_currency": "USD", "to_currency": "EUR"}
                )
            ],
            "About 4.6 EUR.",
        ]
    )
    selection = TwoStage(k=4, choose=2, always=("calculator",))
    agent = Agent(model, _registry(), tool_selection=selection)
    result = await agent.arun("Convert 5 USD to EUR, then email the result to Ana")
    assert result.answer == "About 4.6 EUR."
    chooser = model.requests[0]
    assert chooser.tool_names == ()  # summaries in the prompt, no schemas
    prompt = chooser.last_message.text
    assert "- convertCurrency: Convert an amount of money" in prompt
    assert "Convert 5 USD to EUR" in prompt
    assert model.requests[1].tool_names == ("convertCurrency", "send_email", "calculator")
    # the choice is remembered while the request stays the same: no second chooser call
    assert model.requests[2].tool_names == model.requests[1].tool_names
    assert model.calls == 3


async def test_two_stage_falls_back_to_retrieval_when_the_reply_names_nothing() -> None:
    model = ScriptedModel(["I am not sure.", "ok"])
    agent = Agent(model, _registry(), tool_selection=TwoStage(k=5, choose=1))
    await agent.arun("What's the weather in Oslo today?")
    assert model.requests[1].tool_names == ("get_weather",)


@pytest.mark.parametrize(
    ("selection", "shown"),
    [
        # k <= choose: the retrieved candidates are the whole choice
        (TwoStage(k=1, choose=2, always=("calculator",)), ("get_weather", "calculator")),
        # fewer tools than choose: nothing to choose among
        (TwoStage(k=20, choose=len(SPECS)), tuple(s.name.replace(".", "_") for s in SPECS)),
    ],
)
async def test_two_stage_makes_no_choosing_call_when_there_is_nothing_to_choose(
    selection: TwoStage, shown: tuple[str, ...]
) -> None:
    # was: a choosing call was spent (and its reply ignored) even then
    model = ScriptedModel(["Sunny."])
    agent = Agent(model, _registry(), tool_selection=selection)
    result = await agent.arun("What's the weather in Oslo today?")
    assert result.answer == "Sunny."
    assert model.calls == 1 and model.requests[0].tool_names == shown


def test_the_same_spec_objects_find_their_index_without_serialising_schemas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import loopwright.tools.selection as selection

    specs = [ToolSpec(f"tool_{i}", f"Tool number {i}.", SPECS[i % 8].parameters) for i in range(40)]
    first = index_for(specs, "lexical")
    serialised: list[object] = []
    original = selection._schema_key

    def counting(schema: object) -> str:
        serialised.append(schema)
        return original(schema)  # type: ignore[arg-type]

    monkeypatch.setattr(selection, "_schema_key", counting)
    assert index_for(list(specs), "lexical") is first  # a new list of the same objects
    assert serialised == []
    # equal content in new objects: found by content (serialised once), then by identity
    copies = [ToolSpec(s.name, s.description, dict(s.parameters)) for s in specs]
    assert index_for(copies, "lexical") is first
    assert len(serialised) == len(specs)
    assert index_for(copies, "lexical") is first
    assert len(serialised) == len(specs) * 2  # the index holds the first objects, not these


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: TopK(k=-1), "TopK.k"),  # showed no tool at all
        (lambda: TopK(method="bm25"), "TopK.method"),  # failed the run at its first call
        (lambda: TopK(always="calculator"), "TopK.always"),  # iterated letter by letter
        (lambda: TopK(turns=0), "TopK.turns"),
        (lambda: TwoStage(choose=0), "TwoStage.choose"),
    ],
)
def test_a_selection_refuses_what_it_would_misread(build: Callable[[], object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        build()


@pytest.mark.parametrize(
    "make", [lambda: TopK(always=("calculater",)), lambda: TwoStage(always=("calculater",))]
)
def test_always_naming_an_unregistered_tool_fails_when_the_agent_is_built(
    make: Callable[[], TopK | TwoStage],
) -> None:
    """The name was silently dropped (the tool was never shown); the registry is known
    only when the agent is configured, so that is where it must fail."""
    model = ScriptedModel(["ok"])
    with pytest.raises(ConfigError, match=r"always names 'calculater'.*did you mean 'calculator'"):
        Agent(model, _registry(), tool_selection=make())
    Agent(model, _registry(), tool_selection=TopK(always=("calculator",)))  # a real name is fine
