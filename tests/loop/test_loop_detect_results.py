"""Loop detection looks at results too: polling that makes progress is not a loop."""

from __future__ import annotations

from loopwright import Agent, ScriptedModel, tool, tool_call
from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.run import RunStop
from loopwright.loop import RepetitionDetector


def _poller(statuses: list[str]) -> object:
    @tool(inline=True)
    def job_status(job: int) -> str:
        """The status of a job."""
        return statuses.pop(0) if len(statuses) > 1 else statuses[0]

    return job_status


def test_polling_a_job_to_completion_is_not_a_loop() -> None:
    job_status = _poller(["queued", "running", "running", "done"])
    poll = [[tool_call("job_status", {"job": 7})] for _ in range(4)]
    result = Agent(ScriptedModel([*poll, "the job is done"]), tools=[job_status]).run("wait")
    assert result.stop is RunStop.FINAL_ANSWER, result.detail
    assert result.answer == "the job is done"


def test_the_same_call_with_the_same_result_is_still_a_loop() -> None:
    job_status = _poller(["running"])
    poll = [[tool_call("job_status", {"job": 7})] for _ in range(5)]
    result = Agent(ScriptedModel([*poll, "never"]), tools=[job_status]).run("wait")
    assert result.stop is RunStop.LOOP_DETECTED
    assert "same result" in (result.detail)


def test_prime_pairs_calls_with_their_results_from_history() -> None:
    history: list[Message] = []
    for i, status in enumerate(["queued", "running"]):
        call = ToolCallPart(f"c{i}", "job_status", {"job": 7})
        history.append(Message("assistant", (call,)))
        history.append(Message("tool", (ToolResultPart(f"c{i}", "job_status", status),)))
    d = RepetitionDetector(3)
    d.prime(history)
    d.add(
        [ToolCallPart("c2", "job_status", {"job": 7})], [ToolResultPart("c2", "job_status", "done")]
    )
    assert d.check() is None
    same = RepetitionDetector(2)
    same.prime(history[:2])
    same.add(
        [ToolCallPart("c9", "job_status", {"job": 7})],
        [ToolResultPart("c9", "job_status", "queued")],
    )
    assert same.check() is not None
