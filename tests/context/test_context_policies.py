"""Policy behaviour on concrete histories, bad input, the summarizer and the loop hook."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from loopwright.context import (
    Budget,
    ContextBudgetError,
    ContextError,
    DefaultPolicy,
    SelectiveRetention,
    SlidingWindow,
    Summarizer,
    SummaryCompaction,
    ToolPairingError,
    ToolResultTrimmer,
    estimate_counter,
    find_pairing_problems,
    pin,
    repair_pairing,
)
from loopwright.core import Message, ToolCallPart, ToolResultPart, UserError
from loopwright.core.messages import MediaPart
from loopwright.providers.scripted import FunctionModel, ScriptedModel

C = estimate_counter()


def exchange(i: int, content: str = "ok", error: bool = False) -> list[Message]:
    call = ToolCallPart(f"c{i}", "search", {"q": i}, json.dumps({"q": i}))
    res = ToolResultPart(f"c{i}", "search", content, error, "permanent" if error else None)
    return [Message("assistant", (call,)), Message.tool_results([res])]


def history(turns: int, content: str = "ok") -> list[Message]:
    msgs = [Message.system("You are careful."), Message.user("Find the answer.")]
    for i in range(turns):
        msgs += exchange(i, content)
    return msgs


def test_sliding_window_keeps_system_task_and_last_units_whole() -> None:
    msgs = history(10)
    out = SlidingWindow(keep_last=3, counter=C)(msgs)
    assert out[:2] == msgs[:2]
    assert out[2:] == msgs[-6:]  # 3 exchanges = 6 messages, never a half exchange
    assert find_pairing_problems(out) == []


def test_selective_retention_drops_old_errors_before_user_messages() -> None:
    msgs = [Message.system("s"), Message.user("task")]
    msgs += exchange(0, "boom " * 50, error=True)
    msgs += [Message.user("also check the weekend " * 5)]
    msgs += exchange(1, "fine " * 50)
    msgs += exchange(2, "fine")
    msgs += exchange(3, "fine")
    total = C.count_messages(msgs)
    out = SelectiveRetention(counter=C)(msgs, total - 20)
    assert msgs[4] in out  # the second user message survives
    assert msgs[3] not in out and msgs[2] not in out  # the old error exchange went first
    assert find_pairing_problems(out) == []


def test_budget_smaller_than_the_fixed_layers_is_a_precise_error() -> None:
    msgs = [Message.system("rules " * 500), Message.user("hi")]
    with pytest.raises(ContextBudgetError) as info:
        DefaultPolicy(budget=Budget(context_window=600, output_reserve=100), counter=C)(msgs)
    text = str(info.value)
    assert "need" in text and "budget is 500" in text and "output_reserve 100" in text
    assert isinstance(info.value, UserError)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"context_window": 0}, "context_window"),
        ({"context_window": 1000, "output_reserve": 1000}, "output_reserve"),
        ({"context_window": "8000"}, "context_window"),  # was a TypeError naming nothing
        ({"context_window": 8000, "overhead": 1.5}, "overhead"),
        ({"context_window": True}, "context_window"),
    ],
)
def test_bad_budget_names_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ContextError, match=field):
        Budget(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: SlidingWindow("10"), "SlidingWindow.keep_last"),  # a TypeError from "<"
        (lambda: SlidingWindow(2.5), "SlidingWindow.keep_last"),
        (lambda: ToolResultTrimmer(float("nan")), "ToolResultTrimmer.max_result_tokens"),
        (lambda: ToolResultTrimmer(100, keep_recent=-1), "ToolResultTrimmer.keep_recent"),
        (lambda: DefaultPolicy(summarize_at=float("nan")), "DefaultPolicy.summarize_at"),
        (lambda: DefaultPolicy(summarize_at="0.5"), "DefaultPolicy.summarize_at"),
        (lambda: DefaultPolicy(min_summary_fraction=1.5), "DefaultPolicy.min_summary_fraction"),
        (lambda: DefaultPolicy(max_result_tokens=0), "DefaultPolicy.max_result_tokens"),
    ],
)
def test_bad_policy_settings_name_the_field(build: Callable[[], object], field: str) -> None:
    """Several were accepted (nan, a negative keep_recent) or failed with a bare
    TypeError naming no field."""
    with pytest.raises(ContextError, match=field):
        build()


def test_orphaned_call_is_repaired_and_reported() -> None:
    msgs = history(2)
    msgs.append(Message("assistant", (ToolCallPart("dangling", "delete", {}),)))
    msgs.append(Message.user("continue"))
    reports = []
    out = DefaultPolicy(counter=C, on_report=reports.append)(msgs)
    assert find_pairing_problems(out) == []
    fixed = next(m for m in out if any(r.call_id == "dangling" for r in m.tool_results_parts))
    part = fixed.tool_results_parts[0]
    assert part.is_error and part.error_kind == "outcome_unknown"
    assert "dangling" in reports[0].repairs[0] and "outcome_unknown" in reports[0].repairs[0]


def test_misplaced_result_is_moved_back_to_its_call() -> None:
    call = Message("assistant", (ToolCallPart("a", "f", {}), ToolCallPart("b", "g", {})))
    ra = Message.tool_results([ToolResultPart("a", "f", "A")])
    rb = Message.tool_results([ToolResultPart("b", "g", "B")])
    msgs = [Message.user("go"), call, ra, Message.user("interjection"), rb]
    repaired = repair_pairing(msgs)
    assert [m.role for m in repaired.messages] == ["user", "assistant", "tool", "user"]
    assert [r.content for r in repaired.messages[2].tool_results_parts] == ["A", "B"]
    assert any("moved" in r for r in repaired.repairs)


def test_orphan_in_error_mode_names_index_and_id() -> None:
    msgs = [Message.user("go"), Message("assistant", (ToolCallPart("x9", "f", {}),))]
    with pytest.raises(ToolPairingError, match=r"message 1 .*'x9'.*on_broken='repair'"):
        SlidingWindow(on_broken="error", counter=C)(msgs)


def test_pinned_constraint_layer_is_never_cut() -> None:
    constraint = pin(Message.user("Never delete files."))
    msgs = [Message.system("s"), constraint, Message.user("task")]
    for i in range(30):
        msgs += exchange(i, "data " * 200)
    out = DefaultPolicy(budget=Budget(2000, 200), counter=C, max_result_tokens=100)(msgs)
    assert constraint in out and C.count_messages(out) <= 1800


def test_default_policy_trims_old_results_but_not_recent_ones() -> None:
    big = json.dumps([{"row": i, "text": "value " * 5} for i in range(300)])
    msgs = history(6, big)
    out = DefaultPolicy(counter=C, max_result_tokens=100, keep_recent=2)(msgs)
    assert len(out) == len(msgs)
    old, recent = out[3], out[-1]
    assert C.count_text(old.tool_results_parts[0].content) <= 100
    json.loads(old.tool_results_parts[0].content)  # still JSON
    assert old.tool_results_parts[0].provider_meta["loopwright"]["trimmed"][
        "original_chars"
    ] == len(big)
    assert recent is msgs[-1]


def test_default_policy_last_resort_trims_the_latest_result_to_fit() -> None:
    msgs = history(1, "x " * 5000)
    out = DefaultPolicy(budget=Budget(1500, 200), counter=C)(msgs)
    assert C.count_messages(out) <= 1300 and find_pairing_problems(out) == []


def summary_model() -> FunctionModel:
    def reply(messages, request):  # type: ignore[no-untyped-def]
        assert request.metadata["purpose"] == "context_summary"
        assert "<history>" in messages[-1].text
        return f"SUMMARY({messages[-1].text.count('called search')} searches)"

    return FunctionModel(reply, name="cheap-summarizer")


async def test_summarizer_replaces_older_units_and_records_what_it_covered() -> None:
    msgs = history(10)
    summarizer = Summarizer(summary_model(), keep_recent=2, counter=C)
    out = await summarizer(msgs)
    assert out[0] is msgs[0] and out[1] is msgs[1]  # system + task kept verbatim
    meta = out[2].provider_meta["loopwright"]
    assert meta["pin"] and meta["summary"]["covered_messages"] == 16
    assert meta["summary"]["tools"] == ["search"] and meta["summary"]["model"] == "cheap-summarizer"
    assert "SUMMARY(8 searches)" in out[2].text
    assert out[3:] == msgs[-4:]
    # the pure sync half applies the same summary without a model
    again = SummaryCompaction(summarizer.summary)(msgs)
    assert [m.text for m in again] == [m.text for m in out]


async def test_summarizer_rolls_instead_of_resummarizing_everything() -> None:
    seen: list[str] = []

    def reply(messages, request):  # type: ignore[no-untyped-def]
        seen.append(messages[-1].text)
        return f"S{len(seen)}"

    summarizer = Summarizer(FunctionModel(reply), keep_recent=2, counter=C)
    msgs = history(6)
    await summarizer.refresh(msgs)
    msgs += exchange(100) + exchange(101)
    await summarizer.refresh(msgs)
    assert seen[1].startswith("Previous summary:\nS1") and "[id c0]" not in seen[1]
    assert summarizer.summary is not None and summarizer.summary.covered_messages == 12


async def test_summarizer_failure_keeps_the_run_going() -> None:
    from loopwright.core.errors import TransientProviderError

    summarizer = Summarizer(ScriptedModel([TransientProviderError("down")]), keep_recent=1)
    msgs = history(4)
    assert await summarizer(msgs) == msgs
    assert summarizer.last_error is not None and "down" in summarizer.last_error


async def test_default_policy_with_summarizer_in_a_real_agent_loop() -> None:
    from loopwright.loop import Agent, Hooks, Limits
    from loopwright.tools import tool

    @tool
    def search(q: int) -> str:
        """Search."""
        return "result " * 300

    sent: list[int] = []

    def agent_reply(messages, request):  # type: ignore[no-untyped-def]
        sent.append(C.count_messages(messages))
        assert find_pairing_problems(messages) == []
        if len(sent) >= 12:
            return "done"
        from loopwright.providers.scripted import tool_call

        return [tool_call("search", {"q": len(sent)})]

    policy = DefaultPolicy(
        budget=Budget(2500, 300),
        counter=C,
        max_result_tokens=60,
        summarizer=Summarizer(summary_model(), keep_recent=3, counter=C),
        summarize_at=0.5,
    )
    agent = Agent(
        FunctionModel(agent_reply),
        [search],
        context_policy=policy,
        hooks=Hooks(transform_context=policy.transform_context),
        limits=Limits(max_turns=20, repeat_limit=100),
    )
    result = await agent.arun("go")
    assert result.answer == "done"
    assert max(sent) <= 2200  # every request fitted the budget
    assert policy.summarizer is not None and policy.summarizer.calls >= 1
    assert len(result.messages) > 20  # the stored history keeps every message


def _png(width: int, height: int) -> MediaPart:
    import base64
    import struct

    head = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + struct.pack(">II", width, height)
    return MediaPart("image/png", base64.b64encode(head + b"\x00" * 32).decode())


def test_old_results_stop_sending_big_images_and_say_so() -> None:
    # an image is counted on every request it rides in: beyond keep_recent, one that
    # does not fit the result limit is no longer sent; its text line stays
    msgs = [Message.system("s"), Message.user("Look at the screens.")]
    for i in range(4):
        call = ToolCallPart(f"c{i}", "screenshot", {"n": i}, json.dumps({"n": i}))
        shot = ToolResultPart(
            f"c{i}", "screenshot", f"[image image/png, shot {i}]", media=(_png(1024, 1024),)
        )
        msgs += [Message("assistant", (call,)), Message.tool_results([shot])]
    small = ToolResultPart("c0", "screenshot", "[image image/png, icon]", media=(_png(64, 64),))
    msgs[3] = Message.tool_results([small])
    out = DefaultPolicy(counter=C, max_result_tokens=1000, keep_recent=2)(msgs)
    results = [m.tool_results_parts[0] for m in out if m.role == "tool"]
    assert results[0].media == small.media  # a small image still fits its result
    dropped = results[1]
    assert dropped.media == ()
    assert dropped.content.startswith("[image image/png, shot 1]\n")
    assert "no longer sends its image" in dropped.content
    assert dropped.provider_meta["loopwright"]["media_dropped"] == 1
    assert all(r.media for r in results[2:])  # the recent ones keep theirs
    assert C.count_messages(out) < C.count_messages(msgs)
