"""A session's events in Redis: replay across restarts, streaming from any process.

With ``loopwright serve --events-url redis://...`` every event a process publishes is
also appended to a Redis stream per session (``XADD`` with the event's number as its
entry id, capped at ``maxlen`` entries). Any server process sharing that Redis (and the
checkpoint store) can then replay a session's events after a ``Last-Event-ID`` and follow
a run that another process executes (``XREAD BLOCK``); a restarted process continues the
numbering where the stream ends.

Appends never block a run: ``append`` queues the event and one writer task sends queued
events in order, pipelined. Needs the ``redis`` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopwright.serve.sessions import Event

log = logging.getLogger("loopwright.serve")


class RedisEventLog:
    """Per-session event streams in Redis (see the module doc)."""

    def __init__(self, url: str, *, prefix: str = "loopwright:serve", maxlen: int = 10_000):
        import redis.asyncio as aioredis

        # redis-py's async annotations are loose (bytes | str | None everywhere): the
        # client is typed by what decode_responses=True returns, at the call sites
        self._redis: Any = aioredis.Redis.from_url(url, decode_responses=True)
        self.prefix = prefix
        self.maxlen = maxlen
        self._queue: asyncio.Queue[tuple[str, Event]] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None

    def key(self, session_id: str) -> str:
        return f"{self.prefix}:events:{session_id}"

    def append(self, session_id: str, event: Event) -> None:
        """Queue ``event`` for the session's stream (returns at once)."""
        self._queue.put_nowait((session_id, event))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        while not self._queue.empty():
            batch = [self._queue.get_nowait() for _ in range(self._queue.qsize())]
            pipe = self._redis.pipeline(transaction=False)
            for sid, event in batch:
                pipe.xadd(
                    self.key(sid),
                    {"type": event.type, "data": event.data},
                    id=f"{event.id}-0",
                    maxlen=self.maxlen,
                    approximate=True,
                )
            try:
                await pipe.execute(raise_on_error=False)
            except Exception as exc:  # Redis down: the run goes on, replay is poorer
                log.warning("serve events: %d event(s) not written to Redis: %s", len(batch), exc)

    async def flush(self) -> None:
        """Wait until every queued event was sent."""
        while self._writer is not None and not self._writer.done():
            await self._writer

    async def last_id(self, session_id: str) -> int:
        """The number of the session's last stored event (0: none)."""
        rows = await self._redis.xrevrange(self.key(session_id), count=1)
        return int(rows[0][0].split("-")[0]) if rows else 0

    async def read(self, session_id: str, after: int, upto: int | None = None) -> list[Event]:
        """Stored events numbered in ``(after, upto]``."""
        end = "+" if upto is None else f"{upto}-0"
        rows = await self._redis.xrange(self.key(session_id), min=f"({after}-0", max=end)
        return [_event(entry_id, fields) for entry_id, fields in rows]

    async def wait(self, session_id: str, after: int, block_s: float) -> list[Event]:
        """Events numbered above ``after``, waiting up to ``block_s`` seconds for one."""
        found = await self._redis.xread(
            {self.key(session_id): f"{after}-0"}, block=max(1, int(block_s * 1000))
        )
        return [_event(i, f) for _, rows in found for i, f in rows]

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.flush()
        await self._redis.aclose()


def _event(entry_id: str, fields: dict[str, str]) -> Event:
    from loopwright.serve.sessions import Event

    return Event(int(entry_id.split("-")[0]), fields["type"], fields["data"])
