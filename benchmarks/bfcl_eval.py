"""The embedded model on unseen real-world tool schemas: a sample of the Berkeley
Function-Calling Leaderboard (BFCL v3), through loopwright's public API.

Data and checker come from the ``bfcl-eval`` wheel, downloaded once by hand (it is a
benchmark input, not a dependency of loopwright or its tests)::

    pip download bfcl-eval==2025.6.8 --no-deps -d /tmp/bfcl
    python benchmarks/bfcl_eval.py --wheel /tmp/bfcl/bfcl_eval-2025.6.8-py3-none-any.whl

Each question is run as a user would run it: one ``Tool.from_schema`` per function (the
BFCL type names ``dict``/``float``/``tuple``/``any`` mapped to JSON Schema with the
wheel's own ``GORILLA_TO_OPENAPI`` table, as BFCL does for OpenAI-style models), the
question as the prompt (a system message, if any, as the agent's system prompt), the
default ``LocalModel()``; the run stops after the first model turn
(``Limits(max_turns=1)``), whose tool calls are the output.

* ``live_simple`` / ``multiple``: AST accuracy by the wheel's own ``ast_checker``;
  ``no_call`` counts questions answered without a call;
* ``live_irrelevance``: accuracy = no tool call;
* seconds per question: wall clock and process CPU time (the CPU figure is the one to
  compare on a shared machine), with the load average at the end of the category;
* ``invalid`` = a turn that produced neither a parseable call nor an answer (token cap,
  model error) or a call whose arguments fail the tool's schema.

BFCL is too large for a shared 2-core machine: each category is a fixed random sample
(``--n`` per category, ``--seed``), the same on every run; ``--ids`` runs chosen
questions instead (ids from a ``--dump`` file), to look at misses one by one.

Prints one line per miss, then ONE JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
import types
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loopwright.agent import Agent
from loopwright.core.run import RunStop
from loopwright.loop.limits import Limits
from loopwright.providers.local import LocalModel
from loopwright.tools import Tool

DATA = "bfcl_eval/data/BFCL_v3_{}.json"
ANSWERS = "bfcl_eval/data/possible_answer/BFCL_v3_{}.json"
CATEGORIES = ("live_simple", "multiple", "live_irrelevance")


def _lines(wheel: zipfile.ZipFile, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in wheel.read(name).decode().splitlines() if line.strip()]


def load_checker(wheel_path: Path) -> Any:
    """The wheel's ``ast_checker`` module, imported from the wheel itself. Its
    ``model_config`` import pulls every vendor SDK; it is only used to ask whether a
    model needs dots replaced in names, so a stand-in answers "no" (loopwright keeps
    the canonical dotted name and maps it at each wire boundary itself)."""
    sys.path.insert(0, str(wheel_path))
    stub = types.ModuleType("bfcl_eval.constants.model_config")

    class _Any(dict[str, Any]):
        def __missing__(self, key: str) -> Any:
            return types.SimpleNamespace(underscore_to_dot=False)

    stub.MODEL_CONFIG_MAPPING = _Any()  # type: ignore[attr-defined]
    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.eval_checker.ast_eval import ast_checker  # type: ignore[import-not-found]

    return ast_checker


def to_json_schema(schema: Any, table: Mapping[str, str]) -> Any:
    """BFCL's parameter schema with its type names mapped to JSON Schema."""
    if isinstance(schema, list):
        return [to_json_schema(s, table) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = table.get(value, value)
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {k: to_json_schema(v, table) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = to_json_schema(value, table)
        else:
            out[key] = value
    return out


def _record(**arguments: Any) -> str:
    return "ok"


def run_one(model: LocalModel, entry: dict[str, Any], table: Mapping[str, str]) -> dict[str, Any]:
    tools = [
        Tool.from_schema(
            f["name"], f["description"], to_json_schema(f["parameters"], table), _record
        )
        for f in entry["function"]
    ]
    turn = entry["question"][0]
    system = " ".join(m["content"] for m in turn if m["role"] == "system") or None
    prompt = "\n".join(m["content"] for m in turn if m["role"] == "user")
    agent = Agent(model, tools, system=system, limits=Limits(max_turns=1))
    start, cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(agent.arun(prompt))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    first = next((m for m in result.messages if m.role == "assistant"), None)
    calls = list(first.tool_calls) if first is not None else []
    errors = [p.error_kind for m in result.messages for p in m.tool_results_parts if p.is_error]
    invalid = result.stop in (RunStop.MODEL_ERROR,) or (
        first is None or (not calls and not first.text.strip())
    )
    invalid = invalid or any(str(k) in ("invalid_arguments", "not_found") for k in errors)
    return {
        "output": [{c.name: dict(c.arguments)} for c in calls],
        "seconds": seconds,
        "cpu": cpu,
        "invalid": invalid,
        "answer": result.answer,
    }


def evaluate(
    category: str,
    entries: list[dict[str, Any]],
    answers: dict[str, Any],
    checker: Any,
    dump: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI  # type: ignore[import-not-found]

    model = LocalModel()
    model.load()
    correct = invalid = no_call = 0
    seconds: list[float] = []
    cpu: list[float] = []
    for entry in entries:
        got = run_one(model, entry, GORILLA_TO_OPENAPI)
        seconds.append(got["seconds"])
        cpu.append(got["cpu"])
        invalid += got["invalid"]
        no_call += not got["output"]
        verdict: Any = None
        if category == "live_irrelevance":
            ok = not got["output"]
        elif not got["output"]:
            ok, verdict = False, {"valid": False, "error": ["no call"]}
        else:
            verdict = checker.ast_checker(
                entry["function"],
                got["output"],
                answers[entry["id"]]["ground_truth"],
                "Python",
                category,
                "loopwright",
            )
            ok = bool(verdict["valid"])
        correct += ok
        if dump is not None:
            dump.append(_dumped(entry, got, ok, answers, category, verdict))
        if not ok:
            question = entry["question"][0][-1]["content"][:90]
            print(f"MISS {entry['id']} {question!r}: {json.dumps(got['output'])[:200]}")
    n = len(entries)
    return {
        "questions": n,
        "correct": correct,
        "accuracy": round(correct / n, 3),
        "invalid": invalid,
        "invalid_rate": round(invalid / n, 3),
        "no_call": no_call,
        "median_s_per_question": round(statistics.median(seconds), 2),
        "mean_s_per_question": round(statistics.mean(seconds), 2),
        # process CPU time (one decoding thread): comparable across loads, unlike wall time
        "median_cpu_s_per_question": round(statistics.median(cpu), 2),
        "mean_cpu_s_per_question": round(statistics.mean(cpu), 2),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _dumped(
    entry: dict[str, Any],
    got: dict[str, Any],
    ok: bool,
    answers: dict[str, Any],
    category: str,
    verdict: Any,
) -> dict[str, Any]:
    """One question's record for ``--dump``: what was asked, offered, expected and
    written, and the checker's reason for a miss."""
    return {
        "id": entry["id"],
        "category": category,
        "ok": ok,
        "question": entry["question"][0][-1]["content"],
        "functions": entry["function"],
        "expected": answers.get(entry["id"], {}).get("ground_truth"),
        "output": got["output"],
        "error": None if ok or not isinstance(verdict, Mapping) else verdict.get("error"),
        "cpu": round(got["cpu"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wheel", type=Path, default=None)
    parser.add_argument("--n", type=int, default=100, help="questions per category")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--categories", default=",".join(CATEGORIES))
    parser.add_argument(
        "--dump", type=Path, default=None, help="write one JSON line per question here"
    )
    parser.add_argument(
        "--ids",
        default="",
        help="comma-separated question ids: run only these (of any sampled category)",
    )
    args = parser.parse_args()
    dump: list[dict[str, Any]] | None = [] if args.dump else None
    wheel_path = args.wheel or next(Path("/tmp/bfcl").glob("bfcl_eval-*.whl"))
    checker = load_checker(wheel_path)
    out: dict[str, Any] = {"wheel": wheel_path.name, "n": args.n, "seed": args.seed}
    with zipfile.ZipFile(wheel_path) as wheel:
        for category in args.categories.split(","):
            entries = _lines(wheel, DATA.format(category))
            answers: dict[str, Any] = {}
            if category != "live_irrelevance":
                answers = {a["id"]: a for a in _lines(wheel, ANSWERS.format(category))}
            picked = sorted(
                random.Random(args.seed).sample(range(len(entries)), min(args.n, len(entries)))
            )
            if args.ids:
                wanted = set(args.ids.split(","))
                picked = [i for i, e in enumerate(entries) if e["id"] in wanted]
                if not picked:
                    continue
            print(f"# {category}: {len(picked)} of {len(entries)}")
            out[category] = evaluate(category, [entries[i] for i in picked], answers, checker, dump)
            print(json.dumps({category: out[category]}), flush=True)
    if args.dump is not None and dump is not None:
        args.dump.write_text("".join(json.dumps(r) + "\n" for r in dump))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
