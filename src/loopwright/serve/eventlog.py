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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loopwright.core.messages import JSONValue
from loopwright.core.text import to_json

_orjson: Any
try:  # the serve extra installs it; without it events go through the json module
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised only without the serve extra
    _orjson = None

log = logging.getLogger("loopwright.serve")


def event_json(data: Mapping[str, JSONValue]) -> str:
    """An event's data as JSON text, as :func:`loopwright.core.text.to_json` writes it
    (non-finite floats as ``null``, text that always encodes as UTF-8).

    A served run sends ~50 events per six model calls, each encoded once: orjson does
    it ~40x faster than the json module (~10 us -> ~0.3 us an event, about a sixth of
    the server's CPU per session). What orjson refuses (a lone surrogate, a key that is
    not a string, an integer beyond 64 bits) goes through ``to_json``; floats may be
    spelled differently (``1e-5`` for ``1e-05``), never valued differently."""
    if _orjson is not None:
        try:
            return _orjson.dumps(data).decode()
        except TypeError:  # orjson.JSONEncodeError is one
            pass
    return to_json(data)


# KEYS: stream, counter, gap marker of each session in the batch; ARGV: maxlen, ttl,
# then per session its channel, its event count and (type, data) pairs. One publish per
# session carries its events as "<id>\t<type>\t<data>" lines (JSON text never holds a raw
# tab or newline). A gap marker left by a dead worker's job (see ``LOST``) becomes an
# event numbered before the batch.
_APPEND = """
local maxlen, ttl, a = ARGV[1], tonumber(ARGV[2]), 3
for i = 1, #KEYS, 3 do
  local stream, seq = KEYS[i], KEYS[i + 1]
  local chan, n = ARGV[a], tonumber(ARGV[a + 1])
  a = a + 2
  local lost = redis.call('GETDEL', KEYS[i + 2])
  local lines, k = {}, n
  if lost then k = n + 1 end
  local first = redis.call('INCRBY', seq, k) - k
  if lost then
    first = first + 1
    redis.call('XADD', stream, 'MAXLEN', '~', maxlen, first .. '-0', 't', 'events_lost', 'd', lost)
    lines[1] = first .. '\\tevents_lost\\t' .. lost
  end
  for j = 1, n do
    local id = first + j
    redis.call('XADD', stream, 'MAXLEN', '~', maxlen, id .. '-0', 't', ARGV[a], 'd', ARGV[a + 1])
    lines[#lines + 1] = id .. '\\t' .. ARGV[a] .. '\\t' .. ARGV[a + 1]
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

LOST = "events_lost"  # written as a literal by the scripts
"""The type of the event that stands where a stream may miss events: the worker running
the session stopped without storing all of them (it died, or looked dead and lost its
job), and another worker continues the session from its last checkpoint."""
LOST_DATA = (
    '{"kind":"worker_lost","message":"the worker running this session stopped; events '
    "it had not stored are missing from this stream and the run continues from its last "
    'checkpoint (GET /v1/sessions/{id} has the complete history)"}'
)


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
        self,
        redis: Any,
        prefix: str,
        *,
        maxlen: int = 10_000,
        ttl: float = 7 * 86400,
        linger: float = 0.002,
    ) -> None:
        self._redis = redis
        self.linger = linger
        """Seconds the writer waits for more events before it sends a batch."""
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

    def gap_key(self, session_id: str) -> str:
        """Set while the session's stream may miss events (see ``LOST``)."""
        return f"{self.prefix}:gap:{session_id}"

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
        # let the events of what runs in the next moment join this batch: one round
        # trip for the steps of many sessions, and one publish for the several bursts
        # of events a step makes (a model call's start, its reply, the tool calls and
        # their results come a few loop iterations apart): ~4x fewer messages for
        # every process streaming the session to parse, and fewer network writes to
        # its clients, for at most ``linger`` seconds more latency
        await asyncio.sleep(self.linger)
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
            keys += (self.key(sid), self.seq_key(sid), self.gap_key(sid))
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
