"""RepetitionDetector: bounded tail, repeats and cycles; the RunState codec."""

from __future__ import annotations

import gc

import pytest

from loopwright.core.messages import Message, ToolCallPart, ToolResultPart, Usage
from loopwright.core.run import ERROR_LOG_SIZE, LoopState
from loopwright.loop import ErrorRecord, RepetitionDetector, RunState
from loopwright.store import CorruptCheckpoint, decode_state, encode_state


def _c(name: str, **args: object) -> ToolCallPart:
    return ToolCallPart("id", name, args, "")


def test_same_call_n_times() -> None:
    d = RepetitionDetector(3)
    d.add([_c("a", x=1), _c("a", x=1)])
    assert d.check() is None
    d.add([_c("a", x=1)])
    assert d.check() is not None and "'a'" in d.check()  # type: ignore[operator]


def test_different_arguments_break_the_repeat() -> None:
    d = RepetitionDetector(3)
    d.add([_c("a", x=1), _c("a", x=2), _c("a", x=1)])
    assert d.check() is None


def test_unhashable_arguments_are_fine() -> None:
    d = RepetitionDetector(2)
    d.add([_c("a", x=[1, {"y": [2]}]), _c("a", x=[1, {"y": [2]}])])
    assert d.check() is not None


@pytest.mark.parametrize("period", [2, 3, 4])
def test_cycles_up_to_max_period(period: int) -> None:
    cycle = [_c(f"t{i}") for i in range(period)]
    d = RepetitionDetector(3, max_period=4)
    d.add(cycle * 2)
    assert d.check() is None
    d.add(cycle)
    found = d.check()
    assert found is not None and "cycle" in found


def test_cycles_longer_than_max_period_are_ignored() -> None:
    cycle = [_c(f"t{i}") for i in range(5)]
    d = RepetitionDetector(3, max_period=4)
    d.add(cycle * 3)
    assert d.check() is None


def test_cycle_detection_off_still_sees_repeats() -> None:
    d = RepetitionDetector(2, cycles=False)
    d.add([_c("a"), _c("b"), _c("a"), _c("b")])
    assert d.check() is None
    d.add([_c("b")])
    assert d.check() is not None


def test_tail_is_bounded() -> None:
    d = RepetitionDetector(3, max_period=4)
    d.add([_c("a", i=i) for i in range(10_000)])
    assert len(d) == 2 * 12  # each kept call and its result


def _r(content: str) -> ToolResultPart:
    return ToolResultPart("id", "a", content)


def test_observe_finds_a_repeat_turn_by_turn() -> None:
    d = RepetitionDetector(3)
    assert d.observe([_c("a", x=1)], [_r("1")]) is None
    assert d.observe([_c("a", x=1)], [_r("1")]) is None  # two of three
    found = d.observe([_c("a", x=1)], [_r("1")])
    assert found is not None and "'a'" in found and "3 times" in found


def test_observe_compares_results_when_a_call_repeats() -> None:
    # the same call getting new answers (a job polled to completion) is progress
    d = RepetitionDetector(3)
    for status in ("queued", "running", "done"):
        assert d.observe([_c("a", job=7)], [_r(status)]) is None
    assert d.observe([_c("a", job=7)], [_r("done")]) is None  # two 'done' of three
    assert d.observe([_c("a", job=7)], [_r("done")]) is not None


def test_observe_finds_cycles_across_turns_of_several_calls() -> None:
    d = RepetitionDetector(3, max_period=4)
    cycle = [_c("t0"), _c("t1"), _c("t2")]
    results = [_r("0"), _r("1"), _r("2")]
    assert d.observe(cycle, results) is None
    assert d.observe(cycle, results) is None
    found = d.observe(cycle, results)
    assert found is not None and "the cycle t0 -> t1 -> t2 repeated 3 times" in found


def test_observe_with_results_unknown_still_sees_a_repeat() -> None:
    # a resumed batch hands the held results too: more results than calls are not
    # paired with the calls (the tail holds None for them, as ``add`` does)
    d = RepetitionDetector(2)
    held = [_r("x"), _r("y")]
    assert d.observe([_c("a", x=1)], held) is None
    found = d.observe([_c("a", x=1)], held)
    assert found is not None and list(d)[1::2] == [None, None]


def test_prime_from_history() -> None:
    history = [Message("assistant", (_c("a", x=1),)) for _ in range(3)]
    d = RepetitionDetector(3)
    d.prime(history)
    assert d.check() is not None


def test_run_state_round_trip() -> None:
    state = RunState(
        session_id="s1",
        status=LoopState.PAUSED,
        turn=3,
        messages=[Message.user("hi"), Message("assistant", (_c("a", x=1),))],
        usage=Usage(1, 2, cost=0.5),
        consecutive_errors=1,
        pending_calls=(_c("a", x=1),),
        metadata={"agent": {"model": "m"}},
    )
    state.log_error(ErrorRecord(1, "tool", "timeout", "slow"))
    state.queue_steering(Message.user("steer"))
    back = decode_state(encode_state(state), (), session_id="s1")
    assert back == state
    assert back.status is LoopState.PAUSED and back.error_log[0].kind == "timeout"


def test_decoding_a_malformed_state_names_the_problem() -> None:
    with pytest.raises(CorruptCheckpoint, match="sleeping"):
        decode_state(
            {
                "schema_version": 2,
                "session_id": "s",
                "status": "sleeping",
                "created_at": 0,
                "updated_at": 0,
            },
            (),
            session_id="s",
        )


def test_error_log_is_capped() -> None:
    state = RunState()
    for i in range(150):
        state.log_error(ErrorRecord(i, "tool", "x", "y"))
    assert len(state.error_log) == 100 and state.error_log[0].turn == 50


def test_fresh_run_state_allocates_no_queue_objects() -> None:
    """The five queues of a state start as the one shared empty tuple (nothing for the
    garbage collector to track per in-flight run) and writes replace them."""
    state = RunState()
    queues = (
        state.error_log,
        state.pending_calls,
        state.held_results,
        state.steering,
        state.follow_ups,
    )
    assert all(q == () and not gc.is_tracked(q) for q in queues)
    state.queue_follow_up(Message.user("a"))
    state.queue_follow_up(Message.user("b"))
    assert state.next_follow_up().text == "a" and [m.text for m in state.follow_ups] == ["b"]
    assert RunState().follow_ups == ()
    for n in range(ERROR_LOG_SIZE + 5):
        state.log_error(ErrorRecord(n, "tool", "timeout", "slow"))
    assert len(state.error_log) == ERROR_LOG_SIZE and state.error_log[-1].turn == n
