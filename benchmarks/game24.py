"""Game of 24 (the Tree-of-Thoughts paper's task): IO, CoT, CoT-SC (k = 10) and ToT (BFS,
b = 5) with one imperfect stand-in model.

Puzzles: ``24.csv`` of the PyPI package ``tree-of-thoughts-llm`` (read from the wheel
``pip download --no-deps`` fetches; never installed), puzzles 900-999 (0-based), the
paper's test set.

The stand-in is a seeded ``FunctionModel`` with 20 ms latency that reads the prompt files
the strategies send, like a model would, and behaves like an imperfect LLM:

* **propose** (``tot_propose``): 5-9 legal next steps drawn at random from every legal
  step (no preference for good ones), plus, with probability 0.15, an illegal step (a
  wrong result);
* **value** (``tot_value``): the truth (24 still reachable from the numbers left?) seen
  through noise -- reachable: sure 0.6 / likely 0.3 / impossible 0.1; not reachable:
  impossible 0.65 / likely 0.3 / sure 0.05; one number left: sure iff it is 24 (wrong
  with probability 0.1);
* **CoT** (``cot``): three steps, each a step from which 24 stays reachable with
  probability 0.5 (favouring the first such step), else any legal step, with an
  arithmetic slip with probability 0.1; the chain always claims ``= 24``;
* **IO** (a plain prompt): the same chain with probability 0.2 of a good step, only the
  final expression shown.

ToT runs as in the paper: BFS, beam 5, depth 3, three value samples per state (scores
averaged).

Each reply is drawn from a random generator seeded by the prompt text and how many times
that prompt was seen, so every run of this script is the same. Answers are checked by
evaluating the expression exactly (fractions) and comparing the numbers used.

Run: ``python benchmarks/game24.py [--puzzles N] [--wheel PATH]``; ``--embedded N`` runs
only ToT with the embedded model (``--model``, default ``local:gemma-3-270m``) on N
puzzles: beam 2, three proposals, one value call per state, replies capped at 48 tokens.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import csv
import glob
import hashlib
import io
import itertools
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from functools import cache

from loopwright import FunctionModel, Message, ModelRequest, Reply, Usage
from loopwright.core.estimate import estimate_tokens
from loopwright.core.protocols import complete
from loopwright.strategies import SearchConfig, SelfConsistency, ThoughtHooks, TreeOfThoughts

LATENCY = 0.02
SEED = 24
OPS = "+-*/"

# ---------------------------------------------------------------------- the puzzles


def puzzles(wheel: str | None, count: int) -> list[list[int]]:
    path = wheel or next(iter(sorted(glob.glob("/tmp/tot/tree_of_thoughts_llm-*.whl"))), None)
    if path is None:
        folder = tempfile.mkdtemp(prefix="tot-")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "tree-of-thoughts-llm", "--no-deps",
             "-d", folder, "-q"],
            check=True,
        )  # fmt: skip
        path = glob.glob(f"{folder}/*.whl")[0]
    with zipfile.ZipFile(path) as archive:
        name = next(n for n in archive.namelist() if n.endswith("data/24/24.csv"))
        rows = list(csv.DictReader(io.StringIO(archive.read(name).decode())))
    return [[int(x) for x in row["Puzzles"].split()] for row in rows[900 : 900 + count]]


# ---------------------------------------------------------------------- arithmetic

Nums = tuple[Fraction, ...]


def show(x: Fraction) -> str:
    return str(x)


def legal_steps(nums: Nums) -> list[tuple[Fraction, str, Fraction, Fraction]]:
    out = []
    for i, j in itertools.permutations(range(len(nums)), 2):
        a, b = nums[i], nums[j]
        for op in OPS:
            if op in "+*" and i > j:
                continue  # commutative: one order
            if op == "-" and a < b:
                continue
            if op == "/" and b == 0:
                continue
            out.append((a, op, b, apply(a, op, b)))
    return out


def apply(a: Fraction, op: str, b: Fraction) -> Fraction:
    return {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else Fraction(0)}[op]


def after(nums: Nums, a: Fraction, b: Fraction, r: Fraction) -> Nums:
    rest = list(nums)
    rest.remove(a)
    rest.remove(b)
    return tuple(sorted([*rest, r]))


@cache
def solvable(nums: Nums) -> bool:
    if len(nums) == 1:
        return nums[0] == 24
    return any(solvable(after(nums, a, b, r)) for a, _, b, r in legal_steps(nums))


def step_text(nums: Nums, a: Fraction, op: str, b: Fraction, r: Fraction) -> str:
    left = " ".join(show(x) for x in after(nums, a, b, r))
    return f"{show(a)} {op} {show(b)} = {show(r)} (left: {left})"


_STEP = re.compile(r"^(\S+) ([-+*/]) (\S+) = (\S+) \(left: ([^)]*)\)$")


def parse_step(text: str) -> tuple[str, str, str, str, Nums] | None:
    m = _STEP.match(text.strip())
    if m is None:
        return None
    try:
        left = tuple(sorted(Fraction(x) for x in m.group(5).split()))
    except (ValueError, ZeroDivisionError):
        return None
    return m.group(1), m.group(2), m.group(3), m.group(4), left


def expression(start: Sequence[int], steps: Sequence[str]) -> str:
    """The expression the steps describe (each claimed result replaced by its parts)."""
    pool: list[tuple[Fraction, str]] = [(Fraction(n), str(n)) for n in start]
    for text in steps:
        parsed = parse_step(text)
        if parsed is None:
            return ""
        a, op, b, r, _ = parsed
        left = _take(pool, Fraction(a))
        right = _take(pool, Fraction(b))
        if left is None or right is None:
            return ""
        pool.append((Fraction(r), f"({left} {op} {right})"))
    return pool[0][1] if len(pool) == 1 else ""


def _take(pool: list[tuple[Fraction, str]], value: Fraction) -> str | None:
    for i, (v, text) in enumerate(pool):
        if v == value:
            del pool[i]
            return text
    return None


def evaluate(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Expression):
        return evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return Fraction(node.value)
    if isinstance(node, ast.BinOp):
        a, b = evaluate(node.left), evaluate(node.right)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, ast.Div) and b != 0:
            return a / b
    raise ValueError("not an arithmetic expression")


def correct(answer: str, numbers: Sequence[int]) -> bool:
    """Does ``answer`` (``expr`` or ``expr = 24``) use exactly ``numbers`` and make 24?"""
    expr = answer.split("=")[0].strip()
    if not expr:
        return False
    try:
        tree = ast.parse(expr, mode="eval")
        used = sorted(
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, int)
        )
        return used == sorted(numbers) and evaluate(tree) == 24
    except (SyntaxError, ValueError, ZeroDivisionError):
        return False


def canonical(expr: str) -> str | None:
    """One spelling per expression up to commutativity: what CoT-SC votes on."""

    def walk(node: ast.AST) -> str:
        if isinstance(node, ast.Constant):
            return str(node.value)
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}[type(node.op)]
            if op in "+*":
                left, right = sorted((left, right))
            return f"({left}{op}{right})"
        raise ValueError("not arithmetic")

    try:
        return walk(ast.parse(expr.split("=")[0].strip(), mode="eval").body)
    except (SyntaxError, ValueError, KeyError):
        return None


# ---------------------------------------------------------------------- the stand-in


class StandIn:
    """The imperfect model (module docstring)."""

    def __init__(self, seed: int = SEED) -> None:
        self.seed = seed
        self.seen: Counter[str] = Counter()
        self.model = FunctionModel(self.reply, name="standin")

    def rng(self, prompt: str) -> random.Random:
        self.seen[prompt] += 1
        key = f"{self.seed}:{self.seen[prompt]}:{prompt}".encode()
        return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))

    def reply(self, messages: Sequence[Message], request: ModelRequest) -> Reply:
        prompt = messages[-1].text
        rng = self.rng(prompt)
        start = tuple(sorted(Fraction(x) for x in _input(prompt)))
        if "Propose up to" in prompt:
            text = self.propose(current(prompt, start), rng)
        elif "Judge whether" in prompt:
            text = self.value(current(prompt, start), rng)
        elif "step by step" in prompt:
            text = self.chain(start, rng, p_good=0.5)
        else:
            text = self.chain(start, rng, p_good=0.2, show_steps=False)
        usage = Usage(estimate_tokens(prompt), estimate_tokens(text))
        return Reply(text, usage=usage, delay=LATENCY)

    @staticmethod
    def propose(nums: Nums, rng: random.Random) -> str:
        steps = legal_steps(nums)
        chosen = rng.sample(steps, min(len(steps), rng.randint(5, 9)))
        lines = [step_text(nums, a, op, b, r) for a, op, b, r in chosen]
        if rng.random() < 0.15 and steps:
            a, op, b, r = rng.choice(steps)
            lines.insert(
                rng.randrange(len(lines) + 1),
                step_text(nums, a, op, b, r + rng.choice((-2, -1, 1, 2))),
            )
        return "\n".join(lines)

    @staticmethod
    def value(nums: Nums, rng: random.Random) -> str:
        if len(nums) == 1:
            truth = nums[0] == 24
            word = (
                ("sure" if truth else "impossible")
                if rng.random() >= 0.1
                else ("impossible" if truth else "sure")
            )
        elif solvable(nums):
            word = rng.choices(("sure", "likely", "impossible"), (0.6, 0.3, 0.1))[0]
        else:
            word = rng.choices(("impossible", "likely", "sure"), (0.65, 0.3, 0.05))[0]
        return f"Numbers left: {' '.join(map(show, nums))}\n{word}"

    @staticmethod
    def chain(start: Nums, rng: random.Random, *, p_good: float, show_steps: bool = True) -> str:
        nums, steps = start, []
        for _ in range(len(start) - 1):
            options = legal_steps(nums)
            good = [s for s in options if solvable(after(nums, s[0], s[2], s[3]))]
            if good and rng.random() < p_good:
                a, op, b, r = good[min(int(rng.expovariate(1.0)), len(good) - 1)]
            else:
                a, op, b, r = rng.choice(options)
            claimed = r + rng.choice((-1, 1)) if rng.random() < 0.1 else r
            steps.append(step_text(nums, a, op, b, claimed))
            nums = after(nums, a, b, claimed)
        expr = expression([int(x) if x.denominator == 1 else 0 for x in start], steps)
        body = "\n".join(steps) + "\n" if show_steps else ""
        return f"{body}Answer: {expr} = 24"


def _input(prompt: str) -> list[int]:
    m = re.search(r"Input: ([\d ]+)", prompt)
    assert m, prompt
    return [int(x) for x in m.group(1).split()]


def current(prompt: str, start: Nums) -> Nums:
    """The numbers left after the prompt's steps (as the steps claim them)."""
    block = prompt.split("Steps so far:\n", 1)[1].split("\n\n", 1)[0]
    for line in reversed(block.splitlines()):
        parsed = parse_step(line)
        if parsed is not None:
            return parsed[4]
    return start


