"""Running a graph's coroutines from synchronous code (``invoke``, ``stream``,
``update_state``)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from loopwright.core.run import in_running_loop
from loopwright.graph.types import GraphError

_LOCAL = threading.local()


def run_sync(coro: Any) -> Any:
    """Run ``coro`` to completion from synchronous code: on this thread's own event loop
    (kept between calls: creating one per call costs more than a short graph run), or,
    when called from inside a running loop (a sync node invoking a graph), on a helper
    thread so the caller's loop is not re-entered."""
    if not in_running_loop():
        loop = getattr(_LOCAL, "loop", None)
        if loop is None or loop.is_closed():
            loop = _LOCAL.loop = asyncio.new_event_loop()
        return loop.run_until_complete(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="loopwright-graph-sync") as pool:
        return pool.submit(asyncio.run, coro).result()  # its loop closes with the call


def no_running_loop(name: str, alternative: str) -> None:
    if not in_running_loop():
        return
    raise GraphError(f"graph.{name}() was called inside a running event loop; use {alternative}()")
