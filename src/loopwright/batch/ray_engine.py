"""The Ray engine: a batch's chunks run as Ray tasks, on one machine or a cluster.

Needs the ``ray`` extra (``pip install 'loopwright[ray]'``); ``ray`` is imported when the
engine starts, never on import of :mod:`loopwright` or :mod:`loopwright.batch`.

* **Where.** ``address=None`` uses the cluster this process already joined, else the one
  ``$RAY_ADDRESS`` names, else starts a new Ray on this machine for the batch (never a
  cluster found through ``ray start``'s address file, which outlives a node that was not
  stopped with ``ray stop``); ``"auto"`` joins the cluster started on this machine with
  ``ray start``; ``"ray://host:10001"`` connects through Ray Client.
* **What ships.** The agent *source* (a picklable factory; see
  :data:`~loopwright.batch.engine.AgentSource`) is put in the object store once; each
  worker process builds the agent from it on its first chunk of the batch and keeps it
  for the next ones (an embedded model is loaded once per worker, not per task). A
  factory returning a context manager (an agent holding MCP sessions) is built for
  each chunk instead, and closed when the chunk ends.
* **Chunks.** One Ray task runs ``chunk_size`` batch tasks, ``concurrency`` at a time in
  its own event loop: model calls mostly wait on the network, so one CPU serves many.
* **Failures.** Ray does not retry these tasks (``max_retries=0``): a chunk whose worker
  or node died comes back as :class:`~loopwright.batch.engine.WorkLost` and the driver,
  the one retry owner, runs its tasks again wherever Ray places them. A worker that
  cannot build the agent (its module is not importable on that node, the factory
  raises) ends the batch with a :class:`UserError` saying why: every task would fail.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from loopwright.batch.engine import AgentSource, BatchConfig, WorkLost, build
from loopwright.batch.tasks import BatchTask, TaskOutcome, execute
from loopwright.core.errors import UserError
from loopwright.loop import Agent, Limits

if TYPE_CHECKING:
    from types import ModuleType

# Agents built in this worker process, by batch id: a worker serves many chunks of a batch.
_AGENTS: dict[str, Agent] = {}
_KEEP_AGENTS = 4
# One event loop per worker for all its chunks: a kept agent's model may hold clients
# bound to the loop it first ran in (an HTTP connection pool).
_LOOP: asyncio.AbstractEventLoop | None = None


log = logging.getLogger("loopwright.batch")
CLIENT_SERVER_FAILED = "Starting Ray client server failed"
"""What ``ray.init("ray://...")`` raises when the cluster's client proxy could not start
the per-client server (as ``ConnectionAbortedError``); the proxy's fork of that server
fails when it comes while the proxy's own threads are busy, seconds after the cluster
started, and a later attempt starts a fresh one."""
JOIN_ATTEMPTS = 3


def _join_cluster(
    ray: Any, address: str | None, options: dict[str, Any], pause: float = 1.0
) -> None:
    """``ray.init(address, **options)``, trying a Ray Client address again (up to
    ``JOIN_ATTEMPTS`` times, ``pause`` seconds apart, doubling) when the cluster's proxy
    failed to start the client's server; any other failure is raised at once."""
    for attempt in range(JOIN_ATTEMPTS):
        try:
            ray.init(address=address, **options)
            return
        except (ConnectionError, RuntimeError) as exc:  # Ray Client: ConnectionAbortedError
            retry = (address or "").startswith("ray://") and CLIENT_SERVER_FAILED in str(exc)
            if not retry or attempt == JOIN_ATTEMPTS - 1:
                raise
            log.warning("Ray Client server did not start (%s); trying again", exc)
            ray.shutdown()  # drop the half-made client connection before the next try
            time.sleep(pause * 2**attempt)


class AgentBuildError(Exception):
    """Raised in a Ray worker that could not receive or build the batch's agent."""


def _import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise UserError(
            "the ray engine needs Ray: pip install 'loopwright[ray]' (or use --engine local)"
        ) from None
    return ray


