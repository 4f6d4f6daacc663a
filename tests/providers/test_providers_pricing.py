"""Usage from a provider is made safe and priced in one place (the stream driver), from a
dated price table that ships as data; a cost budget on a model without prices is refused
up front instead of silently never firing."""

from __future__ import annotations

import json
import math

import pytest
from contract import USER, Answer, collect, done, failed, load_kits, request
from fakeserver import FakeServer, Reply
from hypothesis import given
from hypothesis import strategies as st

from loopwright import Agent, Limits, RunStop, ScriptedModel
from loopwright.core.errors import ConfigError
from loopwright.core.messages import Usage
from loopwright.providers.anthropic import AnthropicModel
from loopwright.providers.openai_chat import OpenAIChatModel
from loopwright.providers.pricing import (
    MAX_COUNT,
    PRICES_ENV,
    Prices,
    load_prices,
    prices_for,
    settle,
)
from loopwright.providers.registry import VENDORS

KITS = {k.name: k for k in load_kits()}


def test_the_shipped_table_is_dated_and_sourced():
    from importlib import resources

    raw = json.loads(resources.files("loopwright.providers").joinpath("prices.json").read_text())
    assert raw["date"] and raw["sources"]["openai"] and raw["sources"]["anthropic"]
    assert load_prices()["openai:gpt-4o"] == Prices(2.5, 10.0, 1.25)
    assert load_prices()["anthropic:claude-sonnet-4-5"] == Prices(3.0, 15.0, 0.3)


@pytest.mark.parametrize(
    ("vendor", "model", "expected"),
    [
        ("openai", "gpt-4o", Prices(2.5, 10.0, 1.25)),
        ("openai", "gpt-4o-2024-08-06", Prices(2.5, 10.0, 1.25)),
        ("openai-responses", "gpt-4o-mini", Prices(0.15, 0.6, 0.075)),
        ("anthropic", "claude-sonnet-4-5-20250929", Prices(3.0, 15.0, 0.3)),
        ("openai", "ft:gpt-4o-mini:acme::abc123", None),  # fine-tunes are priced differently
        ("deepseek", "deepseek-chat", None),
        ("gemini", "gemini-2.5-pro", None),
    ],
)
def test_lookup(vendor, model, expected, monkeypatch):
    monkeypatch.delenv(PRICES_ENV, raising=False)
    assert prices_for(vendor, model) == expected


def test_cost_formula_splits_cached_input_and_reasoning():
    prices = Prices(input=2.0, output=8.0, cached_input=0.5, reasoning=12.0)
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=500_000,
        cached_tokens=400_000,
        reasoning_tokens=100_000,
    )
    # 600k fresh * 2 + 400k cached * 0.5 + 400k plain output * 8 + 100k reasoning * 12
    assert prices.cost(usage) == pytest.approx(1.2 + 0.2 + 3.2 + 1.2)
    assert Prices(1.0, 4.0).cost(Usage(1_000_000, 0, 1_000_000)) == pytest.approx(1.0)


def test_override_file_adds_replaces_and_removes_rows(tmp_path, monkeypatch):
    path = tmp_path / "prices.yaml"
    path.write_text(
        "models:\n"
        "  gemini:gemini-2.5-flash: {input: 0.3, output: 2.5}\n"
        "  openai:gpt-4o: {input: 5, output: 20, cached_input: 2.5}\n"
        "  openai:gpt-4o-mini: null\n"
    )
    monkeypatch.setenv(PRICES_ENV, str(path))
    assert prices_for("gemini", "gemini-2.5-flash") == Prices(0.3, 2.5)
    assert prices_for("openai", "gpt-4o") == Prices(5.0, 20.0, 2.5)
    assert prices_for("openai", "gpt-4o-mini") is None


@pytest.mark.parametrize(
    "content",
    [
        '{"models": {"openai:x": {"input": -1, "output": 1}}}',
        '{"models": 3}',
        "{not json",
        '{"models": {"openai:x": {"input": 1, "output": 1, "typo": 2}}}',
    ],
)
def test_bad_override_files_are_config_errors(tmp_path, content):
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=r"p\.json"):  # the error names the file
        load_prices(str(path))


def test_an_override_row_without_a_vendor_is_refused(tmp_path):
    """A row keyed "gpt-4o" matched no model: the override was silently never used."""
    path = tmp_path / "p.yaml"
    path.write_text("models:\n  gpt-4o: {input: 1, output: 2}\n")
    with pytest.raises(ConfigError, match=r"p\.yaml.*'gpt-4o' names no vendor.*'openai:gpt-4o'"):
        load_prices(str(path))