# ---------------------------------------------------------------------- the methods


def problem(numbers: Sequence[int]) -> str:
    return (
        "Use the numbers and basic arithmetic operations (+ - * /) to obtain 24; each number "
        f"is used exactly once.\nInput: {' '.join(map(str, numbers))}"
    )


async def run_io(model: StandIn, numbers: list[int]) -> tuple[str, int, int]:
    request = ModelRequest([Message.user(problem(numbers) + "\nAnswer:")])
    final = await complete(model.model, request)
    text = getattr(final, "message", Message.assistant("")).text
    return text.split("Answer:")[-1].strip(), 1, final.usage.total_tokens


async def run_sc(model: StandIn, numbers: list[int], k: int) -> tuple[str, int, int]:
    sc = SelfConsistency(model.model, k=k, adaptive=False, parser=_vote_key)
    result = await sc.arun(problem(numbers))
    return _spelled.get(result.answer, ""), result.calls, result.usage.total_tokens


_spelled: dict[str, str] = {}


def _vote_key(text: str) -> str | None:
    expr = text.split("Answer:")[-1].strip() if "Answer:" in text else ""
    key = canonical(expr)
    if key is not None:
        _spelled.setdefault(key, expr)
    return key


async def run_tot(model: StandIn, numbers: list[int]) -> tuple[str, int, int]:
    hooks = ThoughtHooks(
        answer=lambda p, steps: expression(numbers, steps),
        state_key=lambda steps: (len(steps), _left(steps)),
    )
    # the paper's settings: 5 kept states, 3 value samples per state; every value call of a
    # level may run at once (a level has up to 5 x 9 states x 3 samples)
    search = SearchConfig(depth=3, beam=5, n_generate=9, n_evaluate=3, max_concurrency=160)
    result = await TreeOfThoughts(model.model, hooks=hooks, search=search).arun(problem(numbers))
    return result.answer, result.calls, result.usage.total_tokens


