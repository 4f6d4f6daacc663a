"""The background thread every recorder hands its work to.

Recorders run on the event loop's thread, inside the run (``Hooks.on_event`` is
synchronous). To keep I/O and heavy work (serializing, redacting, building OpenTelemetry
spans) off that thread, a recorder only timestamps the event and :meth:`Worker.put`\\ s it
on a queue; one daemon thread per recorder takes items in order and calls ``handle``, and
calls ``idle`` whenever the queue runs empty (a good moment to flush a file).
:meth:`Worker.flush` waits until everything put so far was handled; :meth:`Worker.close`
also stops the thread. Recorders still open at interpreter exit are closed by an
``atexit`` hook, so the last events are not lost.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
import weakref
from collections.abc import Callable

_STOP = object()
YIELD_EVERY = 0.0005


class _Barrier:
    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class Worker:
    """A queue and the daemon thread that drains it (started on the first ``put``)."""

    def __init__(
        self,
        name: str,
        handle: Callable[[object], None],
        idle: Callable[[], None] | None = None,
        stop: Callable[[], None] | None = None,
    ) -> None:
        self._name = name
        self._handle = handle
        self._idle = idle
        self._stop = stop
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.closed = False
        self.errors = 0
        """How many items ``handle`` raised on (the worker goes on: a recorder must never
        take the run down); ``last_error`` is the latest exception."""
        self.last_error: Exception | None = None
        self.put: Callable[[object], None] = self._first_put
        """Queue an item. Once the thread runs this is the queue's own ``put`` (no Python
        frame per event: it runs on the event loop's thread for every event)."""

    def _first_put(self, item: object) -> None:
        self._start()
        self.put(item)

    def _closed_put(self, item: object) -> None:
        raise RuntimeError(f"{self._name} is closed")

    def _start(self) -> None:
        with self._lock:
            if self.closed:
                raise RuntimeError(f"{self._name} is closed")
            if self._thread is None:
                thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                thread.start()
                self._thread = thread
                self.put = self._queue.put
                _live.add(self)

    def _loop(self) -> None:
        q = self._queue
        worked_since = time.perf_counter()
        while True:
            if q.empty():
                worked_since = time.perf_counter()  # about to block: the GIL is released
            item = q.get()
            if item is _STOP:
                if self._stop is not None:
                    self._stop()
                return
            if isinstance(item, _Barrier):
                if self._idle is not None:
                    self._idle()
                item.done.set()
                continue
            try:
                self._handle(item)
            except Exception as exc:
                self.errors += 1
                self.last_error = exc
            if self._idle is not None and q.empty():
                self._idle()
            # Give the GIL back every YIELD_EVERY seconds of work: a CPU-bound thread keeps
            # it for the whole switch interval (5 ms), and the run's thread would wait that
            # long for it at every step (sleeping after every item instead costs a context
            # switch per event and lets a busy run outpace the worker).
            now = time.perf_counter()
            if now - worked_since >= YIELD_EVERY:
                time.sleep(0)
                worked_since = time.perf_counter()

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until every item put so far was handled (False on timeout). Blocks the
        caller: call it at the end of a run or of a test, not from a hot path."""
        if self._thread is None:
            return True
        barrier = _Barrier()
        self._queue.put(barrier)
        return barrier.done.wait(timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Handle what is queued, run ``stop``, end the thread. Idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self.put = self._closed_put
            thread = self._thread
        if thread is None:
            return
        self._queue.put(_STOP)
        thread.join(timeout)
        _live.discard(self)


_live: weakref.WeakSet[Worker] = weakref.WeakSet()


def flush_all(timeout: float | None = 10.0) -> None:
    """Wait until every recorder's queued work is done (tests, or before reading spans)."""
    for worker in list(_live):
        worker.flush(timeout)


@atexit.register
def _close_all() -> None:
    for worker in list(_live):
        worker.close()
