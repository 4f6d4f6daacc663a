"""The embedded model's calls on tables and files it was not tuned on: does the call
fetch the right thing?

``answers_eval.py`` judges the final answer over one fixture database and directory;
every call rule of the embedded strategy was tuned there. This set runs the same
strategy (``strategies.embedded``, as ``loopwright run`` runs the model) over other
tables (``employees``, ``books``) and files, and judges only the first model turn's
call: a question passes when its ``sql_query`` returns the expected value in at most
one row, or its ``read_file`` path is the file the question names. Nothing here was
used to choose a rule's words; it was written before the rules it measures.

Run: python benchmarks/calls_eval.py [--match REGEX]
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
from pathlib import Path

from loopwright.agent import Agent
from loopwright.loop.limits import Limits
from loopwright.providers.local import LocalModel
from loopwright.strategies.embedded import embedded_strategy
from loopwright.tools.builtin import BuiltinConfig, make_tools
from loopwright.tools.builtin.sql import SqlRunner

TABLES = {
    "employees": (
        "id INTEGER, name TEXT, department TEXT, salary INTEGER, city TEXT",
        [
            (1, "Alice", "Sales", 52000, "Denver"),
            (2, "Marco", "Engineering", 91000, "Austin"),
            (3, "Priya", "Engineering", 87000, "Denver"),
            (4, "Tom", "Support", 43000, "Austin"),
            (5, "Yuki", "Sales", 61000, "Seattle"),
        ],
    ),
    "books": (
        "id INTEGER, title TEXT, author TEXT, year INTEGER, pages INTEGER",
        [
            (1, "Dune", "Herbert", 1965, 412),
            (2, "Emma", "Austen", 1815, 474),
            (3, "Ulysses", "Joyce", 1922, 730),
            (4, "Beloved", "Morrison", 1987, 324),
        ],
    ),
}
FILES = {
    "meeting_notes.md": "# Planning\nDate: March 3. Owner: Rita.",
    "budget.csv": "item,amount\ntravel,1200\nfood,300\n",
    "server.log": "ERROR disk full at 02:10\nINFO restart at 02:15\n",
    "readme.txt": "Project Falcon. Version 2.4.",
}
# (question, a value the query's result must hold)
SQL = [
    ("What is Alice's salary?", "52000"),
    ("How much does Marco earn?", "91000"),
    ("Which department is Priya in?", "Engineering"),
    ("Who works in Support?", "Tom"),
    ("How many employees work in Engineering?", "2"),
    ("Who has the highest salary?", "Marco"),
    ("Who is the lowest paid employee?", "Tom"),
    ("Where is Yuki based?", "Seattle"),
    ("How many employees are in Denver?", "2"),
    ("Who wrote Dune?", "Herbert"),
    ("When was Beloved published?", "1987"),
    ("How many pages does Ulysses have?", "730"),
    ("Which book is the longest?", "Ulysses"),
    ("What is the oldest book?", "Emma"),
    ("Who is employee 4?", "Tom"),
    ("What is the title of book 2?", "Emma"),
    ("How many books are there?", "4"),
    ("Which book did Austen write?", "Emma"),
    ("How many employees earn more than 60000?", "3"),
    ("Which employee lives in Seattle?", "Yuki"),
    ("What is the salary of the employee named Tom?", "43000"),
    ("What year was Ulysses written?", "1922"),
    ("Who earns the most in Sales?", "Yuki"),
    ("What does Priya earn?", "87000"),
    ("In which city does Tom work?", "Austin"),
    ("Which author wrote Beloved?", "Morrison"),
]
# (question, the path the call must read)
READ = [
    ("What is the travel amount in budget.csv?", "budget.csv"),
    ("Summarize the server log in server.log.", "server.log"),
    ("Read meeting_notes.md and tell me the date of the planning meeting.", "meeting_notes.md"),
    ("What version is the project according to readme.txt?", "readme.txt"),
    ("Check server.log: when did the disk fill up?", "server.log"),
    ("Who owns the planning? See meeting_notes.md.", "meeting_notes.md"),
    ("How much is spent on food in budget.csv?", "budget.csv"),
]


def fixtures(root: Path) -> BuiltinConfig:
    (root / "files").mkdir()
    for name, text in FILES.items():
        (root / "files" / name).write_text(text)
    db = root / "staff.db"
    with sqlite3.connect(db) as conn:
        for table, (columns, rows) in TABLES.items():
            conn.execute(f"CREATE TABLE {table} ({columns})")
            marks = ", ".join("?" * len(rows[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    return BuiltinConfig(root=root / "files", database=db)


def first_call(model: LocalModel, config: BuiltinConfig, tools: tuple[str, ...], q: str):  # type: ignore[no-untyped-def]
    agent = Agent(embedded_strategy(model), make_tools(tools, config), limits=Limits(max_turns=1))
    result = asyncio.run(agent.arun(q))
    return next((c for m in result.messages for c in m.tool_calls), None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--match", default="", help="only questions matching this regex")
    args = parser.parse_args()
    model = LocalModel()
    model.load()
    passed: dict[str, int] = {"sql_query": 0, "read_file": 0}
    asked: dict[str, int] = {"sql_query": 0, "read_file": 0}
    cpu: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        config = fixtures(Path(tmp))
        runner = SqlRunner(config.database)
        for question, want in SQL + READ:
            if not re.search(args.match, question):
                continue
            kind = "sql_query" if (question, want) in SQL else "read_file"
            start = time.process_time()
            call = first_call(model, config, (kind, "calculator"), question)
            cpu.append(time.process_time() - start)
            got: object = None
            if call is not None and call.name == kind == "sql_query":
                try:
                    got = runner.query(str(call.arguments.get("query", "")))
                except Exception as exc:  # the query's own error is the outcome
                    got = {"error": str(exc)}
                rows = got.get("rows", []) if isinstance(got, dict) else []
                ok = want.lower() in json.dumps(got).lower() and len(rows) <= 1
            else:
                path = str(call.arguments.get("path", "")) if call is not None else ""
                ok = call is not None and call.name == kind and path.strip("./") == want
            passed[kind] += ok
            asked[kind] += 1
            args_text = json.dumps(dict(call.arguments)) if call is not None else "no call"
            print(
                f"{'OK  ' if ok else 'MISS'} {question!r}: {args_text} -> {json.dumps(got)[:100]}"
            )
    print(
        json.dumps(
            {
                "passed": passed,
                "questions": asked,
                "mean_cpu_s": round(statistics.mean(cpu), 2) if cpu else None,
            }
        )
    )


if __name__ == "__main__":
    main()