def _left(steps: Sequence[str]) -> object:
    """The numbers a state leaves (its cache key with the depth), else its text."""
    parsed = parse_step(steps[-1]) if steps else None
    return parsed[4] if parsed is not None else tuple(steps)


async def measure(name: str, boards: list[list[int]]) -> dict[str, float]:
    model = StandIn()
    ok = calls = tokens = 0
    walls = []
    for numbers in boards:
        started = time.perf_counter()
        if name == "io":
            answer, c, t = await run_io(model, numbers)
        elif name == "cot":
            answer, c, t = await run_sc(model, numbers, 1)
        elif name == "cot_sc":
            answer, c, t = await run_sc(model, numbers, 10)
        else:
            answer, c, t = await run_tot(model, numbers)
        walls.append(time.perf_counter() - started)
        ok += correct(answer, numbers)
        calls += c
        tokens += t
    return {
        "success": ok / len(boards),
        "calls": calls,
        "tokens": tokens,
        "wall_median_ms": statistics.median(walls) * 1000,
        "wall_total_s": sum(walls),
    }


async def embedded_tot(boards: list[list[int]], model_name: str) -> dict[str, float]:
    """ToT with the embedded model (no stand-in): a small beam and capped replies, since
    each call costs about a second on a shared 2-core machine."""
    from loopwright import as_model
    from loopwright.core.protocols import ModelSettings

    model = as_model(model_name)
    settings = ModelSettings(max_tokens=48, temperature=0.0)
    search = SearchConfig(depth=3, beam=2, n_generate=3, max_concurrency=1, settings=settings)
    ok = calls = tokens = 0
    walls, answers = [], []
    for numbers in boards:
        hooks = ThoughtHooks(
            answer=lambda p, steps, n=numbers: expression(n, steps),  # type: ignore[misc]
            state_key=lambda steps: (len(steps), _left(steps)),
        )
        started = time.perf_counter()
        result = await TreeOfThoughts(model, hooks=hooks, search=search).arun(problem(numbers))
        walls.append(time.perf_counter() - started)
        ok += correct(result.answer, numbers)
        calls += result.calls
        tokens += result.usage.total_tokens
        path = result.data.get("path")
        answers.append(f"{numbers}: {result.stop.value} path={path!r:.120}")
    print("\n".join(answers))
    return {
        "success": ok / len(boards),
        "calls": calls,
        "tokens": tokens,
        "wall_median_ms": statistics.median(walls) * 1000,
        "wall_total_s": sum(walls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--puzzles", type=int, default=100)
    parser.add_argument("--wheel", default=None)
    parser.add_argument(
        "--embedded",
        type=int,
        default=0,
        metavar="N",
        help="only: ToT with the embedded model on N puzzles",
    )
    parser.add_argument("--model", default="local:gemma-3-270m")
    args = parser.parse_args()
    if args.embedded:
        row = asyncio.run(embedded_tot(puzzles(args.wheel, args.embedded), args.model))
        print(
            json.dumps(
                {"embedded_tot_success": row["success"], **{k: round(v, 1) for k, v in row.items()}}
            )
        )
        return
    boards = puzzles(args.wheel, args.puzzles)
    rows = {name: asyncio.run(measure(name, boards)) for name in ("io", "cot", "cot_sc", "tot")}
    print(f"Game of 24, puzzles 900-{899 + len(boards)}, stand-in latency {LATENCY * 1000:.0f} ms")
    print(
        f"{'method':8} {'success':>8} {'calls':>7} {'tokens':>9} {'wall/puzzle':>12} {'total':>8}"
    )
    for name, row in rows.items():
        print(
            f"{name:8} {row['success']:8.0%} {row['calls']:7.0f} {row['tokens']:9.0f} "
            f"{row['wall_median_ms']:10.0f}ms {row['wall_total_s']:7.1f}s"
        )
    tot_calls_per = rows["tot"]["calls"] / len(boards)
    print(
        f"ToT: median {rows['tot']['wall_median_ms']:.0f} ms per puzzle for {tot_calls_per:.0f} calls "
        f"(sequential calls would take {tot_calls_per * LATENCY * 1000:.0f} ms; "
        f"3 levels x 2 rounds x {LATENCY * 1000:.0f} ms = {6 * LATENCY * 1000:.0f} ms)"
    )
    summary = {f"{name}_success": row["success"] for name, row in rows.items()}
    summary.update({f"{name}_calls": row["calls"] for name, row in rows.items()})
    summary.update(
        {f"{name}_wall_median_ms": round(row["wall_median_ms"], 1) for name, row in rows.items()}
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