@given(
    st.lists(
        st.one_of(
            st.integers(-(10**20), 10**20),
            st.floats(allow_nan=True, allow_infinity=True),
        ),
        min_size=4,
        max_size=4,
    )
)
def test_settle_always_gives_finite_non_negative_usage(values):
    usage = Usage(*values)  # type: ignore[arg-type]
    for prices in (None, Prices(2.5, 10.0, 1.25)):
        clean = settle(usage, prices)
        counts = (
            clean.input_tokens,
            clean.output_tokens,
            clean.cached_tokens,
            clean.reasoning_tokens,
        )
        assert all(type(c) is int and 0 <= c <= MAX_COUNT for c in counts)
        assert math.isfinite(clean.cost) and clean.cost >= 0


def _openai_usage_reply(usage: dict) -> Reply:
    kit = KITS["openai-chat"]
    events = kit.events(Answer(text="Hi."))
    events[-1] = {**events[-1], "usage": usage}
    return Reply.sse(events, done=True)


async def test_gpt_4o_usage_is_priced_from_the_table():
    with FakeServer() as server:
        usage = {
            "prompt_tokens": 1000,
            "completion_tokens": 500,
            "total_tokens": 1500,
            "prompt_tokens_details": {"cached_tokens": 200},
        }
        server.push(_openai_usage_reply(usage))
        model = OpenAIChatModel(
            "gpt-4o", base_url=server.url + "/v1", api_key="k", vendor=VENDORS["openai"]
        )
        assert model.reports_cost
        result = done(await collect(model, request([USER])))
    assert result.usage.cost == pytest.approx((800 * 2.5 + 200 * 1.25 + 500 * 10) / 1e6)


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -5000, "completion_tokens": -1},
        {"prompt_tokens": "NaN", "completion_tokens": None},
        {"prompt_tokens": 1e400, "completion_tokens": 3.5},
    ],
)
async def test_hostile_usage_never_disables_budgets(usage):
    body = json.dumps(usage).replace('"NaN"', "NaN").replace("1e+400", "1e400")
    with FakeServer() as server:
        reply = _openai_usage_reply({})
        chunks = list(reply.chunks)
        chunks[-2] = chunks[-2].replace(b'"usage": {}', b'"usage": ' + body.encode())
        assert body.encode() in chunks[-2]
        server.push(Reply(reply.status, reply.headers, chunks))
        model = OpenAIChatModel(
            "gpt-4o", base_url=server.url + "/v1", api_key="k", vendor=VENDORS["openai"]
        )
        result = done(await collect(model, request([USER])))
    u = result.usage
    assert u.input_tokens >= 0 and u.output_tokens >= 0 and math.isfinite(u.cost) and u.cost >= 0


async def test_negative_anthropic_usage_is_sanitised():
    kit = KITS["anthropic"]
    with FakeServer() as server:
        server.push(kit.reply(Answer(text="Hi.", usage=(-100, -7, 0, 0))))
        model = AnthropicModel("claude-sonnet-4-5", base_url=server.url, api_key="k")
        result = done(await collect(model, request([USER])))
    assert result.usage.input_tokens >= 0 and result.usage.output_tokens >= 0
    assert result.usage.cost >= 0


async def test_cost_budget_fires_with_a_real_provider():
    kit = KITS["anthropic"]
    with FakeServer() as server:
        big = Answer(text="Thinking out loud.", usage=(400_000, 1000, 0, 0))
        server.push(*[kit.reply(big) for _ in range(3)])
        model = AnthropicModel("claude-sonnet-4-5", base_url=server.url, api_key="k")
        agent = Agent(model, limits=Limits(cost_budget=1.0))
        result = await agent.arun("hi")
    assert result.stop in (RunStop.FINAL_ANSWER, RunStop.COST_BUDGET)
    assert result.usage.cost == pytest.approx((400_000 * 3 + 1000 * 15) / 1e6)


def test_cost_budget_on_a_model_without_prices_is_refused_up_front():
    model = OpenAIChatModel("deepseek-chat", api_key="k", vendor=VENDORS["deepseek"])
    assert not model.reports_cost
    with pytest.raises(ConfigError, match="cost_budget"):
        Agent(model, limits=Limits(cost_budget=1.0))
    Agent(model, limits=Limits(token_budget=1000))  # other budgets are fine
    Agent(ScriptedModel(["ok"]), limits=Limits(cost_budget=1.0))  # scripted costs are data


def test_failed_calls_are_settled_too():
    async def run():
        with FakeServer() as server:
            server.push(Reply.json({"error": {"message": "busy"}}, 500))
            model = OpenAIChatModel(
                "gpt-4o", base_url=server.url + "/v1", api_key="k", vendor=VENDORS["openai"]
            )
            return failed(await collect(model, request([USER])))

    import asyncio

    err = asyncio.run(run())
    assert err.usage.cost == 0.0 and err.usage.input_tokens == 0
