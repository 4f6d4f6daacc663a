"""`loopwright batch --engine ray` on a two-node Ray cluster simulated on this machine.

The cluster: ``ray.cluster_utils.Cluster`` with a head node and a second node, one CPU
each (two raylets, two object stores, workers per node: what ``ray start --head`` plus
``ray start --address`` on two machines gives). The workload: N prompts through a
stand-in agent whose model waits ``LATENCY`` s per call and burns ``CPU_MS`` of CPU (two
calls per prompt: a tool call, then the answer), so the figures are the batch machinery's.

1. **Throughput** (``--repeats`` times each, medians): the same N prompts
   * floor: plain asyncio, no loopwright -- N x 2 awaits of LATENCY s plus the CPU burn,
     ``concurrency`` at a time in one process;
   * local: ``run_batch`` with ``LocalEngine`` (one process, ``concurrency`` at a time);
   * ray: ``run_batch`` with ``RayEngine`` on the cluster (chunks of ``chunk`` prompts,
     ``concurrency`` at a time in each Ray task).
2. **Node killed midway** (through the real command, ``loopwright batch --engine ray
   --address <cluster>`` in a subprocess): once half of the results are recorded the
   second node is removed (its raylet and workers killed). Checked: every prompt has
   exactly one result line, with the right answer; how many runs were executed more than
   once (chunks lost with the node) and how many attempts the batch made.

Usage: ``python benchmarks/ray_batch.py [--prompts 1000] [--repeats 3] [--quick]``.
Prints figures and the load average, then ONE JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loopwright import Agent, FunctionModel, Reply, Usage, tool, tool_call
from loopwright.batch import BatchConfig, LocalEngine, RayEngine, make_tasks, run_batch
from loopwright.core.messages import Message
from loopwright.core.protocols import ModelRequest

HERE = Path(__file__).resolve().parent
LATENCY = 0.02
CPU_MS = 1.0
LOG_ENV = "RAY_BATCH_BENCH_LOG"  # where workers log each executed run (kill test)


def _burn(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


def _log_run(log: str, prompt: str) -> None:
    """One line per executed run, with the node it ran on (appended with O_APPEND: whole
    lines even from many processes)."""
    import ray

    with open(log, "a") as out:
        out.write(f"{prompt} {ray.get_runtime_context().get_node_id()}\n")


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@dataclass(frozen=True, slots=True)
class StandIn:
    """The stand-in agent's factory (picklable: Ray workers build their own)."""

    latency: float = LATENCY
    cpu_ms: float = CPU_MS

    def __call__(self) -> Agent:
        latency, cpu_ms = self.latency, self.cpu_ms
        log = os.environ.get(LOG_ENV)

        async def reply(messages: Sequence[Message], request: ModelRequest) -> Reply:
            await asyncio.sleep(latency)
            _burn(cpu_ms)
            usage = Usage(50, 10, cost=0.0001)
            prompt = messages[0].text
            if len(messages) == 1:
                return Reply([tool_call("lookup", {"key": prompt})], usage=usage)
            if log:
                _log_run(log, prompt)
            return Reply(f"answer to {prompt}", usage=usage)

        return Agent(FunctionModel(reply), [lookup])


def standin() -> Agent:
    """``--agent ray_batch:standin`` for the command-line run."""
    return StandIn()()


