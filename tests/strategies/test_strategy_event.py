"""The strategy progress event is part of the run-event vocabulary: traces serialise it."""

from loopwright.core.events import StrategyStep
from loopwright.tracing.serialize import event_to_dict


def test_strategy_step_serialises_with_its_detail() -> None:
    event = StrategyStep("plan_execute", "step_finished", {"step_id": 2, "ok": True})
    assert event_to_dict(event) == {
        "strategy": "plan_execute",
        "kind": "step_finished",
        "detail": {"step_id": 2, "ok": True},
        "type": "strategy_step",
    }
