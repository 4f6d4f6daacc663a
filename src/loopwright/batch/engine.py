"""Engines: where a batch's tasks run. The driver (:mod:`loopwright.batch.driver`) hands
an engine *chunks* of tasks -- at most ``chunk_size`` tasks each, at most ``slots``
chunks at a time -- and gets one :class:`TaskOutcome` per task back, or
:class:`WorkLost` when the chunk's worker died. Retries, recording and progress are the
driver's, the same for every engine.

* :class:`LocalEngine` runs every task in this process's event loop: chunks of one task,
  ``concurrency`` at a time (what ``loopwright run --batch`` always did).
* :class:`~loopwright.batch.ray_engine.RayEngine` ships chunks to Ray workers, each of
  which runs its chunk ``concurrency`` tasks at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from loopwright.batch.tasks import BatchTask, TaskOutcome, execute, with_limits
from loopwright.core.errors import UserError
from loopwright.loop import Agent, Limits

AgentSource: TypeAlias = Agent | Callable[[], Agent | AbstractContextManager[Agent]]
"""An agent, or a zero-argument callable building one. Engines that run tasks in other
processes ship the source there, so give them a callable that pickles (a module-level
function, or an instance of a module-level class): each worker builds its own agent
once, instead of receiving a copy of one.

The callable may instead return a context manager giving the agent, for an agent that
holds resources (MCP server sessions): the local engine keeps it open for the batch, a
Ray worker for one chunk (it then builds the agent for each chunk it runs)."""


@dataclass(frozen=True, slots=True)
class BatchConfig:
    """How a batch runs, whatever the engine.

    * ``concurrency`` -- runs at a time in one process (the local engine's whole batch;
      each Ray worker's chunk).
    * ``retries`` -- how many times a task is run again after its run raised, its worker
      died, or it ended with a stop reason in ``retry_on``. A task is recorded once,
      with the outcome of its last attempt and the number of ``attempts``.
    * ``retry_on`` -- stop reasons that count as failures to retry (e.g. ``model_error``
      when a provider outage outlasts the loop's own model retries); none by default: a
      run stopped by a limit ended as asked.
    * ``retry_delay`` -- seconds before the first retry, doubled for each further one.
    * ``strategy`` -- answer with this strategy of :mod:`loopwright.strategies.catalog`
      instead of a plain agent run.
    * ``limits`` -- per-task limits replacing the agent's own (a task line's ``limits``
      are laid over them).
    """

    concurrency: int = 4
    retries: int = 2
    retry_on: frozenset[str] = field(default_factory=frozenset)
    retry_delay: float = 0.5
    strategy: str | None = None
    limits: Limits | None = None

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"BatchConfig.concurrency must be >= 1, got {self.concurrency}")
        if self.retries < 0:
            raise ValueError(f"BatchConfig.retries must be >= 0, got {self.retries}")
        if not self.retry_delay >= 0:
            raise ValueError(f"BatchConfig.retry_delay must be >= 0, got {self.retry_delay}")
        if self.strategy is not None:
            from loopwright.strategies.catalog import STRATEGY_NAMES

            if self.strategy not in STRATEGY_NAMES:
                raise ValueError(
                    f"unknown strategy {self.strategy!r}; expected one of: "
                    f"{', '.join(STRATEGY_NAMES)}"
                )


class WorkLost(Exception):
    """A chunk's worker (process or node) died: none of its outcomes came back."""


class Engine(Protocol):
    """Runs chunks of tasks (see the module docstring). ``start`` is called once per
    batch before any ``run``, ``close`` once after the last."""

    @property
    def slots(self) -> int:
        """Chunks the driver keeps in flight."""
        ...

    @property
    def chunk_size(self) -> int:
        """Tasks per chunk."""
        ...

    async def start(self, source: AgentSource, config: BatchConfig) -> None: ...

    async def run(self, tasks: Sequence[BatchTask]) -> Sequence[TaskOutcome]:
        """One outcome per task, in any order; raises :class:`WorkLost`."""
        ...

    async def close(self) -> None: ...


def build(source: AgentSource, limits: Limits | None, stack: ExitStack) -> tuple[Agent, bool]:
    """The agent ``source`` gives, under ``limits`` when given, and whether it holds
    resources: a context manager the source returns is entered on ``stack`` (they last
    until the stack closes). A source that gives something else is a :class:`UserError`."""
    made = source if isinstance(source, Agent) else source()
    agent = stack.enter_context(made) if isinstance(made, AbstractContextManager) else made
    if not isinstance(agent, Agent):
        raise UserError(f"the batch's agent source returned a {type(agent).__name__}, not an Agent")
    held = agent is not made
    return (agent if limits is None else with_limits(agent, limits)), held


class LocalEngine:
    """Every task in this process's event loop, ``concurrency`` at a time."""

    chunk_size = 1

    def __init__(self) -> None:
        self._agent: Agent | None = None
        self._strategy: str | None = None
        self._slots = 1
        self._held = ExitStack()

    @property
    def slots(self) -> int:
        return self._slots

    async def start(self, source: AgentSource, config: BatchConfig) -> None:
        self._agent, _ = build(source, config.limits, self._held)
        self._strategy = config.strategy
        self._slots = config.concurrency

    async def run(self, tasks: Sequence[BatchTask]) -> Sequence[TaskOutcome]:
        assert self._agent is not None, "LocalEngine.run before start"
        return [await execute(self._agent, task, self._strategy) for task in tasks]

    async def close(self) -> None:
        self._agent = None
        self._held.close()
