"""Transient model errors are retried with backoff; others stop the run."""

from __future__ import annotations

from loop_helpers import FakeSleep

from loopwright import Agent, Limits, RunStop, ScriptedModel
from loopwright.core.errors import (
    BadRequest,
    ContextOverflow,
    RateLimited,
    TransientProviderError,
)
from loopwright.core.events import ModelCallFailed, ModelCallStarted
from loopwright.core.messages import Usage
from loopwright.providers.scripted import Reply


async def test_transient_errors_are_retried_with_growing_backoff(fake_sleep: FakeSleep) -> None:
    model = ScriptedModel(
        [TransientProviderError("502"), TransientProviderError("503"), "recovered"]
    )
    events: list[object] = []
    from loopwright import Hooks

    agent = Agent(
        model,
        limits=Limits(model_retries=3, retry_base_delay=1.0),
        sleep=fake_sleep,
        hooks=Hooks(on_event=events.append),
    )
    result = await agent.arun("go")
    assert result.ok and result.answer == "recovered" and result.turns == 1
    assert len(fake_sleep.delays) == 2
    assert 0.5 <= fake_sleep.delays[0] <= 1.0  # equal jitter: [d/2, d]
    assert 1.0 <= fake_sleep.delays[1] <= 2.0
    failed = [e for e in events if isinstance(e, ModelCallFailed)]
    assert [f.will_retry for f in failed] == [True, True]
    assert [e.attempt for e in events if isinstance(e, ModelCallStarted)] == [1, 2, 3]
    assert len(result.messages) == 2  # failed attempts leave no trace in the history


async def test_retry_after_is_honoured(fake_sleep: FakeSleep) -> None:
    model = ScriptedModel([RateLimited("slow down", retry_after=7.5), "ok"])
    result = await Agent(model, sleep=fake_sleep, limits=Limits(retry_max_delay=10)).arun("go")
    assert result.ok and fake_sleep.delays == [7.5]


async def test_retry_after_beyond_the_cap_stops(fake_sleep: FakeSleep) -> None:
    model = ScriptedModel([RateLimited("slow down", retry_after=3600), "ok"])
    result = await Agent(model, sleep=fake_sleep, limits=Limits(retry_max_delay=30)).arun("go")
    assert result.stop is RunStop.MODEL_ERROR and "3600" in result.detail
    assert fake_sleep.delays == []


async def test_retries_exhausted_stop_with_model_error(fake_sleep: FakeSleep) -> None:
    model = ScriptedModel([TransientProviderError("down")] * 3 + ["never"])
    result = await Agent(model, sleep=fake_sleep, limits=Limits(model_retries=2)).arun("go")
    assert result.stop is RunStop.MODEL_ERROR
    assert "gave up after 3 attempts" in result.detail
    assert len(fake_sleep.delays) == 2 and model.calls == 3
    assert len(result.messages) == 1  # only the input: failed calls leave no message


async def test_non_retryable_errors_are_not_retried(fake_sleep: FakeSleep) -> None:
    for error in (BadRequest("bad"), ContextOverflow("too long")):
        model = ScriptedModel([error, "never"])
        agent = Agent(model, sleep=fake_sleep)
        run = agent.start("go", events=False)
        result = await run.result()
        assert result.stop is RunStop.MODEL_ERROR and error.kind in result.detail
        assert model.calls == 1
        assert run.state.error_log[-1].kind == error.kind
    assert fake_sleep.delays == []


async def test_usage_of_failed_calls_is_counted(fake_sleep: FakeSleep) -> None:
    model = ScriptedModel(
        [Reply(TransientProviderError("cut"), usage=Usage(5, 2)), Reply("ok", usage=Usage(5, 1))]
    )
    result = await Agent(model, sleep=fake_sleep).arun("go")
    assert result.usage.input_tokens == 10 and result.usage.output_tokens == 3
