"""Sessions served over HTTP: one durable run at a time per session, its events kept for
replay.

A session is a :class:`~loopwright.core.run.RunState` in the checkpoint store (so a
restarted server lists and resumes it) whose ``metadata["serve"]`` records its tenant and
agent name. Its id carries a short digest of the tenant (``s-<tag>-<random>``), so listing
a tenant's sessions filters ids without loading every state; access still checks the
stored tenant.

Every run goes through :class:`~loopwright.durable.Durable` (checkpoints, locks,
approvals that survive restarts, crash-safe side effects). :class:`SessionManager` runs
sessions in this process and keeps their events, numbered from 1, serialised once as
JSON: the SSE stream replays them after a ``Last-Event-ID`` and then follows new ones.
Several processes sharing a Redis use :class:`~loopwright.serve.clustered.ClusterSessions`
instead (a work queue, events numbered and fanned out in Redis).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

from loopwright.core.checks import check_count, check_seconds
from loopwright.core.errors import UserError
from loopwright.core.events import RunEvent
from loopwright.core.messages import JSONValue, Message
from loopwright.core.run import RunState, RunStop
from loopwright.durable import Durable, DurableConfig
from loopwright.durable.runner import decisions_for
from loopwright.loop import Agent
from loopwright.loop.agent import Run
from loopwright.store.aio import AsyncStore
from loopwright.store.base import CheckpointStore
from loopwright.store.errors import SessionLocked, SessionNotFound
from loopwright.store.state import SessionInfo
from loopwright.tools import Confirmation
from loopwright.tracing.serialize import error_to_dict, event_to_dict

from .errors import ApiError, awaiting_approval, conflict, not_found, nothing_to_cancel
from .eventlog import Event, event_json

log = logging.getLogger("loopwright.serve")

AgentSource: TypeAlias = Agent | Callable[[], Agent]
"""What ``--agents module:agents`` maps a name to: an Agent or a factory of one."""

Approve: TypeAlias = bool | list[str]
Deny: TypeAlias = str | dict[str, str] | None


def tenant_tag(tenant: str) -> str:
    """64 bits of the tenant's digest: listing filters ids by it (access checks the
    stored tenant), so two tenants sharing a tag would see each other's ids listed."""
    return hashlib.sha256(tenant.encode("utf-8")).hexdigest()[:16]


def _later(call: object, spec: object) -> Confirmation:
    return Confirmation.later("awaiting approval through POST /v1/sessions/{id}/approvals")


