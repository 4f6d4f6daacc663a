"""Sessions of a cluster of ``loopwright serve`` processes sharing one store and one Redis.

:class:`ClusterSessions` answers the same requests as
:class:`~loopwright.serve.sessions.SessionManager`, but no run starts in the process
that received the request: creating a session, its next turn or an approval pushes a
:class:`~loopwright.serve.cluster.Job`, and whichever worker claims it runs it (see
:mod:`loopwright.serve.cluster` for what lives where). Steering and cancels reach the
run wherever it is through the control channel; events are numbered in Redis and any
process streams any session.

Crash safety is the durable runner's: a job is the instruction "bring this session
forward"; running it twice is harmless (the second finds the session finished, or
resumes it from its last checkpoint with recorded results reused). That is what makes
handing a dead worker's jobs to another worker, and a draining worker's unfinished runs
to the next one, safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Literal

from loopwright.core.errors import UserError
from loopwright.core.messages import Message
from loopwright.core.run import RunState, RunStop
from loopwright.durable import Durable
from loopwright.store.base import CheckpointStore
from loopwright.store.errors import SessionLocked, SessionNotFound
from loopwright.store.state import lock_owner_id
from loopwright.tracing.serialize import error_to_dict

from .cluster import Cluster, Job
from .errors import ApiError, awaiting_approval, conflict, nothing_to_cancel
from .eventlog import Event
from .sessions import (
    AgentSource,
    Approve,
    Deny,
    LiveSession,
    ServeConfig,
    SessionManager,
    _owner,
    _resume,
    cancel_live,
    check_decisions,
)

log = logging.getLogger("loopwright.serve")

Mode = Literal["steer", "follow_up"]

HANDOVER_WAIT = 30.0
"""Seconds a shutting-down worker waits for its runs to reach a step boundary."""


class _Handover(Exception):
    """The worker is shutting down before this job could take its session's lock."""


