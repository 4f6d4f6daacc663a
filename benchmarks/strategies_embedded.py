"""Reasoning strategies on the embedded model: right answers, honest stops, seconds.

Each strategy of ``loopwright run --strategy`` is built as the command line builds it
(``loopwright.strategies.catalog.for_agent`` over an agent of the embedded model wrapped
in ``embedded_strategy``, the question's tools and the CLI's default limits) and asked
the first questions of each kind (calculator, weather, file, SQL) of a set of
``answers_sets.py``. An answer is *right* when the run ends ``final_answer`` and the
answer states one of the question's facts; a run that ends ``final_answer`` with any
other answer is a *wrong success* (what a strategy must never report when the runtime
can know better) -- except the embedded strategy's own fallback, an answer saying it
could not state a reliable one (``fallback``, what the agent alone answers then too);
any other stop is an honest failure. A strategy the command line refuses for the
embedded model (``catalog.unsupported_reason``) is reported as refused, without running
it. ``agent`` (not a strategy) is the agent's own run, for reference.

Run: python benchmarks/strategies_embedded.py [--set dev_6] [--per-kind 3]
     [--strategies agent,self_consistency,self_refine] [--k 3] [--concurrency 1]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from answers_check import _states
from answers_eval import fixtures
from answers_sets import SETS, Case

from loopwright.agent import Agent
from loopwright.core.run import RunStop
from loopwright.loop.limits import Limits
from loopwright.providers.local import LocalModel
from loopwright.strategies import catalog
from loopwright.strategies.embedded import embedded_strategy
from loopwright.strategies.embedded.grounded import FALLBACK
from loopwright.tools.builtin import BuiltinConfig, make_tools

_KINDS = ("calculator", "get_weather", "read_file", "sql_query")
_FALLBACK = FALLBACK.split("{", 1)[0].strip()


def pick(cases: list[Case], per_kind: int) -> list[Case]:
    """The first ``per_kind`` questions of each kind, in the set's order."""
    return [c for kind in _KINDS for c in [c for c in cases if c.tool == kind][:per_kind]]


def run_one(
    name: str, case: Case, base: LocalModel, config: BuiltinConfig, sc: dict[str, int]
) -> dict[str, object]:
    agent = Agent(
        embedded_strategy(base), make_tools(case.tools, config), limits=Limits(max_turns=20)
    )
    given = sc if name == "self_consistency" else None
    refused = getattr(catalog, "unsupported_reason", None)
    reason = refused(name, agent) if refused is not None and name != "agent" else None
    if reason is not None:
        return {"question": case.question, "verdict": "refused", "detail": reason, "s": 0.0}
    start = time.perf_counter()
    if name == "agent":
        result = agent.run(case.question)
    else:
        result = catalog.for_agent(name, agent, given).run(case.question).run_result()
    seconds = time.perf_counter() - start
    states = any(_states(result.answer, f) for f in case.facts)
    if result.stop is not RunStop.FINAL_ANSWER:
        verdict = f"stopped:{result.stop.value}"
    elif result.answer.startswith(_FALLBACK):
        verdict = "fallback"
    else:
        verdict = "right" if states else "wrong_success"
    return {
        "question": case.question,
        "verdict": verdict,
        "answer": result.answer[:120],
        "calls": result.turns,
        "s": round(seconds, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", default="dev_6", choices=sorted(SETS))
    parser.add_argument("--per-kind", type=int, default=3)
    parser.add_argument("--strategies", default=",".join(catalog.STRATEGY_NAMES))
    parser.add_argument("--k", type=int, default=3, help="self_consistency samples")
    parser.add_argument(
        "--concurrency", type=int, default=0, help="self_consistency samples at once (0: k)"
    )
    args = parser.parse_args()
    cases = pick(SETS[args.set], args.per_kind)
    base = LocalModel()
    base.load()
    summary: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        config = fixtures(Path(tmp))
        for name in args.strategies.split(","):
            rows = []
            for case in cases:
                sc = {"k": args.k, "concurrency": args.concurrency or args.k}
                row = run_one(name, case, base, config, sc)
                rows.append(row)
                print(name, json.dumps(row), flush=True)
            ran = [r for r in rows if r["verdict"] != "refused"]
            summary[name] = {
                "questions": len(rows),
                "right": sum(r["verdict"] == "right" for r in rows),
                "wrong_success": sum(r["verdict"] == "wrong_success" for r in rows),
                "fallback": sum(r["verdict"] == "fallback" for r in rows),
                "refused": len(rows) - len(ran),
                "s_per_question": (
                    round(sum(float(str(r["s"])) for r in ran) / len(ran), 1) if ran else 0.0
                ),
            }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
