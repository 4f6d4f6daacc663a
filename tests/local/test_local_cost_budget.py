"""A cost budget is valid on the embedded model: it runs locally and reports cost 0.0."""

from __future__ import annotations

from loopwright import Agent, Limits
from loopwright.core.protocols import ReportsCost
from loopwright.providers.local import LocalModel
from loopwright.strategies.embedded import embedded_strategy


def test_a_cost_budget_is_accepted_for_the_embedded_model_and_its_cli_wrapper() -> None:
    model = LocalModel()
    assert isinstance(model, ReportsCost) and model.reports_cost
    agent = Agent(model, limits=Limits(cost_budget=0.01))
    assert agent.config.limits.cost_budget == 0.01
    wrapped = embedded_strategy(model)
    Agent(wrapped, limits=Limits(cost_budget=0.01))  # the CLI's wrapper is accepted too
