"""Useful answers from the embedded model: does the final answer state the tool result?

Questions over the built-in tools (calculator, get_weather, read_file on a fixture
directory, sql_query on a fixture database, two-step add/multiply/divide), run exactly as
``loopwright run`` runs them: the embedded model inside its CLI strategy
(``loopwright.strategies.embedded``). The questions and fixtures are in
``answers_sets.py``, the automatic check of each answer in ``answers_check.py``.

Prints one line per question, then ONE JSON line.
Run: python benchmarks/answers_eval.py [--set NAME[,NAME...]|all] [--match REGEX] [--record FILE]
     python benchmarks/answers_eval.py --replay FILE [--set NAME|all] [--match REGEX]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from answers_check import check
from answers_sets import FILES, SETS, TABLES, Case

from loopwright.agent import Agent
from loopwright.core.events import ModelEvent, ResponseDone
from loopwright.core.messages import Usage, message_from_dict
from loopwright.core.protocols import Model, ModelRequest
from loopwright.core.run import RunResult, RunStop
from loopwright.loop.limits import Limits
from loopwright.providers.local import LocalModel
from loopwright.strategies.embedded import embedded_strategy
from loopwright.tools.builtin import BuiltinConfig, make_tools


class Timed:
    """Records the wall time and output tokens of every model turn."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.turns: list[tuple[str, float, int]] = []  # (kind, seconds, output tokens)
        self.cpu: list[tuple[str, float]] = []  # (kind, process CPU seconds)

    @property
    def name(self) -> str:
        return self.model.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        start, cpu = time.perf_counter(), time.process_time()
        async for event in self.model.stream(request):
            if isinstance(event, ResponseDone):
                kind = "call" if event.message.tool_calls else "answer"
                spent = time.perf_counter() - start
                self.turns.append((kind, spent, event.usage.output_tokens))
                self.cpu.append((kind, time.process_time() - cpu))
            yield event


