"""One model used from several threads, each running its own event loop (``Agent.run``
from a thread pool): each loop keeps its own SDK client, built once."""

from __future__ import annotations

import asyncio
import itertools
import threading

from loopwright.providers._common import PerLoop


def test_loops_of_two_threads_each_keep_their_own_client() -> None:
    clients: PerLoop[int] = PerLoop()
    made = itertools.count()
    turns = [threading.Event() for _ in range(4)]
    got: dict[str, list[int]] = {"a": [], "b": []}

    def make() -> int:
        return next(made)

    async def use(name: str, mine: list[int]) -> None:
        for wait, then in zip(mine[::2], mine[1::2], strict=True):
            if wait >= 0:
                turns[wait].wait(10)
            got[name].append(clients.get(make))
            turns[then].set()

    # a, then b, then a again, then b again: the two loops alternate
    a = threading.Thread(target=lambda: asyncio.run(use("a", [-1, 0, 1, 2])))
    b = threading.Thread(target=lambda: asyncio.run(use("b", [0, 1, 2, 3])))
    a.start()
    b.start()
    a.join(20)
    b.join(20)
    assert got["a"][0] == got["a"][1] and got["b"][0] == got["b"][1], got
    assert got["a"][0] != got["b"][0]
    assert next(made) == 2  # one client per loop, not one per switch


def test_a_closed_loops_client_is_dropped_when_a_new_loop_asks() -> None:
    clients: PerLoop[object] = PerLoop()

    async def use() -> object:
        # a client that holds its loop (as a connection pool does): no weak reference
        # to the loop alone can free it
        return clients.get(asyncio.get_running_loop)

    for _ in range(5):  # sequential asyncio.run calls (a sync facade called in a loop)
        asyncio.run(use())
    assert len(clients._values) <= 1
