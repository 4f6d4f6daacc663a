"""Run sync tool functions off the event loop, on daemon worker threads.

Why not ``asyncio.to_thread``: its default executor joins its threads at interpreter
exit and at ``asyncio.run`` shutdown, so one hung sync tool (already reported as a
timeout) would hang the whole process on exit. These workers are daemon threads, reused
while idle, created on demand up to ``MAX_WORKERS`` (calls beyond that queue).
Context variables are copied into the worker like ``to_thread`` does.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

MAX_WORKERS = 64

_Job = tuple[
    asyncio.AbstractEventLoop,
    "asyncio.Future[Any]",
    contextvars.Context,
    Callable[..., Any],
    dict[str, Any],
]


class _Pool:
    def __init__(self, max_workers: int) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._workers = 0
        self._max = max_workers

    def submit(self, job: _Job) -> None:
        with self._lock:
            spawn = self._idle == 0 and self._workers < self._max
            if spawn:
                self._workers += 1
            else:
                self._idle -= 1 if self._idle > 0 else 0
        self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._work, name="loopwright-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            loop, fut, ctx, fn, kwargs = self._jobs.get()
            try:
                result = ctx.run(fn, **kwargs)
            except GeneratorExit:
                # thrown into the awaiting coroutine, GeneratorExit would close the whole
                # run instead of failing this call: deliver it as an ordinary exception
                _deliver(loop, fut, None, RuntimeError("the tool raised GeneratorExit"))
            except BaseException as exc:
                _deliver(loop, fut, None, exc)
            else:
                _deliver(loop, fut, result, None)
            del fut, fn, kwargs, ctx, loop
            with self._lock:
                self._idle += 1


def _deliver(
    loop: asyncio.AbstractEventLoop,
    fut: asyncio.Future[Any],
    result: Any,
    exc: BaseException | None,
) -> None:
    def settle() -> None:
        if fut.done():  # cancelled by a timeout meanwhile
            return
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)

    try:
        loop.call_soon_threadsafe(settle)
    except RuntimeError:  # the loop closed while the tool ran; nobody is waiting
        pass


_POOL = _Pool(MAX_WORKERS)


async def run_in_worker(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``fn(**kwargs)`` on a worker thread; cancelling the await abandons (not kills) it."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()
    _POOL.submit((loop, fut, contextvars.copy_context(), fn, kwargs))
    return await fut
