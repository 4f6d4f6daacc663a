"""A session's events in Redis: numbered once, kept for replay, fanned out to every process.

Several ``loopwright serve`` processes share one Redis (see ``docs/serve.md``). Whichever
process runs a session appends its events here; Redis gives each its number (a counter
per session, ``{prefix}:seq:<session>``), so numbering never forks when the session moves
to another worker (after a crash, a hand-over, or its next turn), and a client's
``Last-Event-ID`` means the same event on every process. Each event goes

* to a stream per session (``{prefix}:events:<session>``, entry id = event number,
  capped near ``maxlen`` entries): replay after a ``Last-Event-ID``;
* to a pub/sub channel per session (``{prefix}:ev:<session>``): processes whose clients
  stream the session receive it at once (see :mod:`loopwright.serve.cluster`).

Appends never block a run: :meth:`RedisEventLog.append` queues the event and one writer
task sends what is queued in ONE pipelined round trip (one script call numbers, stores
and publishes the events of every session in the batch). Work that must happen after a
run's events are stored (the run's job is done) is queued behind them with
:meth:`RedisEventLog.after`, so it runs in the same pipeline, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("loopwright.serve")

# KEYS: stream, counter of each session in the batch; ARGV: maxlen, ttl, then per session
# its channel, its event count and (type, data) pairs. One publish per session carries
# its events as "<id>\t<type>\t<data>" lines (JSON text never holds a raw tab or newline).
_APPEND = """
local maxlen, ttl, a = ARGV[1], tonumber(ARGV[2]), 3
for i = 1, #KEYS, 2 do
  local stream, seq = KEYS[i], KEYS[i + 1]
  local chan, n = ARGV[a], tonumber(ARGV[a + 1])
  a = a + 2
  local first = redis.call('INCRBY', seq, n) - n
  local lines = {}
  for j = 1, n do
    local id = first + j
    redis.call('XADD', stream, 'MAXLEN', '~', maxlen, id .. '-0', 't', ARGV[a], 'd', ARGV[a + 1])
    lines[j] = id .. '\\t' .. ARGV[a] .. '\\t' .. ARGV[a + 1]
    a = a + 2
  end
  redis.call('PUBLISH', chan, table.concat(lines, '\\n'))
  if ttl > 0 then
    redis.call('EXPIRE', stream, ttl)
    redis.call('EXPIRE', seq, ttl)
  end
end
return 1
"""


@dataclass(frozen=True, slots=True)
class Event:
    """One numbered event of a session: ``data`` is its JSON text."""

    id: int
    type: str
    data: str


PipelineOp = Callable[[Any], None]
"""Adds commands to a redis pipeline (run by the writer after the events before it)."""


class RedisEventLog:
    """Per-session event numbering, streams and channels in Redis (see the module doc).

    ``redis`` is a ``redis.asyncio.Redis`` created with ``decode_responses=True``."""

    def __init__(
        self, redis: Any, prefix: str, *, maxlen: int = 10_000, ttl: float = 7 * 86400
    ) -> None:
        self._redis = redis
        self.prefix = prefix
        self.maxlen = maxlen
        self.ttl = int(ttl)
        self._script = redis.register_script(_APPEND)
        self._queue: list[tuple[str, str, str] | PipelineOp] = []
        self._writer: asyncio.Task[None] | None = None

    def key(self, session_id: str) -> str:
        return f"{self.prefix}:events:{session_id}"

    def seq_key(self, session_id: str) -> str:
        return f"{self.prefix}:seq:{session_id}"

    def channel(self, session_id: str) -> str:
        return f"{self.prefix}:ev:{session_id}"

    # ------------------------------------------------------------------ writing
    def append(self, session_id: str, type_: str, data: str) -> None:
        """Queue an event of the session (returns at once; Redis numbers it)."""
        self._queue.append((session_id, type_, data))
        self._wake()

    def after(self, op: PipelineOp) -> None:
        """Queue ``op``: it adds its commands to the pipeline that stores the events
        queued before it, after them."""
        self._queue.append(op)
        self._wake()

    def _wake(self) -> None:
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        # let the events of everything runnable now join this batch: one round trip
        # for the steps of many sessions instead of one per step
        await asyncio.sleep(0)
        while self._queue:
            batch, self._queue = self._queue, []
            pipe = self._redis.pipeline(transaction=False)
            pending: dict[str, list[tuple[str, str]]] = {}
            for item in batch:
                if callable(item):
                    await self._add_events(pipe, pending)
                    pending = {}
                    item(pipe)
                else:
                    pending.setdefault(item[0], []).append((item[1], item[2]))
            await self._add_events(pipe, pending)
            try:
                for outcome in await pipe.execute(raise_on_error=False):
                    if isinstance(outcome, Exception):
                        log.warning("serve events: a Redis command failed: %s", outcome)
            except Exception as exc:  # Redis down: the run goes on, replay is poorer
                log.warning("serve events: %d item(s) not written to Redis: %s", len(batch), exc)

    async def _add_events(self, pipe: Any, pending: dict[str, list[tuple[str, str]]]) -> None:
        if not pending:
            return
        keys: list[str] = []
        args: list[str | int] = [self.maxlen, self.ttl]
        for sid, events in pending.items():
            keys += (self.key(sid), self.seq_key(sid))
            args += (self.channel(sid), len(events))
            for type_, data in events:
                args += (type_, data)
        await self._script(keys=keys, args=args, client=pipe)

    async def flush(self) -> None:
        """Wait until everything queued was sent."""
        while self._writer is not None and not self._writer.done():
            await self._writer

    # ------------------------------------------------------------------ reading
    async def last_id(self, session_id: str) -> int:
        """The number of the session's last event (0: none)."""
        raw = await self._redis.get(self.seq_key(session_id))
        return int(raw) if raw else 0

    async def read(self, session_id: str, after: int, upto: int | None = None) -> list[Event]:
        """Stored events numbered in ``(after, upto]``."""
        end = "+" if upto is None else f"{upto}-0"
        rows = await self._redis.xrange(self.key(session_id), min=f"({after}-0", max=end)
        return stream_events(rows)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.flush()


def stream_events(rows: list[tuple[str, dict[str, str]]]) -> list[Event]:
    """The events of ``XRANGE`` rows (entry id ``<number>-0``)."""
    return [Event(int(i.split("-", 1)[0]), f["t"], f["d"]) for i, f in rows]


def parse_published(payload: str) -> list[Event]:
    """The events of one channel message (empty for a notice without events)."""
    out = []
    for line in payload.split("\n") if payload else ():
        number, type_, data = line.split("\t", 2)
        out.append(Event(int(number), type_, data))
    return out
