"""What carries a running graph's chunks to the consumer of ``stream``/``astream``:
the :class:`Feed` (the run advances a superstep only when the consumer asks for more,
as iterating a generator would) and, with ``subgraphs=True``, the chunks of subgraph
runs tagged with their namespace (:class:`SubgraphEmit`, :class:`FromSubgraph`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Any

from loopwright.graph.pregel import Emit

if TYPE_CHECKING:
    from loopwright.graph.engine import CompiledStateGraph


class FromSubgraph:
    """A chunk of a subgraph run on its way to the top-level stream."""

    __slots__ = ("chunk", "graph", "path")

    def __init__(self, path: tuple[str, ...], graph: CompiledStateGraph, chunk: Any) -> None:
        self.path = path
        self.graph = graph
        self.chunk = chunk


class SubgraphEmit:
    """The ``emit`` of a subgraph run when the stream asked for ``subgraphs=True``."""

    __slots__ = ("feed", "graph", "path")

    def __init__(self, feed: Emit, path: tuple[str, ...], graph: CompiledStateGraph) -> None:
        self.feed = feed
        self.path = path
        self.graph = graph

    def __call__(self, mode: str, chunk: Any) -> None:
        self.feed(mode, FromSubgraph(self.path, self.graph, chunk))


class Feed:
    """Chunks from a running graph to one consumer (thread-safe put via the run)."""

    __slots__ = ("_done", "_drainer", "_error", "_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[tuple[str, Any]] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._drainer: asyncio.Future[None] | None = None
        self._done = False
        self._error: BaseException | None = None

    async def drained(self) -> None:
        """Wait until the consumer has taken every chunk: the run advances a superstep
        only when the consumer asks for more, as iterating a generator would."""
        if self._items:
            self._drainer = asyncio.get_running_loop().create_future()
            await self._drainer

    def put(self, mode: str, chunk: Any) -> None:
        self._items.append((mode, chunk))
        self._wake()

    def finished(self, task: asyncio.Future[Any]) -> None:
        self._done = True
        if not task.cancelled():
            self._error = task.exception()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> tuple[str, Any] | None:
        if not self._items:
            drainer = self._drainer
            if drainer is not None and not drainer.done():
                drainer.set_result(None)
        while not self._items:
            if self._done:
                if self._error is not None:
                    raise self._error
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
            self._waiter = None
        return self._items.popleft()
