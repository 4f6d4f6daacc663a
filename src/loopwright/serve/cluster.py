"""Many ``loopwright serve`` processes over one store and one Redis: the Redis side.

Every process that starts with ``--redis-url`` is a *worker* of one cluster (its keys
start with ``prefix``). What each concern lives on:

* **the session lease** is the durable runner's session lock in the checkpoint store
  (:class:`~loopwright.durable.Durable` takes it for a run and refreshes it every third
  of ``lock_ttl``): one owner for "who runs this session", the same rule with or without
  Redis. A worker's Redis heartbeat (``{prefix}:worker:<id>``, expiring after
  ``lease_ttl``) says the worker is alive.
* **the work queue** (``{prefix}:queue``, a list of :class:`Job`): creating a session,
  a next turn or an approval pushes a job; a worker moves it atomically (``BLMOVE``)
  to its own claimed list (``{prefix}:claimed:<worker>``), runs it and drops it. When a
  worker's heartbeat expires, any live worker moves that worker's claimed jobs back to
  the queue; another worker runs them again: the durable runner resumes the session
  from its last checkpoint under its crash-safety rules (recorded results reused, a call
  cut off mid-side-effect resolved, never repeated blindly).
  ``{prefix}:active:<session>`` counts a session's unfinished jobs: a session is
  *running* while it is above zero, and a stream ends when it drops to zero.
* **event fan-out**: events are numbered and published by
  :class:`~loopwright.serve.eventlog.RedisEventLog`; a process whose client streams a
  session subscribes to its channel (one pub/sub connection per process) and replays
  the stored events first, so ``Last-Event-ID`` works on every process.
* **control**: steering, follow-ups and cancels for a run in progress are published on
  ``{prefix}:control``; the process running the session applies them and answers on a
  reply list, so the client that sent them gets an answer from any process.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from loopwright.core.checks import check_count, check_seconds
from loopwright.store.state import lock_owner_id

from .eventlog import LOST_DATA, Event, RedisEventLog, parse_published

log = logging.getLogger("loopwright.serve")

JobOp = Literal["resume", "approve"]

_JOB_PREFIX = f"{secrets.token_hex(4)}-"
_JOB_NUMBERS = itertools.count(1)
"""Job ids: unique per process prefix + counter (no system call per job)."""


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    """``url``: the Redis every worker shares; ``prefix``: its keys (one cluster per
    prefix). ``lease_ttl``: seconds a worker counts as alive after its last heartbeat
    (sent every third of it). ``max_runs``: jobs one worker runs at once.
    ``control_timeout``: seconds a request waits for the process running a session to
    apply a steer, follow-up or cancel."""

    url: str
    prefix: str = "loopwright:serve"
    lease_ttl: float = 30.0
    max_runs: int = 256
    control_timeout: float = 2.0
    connections: int = 64
    """Redis connections of one worker (a stream's subscription shares one; a claim and
    each control request hold one while they wait)."""
    poll: float = 1.0
    """Seconds between checks a stream makes that its session still runs (the channel
    tells it at once; this bounds the wait if a notice is lost)."""

    def __post_init__(self) -> None:
        check_seconds("ClusterConfig.lease_ttl", self.lease_ttl)
        check_count("ClusterConfig.max_runs", self.max_runs)
        check_seconds("ClusterConfig.control_timeout", self.control_timeout)
        check_count("ClusterConfig.connections", self.connections)
        check_seconds("ClusterConfig.poll", self.poll)


@dataclass(frozen=True, slots=True)
class Job:
    """Run session ``session_id``: ``resume`` it (a new session, its next turn, a run cut
    off by a crash), or ``approve`` its pending calls (the ids in ``approve`` approved,
    those in ``deny`` denied with the reason given). ``tenant`` and ``agent`` (what the
    store records for the session) spare the worker a load before it starts."""

    session_id: str
    op: JobOp = "resume"
    approve: tuple[str, ...] = ()
    deny: Mapping[str, str] = field(default_factory=dict)
    tenant: str = ""
    agent: str = ""
    id: str = field(default_factory=lambda: f"{_JOB_PREFIX}{next(_JOB_NUMBERS)}")

    def to_json(self) -> str:
        return json.dumps(
            {
                "id": self.id,
                "sid": self.session_id,
                "op": self.op,
                "approve": list(self.approve),
                "deny": dict(self.deny),
                "tenant": self.tenant,
                "agent": self.agent,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, raw: str) -> Job:
        data = json.loads(raw)
        op: JobOp = "approve" if data.get("op") == "approve" else "resume"
        return cls(
            data["sid"],
            op,
            tuple(data.get("approve", ())),
            data.get("deny", {}),
            str(data.get("tenant", "")),
            str(data.get("agent", "")),
            data["id"],
        )


_ENQUEUE = """
redis.call('INCR', KEYS[1])
return redis.call('LPUSH', KEYS[2], ARGV[1])
"""
# KEYS: a session's event stream, its unfinished-job counter; ARGV: the XRANGE start.
# Stream entries come back as [id, ['t', type, 'd', data]].
_PEEK = """
return {redis.call('XRANGE', KEYS[1], ARGV[1], '+'), redis.call('GET', KEYS[2]) or '0'}
"""

# KEYS: the worker's claimed list, the session's unfinished-job counter, its gap marker,
# event counter and stream; ARGV: the job, the session's channel, the stream's maxlen.
# Atomic, and the counter only drops for a job this worker still held: a job handed to
# another worker (this one looked dead) is counted down once. A gap marker no event
# consumed (the dead worker's run had ended: the job found nothing to do) becomes the
# session's last event.
_COMPLETE = """
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
  redis.call('DECR', KEYS[2])
