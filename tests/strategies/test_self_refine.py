"""Self-Refine: draft -> feedback -> refine until STOP, a score threshold or the round
limit; every draft and its feedback kept."""

from __future__ import annotations

from collections.abc import Sequence

from loopwright import FunctionModel, Limits, ModelRequest, RunStop
from loopwright.core.messages import Message
from loopwright.strategies import SelfRefine
from loopwright.strategies.self_refine import parse_feedback


def writer(stop_at: int | None = None) -> FunctionModel:
    """Drafts get one '!' longer per refinement; the critic scores 2 points per '!'."""

    def reply(messages: Sequence[Message], request: ModelRequest) -> str:
        prompt = messages[-1].text
        if "Give specific, actionable feedback" in prompt:
            draft = prompt.split("Draft:\n", 1)[1].split("\n\n", 1)[0]
            marks = draft.count("!")
            stop = "STOP\n" if stop_at is not None and marks >= stop_at else ""
            return f"Needs more enthusiasm.\n{stop}Score: {min(10, 2 * marks)}/10"
        if "Rewrite the draft" in prompt:
            draft = prompt.split("Draft:\n", 1)[1].split("\n\n", 1)[0]
            return draft + "!"
        return "Hello"

    return FunctionModel(reply)


def test_refines_until_the_critic_says_stop_keeping_every_draft() -> None:
    result = SelfRefine(writer(stop_at=2), max_rounds=5).run("Greet the user")
    assert result.ok and result.answer == "Hello!!"
    drafts = result.data["drafts"]
    assert isinstance(drafts, list)
    assert [d["draft"] for d in drafts] == ["Hello", "Hello!", "Hello!!"]  # type: ignore[index]
    assert [d["score"] for d in drafts] == [0.0, 0.2, 0.4]  # type: ignore[index]
    assert result.calls == 1 + 3 + 2  # draft, three critiques, two rewrites


def test_a_score_threshold_ends_the_cycle() -> None:
    result = SelfRefine(writer(), max_rounds=10, threshold=0.6).run("Greet")
    assert result.answer == "Hello!!!" and len(result.data["drafts"]) == 4  # type: ignore[arg-type]


def test_the_round_limit_ends_the_cycle() -> None:
    result = SelfRefine(writer(), max_rounds=1).run("Greet")
    assert result.answer == "Hello!" and result.calls == 4


def test_limits_stop_with_the_best_draft_so_far() -> None:
    result = SelfRefine(writer(), max_rounds=10, limits=Limits(max_turns=4)).run("Greet")
    assert result.stop is RunStop.MAX_TURNS and result.answer == "Hello!"
    assert len(result.data["drafts"]) == 2  # type: ignore[arg-type]


def test_parse_feedback() -> None:
    fb = parse_feedback("fine\nSTOP\nScore: 9/10")
    assert fb.stop and fb.score == 0.9
    assert parse_feedback("meh, score: 3").score == 0.3
    assert parse_feedback("no score").score is None


def test_an_empty_rewrite_never_replaces_the_draft() -> None:
    # was: with unscored feedback the latest draft won the tie, so '' became the answer
    def reply(messages: Sequence[Message], request: ModelRequest) -> str:
        prompt = messages[-1].text
        if "Draft:" in prompt and "Feedback" not in prompt:
            return "It could be shorter."  # the critic, without a score
        return "" if "Feedback" in prompt else "A first draft."

    result = SelfRefine(FunctionModel(reply), max_rounds=3).run("Write a line.")
    assert result.stop is RunStop.FINAL_ANSWER and result.answer == "A first draft."
    assert result.calls == 3  # draft, feedback, the empty rewrite: then it stops


def test_an_empty_first_draft_is_output_invalid() -> None:
    result = SelfRefine(FunctionModel(lambda messages, request: "  ")).run("Write a line.")
    assert result.stop is RunStop.OUTPUT_INVALID and "first draft was empty" in result.detail
    assert result.calls == 1
