"""Batches: many prompts (or strategy runs) through one agent, on this process or a Ray
cluster, each result recorded exactly once (see ``docs/batch.md``).

    from loopwright.batch import BatchConfig, RayEngine, make_tasks, run_batch

    summary = run_batch(make_agent, make_tasks(["What is 2 + 2?", "Capital of France?"]),
                        "results.jsonl", engine=RayEngine(), config=BatchConfig(retries=2))

``loopwright batch`` is the command line of the same functions. Ray is imported only when
a :class:`RayEngine` starts (the ``ray`` extra).
"""

from loopwright.batch.driver import BatchSummary, arun_batch, run_batch
from loopwright.batch.engine import AgentSource, BatchConfig, Engine, LocalEngine, WorkLost
from loopwright.batch.progress import Progress
from loopwright.batch.ray_engine import RayEngine
from loopwright.batch.sink import ResultSink
from loopwright.batch.tasks import (
    INTERNAL_ERROR,
    WORKER_LOST,
    BatchTask,
    TaskOutcome,
    execute,
    make_tasks,
    read_tasks,
)

__all__ = [
    "INTERNAL_ERROR",
    "WORKER_LOST",
    "AgentSource",
    "BatchConfig",
    "BatchSummary",
    "BatchTask",
    "Engine",
    "LocalEngine",
    "Progress",
    "RayEngine",
    "ResultSink",
    "TaskOutcome",
    "WorkLost",
    "arun_batch",
    "execute",
    "make_tasks",
    "read_tasks",
    "run_batch",
]