def fixtures(root: Path) -> BuiltinConfig:
    files = root / "files"
    files.mkdir()
    for name, text in FILES.items():
        (files / name).write_text(text)
    db = root / "shop.db"
    with sqlite3.connect(db) as conn:
        for table, (columns, rows) in TABLES.items():
            conn.execute(f"CREATE TABLE {table} ({columns})")
            marks = ", ".join("?" * len(rows[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    return BuiltinConfig(root=files, database=db)


def evaluate(
    cases: list[Case],
    config: BuiltinConfig,
    base: LocalModel,
    records: list[dict[str, Any]] | None = None,
    set_name: str = "",
    record_to: Path | None = None,
) -> dict[str, object]:
    """Run ``cases`` grouped by tool set (as a user with one tool set would: the prompt
    prefix stays in llama.cpp's cache between questions); append one record per question
    to ``records`` (for ``--replay``), written to ``record_to`` after each question (a
    long run stopped early keeps what it ran)."""
    cases = sorted(cases, key=lambda c: c.tools)
    passed = passed_old = fallbacks = trimmed = 0
    run_s: list[float] = []
    single_s: list[float] = []
    single_cpu: list[float] = []
    answer_cpu: list[float] = []
    answer_s: list[float] = []
    tok_s: list[float] = []
    for case in cases:
        timed = Timed(base)
        agent = Agent(
            embedded_strategy(timed), make_tools(case.tools, config), limits=Limits(max_turns=5)
        )
        start, cpu = time.perf_counter(), time.process_time()
        result = asyncio.run(agent.arun(case.question))
        run_s.append(time.perf_counter() - start)
        run_cpu = time.process_time() - cpu
        verdict = check(case, result)
        passed += bool(verdict["pass"])
        passed_old += bool(check(case, result, strict=False)["pass"])
        fallbacks += bool(verdict["fallback"])
        trimmed += bool(verdict["trimmed"])
        answers = [t for t in timed.turns if t[0] == "answer"]
        answer_s += [t[1] for t in answers]
        tok_s += [t[1] / t[2] for t in answers if t[2]]
        answer_cpu += [c for kind, c in timed.cpu if kind == "answer"]
        if case.tool != "*" and len(timed.turns) == 2:
            single_s.append(run_s[-1])
            single_cpu.append(run_cpu)
        if records is not None:
            records.append(_record(set_name, case, result, verdict, run_s[-1], run_cpu))
            if record_to is not None:
                record_to.write_text(json.dumps(records, indent=1))
        _print_verdict(case, result, verdict)
    return {
        "questions": len(cases),
        "passed": passed,
        "passed_old_check": passed_old,
        "accuracy": round(passed / len(cases), 3),
        "fallbacks": fallbacks,
        "trimmed": trimmed,
        "median_run_s": round(statistics.median(run_s), 2),
        "mean_single_call_question_s": round(statistics.mean(single_s), 2) if single_s else None,
        "mean_answer_turn_s": round(statistics.mean(answer_s), 2) if answer_s else None,
        "mean_single_call_question_cpu_s": _mean(single_cpu),
        "mean_answer_turn_cpu_s": _mean(answer_cpu),
        "median_answer_s_per_output_token": round(statistics.median(tok_s), 4) if tok_s else None,
    }


def _print_verdict(case: Case, result: RunResult, verdict: dict[str, object]) -> None:
    calls = [
        f"{c.name}({json.dumps(dict(c.arguments))})" for m in result.messages for c in m.tool_calls
    ]
    mark = "OK  " if verdict["pass"] else "MISS"
    extra = "" if verdict["pass"] else f" {verdict}"
    for m in result.messages:
        for key in ("grounding", "grounding_trimmed"):
            if key in m.provider_meta:
                extra += f" {key}={m.provider_meta[key]}"
    print(f"{mark} {case.question!r}: {' -> '.join(calls)} -> {result.answer!r}{extra}", flush=True)


def _record(
    set_name: str,
    case: Case,
    result: RunResult,
    verdict: dict[str, object],
    wall_s: float,
    cpu_s: float,
) -> dict[str, Any]:
    """One question's run as JSON: the question, its tool calls and results, the answer
    and the whole message list (what :func:`check` reads), with the verdict it got."""
    messages = list(result.messages)
    return {
        "set": set_name,
        "question": case.question,
        "calls": [
            {"name": c.name, "arguments": dict(c.arguments)} for m in messages for c in m.tool_calls
        ],
        "results": [p.content for m in messages for p in m.tool_results_parts],
        "answer": result.answer,
        "stop": result.stop.value,
        "messages": [m.to_dict() for m in messages],
        "pass": bool(verdict["pass"]),
        "wall_s": round(wall_s, 3),
        "cpu_s": round(cpu_s, 3),
    }


def replay(path: Path, chosen: dict[str, list[Case]]) -> dict[str, object]:
    """Re-score the answers recorded in ``path`` (by ``--record``) through the current
    :func:`check`, without the model. A record whose question is in no chosen set (a
    question since edited or removed) is counted as ``unmatched``."""
    records = json.loads(path.read_text())
    by_question = {(name, c.question): c for name, cases in chosen.items() for c in cases}
    out: dict[str, dict[str, int]] = {}
    for rec in records:
        case = by_question.get((rec["set"], rec["question"]))
        if case is None:
            continue
        messages = tuple(message_from_dict(m) for m in rec["messages"])
        result = RunResult(rec["answer"], RunStop(rec["stop"]), 0, Usage(), messages)
        verdict = check(case, result)
        before = bool(rec["pass"])
        score = out.setdefault(
            rec["set"], {"questions": 0, "passed": 0, "passed_old_check": 0, "recorded_pass": 0}
        )
        score["questions"] += 1
        score["passed"] += bool(verdict["pass"])
        score["passed_old_check"] += bool(check(case, result, strict=False)["pass"])
        score["recorded_pass"] += before
        if bool(verdict["pass"]) != before:
            print(f"CHANGED ({'pass' if before else 'miss'} when recorded)", end=" ")
        _print_verdict(case, result, verdict)
    matched = sum(s["questions"] for s in out.values())
    return {"sets": out, "records": len(records), "unmatched": len(records) - matched}


def _mean(values: list[float]) -> float | None:
    return round(statistics.mean(values), 2) if values else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--set", default="all", help=f"all, or one or more of {', '.join(SETS)}, comma-separated"
    )
    parser.add_argument("--match", default="", help="only questions matching this regex")
    parser.add_argument("--record", type=Path, help="write every run's calls, results and answer")
    parser.add_argument(
        "--replay", type=Path, help="re-score the answers recorded in this file, without the model"
    )
    args = parser.parse_args()
    wanted = set(args.set.split(","))
    unknown = wanted - {*SETS, "all"}
    if unknown:
        parser.error(f"--set: unknown set {sorted(unknown)}; choose all or of {', '.join(SETS)}")
    chosen = {
        name: [c for c in cases if re.search(args.match, c.question)]
        for name, cases in SETS.items()
        if name in wanted or "all" in wanted
    }
    if args.replay:
        print(json.dumps(replay(args.replay, chosen)))
        return
    base = LocalModel()
    base.load()
    out: dict[str, object] = {}
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        config = fixtures(Path(tmp))
        for name, cases in chosen.items():
            if cases:
                print(f"# {name}")
                out[name] = evaluate(cases, config, base, records, name, args.record)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