class ClusterSessions(SessionManager):
    """The sessions of one worker of a cluster (see the module doc)."""

    def __init__(
        self,
        agents: Mapping[str, AgentSource],
        store: CheckpointStore,
        cluster: Cluster,
        config: ServeConfig | None = None,
    ) -> None:
        super().__init__(agents, store, config)
        self.cluster = cluster
        self._slots = asyncio.Semaphore(cluster.config.max_runs)
        self._jobs: dict[str, asyncio.Task[None]] = {}
        self._claimer: asyncio.Task[None] | None = None
        self._handover = False
        self._stop_at = 0.0

    # ------------------------------------------------------------------ lifecycle
    async def start(self, resume: bool, recover_every: float) -> None:
        await self.cluster.start(self._on_control)
        self._claimer = asyncio.get_running_loop().create_task(self._claim_forever())
        await super().start(resume, recover_every)

    def stop_taking_work(self) -> None:
        if not self._stopping:
            self._stopping = True
            self._stop_at = time.monotonic()

    async def close(self) -> None:
        """Stop claiming jobs; let runs in progress finish until ``drain`` seconds after
        the shutdown began; stop the rest at their next step boundary (a model call or
        tool call in flight finishes and is checkpointed) and put their jobs back on the
        queue for another worker. A run still busy ``HANDOVER_WAIT`` seconds later is
        cut off like a crash (the durable runner's recovery rules apply)."""
        self.stop_taking_work()
        for task in (self._sweeper, self._claimer):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        tasks = list(self._jobs.values())
        left = self.config.drain - (time.monotonic() - self._stop_at)
        if tasks and left > 0:
            await asyncio.wait(tasks, timeout=left)
        self._handover = True
        for live in list(self.live.values()):
            if live.running:
                live.handover = True
                if live.run is not None:
                    live.run.cancel(at_boundary=True)
                else:
                    live.cancel_requested = True
        busy = [t for t in tasks if not t.done()]
        if busy:
            await asyncio.wait(busy, timeout=HANDOVER_WAIT)
        for task in busy:
            task.cancel()
        for task in busy:
            with contextlib.suppress(BaseException):
                await task
        await self.cluster.close()
        self.aio.close()

    async def resume_interrupted(self, stale_after: float = 0.0) -> list[str]:
        """Queue a job for served sessions cut off mid-run that have none.

        Redis holds what can need recovery: every unfinished session has a job, queued
        or claimed by a worker, and a dead worker's claimed jobs go back to the queue
        (:meth:`Cluster.reap`). So the sweep costs one Redis lookup, whatever the number
        of sessions ever served, while :meth:`Cluster.jobs_intact` says Redis kept its
        jobs. When it did not (a new cluster, a Redis that lost its data), the store's
        sessions are searched: each unfinished one without a job, not running, gets one;
        once every unfinished session has a job the marker is set again (a session a
        process still runs, its job lost with Redis, keeps the search going until it
        ends). ``stale_after`` is not needed here: a session stored a moment ago has
        its job already, and a second job for a session is harmless."""
        if await self.cluster.jobs_intact():
            return []
        found = await self._interrupted(0.0, running=True)
        actives = await self.cluster.active_many([sid for sid, _ in found])
        queued, jobless = [], 0
        for (sid, _), active in zip(found, actives, strict=True):
            if active:
                continue
            live = self.live.get(sid)
            if (live is not None and live.running) or await asyncio.to_thread(
                self.store.lock_owner, sid
            ) is not None:
                jobless += 1  # runs now, its job gone with Redis: look again next time
                continue
            await self.cluster.enqueue(Job(sid))  # the worker loads tenant and agent
            queued.append(sid)
        if not jobless:
            await self.cluster.mark_jobs_intact()
        return queued

    # ------------------------------------------------------------------ lookups
    async def running(self, session_ids: list[str]) -> list[bool]:
        actives = await self.cluster.active_many(session_ids)
        return [a > 0 for a in actives]

    async def overview(self, session_id: str) -> tuple[bool, int]:
        active, last = await self.cluster.overview(session_id)
        return active > 0, last

    async def stream(
        self, state: RunState, after: int, keepalive: float
    ) -> AsyncIterator[list[Event] | None]:
        """Events of the session after ``after`` from Redis, wherever it runs."""
        async for item in self.cluster.follow(state.session_id, after, keepalive):
            yield item

    # ------------------------------------------------------------------ commands
    async def create(self, tenant: str, agent: str, prompt: str) -> str:
        sid = (await self._store_new(tenant, agent, prompt)).session_id
        await self.cluster.enqueue(Job(sid, tenant=tenant, agent=agent))
        return sid

    async def message(self, tenant: str, session_id: str, text: str, mode: Mode) -> str:
        """Steer or follow up the run wherever it is; an idle session gets its next
        turn stored and queued."""
        await self.state(tenant, session_id)
        for attempt in range(20):
            live = self.live.get(session_id)
            if live is not None and live.running:
                _deliver(live, mode, text)
                return "queued"
            if await asyncio.to_thread(self.store.lock_owner, session_id) is not None:
                message = {"op": mode, "sid": session_id, "text": text}
                if await self.cluster.request(message):
                    return "queued"
            else:
                with contextlib.suppress(SessionLocked):
                    return await self._next_turn(session_id, text)
            await asyncio.sleep(0.05 * (attempt + 1))
        raise conflict(
            f"session {session_id!r} is changing hands between workers",
            "retry in a moment",
        )

    async def _next_turn(self, session_id: str, text: str) -> str:
        """Append ``text`` as the session's next user message (under its lock, so no run
        is writing it), then queue a job to answer it."""
        owner = lock_owner_id()
        await self.aio.acquire_lock(session_id, owner, self.config.durable.lock_ttl)
        try:
            state = await self.aio.load(session_id)
            if state.awaiting_confirmation:
                raise awaiting_approval(state)
            state.messages.append(Message.user(text))
            state.stop, state.detail = None, ""
            await self.aio.save(state)
        finally:
            await self.aio.release_lock(session_id, owner)
        idle = not await self.cluster.active(session_id)
        job = Job(session_id, tenant=_owner(state) or "", agent=self.agent_name(state))
        await self.cluster.enqueue(job)
        return "started" if idle else "queued"

    async def approve(self, tenant: str, session_id: str, approve: Approve, deny: Deny) -> None:
        state = await self.state(tenant, session_id)
        if (await self.running([session_id]))[0]:
            raise conflict(f"session {session_id!r} is running", "wait for it to pause")
        check_decisions(state, approve, deny)
        ids = [c.id for c in state.pending_calls]
        denied = dict(deny) if isinstance(deny, dict) else {}
        chosen = ids if approve is True else approve if isinstance(approve, list) else []
        approved = [i for i in chosen if i not in denied]
        if isinstance(deny, str):
            denied |= {i: deny for i in ids if i not in approved and i not in denied}
        # explicit ids: a job run again after a crash cannot approve a later call
        await self.cluster.enqueue(Job(session_id, "approve", tuple(approved), denied))

    async def cancel(self, tenant: str, session_id: str) -> None:
        await self.state(tenant, session_id)
        live = self.live.get(session_id)
        if live is not None and live.running:
            cancel_live(live)
            return
        if await self.cluster.request({"op": "cancel", "sid": session_id, "text": ""}):
            return
        if await self.cluster.active(session_id):
            raise conflict(
                f"session {session_id!r} has not started running yet", "retry in a moment"
            )
        # read again: the run may have ended while the cluster was asked
        raise nothing_to_cancel(await self.state(tenant, session_id))

    async def _on_control(self, message: Mapping[str, str]) -> bool:
        live = self.live.get(message.get("sid", ""))
        if live is None or not live.running:
            return False
        op = message.get("op")
        if op == "cancel":
            cancel_live(live)
        elif op == "steer" or op == "follow_up":
            _deliver(live, op, message.get("text", ""))
        else:
            return False
        return True

    # ------------------------------------------------------------------ worker
    async def _claim_forever(self) -> None:
        while not self._stopping:
            await self._slots.acquire()
            got = None
            try:
                if not self._stopping:
                    got = await self.cluster.claim(wait=1.0)
            except Exception as exc:  # Redis down: try again
                log.warning("claiming a job failed: %s", exc)
                await asyncio.sleep(1.0)
            finally:
                if got is None:
                    self._slots.release()
            if got is not None:
                raw, job = got
                task = asyncio.get_running_loop().create_task(self._execute(raw, job))
                self._jobs[job.id] = task
                task.add_done_callback(functools.partial(self._job_done, job.id))

    def _job_done(self, job_id: str, task: asyncio.Task[None]) -> None:
        self._jobs.pop(job_id, None)
        self._slots.release()

    async def _execute(self, raw: str, job: Job) -> None:
        """Run one claimed job; hand it back if this worker shuts down first."""
        sid = job.session_id
        state: RunState | None = None
        try:
            if job.op == "approve" or not job.tenant:
                state = await self.aio.load(sid)
        except SessionNotFound:
            self.cluster.complete(raw, sid)
            return
        except Exception as exc:  # the store is down: another attempt later
            log.warning("session %s: job postponed: %s", sid, exc)
            await asyncio.sleep(1.0)
            await self.cluster.requeue(raw)
            return
        prior = self.live.get(sid)
        while prior is not None and prior.running and prior.task is not None:
            await asyncio.wait([prior.task])  # one run of a session at a time here
            prior = self.live.get(sid)
        tenant, agent = job.tenant, job.agent
        if state is not None:
            tenant, agent = _owner(state) or "", self.agent_name(state)
        events = self.cluster.events

        def sink(session_id: str, type_: str, data: str) -> None:
            # a run stopped for a hand-over has not finished: its streams go on with
            # the events of the worker that continues it
            if not (live.handover and type_ == "run_finished"):
                events.append(session_id, type_, data)

        live = LiveSession(sid, tenant, agent, sink=sink)
        live.active, live.task = True, asyncio.current_task()  # type: ignore[assignment]
        self.live[sid] = live
        handed_over = False
        try:
            await self._drive_job(live, job, state)
            if live.handover:
                await self._reopen(sid)
                handed_over = True
                await self.cluster.requeue(raw)
                log.warning("session %s: handed back to the queue (shutting down)", sid)
        except (asyncio.CancelledError, _Handover):
            if not self._handover and not self._stopping:
                live.publish("serve_error", {"kind": "cancelled", "message": "run cancelled"})
            else:
                handed_over = True
                await self.cluster.requeue(raw)
                log.warning("session %s: handed back to the queue (shutting down)", sid)
        finally:
            live.active, live.run = False, None
            if self.live.get(sid) is live:
                del self.live[sid]
            if not handed_over:
                await self._finish(live, raw)

    async def _reopen(self, session_id: str) -> None:
        """A run stopped at a boundary for a hand-over ended ``cancelled``: clear that, so
        the next worker continues it instead of finding it finished."""
        owner = lock_owner_id()
        await self.aio.acquire_lock(session_id, owner, self.config.durable.lock_ttl)
        try:
            state = await self.aio.load(session_id)
            if state.stop is RunStop.CANCELLED:
                state.stop, state.detail = None, ""
                await self.aio.save(state)
        finally:
            await self.aio.release_lock(session_id, owner)

    async def _finish(self, live: LiveSession, raw: str) -> None:
        """Messages that arrived as the run ended become its next turn, then the job is
        done (its next job queued first: the session never looks idle in between)."""
        for _, text in live.queued:
            with contextlib.suppress(Exception):
                await self._next_turn(live.session_id, text)
        self.cluster.complete(raw, live.session_id)

    async def _drive_job(self, live: LiveSession, job: Job, state: RunState | None) -> None:
        """Run the job's session; ``state`` (loaded for an approval) decides which calls
        are still pending."""
        sid = job.session_id
        try:
            durable = self._durable(live)
        except ApiError as exc:
            live.publish("serve_error", {"kind": exc.code, "message": exc.message})
            return
        drive: Callable[[Durable], Awaitable[object]]
        if job.op == "approve" and state is not None:
            pending = {c.id for c in state.pending_calls}
            approve = [i for i in job.approve if i in pending]
            deny = {k: v for k, v in job.deny.items() if k in pending}
            if state.awaiting_confirmation and not (approve or deny):
                return  # decided by an earlier run of this job
            drive = _approve(sid, approve, deny)
        else:
            drive = _resume(sid)
        delay = 0.02
        while True:
            try:
                await drive(durable)
                return
            except SessionLocked:
                # a run of the session elsewhere (or a dead worker's lock not yet
                # expired): wait for it, holding the job
                if self._stopping:
                    raise _Handover from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
            except SessionNotFound:
                return  # deleted meanwhile
            except Exception as exc:
                if isinstance(exc, UserError) and await self._awaiting(sid):
                    return  # nothing to run until a client decides
                log.warning("session %s: run failed: %s", sid, exc)
                live.publish("serve_error", error_to_dict(exc))
                return

    async def _awaiting(self, session_id: str) -> bool:
        with contextlib.suppress(Exception):
            return (await self.aio.load(session_id)).awaiting_confirmation
        return False


def _approve(
    session_id: str, approve: list[str], deny: dict[str, str]
) -> Callable[[Durable], Awaitable[object]]:
    return lambda d: d.aresume(session_id, approve=approve, deny=deny or None)


def _deliver(live: LiveSession, mode: str, text: str) -> None:
    if live.run is None or live.run.done():
        live.queued.append(("steer" if mode == "steer" else "follow_up", text))
    elif mode == "steer":
        live.run.steer(text)
    else:
        live.run.follow_up(text)