async def _floor(n: int, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            for _ in range(2):
                await asyncio.sleep(LATENCY)
                _burn(CPU_MS)

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - start


def _timed(engine: LocalEngine | RayEngine, n: int, concurrency: int) -> float:
    tasks = make_tasks([f"q{i}" for i in range(n)])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.jsonl"
        config = BatchConfig(concurrency=concurrency)
        summary = run_batch(StandIn(), tasks, out, engine=engine, config=config)
        assert summary.ok and summary.done == n, summary
        assert len(out.read_text().splitlines()) == n
    return summary.elapsed


def throughput(n: int, repeats: int, concurrency: int, chunk: int) -> dict[str, object]:
    rows: dict[str, list[float]] = {"floor": [], "local": [], "ray": []}
    for _ in range(repeats):
        rows["floor"].append(asyncio.run(_floor(n, concurrency)))
        rows["local"].append(_timed(LocalEngine(), n, concurrency))
        rows["ray"].append(_timed(RayEngine(chunk_size=chunk), n, concurrency))
    medians = {name: statistics.median(times) for name, times in rows.items()}
    for name, times in rows.items():
        print(
            f"{name:>5}: median {medians[name]:.2f}s  {n / medians[name]:7.1f} prompts/s  "
            f"({', '.join(f'{t:.2f}' for t in times)})"
        )
    print(
        f"local/floor {medians['local'] / medians['floor']:.2f}x  "
        f"ray/floor {medians['ray'] / medians['floor']:.2f}x  "
        f"ray/local {medians['ray'] / medians['local']:.2f}x (time ratios)"
    )
    return {name: round(n / t, 1) for name, t in medians.items()}


def kill_midway(cluster: object, victim: object, n: int, chunk: int) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="ray-batch-kill-"))
    prompts, results, log = tmp / "prompts.jsonl", tmp / "results.jsonl", Path(os.environ[LOG_ENV])
    log.write_text("")
    prompts.write_text(
        "".join(json.dumps({"prompt": f"q{i}", "id": f"q{i}"}) + "\n" for i in range(n))
    )
    command = [
        sys.executable, "-m", "loopwright.cli", "batch", str(prompts), "--engine", "ray",
        "--address", cluster.address, "--agent", "ray_batch:standin", "--out", str(results),
        "--chunk-size", str(chunk), "--concurrency", "8",
    ]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=HERE, stderr=subprocess.PIPE, text=True)
    killed_at = None
    while proc.poll() is None:
        time.sleep(0.05)
        done = results.read_text().count("\n") if results.exists() else 0
        lines = log.read_text().splitlines()
        busy = bool(lines) and lines[-1].endswith(victim.node_id)  # type: ignore[attr-defined]
        # kill while the second node is running prompts, so work is lost with it
        if killed_at is None and done >= n // 2 and busy:
            cluster.remove_node(victim)  # type: ignore[attr-defined]
            killed_at = (done, time.perf_counter() - start)
            print(f"killed the second node after {done} results ({killed_at[1]:.1f}s)")
    elapsed = time.perf_counter() - start
    stderr = proc.stderr.read() if proc.stderr else ""
    records = [json.loads(line) for line in results.read_text().splitlines()]
    keys = Counter(r["task"] for r in records)
    executed = [line.split() for line in log.read_text().splitlines()]
    runs = Counter(prompt for prompt, _ in executed)
    by_node = Counter("second" if node == victim.node_id else "head" for _, node in executed)  # type: ignore[attr-defined]
    wrong = [r["task"] for r in records if r["answer"] != f"answer to {r['task']}"]
    report = {
        "exit_code": proc.returncode,
        "prompts": n,
        "result_lines": len(records),
        "distinct_tasks": len(keys),
        "missing": n - len(keys),
        "duplicated_lines": sum(c - 1 for c in keys.values()),
        "wrong_answers": len(wrong),
        "runs_executed": sum(runs.values()),
        "tasks_run_more_than_once": sum(1 for c in runs.values() if c > 1),
        "retried_attempts": sum(r["attempts"] - 1 for r in records),
        "runs_by_node": dict(by_node),
        "killed_after_results": killed_at[0] if killed_at else None,
        "wall_s": round(elapsed, 1),
    }
    print(json.dumps(report, indent=1))
    print("last progress line:", stderr.strip().splitlines()[-1] if stderr.strip() else "")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="200 prompts, one repeat")
    args = parser.parse_args()
    n, repeats = (200, 1) if args.quick else (args.prompts, args.repeats)
    from ray.cluster_utils import Cluster

    os.environ[LOG_ENV] = str(Path(tempfile.mkdtemp(prefix="ray-batch-log-")) / "runs.log")
    os.environ.setdefault("PYTHONPATH", str(HERE.parent / "src"))
    print(f"load average before: {os.getloadavg()}")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    victim = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    import ray

    ray.init(address=cluster.address, include_dashboard=False, logging_level="warning")
    try:
        print(f"cluster: {len(ray.nodes())} nodes, {ray.cluster_resources().get('CPU')} CPUs")
        rates = throughput(n, repeats, args.concurrency, args.chunk)
        ray.shutdown()  # the command-line run is its own driver
        report = kill_midway(cluster, victim, n, args.chunk)
    finally:
        ray.shutdown()
        cluster.shutdown()
    load = os.getloadavg()
    print(f"load average after: {load}")
    print(json.dumps({"prompts_per_s": rates, "kill": report, "load_avg": load}))


if __name__ == "__main__":
    main()