end
local lost = redis.call('GETDEL', KEYS[3])
if lost then
  local id = redis.call('INCR', KEYS[4])
  redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[3], id .. '-0', 't', 'events_lost', 'd', lost)
  redis.call('PUBLISH', ARGV[2], id .. '\\tevents_lost\\t' .. lost)
end
return redis.call('PUBLISH', ARGV[2], '')
"""

# KEYS: a dead worker's claimed list, the queue; ARGV: the gap-marker key prefix, the
# marker (``eventlog.LOST_DATA``), its lifetime in seconds. Each job goes back to the
# queue (LMOVE: two workers reaping at once never duplicate one) and marks its session's
# stream as missing what the dead worker had not stored.
_REAP = """
local n = 0
while true do
  local job = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
  if not job then return n end
  n = n + 1
  local ok, decoded = pcall(cjson.decode, job)
  if ok and type(decoded) == 'table' and type(decoded['sid']) == 'string' then
    redis.call('SET', ARGV[1] .. decoded['sid'], ARGV[2], 'EX', ARGV[3])
  end
end
"""

ControlHandler = Callable[[Mapping[str, str]], Awaitable[bool]]
"""Applies a control message to a run of this process; True if it ran the session."""


class Cluster:
    """One worker's connection to the cluster's Redis (see the module doc)."""

    def __init__(self, config: ClusterConfig) -> None:
        import redis.asyncio as aioredis

        self.config = config
        # redis-py's async annotations are loose (bytes | str | None everywhere): the
        # client is typed by what decode_responses=True returns, at the call sites
        # a blocking pool: a burst of requests waits for a connection instead of failing
        pool = aioredis.BlockingConnectionPool.from_url(
            config.url, max_connections=config.connections, timeout=30, decode_responses=True
        )
        self.redis: Any = aioredis.Redis.from_pool(pool)
        self.prefix = config.prefix
        self.worker = lock_owner_id()
        self.events = RedisEventLog(self.redis, config.prefix)
        self.queue_key = f"{config.prefix}:queue"
        self.claimed_key = self._claimed(self.worker)
        self._control = f"{config.prefix}:control"
        self._intact = f"{config.prefix}:jobs-intact"
        self._pubsub: Any = None
        self._subs: dict[str, set[asyncio.Queue[str]]] = {}
        self._acks: dict[str, asyncio.Event] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._on_control: ControlHandler | None = None
        self._enqueue = self.redis.register_script(_ENQUEUE)
        self._peek = self.redis.register_script(_PEEK)
        self._reap_jobs = self.redis.register_script(_REAP)

    def _claimed(self, worker: str) -> str:
        return f"{self.prefix}:claimed:{worker}"

    def _alive(self, worker: str) -> str:
        return f"{self.prefix}:worker:{worker}"

    def active_key(self, session_id: str) -> str:
        return f"{self.prefix}:active:{session_id}"

    # ------------------------------------------------------------------ lifecycle
    async def start(self, on_control: ControlHandler) -> None:
        """Register this worker, subscribe to the control channel, start the heartbeat."""
        self._on_control = on_control
        await self._heartbeat()
        self._pubsub = self.redis.pubsub()
        await self._pubsub.subscribe(self._control)
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._listen()), loop.create_task(self._keep())]

    async def close(self) -> None:
        """Put the jobs this worker still holds back on the queue, leave the cluster."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        await self.events.close()
        with contextlib.suppress(Exception):
            await self._return_claimed(self.worker)
            await self.redis.srem(f"{self.prefix}:workers", self.worker)
            await self.redis.delete(self._alive(self.worker))
        with contextlib.suppress(Exception):
            if self._pubsub is not None:
                await self._pubsub.aclose()
        await self.redis.aclose()

    async def _heartbeat(self) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.sadd(f"{self.prefix}:workers", self.worker)
        pipe.set(self._alive(self.worker), "1", px=int(self.config.lease_ttl * 1000))
        await pipe.execute()

    async def _keep(self) -> None:
        """Heartbeat, and hand the jobs of workers whose heartbeat expired back."""
        while True:
            await asyncio.sleep(self.config.lease_ttl / 3)
            try:
                await self._heartbeat()
                await self.reap()
            except Exception as exc:  # Redis down: try again at the next beat
                log.warning("cluster heartbeat failed: %s", exc)

    async def reap(self) -> list[str]:
        """Jobs of dead workers back on the queue; returns the workers found dead."""
        dead = []
        for worker in await self.redis.smembers(f"{self.prefix}:workers"):
            if worker == self.worker or await self.redis.exists(self._alive(worker)):
                continue
            moved = await self._reap_jobs(
                keys=[self._claimed(worker), self.queue_key],
                args=[self.events.gap_key(""), LOST_DATA, max(self.events.ttl, 3600)],
            )
            await self.redis.srem(f"{self.prefix}:workers", worker)
            if moved:
                log.warning("worker %s is gone: %d job(s) back on the queue", worker, moved)
            dead.append(worker)
        return dead

    async def _return_claimed(self, worker: str) -> int:
        """A worker leaving (its events stored) hands its jobs back."""
        moved = 0
        # LMOVE is atomic per job: two workers reaping at once never duplicate one
        while await self.redis.lmove(self._claimed(worker), self.queue_key, "LEFT", "RIGHT"):
            moved += 1
        return moved

    # ------------------------------------------------------------------ work queue
    async def enqueue(self, job: Job) -> None:
        # one script, not a MULTI/EXEC pipeline: as atomic, a third of the client's work
        await self._enqueue(
            keys=[self.active_key(job.session_id), self.queue_key], args=[job.to_json()]
        )

    async def claim(self, wait: float) -> tuple[str, Job] | None:
        """The next job, moved to this worker's claimed list (None after ``wait`` s)."""
        raw = await self.redis.blmove(self.queue_key, self.claimed_key, wait, "RIGHT", "LEFT")
        if raw is None:
            return None
        try:
            return raw, Job.from_json(raw)
        except (ValueError, KeyError, TypeError):
            log.warning("dropping an unreadable job: %r", raw[:200])
            await self.redis.lrem(self.claimed_key, 1, raw)
            return None

    def complete(self, raw: str, session_id: str) -> None:
        """The job is done: dropped from the claimed list after the events queued so far
        are stored; streams of the session learn whether it still runs."""
        ev = self.events
        keys = (
            self.claimed_key,
            self.active_key(session_id),
            ev.gap_key(session_id),
            ev.seq_key(session_id),
            ev.key(session_id),
        )
        channel = ev.channel(session_id)

        def done(pipe: Any) -> None:
            pipe.eval(_COMPLETE, len(keys), *keys, raw, channel, ev.maxlen)

        self.events.after(done)

    async def requeue(self, raw: str) -> None:
        """Hand a claimed job back, first in line (a draining worker's unfinished run)."""
        await self.events.flush()
        pipe = self.redis.pipeline(transaction=True)
        pipe.lrem(self.claimed_key, 1, raw)
        pipe.rpush(self.queue_key, raw)
        await pipe.execute()

    async def _stored_and_active(self, session_id: str, after: int) -> tuple[list[Event], int]:
        keys = [self.events.key(session_id), self.active_key(session_id)]
        rows, active = await self._peek(keys=keys, args=[f"({after}-0"])
        return [Event(int(i.split("-", 1)[0]), f[1], f[3]) for i, f in rows], int(active)

    async def overview(self, session_id: str) -> tuple[int, int]:
        """The session's unfinished jobs and the number of its last event."""
        keys = [self.active_key(session_id), self.events.seq_key(session_id)]
        active, last = await self.redis.mget(keys)
        return int(active or 0), int(last or 0)

    async def jobs_intact(self) -> bool:
        """Whether Redis still holds every job of the cluster: the marker set by
        :meth:`mark_jobs_intact` is there. It is missing in a new cluster and after
        Redis lost its data (a restart without persistence, a flush): then jobs may be
        gone with it and the store must be searched for sessions left without one."""
        return bool(await self.redis.exists(self._intact))

    async def mark_jobs_intact(self) -> None:
        """Every unfinished session of the store has a job in Redis (see
        :meth:`jobs_intact`)."""
        await self.redis.set(self._intact, "1")

    async def active(self, session_id: str) -> int:
        return int(await self.redis.get(self.active_key(session_id)) or 0)

    async def active_many(self, session_ids: list[str]) -> list[int]:
        if not session_ids:
            return []
        raw = await self.redis.mget([self.active_key(s) for s in session_ids])
        return [int(x or 0) for x in raw]

    # ------------------------------------------------------------------ control
    async def request(self, message: Mapping[str, str]) -> bool:
        """Publish a control message; True when the process running its session
        applied it within ``control_timeout``."""
        rid = secrets.token_hex(8)
        reply = f"{self.prefix}:reply:{rid}"
        await self.redis.publish(self._control, json.dumps({**message, "reply": reply}))
        got = await self.redis.blpop([reply], timeout=self.config.control_timeout)
        return got is not None

    async def _on_control_message(self, payload: str) -> None:
        try:
            message = json.loads(payload)
            handled = self._on_control is not None and await self._on_control(message)
            if handled:
                pipe = self.redis.pipeline(transaction=False)
                pipe.lpush(message["reply"], "ok")
                pipe.expire(message["reply"], 60)
                await pipe.execute()
        except Exception as exc:
            log.warning("control message not applied: %s", exc)

    # ------------------------------------------------------------------ fan-out
    async def _listen(self) -> None:
        while True:
            try:
                async for msg in self._pubsub.listen():
                    kind, channel = msg["type"], msg["channel"]
                    if kind == "message":
                        if channel == self._control:
                            asyncio.get_running_loop().create_task(
                                self._on_control_message(msg["data"])
                            )
                        for queue in self._subs.get(channel, ()):
                            queue.put_nowait(msg["data"])
                    elif kind == "subscribe" and channel in self._acks:
                        self._acks.pop(channel).set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # connection lost: redis-py resubscribes on reconnect
                log.warning("cluster pub/sub: %s; reconnecting", exc)
                await asyncio.sleep(0.5)

    async def _subscribe(self, channel: str) -> asyncio.Queue[str]:
        queue: asyncio.Queue[str] = asyncio.Queue()
        subs = self._subs.get(channel)
        if subs is not None:
            subs.add(queue)
            return queue
        self._subs[channel] = {queue}
        ack = self._acks[channel] = asyncio.Event()
        await self._pubsub.subscribe(channel)
        # events published before the subscription took effect are read from the stream
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ack.wait(), 5)
        return queue

    async def _unsubscribe(self, channel: str, queue: asyncio.Queue[str]) -> None:
        subs = self._subs.get(channel)
        if subs is None:
            return
        subs.discard(queue)
        if not subs:
            del self._subs[channel]
            self._acks.pop(channel, None)
            with contextlib.suppress(Exception):
                await self._pubsub.unsubscribe(channel)

    async def follow(
        self, session_id: str, after: int, keepalive: float
    ) -> AsyncIterator[list[Event] | None]:
        """The session's events numbered above ``after``, wherever it runs, in batches,
        until it has no unfinished job; ``None`` after ``keepalive`` idle seconds."""
        channel = self.events.channel(session_id)
        queue = await self._subscribe(channel)
        try:
            last, check, idle = after, True, 0.0
            while True:
                if check:  # one round trip: what is stored, and whether it still runs
                    check = False
                    stored, active = await self._stored_and_active(session_id, last)
                    if stored:
                        last = stored[-1].id
                        yield stored
                    if not active:
                        return
                payloads: list[str] = []
                if queue.empty():
                    try:  # a timer only when there is nothing to read yet
                        payloads.append(await asyncio.wait_for(queue.get(), self.config.poll))
                    except TimeoutError:
                        check, idle = True, idle + self.config.poll
                        if idle >= keepalive:
                            idle = 0.0
                            yield None
                        continue
                idle = 0.0
                while not queue.empty():  # everything that arrived: one write to the client
                    payloads.append(queue.get_nowait())
                batch: list[Event] = []
                for payload in payloads:
                    if not payload:  # a job of the session ended
                        check = True
                    for e in parse_published(payload):
                        if e.id > (batch[-1].id if batch else last):
                            batch.append(e)
                if batch and batch[0].id > last + 1:  # missed while subscribing: stored
                    batch[:0] = await self.events.read(session_id, last, batch[0].id - 1)
                if batch:
                    last = batch[-1].id
                    yield batch
        finally:
            await self._unsubscribe(channel, queue)
