"""Kill test: SIGKILL an agent that sends emails, resume it, count the emails.

Each run starts a real subprocess running a durable agent (SQLite store) whose model asks
a non-idempotent ``send_email`` tool to send EMAILS emails (two per turn, in parallel).
``send_email`` appends one line to an outbox file. The parent kills the child with
SIGKILL at a random moment, then resumes the session in a new subprocess (which may be
killed again), until a child finishes. Then the outbox must hold exactly one line per
intended email: zero duplicates, zero losses.

    python benchmarks/killtest.py --runs 200      # prints figures, ends with one JSON line

``send_email`` derives its idempotency key from (to, subject) and declares
``unknown_outcome="ask_tool"`` with an ``outcome_check`` that scans the outbox, so a call
interrupted between its intent record and its result is resolved by asking the tool.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EMAILS = 5
DONE_TEXT = f"sent {EMAILS} emails"
PROMPT = f"Send the weekly report to user0 .. user{EMAILS - 1}."


# ------------------------------------------------------------------ the agent (child side)
def build_agent(outbox: Path) -> Any:
    from loopwright.core.messages import Message, ToolCallPart
    from loopwright.durable import NOT_RUN
    from loopwright.loop import Agent, Limits
    from loopwright.providers.scripted import FunctionModel
    from loopwright.tools import tool

    def sent_keys() -> set[str]:
        if not outbox.exists():
            return set()
        keys = set()
        for line in outbox.read_text().splitlines():
            try:
                keys.add(json.loads(line)["key"])
            except (ValueError, KeyError):
                continue  # a torn last line is not a sent email
        return keys

    def outcome(key: str) -> object:
        return f"sent (key {key})" if key in sent_keys() else NOT_RUN

    @tool(
        idempotency_key=lambda a: f"{a['to']}|{a['subject']}",
        unknown_outcome="ask_tool",
        outcome_check=outcome,
        permission="write",
    )
    def send_email(to: str, subject: str, body: str) -> str:
        """Send an email (appends it to the outbox)."""
        time.sleep(random.uniform(0, 0.03))
        line = json.dumps({"key": f"{to}|{subject}", "to": to, "pid": os.getpid()}) + "\n"
        fd = os.open(outbox, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())  # one write: a kill cannot tear it in half
        finally:
            os.close(fd)
        time.sleep(random.uniform(0, 0.03))
        return f"sent to {to}"

    def reply(messages: Any, request: Any) -> Any:
        time.sleep(random.uniform(0, 0.02))
        done = set()
        for m in messages:
            for r in m.tool_results_parts:
                if not r.is_error:
                    done.add(r.call_id)
        todo = [i for i in range(EMAILS) if f"call-{i}" not in done]
        if not todo:
            return DONE_TEXT
        calls = [
            ToolCallPart(
                f"call-{i}",
                "send_email",
                {"to": f"user{i}", "subject": "weekly report", "body": "numbers"},
            )
            for i in todo[:2]
        ]
        return Message("assistant", tuple(calls))

    return Agent(FunctionModel(reply), [send_email], limits=Limits(max_turns=3 * EMAILS))


def child(db: str, outbox: str, session_id: str) -> int:
    import logging

    from loopwright.durable import Durable
    from loopwright.store import SessionNotFound, SQLiteStore

    logging.basicConfig(level=logging.INFO, format="%(message)s")

    store = SQLiteStore(db)
    durable = Durable(build_agent(Path(outbox)), store)
    print("ready", flush=True)
    try:
        store.load(session_id)
        exists = True
    except SessionNotFound:
        exists = False
    # a new session starts with the prompt; an existing one is resumed (recovered)
    result = durable.resume(session_id) if exists else durable.run(PROMPT, session_id=session_id)
    print(json.dumps({"stop": result.stop.value, "answer": result.answer}), flush=True)
    return 0 if result.ok else 3


# ------------------------------------------------------------------ the harness (parent side)
def one_run(workdir: Path, index: int, rng: random.Random, max_kill_s: float) -> dict[str, Any]:
    db, outbox = workdir / f"run{index}.db", workdir / f"outbox{index}.jsonl"
    sid = f"kill-{index}"
    kills = attempts = 0
    sent_at_kill: list[int] = []
    recoveries: list[str] = []
    while True:
        attempts += 1
        if attempts > 30:
            raise RuntimeError(f"run {index}: no attempt finished after 30 tries")
        errfile = workdir / f"err{index}.txt"
        with open(errfile, "w") as errs:
            proc = subprocess.Popen(
                [sys.executable, __file__, "--child", str(db), str(outbox), sid],
                stdout=subprocess.PIPE,
                stderr=errs,
                text=True,
            )
        assert proc.stdout is not None
        ready = proc.stdout.readline().strip()
        if ready != "ready":
            proc.wait()
            raise RuntimeError(f"child failed to start: {ready!r} {errfile.read_text()[-2000:]}")
        # kill the first attempt always, later ones half of the time
        if attempts == 1 or rng.random() < 0.5:
            time.sleep(rng.uniform(0, max_kill_s))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
                sent_at_kill.append(_lines(outbox))
        # read through the same buffered pipe that readline() used (communicate() would
        # bypass its buffer and could miss the result line)
        out = proc.stdout.read()
        proc.wait()
        for line in errfile.read_text().splitlines():
            if line.startswith("recovery:"):
                recoveries.append(line.split(": ", 2)[-1])
        if proc.returncode == 0:
            break
        if proc.returncode != -signal.SIGKILL:
            err = errfile.read_text()[-2000:]
            raise RuntimeError(f"run {index}: child exited {proc.returncode}: {err}")
    lines = [json.loads(x) for x in outbox.read_text().splitlines()] if outbox.exists() else []
    counts = collections.Counter(x["key"] for x in lines)
    expected = {f"user{i}|weekly report" for i in range(EMAILS)}
    return {
        "kills": kills,
        "attempts": attempts,
        "duplicates": sum(c - 1 for c in counts.values() if c > 1),
        "lost": len(expected - set(counts)),
        "unexpected": len(set(counts) - expected),
        "final": json.loads(out.strip().splitlines()[-1]),
        "sent_at_kill": sent_at_kill,
        "recoveries": recoveries,
    }


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def run_many(runs: int, seed: int = 7, max_kill_s: float = 0.25) -> dict[str, Any]:
    rng = random.Random(seed)
    totals: collections.Counter[str] = collections.Counter()
    at_kill: collections.Counter[int] = collections.Counter()
    recovered: collections.Counter[str] = collections.Counter()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lw-killtest-") as tmp:
        for i in range(runs):
            r = one_run(Path(tmp), i, rng, max_kill_s)
            totals["runs"] += 1
            totals["kills"] += r["kills"]
            totals["attempts"] += r["attempts"]
            totals["duplicates"] += r["duplicates"]
            totals["lost"] += r["lost"]
            totals["unexpected"] += r["unexpected"]
            final = r["final"]
            totals["completed"] += final["stop"] == "final_answer" and final["answer"] == DONE_TEXT
            at_kill.update(r["sent_at_kill"])
            recovered.update(r["recoveries"])
    out: dict[str, Any] = dict(totals)
    out["recovery_decisions"] = dict(recovered)
    out["kills_by_emails_already_sent"] = {str(k): at_kill[k] for k in sorted(at_kill)}
    out["emails_expected"] = runs * EMAILS
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--child", nargs=3, metavar=("DB", "OUTBOX", "SESSION"))
    args = parser.parse_args()
    if args.child:
        raise SystemExit(child(*args.child))
    result = run_many(args.runs, args.seed)
    print(
        f"kill test: {result['runs']} runs, {result['kills']} SIGKILLs, "
        f"{result['attempts']} processes, {result['completed']} completed; "
        f"{result['emails_expected']} emails expected, duplicates={result['duplicates']}, "
        f"lost={result['lost']}, unexpected={result['unexpected']} ({result['seconds']} s)"
    )
    print(f"kills by emails already in the outbox: {result['kills_by_emails_already_sent']}")
    print(f"recovery decisions for interrupted calls: {result['recovery_decisions']}")
    print(json.dumps({"benchmark": "killtest", **result}))


if __name__ == "__main__":
    main()
