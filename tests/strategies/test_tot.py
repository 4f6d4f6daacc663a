"""Tree of Thoughts on a toy puzzle: reach a target by adding 1-4 three times.

A state's steps are "+N" lines; the model stand-in proposes and judges by reading the
prompt files' text, as a model would."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

import pytest

from loopwright import FunctionModel, Limits, ModelRequest, Reply, RunStop
from loopwright.core.errors import ConfigError, UserError
from loopwright.core.events import StrategyStep
from loopwright.core.messages import Message
from loopwright.strategies import SearchConfig, ThoughtHooks, TreeOfThoughts
from loopwright.strategies.tot import parse_steps, parse_value, parse_vote

PROBLEM = "Start at 0. Add 1, 2, 3 or 4 three times to reach exactly 10."
LATENCY = 0.02


def total(steps: Sequence[str]) -> int:
    return sum(int(s.lstrip("+")) for s in steps)


def steps_in(prompt: str) -> list[str]:
    block = prompt.split("Steps so far:\n", 1)[1].split("\n\n", 1)[0]
    return [] if block == "(none yet)" else block.splitlines()


def model_reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
    prompt = messages[-1].text
    steps = steps_in(prompt) if "Steps so far:" in prompt else []
    if "Propose up to" in prompt:
        return Reply("\n".join(f"- +{n}" for n in (1, 2, 3, 4)), delay=LATENCY)
    if "Judge whether" in prompt:
        left, room = 10 - total(steps), 3 - len(steps)
        word = "sure" if left == 0 else "likely" if room and 0 < left <= 4 * room else "impossible"
        return Reply(f"left {left}\n{word}", delay=LATENCY)
    if "Write the single next step" in prompt:
        return Reply("+4", delay=LATENCY)
    if "best choice is" in prompt:
        return Reply("Choice 3 looks best.\nThe best choice is 3", delay=LATENCY)
    raise AssertionError(prompt)


def test_bfs_with_prompted_generator_and_evaluator_finds_a_solution_level_by_level() -> None:
    events: list[object] = []
    tot = TreeOfThoughts(
        FunctionModel(model_reply), search=SearchConfig(depth=3, beam=3, n_generate=4)
    )
    started = time.perf_counter()
    result = tot.run(PROBLEM, on_event=events.append)
    wall = time.perf_counter() - started
    path = result.data["path"]
    assert isinstance(path, list) and total(path) == 10 and len(path) == 3
    # each level: one round of concurrent proposals, one of concurrent evaluations
    assert wall < 3 * 2 * LATENCY * 2.5, wall
    levels = [e for e in events if isinstance(e, StrategyStep) and e.kind == "level"]
    assert len(levels) == 3
    fps = {fp.split("#")[0] for e in events for fp in getattr(e, "prompt_fingerprints", ())}
    assert fps == {"tot_propose@1.0", "tot_value@1.0"}


def test_identical_states_are_evaluated_once() -> None:
    seen: Counter[tuple[int, int]] = Counter()

    def evaluate(problem: str, steps: tuple[str, ...]) -> float:
        seen[len(steps), total(steps)] += 1
        return 1.0 if total(steps) <= 10 else 0.0

    hooks = ThoughtHooks(
        generate=lambda p, s: ["+1", "+2", "+3"],
        evaluate=evaluate,
        state_key=lambda steps: (len(steps), total(steps)),
    )
    result = TreeOfThoughts(hooks=hooks, search=SearchConfig(depth=2, beam=3)).run(PROBLEM)
    assert result.data["cache_hits"] > 0
    assert max(seen.values()) == 1  # +1+2 and +2+1 share one evaluation


def test_dfs_prunes_and_backtracks_to_a_solution() -> None:
    def generate(problem: str, steps: tuple[str, ...]) -> list[str]:
        return ["+1", "+4"] if not steps else ["+3", "+4"]

    def evaluate(problem: str, steps: tuple[str, ...]) -> float:
        # the evaluator likes +1 first (a dead end: 1 + 4 + 4 = 9) and prunes over-shoots
        left = 10 - total(steps)
        if left < 0:
            return 0.0
        return 2.0 if steps[0] == "+1" else 1.0

    hooks = ThoughtHooks(
        generate=generate,
        evaluate=evaluate,
        is_solution=lambda p, steps: len(steps) == 3 and total(steps) == 10,
    )
    events: list[object] = []
    result = TreeOfThoughts(hooks=hooks, search=SearchConfig(method="dfs", depth=3)).run(
        PROBLEM, on_event=events.append
    )
    path = result.data["path"]
    assert isinstance(path, list) and total(path) == 10 and path[0] == "+4"
    kinds = Counter(e.kind for e in events if isinstance(e, StrategyStep))
    assert kinds["backtrack"] >= 1 and kinds["pruned"] >= 1
    assert result.data["solved"] is True


def test_vote_evaluator_and_sample_generator() -> None:
    tot = TreeOfThoughts(
        FunctionModel(model_reply),
        generator="sample",
        evaluator="vote",
        search=SearchConfig(depth=1, beam=1, n_generate=3, n_evaluate=2),
    )
    result = tot.run(PROBLEM)
    assert result.data["path"] == ["+4"]  # every sample said +4: one distinct child
    assert result.calls == 3 + 2


def test_limits_bound_the_search() -> None:
    tot = TreeOfThoughts(FunctionModel(model_reply), limits=Limits(max_turns=4))
    result = tot.run(PROBLEM)
    assert result.stop is RunStop.MAX_TURNS and result.calls == 4


def test_parsers() -> None:
    assert parse_steps("1. a\n- b\n\n  c  ") == ["a", "b", "c"]
    assert parse_value("maybe likely... no: impossible") == 0.001 and parse_value("?") == 0.0
    assert (
        parse_vote("The best choice is 2", 3) == 1 and parse_vote("The best choice is 9", 3) is None
    )


def test_a_generator_that_proposes_nothing_is_output_invalid_not_an_empty_answer() -> None:
    # was: stop final_answer (result.ok) with answer '' for both search methods
    for method in ("bfs", "dfs"):
        model = FunctionModel(lambda messages, request: "")
        result = TreeOfThoughts(model, search=SearchConfig(method=method, depth=2)).run("q")
        assert result.stop is RunStop.OUTPUT_INVALID and not result.ok, method
        assert "proposed no thought" in result.detail and result.data["path"] == []


@pytest.mark.parametrize("proposed", ["abc", [1, 2], None, ["a", None]])
def test_a_generate_hook_that_returns_no_list_of_steps_is_named(proposed: object) -> None:
    # was: a string searched letter by letter ('abc' -> steps 'a', 'b', 'c'); numbers a
    # TypeError from joining the steps; None "'NoneType' object is not iterable"
    hooks = ThoughtHooks(generate=lambda p, s: proposed, evaluate=lambda p, s: 1.0)  # type: ignore[arg-type, return-value]
    with pytest.raises(UserError, match=r"ThoughtHooks.generate returned .* list of strings"):
        TreeOfThoughts(hooks=hooks, search=SearchConfig(depth=2)).run("q")


def test_an_evaluate_hook_that_returns_no_number_is_named() -> None:
    # was: TypeError "float() argument must be a string or a real number, not 'NoneType'"
    hooks = ThoughtHooks(generate=lambda p, s: ["a"], evaluate=lambda p, s: None)  # type: ignore[arg-type, return-value]
    with pytest.raises(UserError, match=r"ThoughtHooks.evaluate returned None for \['a'\]"):
        TreeOfThoughts(hooks=hooks, search=SearchConfig(depth=1)).run("q")


def test_a_threshold_on_the_value_evaluators_scale_prunes_what_it_says() -> None:
    # was: SearchConfig refused any threshold above 1, while "value" scores likely 1 and
    # sure 20: no threshold could prune "likely" states and keep "sure" ones
    events: list[object] = []
    tot = TreeOfThoughts(
        FunctionModel(model_reply), search=SearchConfig(method="dfs", depth=3, threshold=10)
    )
    tot.run(PROBLEM, on_event=events.append)
    pruned = [e for e in events if isinstance(e, StrategyStep) and e.kind == "pruned"]
    # +2, +3, +4 are judged "likely" (1 < 10) and +1 "impossible": all four are pruned
    assert sorted(e.detail["score"] for e in pruned) == [0.001, 1.0, 1.0, 1.0]


def test_a_vote_threshold_counts_votes() -> None:
    events: list[object] = []
    tot = TreeOfThoughts(
        FunctionModel(model_reply),
        evaluator="vote",
        search=SearchConfig(method="dfs", depth=1, n_generate=4, n_evaluate=2, threshold=2),
    )
    tot.run(PROBLEM, on_event=events.append)
    pruned = [e for e in events if isinstance(e, StrategyStep) and e.kind == "pruned"]
    # both votes go to choice 3 (+3): the states with no vote are below 2
    assert sorted(str(e.detail["steps"]) for e in pruned) == ["['+1']", "['+2']", "['+4']"]


@pytest.mark.parametrize(
    ("evaluator", "search", "scale"),
    [
        ("value", SearchConfig(threshold=20.5), "0-20"),
        ("value", SearchConfig(threshold=-1), "0-20"),
        ("vote", SearchConfig(n_evaluate=3, threshold=4), "0-3"),
    ],
)
def test_a_threshold_outside_the_evaluators_scores_is_refused(
    evaluator: str, search: SearchConfig, scale: str
) -> None:
    with pytest.raises(ConfigError) as info:
        TreeOfThoughts(FunctionModel(model_reply), evaluator=evaluator, search=search)  # type: ignore[arg-type]
    assert "SearchConfig.threshold" in str(info.value) and scale in str(info.value)
    assert evaluator in str(info.value)


def test_an_evaluate_function_sets_its_own_scale() -> None:
    hooks = ThoughtHooks(evaluate=lambda problem, steps: 100.0)
    tot = TreeOfThoughts(FunctionModel(model_reply), hooks=hooks, search=SearchConfig(threshold=50))
    assert tot.search.threshold == 50


def test_dfs_with_votes_falls_back_to_the_voted_state() -> None:
    # was: votes were never recorded per state, so the depth-first fallback (no
    # is_solution: every path ends at the depth bound) chose the first state seen (+1) and
    # reported score 0, ignoring that both votes went to choice 3 (+3)
    tot = TreeOfThoughts(
        FunctionModel(model_reply),
        evaluator="vote",
        search=SearchConfig(method="dfs", depth=1, n_generate=4, n_evaluate=2, threshold=0),
    )
    result = tot.run(PROBLEM)
    assert result.data["path"] == ["+3"] and result.data["score"] == 2.0


def test_a_batch_whose_states_all_have_votes_is_not_voted_again() -> None:
    calls: Counter[str] = Counter()

    def reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
        calls["vote"] += "best choice is" in messages[-1].text
        return model_reply(messages, request)

    # every state proposes the same two steps, and the key is the set of steps taken:
    # at depth 2, "+1 +2" and "+2 +1" are one state, already voted on via the first
    hooks = ThoughtHooks(
        generate=lambda p, s: ["+1", "+2"], state_key=lambda steps: frozenset(steps)
    )
    tot = TreeOfThoughts(
        FunctionModel(reply),
        evaluator="vote",
        hooks=hooks,
        search=SearchConfig(method="dfs", depth=2, n_evaluate=1, threshold=0),
    )
    result = tot.run(PROBLEM)
    assert result.data["cache_hits"] >= 1
    # votes: the root's children, then +1's (+1 +2 is new); none for +2's, all known
    assert calls["vote"] == 2
