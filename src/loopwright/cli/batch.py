"""Batches from the command line: ``loopwright batch`` and its alias ``loopwright run
--batch`` both end here, in :func:`batch_main`, which runs :mod:`loopwright.batch` (the one
batch implementation) on the agent the command line describes.

Each input line is a JSON string (the prompt) or an object ``{"prompt": ..., "id": ...,
"limits": {...}}``. Results go to ``--out FILE`` (resumable: tasks it already records are
not run again) or stdout, one JSON line per task, in completion order::

    {"task": "q4", "index": 3, "id": "q4", "answer": "...", "stop_reason": "final_answer",
     "turns": 2, "usage": {...}, "session_id": "...", "detail": "", "attempts": 1}

stderr shows progress: done/total, rate, errors, retries and cost so far. The command
exits 0 when every task run now ended with a final answer, else with the exit code of the
first (in input order) that did not (see ``loopwright run --help``). See docs/batch.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from loopwright.batch import (
    INTERNAL_ERROR,
    WORKER_LOST,
    AgentSource,
    BatchConfig,
    BatchSummary,
    BatchTask,
    Engine,
    LocalEngine,
    RayEngine,
    ResultSink,
    read_tasks,
    run_batch,
)
from loopwright.batch.engine import build
from loopwright.batch.tasks import with_limits
from loopwright.cli import exit_codes
from loopwright.cli.agents import ConfirmHandler, build_agent
from loopwright.cli.observe import instrument
from loopwright.cli.output import CliError, say
from loopwright.cli.recipe import AgentRecipe
from loopwright.core.run import RunStop
from loopwright.loop import Agent

ENGINES = ("local", "ray")


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """What the command line asked of a batch (the agent itself is the recipe)."""

    path: Path
    concurrency: int
    trace_dir: Path | None = None
    otel: bool = False
    engine: str = "local"
    address: str | None = None
    out: Path | None = None
    retries: int = 2
    retry_on: tuple[str, ...] = ()
    strategy: str | None = None
    chunk_size: int = 8
    cost_budget: float | None = None


@dataclass(frozen=True, slots=True)
class AgentFactory:
    """Builds the command line's agent; picklable, so Ray workers build their own.

    ``cwd`` is the driver's working directory: ``--agent``/``--tools MODULE:ATTR``
    references import from there (as they do for ``loopwright run``), wherever the
    worker runs. The recipe's file paths (``--root``, ``--db``, ``--outbox``) are
    absolute paths on the machine that runs the task. ``limits`` are the limit flags
    given (``--max-turns``, ``--token-budget``, ``--timeout``, ``--cost-budget``): in a
    batch they bound every prompt's run, an ``--agent``'s too.

    With ``--mcp`` servers the factory gives a context manager: the servers are
    connected when it is entered and closed when it exits (the end of the batch on the
    local engine, of the chunk on a Ray worker)."""

    recipe: AgentRecipe
    confirm: ConfirmHandler | None
    cwd: str
    limits: tuple[tuple[str, int | float], ...] = ()

    def __call__(self) -> Agent | AbstractContextManager[Agent]:
        if self.cwd not in sys.path:
            sys.path.insert(0, self.cwd)
        if self.recipe.mcp:
            return self._with_servers()
        return self._limited(build_agent(self.recipe, self.confirm))

    def _limited(self, agent: Agent) -> Agent:
        if not self.limits:
            return agent
        limits = replace(agent.config.limits, **dict(self.limits))  # type: ignore[arg-type]
        return with_limits(agent, limits)

    @contextmanager
    def _with_servers(self) -> Iterator[Agent]:
        from loopwright.cli.mcp_tools import need_sdk, server_configs
        from loopwright.mcp import MCPToolset

        need_sdk()
        agent = build_agent(replace(self.recipe, mcp=()), self.confirm)
        with MCPToolset.connect(server_configs(self.recipe.mcp)) as toolset:
            toolset.attach(agent.tools, resources=True)
            yield self._limited(agent)


def limit_flags(
    recipe: AgentRecipe, cost_budget: float | None
) -> tuple[tuple[str, int | float], ...]:
    """The limits given on the command line, as ``(Limits field, value)`` pairs."""
    given = {
        "max_turns": recipe.max_turns,
        "token_budget": recipe.token_budget,
        "timeout": recipe.timeout,
        "cost_budget": cost_budget,
    }
    return tuple((name, value) for name, value in given.items() if value is not None)


def batch_main(
    prompt: str | None, recipe: AgentRecipe, confirm: ConfirmHandler, options: BatchOptions
) -> int:
    """Run the batch ``options`` describe on the agent of ``recipe`` and return the exit
    code (see the module docstring). Bad input raises a CliError/UserError (exit 2)."""
    if prompt is not None:
        raise CliError("give either PROMPT or --batch FILE, not both")
    tasks = read_tasks(options.path)
    if options.engine == "ray" and (options.trace_dir is not None or options.otel):
        raise CliError(
            "--trace/--otel record runs in this process only; use --engine local, or "
            "record inside your --agent factory"
        )
    factory = AgentFactory(
        recipe, confirm, str(Path.cwd()), limit_flags(recipe, options.cost_budget)
    )
    with ExitStack() as held:
        # built here first in every case: a bad model, tool, --agent or --mcp server is a
        # usage error now, not a failure of every task on every worker. The local engine
        # runs this agent, its MCP servers connected once for the batch; Ray workers
        # connect their own, so the driver's are closed before the batch starts.
        agent, _ = build(factory, None, held)
        if options.strategy is not None:
            # a strategy the model cannot run is a usage error, not a failure per task
            from loopwright.strategies.catalog import unsupported_reason

            reason = unsupported_reason(options.strategy, agent)
            if reason is not None:
                raise CliError(f"--strategy {options.strategy}: {reason}")
        if options.engine == "ray":
            held.close()
        return _run(agent, factory, tasks, options)


def _run(agent: Agent, factory: AgentFactory, tasks: list[BatchTask], options: BatchOptions) -> int:
    config = BatchConfig(
        concurrency=options.concurrency,
        retries=options.retries,
        retry_on=frozenset(options.retry_on),
        strategy=options.strategy,
    )
    closers: list[Callable[[], object]] = []
    engine: Engine
    source: AgentSource
    if options.engine == "ray":
        engine, source = RayEngine(options.address, chunk_size=options.chunk_size), factory
    else:
        engine = LocalEngine()
        source = instrument(agent, options.trace_dir, options.otel, closers=closers)
    sink = _open_sink(options.out, tasks)
    try:
        summary = run_batch(source, tasks, sink, engine=engine, config=config, progress=sys.stderr)
    finally:
        sink.close()
        for close in closers:
            close()
    return summary_code(summary)


def _open_sink(out: Path | None, tasks: list[BatchTask]) -> ResultSink:
    """stdout, or the results file (locked; resumed: says how much it already holds)."""
    if out is None:
        return ResultSink.to_stream(sys.stdout)
    sink = ResultSink.open(out)
    recorded = sum(1 for task in tasks if task.key in sink)
    if recorded:
        say(
            f"batch: {recorded} of {len(tasks)} tasks are already recorded in {out}; "
            f"running the other {len(tasks) - recorded}",
            err=True,
        )
    return sink


def summary_code(summary: BatchSummary) -> int:
    """0 when every task run answered, else the code of the first that did not."""
    if not summary.failures:
        return 0
    stop = summary.failures[0]
    if stop in (INTERNAL_ERROR, WORKER_LOST):
        return exit_codes.INTERNAL_ERROR
    return exit_codes.exit_code(RunStop(stop))