class RayEngine:
    """Runs a batch on a Ray cluster (see the module docstring).

    ``chunk_size`` batch tasks per Ray task; ``in_flight`` Ray tasks at a time (default:
    twice the cluster's CPUs, so a worker never waits for the driver); ``num_cpus`` each
    Ray task reserves; ``init`` are extra ``ray.init`` keyword arguments (used only when
    this engine starts Ray)."""

    def __init__(
        self,
        address: str | None = None,
        *,
        chunk_size: int = 8,
        in_flight: int | None = None,
        num_cpus: float = 1.0,
        init: Mapping[str, object] | None = None,
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"RayEngine chunk_size must be >= 1, got {chunk_size}")
        if in_flight is not None and in_flight < 1:
            raise ValueError(f"RayEngine in_flight must be >= 1, got {in_flight}")
        self.address = address
        self._chunk_size = chunk_size
        self._in_flight = in_flight
        self._num_cpus = num_cpus
        self._init = dict(init or {})
        self._slots = in_flight or 1
        self._started_ray = False
        self._submit: object = None
        self._args: tuple[object, ...] = ()
        self._limits: Limits | None = None

    @property
    def slots(self) -> int:
        return self._slots

    def _address(self) -> str | None:
        if self.address is not None or os.environ.get("RAY_ADDRESS"):
            return self.address  # given, or Ray's own variable
        return "local"

    @property
    def chunk_size(self) -> int:
        return self._chunk_size

    async def start(self, source: AgentSource, config: BatchConfig) -> None:
        ray = _import_ray()
        if not ray.is_initialized():
            options = {"include_dashboard": False, "logging_level": "warning", **self._init}
            try:
                _join_cluster(ray, self._address(), options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.address or "a local cluster"
                raise UserError(f"cannot start or join the Ray cluster at {where}: {exc}") from None
            self._started_ray = True
        if self._in_flight is None:
            cpus = float(ray.cluster_resources().get("CPU", 1.0))
            self._slots = max(2, int(2 * cpus / max(self._num_cpus, 0.01)))
        try:
            source_ref = ray.put(source)
        except Exception as exc:  # pickling failed: a lambda's closure, a live connection
            raise UserError(
                f"the agent source cannot be sent to Ray workers ({type(exc).__name__}: "
                f"{exc}); pass a module-level factory function instead of an Agent"
            ) from None
        remote = ray.remote(num_cpus=self._num_cpus, max_retries=0)(run_chunk)
        self._submit = remote.remote
        self._args = (uuid.uuid4().hex, source_ref, config.concurrency, config.strategy)
        self._limits = config.limits

    async def run(self, tasks: Sequence[BatchTask]) -> Sequence[TaskOutcome]:
        ray = _import_ray()
        batch_id, source_ref, concurrency, strategy = self._args
        # the source travels as a reference inside a list, so Ray does not resolve it
        # before the chunk runs: a worker that already built the agent never fetches it,
        # and one that cannot unpickle it says so (AgentBuildError) instead of crashing
        ref = self._submit(  # type: ignore[operator]
            batch_id, [source_ref], self._limits, list(tasks), concurrency, strategy
        )
        try:
            outcomes: list[TaskOutcome] = await ref
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, AgentBuildError):
                raise UserError(
                    f"a Ray worker could not build the batch's agent: {exc.cause}; every node "
                    "needs the agent's module importable (docs/batch.md, Engines)"
                ) from None
            raise WorkLost(f"the chunk failed on its worker: {exc.cause!r}") from None
        except ray.exceptions.RayError as exc:  # the worker, its node or the object died
            raise WorkLost(f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from None
        return outcomes

    async def close(self) -> None:
        self._submit, self._args = None, ()
        if self._started_ray:
            _import_ray().shutdown()
            self._started_ray = False


def run_chunk(
    batch_id: str,
    source: list[object],
    limits: Limits | None,
    tasks: list[BatchTask],
    concurrency: int,
    strategy: str | None,
) -> list[TaskOutcome]:
    """The Ray task: run ``tasks`` in this worker, ``concurrency`` at a time.
    ``source`` holds the object reference of the agent source."""
    global _LOOP
    with ExitStack() as held:
        agent = _AGENTS.get(batch_id)
        holds = False
        if agent is None:
            agent, holds = _build(source, limits, held)
        # an agent holding resources (its source gave a context manager) lives for this
        # chunk only: they are released when the chunk ends, not when the worker does
        if not holds and batch_id not in _AGENTS:
            while len(_AGENTS) >= _KEEP_AGENTS:
                _AGENTS.pop(next(iter(_AGENTS)))
            _AGENTS[batch_id] = agent
        if _LOOP is None or _LOOP.is_closed():
            _LOOP = asyncio.new_event_loop()
        return _LOOP.run_until_complete(_run_all(agent, tasks, concurrency, strategy))


def _build(source: list[object], limits: Limits | None, held: ExitStack) -> tuple[Agent, bool]:
    try:
        return build(_import_ray().get(source[0]), limits, held)
    except Exception as exc:
        # Ray's errors carry the remote traceback; its last line names the cause
        lines = [line for line in str(exc).splitlines() if line.strip()]
        cause = lines[-1] if len(lines) > 1 else f"{type(exc).__name__}: {exc}"
        raise AgentBuildError(cause) from None


async def _run_all(
    agent: Agent, tasks: list[BatchTask], concurrency: int, strategy: str | None
) -> list[TaskOutcome]:
    gate = asyncio.Semaphore(concurrency)

    async def one(task: BatchTask) -> TaskOutcome:
        async with gate:
            return await execute(agent, task, strategy)

    return list(await asyncio.gather(*(one(task) for task in tasks)))