@dataclass(slots=True)
class LiveSession:
    """What this process holds for a session it ran: its event log and current run."""

    session_id: str
    tenant: str
    agent: str
    max_events: int = 10_000
    events: list[Event] = field(default_factory=list)
    dropped: int = 0
    """Events not in ``events``: dropped from its front (it keeps the last
    ``max_events``)."""
    sink: Callable[[str, str, str], None] | None = None
    """Where events go instead of ``events`` (session id, type, JSON text): the Redis
    event log of a cluster, which numbers them."""
    task: asyncio.Task[None] | None = None
    active: bool = False
    """A run is in progress (set before its task starts, cleared before it ends)."""
    run: Run | None = None
    queued: list[tuple[Literal["steer", "follow_up"], str]] = field(default_factory=list)
    cancel_requested: bool = False
    """A cancel arrived before the run started: it is cancelled as it starts."""
    handover: bool = False
    """The run is being stopped at a step boundary for another process to continue."""
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    created: RunState | None = None
    """The state a new session was stored with, until its run starts: what a request
    arriving in between (the client's ``GET .../events`` right after the ``201``) is
    answered from, instead of a store read."""

    @property
    def running(self) -> bool:
        return self.active

    @property
    def last_id(self) -> int:
        return self.dropped + len(self.events)

    def publish(self, type_: str, data: Mapping[str, JSONValue]) -> None:
        if self.sink is not None:
            self.sink(self.session_id, type_, event_json(data))
            return
        event = Event(self.last_id + 1, type_, event_json(data))
        self.events.append(event)
        if len(self.events) > self.max_events:
            # drop the older half at once: one list copy per max_events/2 events
            cut = len(self.events) - self.max_events // 2
            del self.events[:cut]
            self.dropped += cut
        self.notify()

    def on_event(self, event: RunEvent) -> None:
        self.publish(event.type, event_to_dict(event))

    def attach(self, run: Run) -> None:
        """Durable's ``on_run``: messages sent before the run started reach it now."""
        self.run, self.created = run, None
        for mode, text in self.queued:
            run.steer(text) if mode == "steer" else run.follow_up(text)
        self.queued.clear()
        if self.cancel_requested:
            run.cancel()

    def notify(self) -> None:
        wake, self.wake = self.wake, asyncio.Event()
        wake.set()

    async def follow(self, after: int, keepalive: float) -> AsyncIterator[list[Event] | None]:
        """Events numbered above ``after``, then new ones until no run is in progress,
        as batches of what arrived since the last one (one network write each);
        ``None`` after ``keepalive`` idle seconds (the stream sends a comment)."""
        while True:
            wake = self.wake
            after = max(after, self.dropped)  # older events are gone: start at the oldest kept
            if after < self.last_id:
                batch = self.events[after - self.dropped :]
                after = self.last_id
                yield batch
                continue
            if not self.running:
                return
            try:
                await asyncio.wait_for(wake.wait(), keepalive)
            except TimeoutError:
                yield None


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """``durable``: checkpoint policy and lock TTL of every run. ``max_events``: events
    kept per session for replay (the oldest half is dropped beyond it);
    ``max_idle_sessions``: see below. ``drain``: seconds
    a shutdown waits for runs in progress before cancelling them."""

    durable: DurableConfig = field(default_factory=DurableConfig)
    max_events: int = 10_000
    drain: float = 10.0
    max_idle_sessions: int = 1_000
    """Finished sessions whose event log stays in memory (the rest: state only)."""
    store_threads: int = 16
    """Threads (each with its own connection to a database store) that run the store's
    calls. Several processes sharing one PostgreSQL need processes x threads
    connections; fewer threads also contend less for the interpreter (benchmarks/
    README.md: one process spent ~8 % less CPU per session with 16 than with 64, a
    cluster of two ~13-25 % less with 8)."""

    def __post_init__(self) -> None:
        check_count("ServeConfig.max_events", self.max_events)
        check_seconds("ServeConfig.drain", self.drain, zero=True)
        check_count("ServeConfig.max_idle_sessions", self.max_idle_sessions, minimum=0)
        check_count("ServeConfig.store_threads", self.store_threads)


