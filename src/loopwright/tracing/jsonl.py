"""JSONL traces: one file per run, one JSON object per event.

:class:`JsonlRecorder` is an event subscriber (``Hooks(on_event=recorder)``, or feed it
the events of ``agent.stream``). It never does I/O on the event loop: the loop thread only
timestamps the event and puts it on a queue; a writer thread
(:mod:`loopwright.tracing.worker`) serializes, redacts and appends lines, flushing
whenever the queue runs empty.

Several runs may share one recorder (concurrent runs of one agent, a batch): the events
do not name their run, so the recorder routes them with a :class:`contextvars.ContextVar`
set at ``RunStarted``. Each run executes in its own task (or the caller's task for
``arun``), and the tasks it spawns inherit the variable, so every event lands in the file
of the run that emitted it.

File layout (``DIR/<run_id>.jsonl``)::

    {"type": "trace_header", "format": 1, "run_id": ..., "session_id": ..., "started_at": ...}
    {"seq": 1, "t": 1732371600.123, "type": "run_started", ...}
    {"seq": 2, "t": ..., "type": "state_changed", ...}
    ...
    {"seq": N, "t": ..., "type": "run_finished", "result": {...}}

``t`` is the wall-clock time (seconds since the epoch) at which the subscriber received
the event. With ``payloads=True``, :meth:`JsonlRecorder.payload_hook` (give it to
``resolve_model(..., on_payload=...)``) adds ``{"type": "payload", "direction": ...,
"payload": ...}`` lines with the raw provider requests and responses. Every line is
redacted (:mod:`loopwright.tracing.redact`) before it is written.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any, cast

from loopwright.core.errors import ConfigError
from loopwright.core.events import RunEvent, RunFinished, RunStarted
from loopwright.core.messages import JSONValue
from loopwright.core.text import to_json
from loopwright.tracing.redact import redact_json
from loopwright.tracing.serialize import TRACE_FORMAT, event_to_dict
from loopwright.tracing.worker import Worker


def new_run_id() -> str:
    """Sortable by start time (UTC, to the second), unique by a random suffix."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + os.urandom(4).hex()


class _RunFile:
    __slots__ = ("path", "run_id", "seq", "session_id")

    def __init__(self, directory: Path, session_id: str | None) -> None:
        self.run_id = new_run_id()
        self.path = directory / f"{self.run_id}.jsonl"
        self.session_id = session_id
        self.seq = 0


_CLOSE = object()


class JsonlRecorder:
    """Writes one JSONL trace per run into ``directory`` (created if missing).

    ``payloads``: also record raw provider payloads passed to :meth:`payload_hook`.
    ``paths`` lists the files written so far, in start order. Call :meth:`flush` (or
    :meth:`close`) before reading a trace the recorder may still be writing.
    """

    def __init__(self, directory: str | os.PathLike[str], *, payloads: bool = False) -> None:
        if not isinstance(directory, (str, os.PathLike)) or not str(directory).strip():
            # Path("") is the working directory: traces would land wherever the process ran
            raise ConfigError(
                f"JsonlRecorder needs a trace directory (a non-empty path), got {directory!r}"
            )
        self.directory = Path(directory)
        self.payloads = payloads
        self.paths: list[Path] = []
        self._current: ContextVar[_RunFile | None] = ContextVar(
            f"loopwright_jsonl_run_{id(self)}", default=None
        )
        self._files: dict[_RunFile, IO[str]] = {}  # the worker thread's own
        self._dumps = functools.partial(to_json, strict=False, default=str)  # UTF-8-safe
        self._worker = Worker("loopwright-jsonl", self._write, self._flush_files, self._close_files)
        try:  # here, not on the event loop, and a bad directory fails before any run
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot create the trace directory {self.directory}: {exc}"
            ) from None

    @property
    def error(self) -> Exception | None:
        """The last error the writer thread met (a full disk, a removed directory ...);
        the run goes on without its trace lines."""
        return self._worker.last_error

    # -- the subscriber (event-loop side: no I/O, no serialization) --------------------
    def __call__(self, event: RunEvent) -> None:
        run = self._current.get()
        kind = type(event)
        if run is None or kind is RunStarted:
            run = self._open(event.session_id if kind is RunStarted else None)  # type: ignore[union-attr]
        self._worker.put((run, time.time(), event))
        if kind is RunFinished:
            self._worker.put((run, 0.0, _CLOSE))
            self._current.set(None)

    def payload_hook(self, direction: str, payload: Mapping[str, Any]) -> None:
        """An ``on_payload`` hook for ``resolve_model``: records the raw payload (a copy,
        redacted when written) in the current run's trace. Never replaces the payload."""
        if not self.payloads:
            return
        run = self._current.get()
        if run is None:
            return
        # a JSON copy now: the adapter may reuse the payload's containers afterwards
        copy = json.loads(json.dumps(payload, default=str))
        self._worker.put((run, time.time(), ("payload", direction, copy)))

    def _open(self, session_id: str | None) -> _RunFile:
        if self._worker.closed:
            raise RuntimeError("JsonlRecorder is closed")
        run = _RunFile(self.directory, session_id)
        self.paths.append(run.path)
        self._current.set(run)
        return run

    # -- caller side -------------------------------------------------------------------
    def flush(self, timeout: float | None = 10.0) -> None:
        """Block until every event received so far is on disk (not from the event loop's
        hot path: it waits for the writer thread)."""
        self._worker.flush(timeout)

    def close(self) -> None:
        """Flush, close every file and stop the writer thread. Idempotent."""
        self._worker.close()

    @property
    def current_run_id(self) -> str | None:
        run = self._current.get()
        return None if run is None else run.run_id

    # -- the writer thread -------------------------------------------------------------
    def _write(self, item: object) -> None:
        run, t, what = cast("tuple[_RunFile, float, object]", item)
        handle = self._files.get(run)
        if handle is None:
            handle = self._files[run] = open(run.path, "a", encoding="utf-8")  # noqa: SIM115
            handle.write(self._dumps(_header(run, t)) + "\n")
        if what is _CLOSE:
            self._files.pop(run).close()
            return
        run.seq += 1  # only the writer thread touches seq
        handle.write(redact_json(self._dumps(_line(run.seq, t, what))) + "\n")

    def _flush_files(self) -> None:
        for handle in self._files.values():
            handle.flush()

    def _close_files(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()


def _line(seq: int, t: float, item: object) -> dict[str, JSONValue]:
    if isinstance(item, tuple):
        _, direction, payload = item
        data: dict[str, JSONValue] = {"type": "payload", "direction": direction, "payload": payload}
    else:
        data = event_to_dict(item)  # type: ignore[arg-type]
    return {"seq": seq, "t": round(t, 6), **data}


def _header(run: _RunFile, t: float) -> dict[str, JSONValue]:
    return {
        "type": "trace_header",
        "format": TRACE_FORMAT,
        "run_id": run.run_id,
        "session_id": run.session_id,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)),
    }
