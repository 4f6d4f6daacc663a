"""CoT-SC: concurrent samples, answer extraction and normalisation, majority vote, ties,
adaptive stopping, limits."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from loopwright import FunctionModel, Limits, ModelRequest, Reply, RunStop
from loopwright.core.messages import Message
from loopwright.strategies import SelfConsistency
from loopwright.strategies.self_consistency import decided, extract_answer, normalise


def replies(*answers: str, delay: float = 0.0) -> FunctionModel:
    calls = iter(answers)

    def reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
        return Reply(f"Let me think.\nAnswer: {next(calls)}", delay=delay)

    return FunctionModel(reply)


def test_majority_vote_over_normalised_answers() -> None:
    model = replies("42", "41", "42.0", " 42. ", "40")
    result = SelfConsistency(model, k=5, adaptive=False).run("What is 6 * 7?")
    assert result.ok and result.answer == "42"
    assert result.data["votes"] == {"42": 3, "41": 1, "40": 1}
    assert result.data["tie"] == [] and result.calls == 5


def test_a_tie_is_reported() -> None:
    result = SelfConsistency(replies("a", "b", "b", "a"), k=4, concurrency=1).run("q")
    assert result.data["tie"] == ["a", "b"]
    assert result.answer == "a"  # the tied answer seen first
    assert result.data["samples"] == 4


def test_adaptive_stopping_ends_once_the_leader_cannot_be_overtaken() -> None:
    model = replies(*["7"] * 10)
    result = SelfConsistency(model, k=10, concurrency=1).run("q")
    # after 6 equal votes, 4 samples remain: 6 - 0 > 4, so sampling stops
    assert result.answer == "7" and result.calls == 6 and result.data["stopped_early"] is True
    full = SelfConsistency(replies(*["7"] * 10), k=10, concurrency=1, adaptive=False).run("q")
    assert full.calls == 10


def test_a_confidence_rule_stops_earlier() -> None:
    result = SelfConsistency(
        replies("7", "3", "7", "7", *["3"] * 6), k=10, concurrency=1, min_lead=2
    ).run("q")
    assert result.answer == "7" and result.calls == 4  # 7, 3, 7, 7: a lead of 2 after 4 samples


def test_samples_run_concurrently() -> None:
    model = replies(*["1"] * 5, delay=0.1)
    started = time.perf_counter()
    result = SelfConsistency(model, k=5, adaptive=False).run("q")
    assert time.perf_counter() - started < 0.2
    assert result.calls == 5


def test_limits_stop_sampling_with_the_leader_so_far() -> None:
    model = replies(*["3", "3", "4", "3", "4", "5"])
    result = SelfConsistency(model, k=6, concurrency=1, limits=Limits(max_turns=3)).run("q")
    assert result.stop is RunStop.MAX_TURNS and result.answer == "3" and result.calls == 3
    # the votes counted before the limit are kept (was: data {})
    assert result.data["votes"] == {"3": 2, "4": 1} and result.data["stopped_early"] is True


def test_unparsed_replies_are_counted_not_voted() -> None:
    calls = iter(["no idea", "Answer: 5", "Answer: 5"])
    model = FunctionModel(lambda m, r: next(calls))
    result = SelfConsistency(model, k=3, adaptive=False).run("q")
    assert result.answer == "5" and result.data["unparsed"] == 1


def test_no_readable_answer_in_any_sample_is_output_invalid_not_an_empty_answer() -> None:
    # was: stop final_answer (result.ok) with answer ''
    model = FunctionModel(lambda m, r: "I am not sure.")
    result = SelfConsistency(model, k=3).run("q")
    assert result.stop is RunStop.OUTPUT_INVALID and not result.ok and result.answer == ""
    assert "none of the 3 samples gave an answer" in result.detail
    assert result.data["unparsed"] == 3 and result.data["votes"] == {}


def test_the_prompt_is_the_cot_file() -> None:
    events: list[object] = []
    SelfConsistency(replies("1"), k=1).run("q", on_event=events.append)
    fps = [e.prompt_fingerprints for e in events if type(e).__name__ == "ModelCallStarted"]
    assert fps[0][0].startswith("cot@1.0#")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("42.0", "42"), ("Paris!", "paris"), ("1,000", "1000"), ("  two  words ", "two words")],
)
def test_normalise(raw: str, expected: str) -> None:
    assert normalise(raw) == expected


def test_extract_answer_takes_the_last_answer_line() -> None:
    assert extract_answer("Answer: 1\nno wait\nThe answer is 2.") == "2"
    assert extract_answer("nothing") is None


def test_decided() -> None:
    from collections import Counter

    assert decided(Counter(a=3), 2) and not decided(Counter(a=3, b=1), 2)
    assert decided(Counter(a=3, b=1), 5, min_lead=2) and not decided(
        Counter(a=2, b=1), 5, min_lead=2
    )


def test_run_inside_an_event_loop_names_the_fix() -> None:
    import asyncio

    from loopwright import UserError

    async def inside() -> None:
        with pytest.raises(UserError, match=r"await strategy\.arun"):
            SelfConsistency(replies("1"), k=1).run("q")

    asyncio.run(inside())


def test_a_failed_sample_ends_the_run_and_stops_the_other_samplers() -> None:
    count = 0

    def reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
        nonlocal count
        count += 1
        if count == 3:
            raise RuntimeError("the model broke")
        return Reply("Answer: 1", delay=0.02)

    result = SelfConsistency(FunctionModel(reply), k=20, concurrency=3, adaptive=False).run("q")
    assert result.stop is RunStop.MODEL_ERROR
    assert count == 3  # the two samplers in flight were cancelled, none started another


def test_a_decided_vote_cancels_samples_in_flight() -> None:
    model = replies(*["7"] * 20, delay=0.02)
    result = SelfConsistency(model, k=10, concurrency=4).run("q")
    # every sample answers 7: after 6 votes the leader cannot be overtaken; replies that
    # arrived with the sixth are counted, the calls still waiting are cancelled
    assert result.answer == "7" and result.data["stopped_early"] is True
    assert 6 <= result.data["samples"] <= result.calls < 10