class SessionManager:
    """The sessions of one server process over one checkpoint store."""

    def __init__(
        self,
        agents: Mapping[str, AgentSource],
        store: CheckpointStore,
        config: ServeConfig | None = None,
    ) -> None:
        if not agents:
            raise ApiError(500, "no_agents", "the server has no agents")
        self.agents = dict(agents)
        self.store = store
        self.config = config or ServeConfig()
        self.aio = AsyncStore(store, workers=self.config.store_threads)
        self.live: dict[str, LiveSession] = {}
        self._idle: OrderedDict[str, None] = OrderedDict()
        """Live records of sessions with no run in progress, oldest first."""
        self._sweeper: asyncio.Task[None] | None = None
        self._stopping = False

    # ------------------------------------------------------------------ lookups
    async def state(self, tenant: str, session_id: str) -> RunState:
        """The session's state (the live one while it runs), or 404 for other tenants."""
        live = self.live.get(session_id)
        if live is not None:
            if live.tenant != tenant:
                raise not_found(session_id)
            if live.running:
                if live.run is not None:
                    return live.run.state.snapshot()
                if live.created is not None:
                    return live.created
        if not session_id.startswith(f"s-{tenant_tag(tenant)}-"):
            raise not_found(session_id)
        try:
            state = await self.aio.load(session_id)
        except SessionNotFound:
            raise not_found(session_id) from None
        if _owner(state) != tenant:
            raise not_found(session_id)
        return state

    async def sessions(self, tenant: str, limit: int) -> list[SessionInfo]:
        prefix = f"s-{tenant_tag(tenant)}-"  # filtered and limited by the store's query
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: self.store.sessions(limit=limit, prefix=prefix)
        )

    def agent_name(self, state: RunState) -> str:
        meta = state.metadata.get("serve")
        return str(meta.get("agent", "")) if isinstance(meta, Mapping) else ""

    async def live_session(self, tenant: str, session_id: str) -> LiveSession:
        """The session's live record (created for a stored session on first use)."""
        live = self.live.get(session_id)
        if live is None:
            state = await self.state(tenant, session_id)
            live = self._new_live(session_id, tenant, self.agent_name(state))
        if live.tenant != tenant:
            raise not_found(session_id)
        return live

    async def running(self, session_ids: list[str]) -> list[bool]:
        """Whether each session has a run in progress (or, in a cluster, waiting)."""
        return [(s in self.live and self.live[s].running) for s in session_ids]

    async def overview(self, session_id: str) -> tuple[bool, int]:
        """Whether the session runs, and the number of its last event."""
        live = self.live.get(session_id)
        return (live.running, live.last_id) if live is not None else (False, 0)

    # ------------------------------------------------------------------ commands
    async def create(self, tenant: str, agent: str, prompt: str) -> str:
        """Store a new session of ``agent`` with ``prompt`` and start its run."""
        state = await self._store_new(tenant, agent, prompt)
        sid = state.session_id
        live = self._new_live(sid, tenant, agent)
        self._start(live, lambda d: d.aresume(sid))
        live.created = state
        return sid

    async def _store_new(self, tenant: str, agent: str, prompt: str) -> RunState:
        self._agent_source(agent)
        sid = f"s-{tenant_tag(tenant)}-{secrets.token_hex(8)}"
        meta: dict[str, JSONValue] = {"tenant": tenant, "agent": agent}
        # stored before the run starts: the 201 promises a session any process can find
        state = RunState(session_id=sid, messages=[Message.user(prompt)], metadata={"serve": meta})
        await self.aio.save(state)
        return state

    async def message(
        self, tenant: str, session_id: str, text: str, mode: Literal["steer", "follow_up"]
    ) -> str:
        """Steer or follow up a running run; start the next turn of an idle session.
        Returns what happened: ``"queued"`` or ``"started"``."""
        live = await self.live_session(tenant, session_id)
        if not live.running:
            await self._check_not_elsewhere(session_id, live)
            state = await self.state(tenant, session_id)
            # checked again: a request that raced this one may have started a run while
            # this one awaited the store; the message then joins that run
            if not live.running:
                if state.awaiting_confirmation:
                    raise awaiting_approval(state)
                self._start(live, lambda d: d.arun(text, session_id=session_id))
                return "started"
        if live.run is None or live.run.done():
            live.queued.append((mode, text))
        else:
            live.run.steer(text) if mode == "steer" else live.run.follow_up(text)
        return "queued"

    async def approve(self, tenant: str, session_id: str, approve: Approve, deny: Deny) -> None:
        live = await self.live_session(tenant, session_id)
        if not live.running:
            await self._check_not_elsewhere(session_id, live)
            state = await self.state(tenant, session_id)
        if live.running:  # (also: a racing request started a run while this one looked)
            raise conflict(f"session {session_id!r} is running", "wait for it to pause")
        check_decisions(state, approve, deny)
        self._start(live, lambda d: d.aresume(session_id, approve=approve, deny=deny))

    async def cancel(self, tenant: str, session_id: str) -> None:
        live = await self.live_session(tenant, session_id)
        if not live.running:
            await self._check_not_elsewhere(session_id, live)
            state = await self.state(tenant, session_id)
            if not live.running:  # else a racing request started a run meanwhile
                raise nothing_to_cancel(state)
        cancel_live(live)

    async def resume_interrupted(self, stale_after: float = 0.0) -> list[str]:
        """Resume served sessions whose run stopped without a result (its process died)
        and that nothing updated for ``stale_after`` seconds: crash recovery under the
        durable runner's rules. The session lock is the lease: a session whose lock is
        held (refreshed by a heartbeat) by a live process is left to it, quietly."""
        resumed = []
        for session_id, state in await self._interrupted(stale_after):
            tenant = _owner(state)
            assert tenant is not None
            live = self._new_live(session_id, tenant, self.agent_name(state))
            try:
                self._start(live, _resume(session_id), quiet_locked=True)
            except ApiError as exc:  # its agent is not served here
                log.warning("session %s: not resumed: %s", session_id, exc.message)
                continue
            resumed.append(session_id)
        return resumed

    async def _interrupted(
        self, stale_after: float, *, running: bool = False
    ) -> list[tuple[str, RunState]]:
        """Served sessions without a result, not updated for ``stale_after`` seconds,
        and (unless ``running``) no run here."""
        # only the sessions without a result, through the stores' index: a store holding
        # many finished sessions is not listed in full on every sweep
        rows = await asyncio.get_running_loop().run_in_executor(
            None, lambda: self.store.sessions(unfinished=True)
        )
        found = []
        now = time.time()
        for row in rows:
            live = self.live.get(row.session_id)
            if row.stop is not None or row.problem:
                continue
            if not running and live is not None and live.running:
                continue
            if row.updated_at > now - stale_after:
                continue
            try:
                state = await self.aio.load(row.session_id)
            except Exception as exc:
                log.warning("session %s: not resumed: %s", row.session_id, exc)
                continue
            if _owner(state) is not None:
                found.append((row.session_id, state))
        return found

    async def recover_forever(self, every: float) -> None:
        """Every ``every`` seconds, resume sessions whose process died (their lock
        expired, or its holder is gone from this host): the lease hand-over between
        server processes sharing a store."""
        ttl = self.config.durable.lock_ttl
        while True:
            await asyncio.sleep(every)
            try:
                await self.resume_interrupted(stale_after=ttl)
            except Exception as exc:  # the store is down: try again next time
                log.warning("recovery sweep failed: %s", exc)

    async def start(self, resume: bool, recover_every: float) -> None:
        """At server startup: resume interrupted sessions, start the recovery sweeps."""
        if resume:
            await self.resume_interrupted()
            if recover_every > 0:
                self._sweeper = asyncio.get_running_loop().create_task(
                    self.recover_forever(recover_every)
                )

    def stop_taking_work(self) -> None:
        """The server is shutting down (SIGTERM): start no new run."""
        self._stopping = True

    async def close(self) -> None:
        """Let runs in progress finish for ``drain`` seconds, cancel the rest (each ends
        with a checkpoint), then stop the store threads."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        tasks = [s.task for s in self.live.values() if s.task is not None and not s.task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=self.config.drain)
        for live in self.live.values():
            if live.run is not None and live.running:
                live.run.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 10)
        self.aio.close()

    async def stream(
        self, state: RunState, after: int, keepalive: float
    ) -> AsyncIterator[list[Event] | None]:
        """The session's events after ``after`` kept by this process, then new ones
        until no run of the session is in progress. ``state``: the session as
        :meth:`state` returned it to its tenant (the stream checks no key)."""
        sid = state.session_id
        live = self.live.get(sid) or self._new_live(
            sid, _owner(state) or "", self.agent_name(state)
        )
        async for item in live.follow(after, keepalive):
            yield item

    # ------------------------------------------------------------------ internals
    async def _check_not_elsewhere(self, session_id: str, live: LiveSession) -> None:
        """409 when another process runs the session (it holds the session's lock). A
        lock taken while the store was asked, by a run ``live`` started here since, is
        this process's own."""
        owner = await asyncio.to_thread(self.store.lock_owner, session_id)
        if owner is not None and not live.running:
            raise conflict(
                f"session {session_id!r} is running in another server process ({owner})",
                "send steering, follow-ups and cancels to the process that runs it, or "
                "retry when its run has ended",
            )

    def _new_live(self, session_id: str, tenant: str, agent: str) -> LiveSession:
        live = LiveSession(session_id, tenant, agent, self.config.max_events)
        return self.live.setdefault(session_id, live)

    def _agent_source(self, name: str) -> AgentSource:
        try:
            return self.agents[name]
        except KeyError:
            raise ApiError(
                422,
                "unknown_agent",
                f"no agent named {name!r}",
                field="body.agent",
                fix=f"use one of {sorted(self.agents)}",
            ) from None

    def _durable(self, live: LiveSession) -> Durable:
        source = self.agents.get(live.agent)
        if source is None:
            raise conflict(
                f"session {live.session_id!r} runs agent {live.agent!r}, which this server "
                "does not serve",
                f"start the server with an --agents dict that has {live.agent!r}",
            )
        try:
            agent = source if isinstance(source, Agent) else source()
        except Exception as exc:
            log.exception("agent factory %r failed", live.agent)
            raise ApiError(
                500,
                "agent_factory_failed",
                f"the factory of agent {live.agent!r} raised {type(exc).__name__}: {exc}",
                fix="fix the factory in the server's --agents module",
            ) from None
        if not isinstance(agent, Agent):  # was an AttributeError: a plain-text 500
            raise ApiError(
                500,
                "agent_factory_failed",
                f"the factory of agent {live.agent!r} returned {type(agent).__name__}, "
                "not an Agent",
                fix="make the factory in the server's --agents module return an Agent",
            )
        config = agent.config
        user_on_event = config.hooks.on_event
        if user_on_event is None:
            on_event = live.on_event
        else:

            def on_event(event: RunEvent) -> None:
                user_on_event(event)
                live.on_event(event)

        dispatch = config.dispatch
        if dispatch.confirm is None:  # nobody to ask in this process: the run pauses
            dispatch = replace(dispatch, confirm=_later)
        served = Agent.from_config(
            replace(config, hooks=replace(config.hooks, on_event=on_event), dispatch=dispatch)
        )
        return Durable(served, self.aio, self.config.durable, on_run=live.attach)

    def _start(
        self,
        live: LiveSession,
        drive: Callable[[Durable], Awaitable[object]],
        *,
        quiet_locked: bool = False,
    ) -> None:
        durable = self._durable(live)

        async def body() -> None:
            try:
                await drive(durable)
            except SessionLocked as exc:
                # a recovery attempt that lost the session to its live holder: not an event
                if not quiet_locked:
                    live.publish("serve_error", error_to_dict(exc))
            except asyncio.CancelledError:
                live.publish("serve_error", {"kind": "cancelled", "message": "run cancelled"})
            except Exception as exc:
                log.warning("session %s: run failed: %s", live.session_id, exc)
                live.publish("serve_error", error_to_dict(exc))
            finally:
                live.run = None
                live.active = False
                self._settle(live)
                live.notify()

        self._idle.pop(live.session_id, None)
        live.active = True
        live.cancel_requested = False
        live.task = asyncio.get_running_loop().create_task(body())

    def _settle(self, live: LiveSession) -> None:
        """A run ended. Messages sent after it stopped taking them (between its last turn
        and its final checkpoint) start the next turn; otherwise the session is idle, and
        the oldest idle sessions beyond ``max_idle_sessions`` leave memory (their state
        stays in the store; only their event log goes)."""
        if live.queued:
            _, text = live.queued.pop(0)
            sid = live.session_id
            try:
                self._start(live, lambda d: d.arun(text, session_id=sid))
            except ApiError as exc:
                live.publish("serve_error", {"kind": exc.code, "message": exc.message})
            return
        self._idle[live.session_id] = None
        while len(self._idle) > self.config.max_idle_sessions:
            oldest, _ = self._idle.popitem(last=False)
            gone = self.live.get(oldest)
            if gone is not None and not gone.running:
                del self.live[oldest]


def check_decisions(state: RunState, approve: Approve, deny: Deny) -> None:
    """422/409 unless ``approve``/``deny`` decide calls ``state`` waits for."""
    session_id = state.session_id
    if not state.awaiting_confirmation:
        raise conflict(
            f"session {session_id!r} has no calls waiting for approval",
            f"GET /v1/sessions/{session_id} shows its state",
        )
    ids = {c.id for c in state.pending_calls}
    approved = set(approve) if isinstance(approve, list) else set()
    named = approved | (set(deny) if isinstance(deny, dict) else set())
    if named - ids:
        raise ApiError(
            422,
            "unknown_call",
            f"no pending call(s) {sorted(named - ids)} in session {session_id!r}",
            field="body.approve" if approved - ids else "body.deny",
            fix=f"its pending calls are {sorted(ids)}",
        )
    if approve is False and not deny:
        raise ApiError(
            422,
            "no_decision",
            "the request approves and denies nothing",
            field="body.approve",
            fix='send "approve": true, a list of call ids, or "deny"',
        )
    try:  # the durable runner owns the rules; refuse here, before the 202 and the run
        decisions_for(state, approve, deny)
    except UserError as exc:
        raise ApiError(
            422, "conflicting_decisions", str(exc), field="body.deny", fix="decide each call once"
        ) from exc


def cancel_live(live: LiveSession) -> None:
    """Cancel the run of ``live`` (or, before it started, as it starts)."""
    if live.run is not None:
        live.run.cancel()
    else:
        live.cancel_requested = True


def session_status(running: bool, awaiting: bool, stop: RunStop | None) -> str:
    """``running``, ``awaiting_confirmation``, ``finished`` (see ``stop``) or
    ``interrupted`` (no result and no run: its process died; resumable)."""
    if running:
        return "running"
    if awaiting:
        return "awaiting_confirmation"
    return "finished" if stop is not None else "interrupted"


def _resume(session_id: str) -> Callable[[Durable], Awaitable[object]]:
    return lambda durable: durable.aresume(session_id)


def _owner(state: RunState) -> str | None:
    meta = state.metadata.get("serve")
    if isinstance(meta, Mapping) and isinstance(meta.get("tenant"), str):
        return str(meta["tenant"])
    return None
