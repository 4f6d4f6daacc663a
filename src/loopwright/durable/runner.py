"""Durable runs: checkpointed, resumable across processes, approvals that survive restarts.

:class:`Durable` wraps an :class:`~loopwright.loop.agent.Agent` and a
:class:`~loopwright.store.base.CheckpointStore`:

* ``run(prompt, session_id=None)`` -- a new session, or the next turn of a stored
  conversation (``loopwright chat --session ID``);
* ``resume(session_id, approve=..., deny=...)`` -- continue a session paused on
  confirmations, or one whose process died (crash recovery, see
  :mod:`loopwright.loop.recovery`);
* every run holds the session's lock: a second process resuming the same session gets
  :class:`~loopwright.store.errors.SessionLocked`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace

from loopwright.core.checks import check_seconds
from loopwright.core.errors import UserError
from loopwright.core.events import RunEvent
from loopwright.core.messages import Message, ToolCallPart, ToolResultPart
from loopwright.core.run import (
    LoopState,
    RunResult,
    RunState,
    RunStop,
    check_session_id,
    new_session_id,
    run_sync,
)
from loopwright.core.tools import ToolSpec
from loopwright.durable.checkpointer import (
    CheckpointConfig,
    Checkpointer,
    CheckpointPolicy,
    checkpoint_policy,
    claim_refusal,
)
from loopwright.loop.agent import Agent, Prompt, Run
from loopwright.loop.config import AgentConfig
from loopwright.loop.hooks import Hooks
from loopwright.loop.intents import IntentRecorder
from loopwright.loop.recovery import in_call_order, plan_recovery, unanswered_calls
from loopwright.store.aio import AsyncStore
from loopwright.store.base import DEFAULT_LOCK_TTL, CheckpointStore
from loopwright.store.errors import SessionLocked, SessionNotFound
from loopwright.store.heartbeat import LockHeartbeat
from loopwright.store.state import lock_owner_id
from loopwright.tools import Confirmation
from loopwright.tools.taint import taint_in

log = logging.getLogger("loopwright.durable")

Approve = bool | Iterable[str]
Deny = str | Mapping[str, str] | None


@dataclass(frozen=True, slots=True)
class DurableConfig:
    """``policy``/``interval``: when to checkpoint (see :class:`CheckpointPolicy`).
    ``lock_ttl``: seconds a session lock lives without a refresh."""

    policy: CheckpointPolicy = CheckpointPolicy.EVERY_STEP
    interval: float = 5.0
    lock_ttl: float = DEFAULT_LOCK_TTL

    def __post_init__(self) -> None:
        # a lock_ttl of 0 expires at once: a second process would take a running session
        check_seconds("DurableConfig.interval", self.interval, zero=True)
        check_seconds("DurableConfig.lock_ttl", self.lock_ttl)
        object.__setattr__(self, "policy", checkpoint_policy("DurableConfig.policy", self.policy))


class Durable:
    """An agent whose runs are checkpointed to ``store`` (see the module doc).

    ``store`` may be an :class:`AsyncStore` already shared by other ``Durable`` objects
    (a server runs many sessions over one store and one pool of store threads).
    ``on_run(run)`` is called with each run's handle as it starts, so code outside the
    run can steer it, queue a follow-up or cancel it (``Run.steer`` ...)."""

    def __init__(
        self,
        agent: Agent,
        store: CheckpointStore | AsyncStore,
        config: DurableConfig | None = None,
        *,
        on_run: Callable[[Run], None] | None = None,
    ) -> None:
        self.agent = agent
        self.aio = store if isinstance(store, AsyncStore) else AsyncStore(store)
        """The store's async face: every store call of a run goes through it."""
        self.store = self.aio.store
        self.config = config or DurableConfig()
        self.on_run = on_run
        self._built: tuple[Agent, AgentConfig, Agent] | None = None

    # ---------------------------------------------------------------- public API
    async def arun(
        self,
        prompt: Prompt,
        *,
        session_id: str | None = None,
        break_lock: bool = False,
        metadata: Mapping[str, object] | None = None,
        history: Sequence[Message] = (),
    ) -> RunResult:
        """Run ``prompt`` in a new session, or as the next turn of stored ``session_id``.

        A stored session that stopped mid-run is recovered first; one that awaits
        confirmations must be resumed (approve/deny) before it takes a new prompt.
        ``metadata`` is stored with a NEW session (e.g. how to rebuild its agent: the CLI
        keeps ``{"agent": ...}`` there so ``loopwright resume`` can continue it), and so
        is ``history``, the conversation a new session starts from (as ``Agent.run``'s
        ``history=``: its taint included); a stored session has its own.
        Without ``session_id`` the session is new: its first model call goes out while
        its lock is being taken (no tool runs and nothing is written before the lock is
        held); with one, the lock is taken and the session loaded first.
        """
        if session_id is None:
            return await self._start_new(
                prompt, self._new_state(new_session_id(), metadata, history)
            )
        sid = check_session_id(session_id)
        async with self._locked(sid, break_lock) as lock:
            stored = lock.stored
            if stored is None:  # a new session (an unknown id starts one: `chat --session`)
                state = self._new_state(sid, metadata, history)
                return await self._drive(state, lock, 0, prompt=prompt)
            if history:
                raise UserError(
                    f"session {sid!r} is stored with its own conversation; history= starts "
                    "a new session only: leave it out to add a turn, or use a new session_id"
                )
            if stored.awaiting_confirmation:
                raise UserError(_awaiting_message(stored))
            return await self._continue(stored, lock, prompt=prompt)

    async def aresume(
        self,
        session_id: str,
        *,
        approve: Approve = False,
        deny: Deny = None,
        prompt: Prompt | None = None,
        break_lock: bool = False,
    ) -> RunResult:
        """Continue a stored session.

        Paused on confirmations: ``approve=True`` approves every pending call,
        ``approve=["call_1", ...]`` only those; ``deny="reason"`` denies the rest (or all),
        ``deny={"call_2": "reason"}`` per call. Calls given no decision stay pending and
        the run pauses again. Stopped mid-run (crash): recovered and continued. Already
        finished: returns its stored result (use :meth:`arun` to add a turn).
        """
        async with self._locked(session_id, break_lock) as lock:
            stored = lock.stored
            if stored is None:
                raise SessionNotFound(session_id)
            decisions = decisions_for(stored, approve, deny) if stored.awaiting_confirmation else {}
            if stored.awaiting_confirmation and not decisions:
                raise UserError(_awaiting_message(stored))
            return await self._continue(stored, lock, prompt=prompt, decisions=decisions)

    def run(
        self,
        prompt: Prompt,
        *,
        session_id: str | None = None,
        break_lock: bool = False,
        metadata: Mapping[str, object] | None = None,
        history: Sequence[Message] = (),
    ) -> RunResult:
        """Synchronous :meth:`arun`."""
        return run_sync(
            lambda: self.arun(
                prompt,
                session_id=session_id,
                break_lock=break_lock,
                metadata=metadata,
                history=history,
            ),
            "Durable.run()",
            "durable.arun(...)",
        )

    def resume(
        self,
        session_id: str,
        *,
        approve: Approve = False,
        deny: Deny = None,
        prompt: Prompt | None = None,
        break_lock: bool = False,
    ) -> RunResult:
        """Synchronous :meth:`aresume`."""
        return run_sync(
            lambda: self.aresume(
                session_id, approve=approve, deny=deny, prompt=prompt, break_lock=break_lock
            ),
            "Durable.resume()",
            "durable.aresume(...)",
        )

    # ---------------------------------------------------------------- internals
    def _locked(self, session_id: str, break_lock: bool, *, wait: bool = True) -> _SessionLock:
        return _SessionLock(self.aio, session_id, self.config.lock_ttl, break_lock, wait)

    def _new_state(
        self, sid: str, metadata: Mapping[str, object] | None, history: Sequence[Message]
    ) -> RunState:
        state = RunState(session_id=sid, metadata=dict(metadata or {}), messages=list(history))
        if history:
            state.taint = tuple(taint_in(state.messages, self.agent.tools))
        return state

    async def _start_new(self, prompt: Prompt, state: RunState) -> RunResult:
        """A run in a new session under a fresh id. Nobody else knows the id, so nothing
        is stored under it and nobody holds its lock: the run starts while its claim is
        written, and its first model call overlaps the claim's round trips instead of
        following them (one store wait fewer per new run, ``benchmarks/durable.py``).
        What needs the lock still waits for it: no checkpoint or record is written
        (``Checkpointer.hold_until``) and no tool runs (``IntentRecorder.before``)
        before the lock is held; if the claim fails, the run is cancelled and the
        claim's error raised."""
        async with self._locked(state.session_id, False, wait=False) as lock:
            return await self._drive(state, lock, 0, prompt=prompt)

    async def _continue(
        self,
        state: RunState,
        lock: _SessionLock,
        *,
        prompt: Prompt | None = None,
        decisions: Mapping[str, Confirmation] | None = None,
    ) -> RunResult:
        stop = state.stop
        persisted = len(state.messages)
        pending = tuple(state.pending_calls) or unanswered_calls(state.messages)
        held_ids = {r.call_id for r in state.held_results}
        open_calls = [c for c in pending if c.id not in held_ids]
        decided = dict(decisions or {})
        if open_calls and (stop is None or decided):
            recovery = await plan_recovery(open_calls, self.aio, state.session_id, self.agent.tools)
            for call_id, note in recovery.notes.items():
                log.info("recovery: session %s call %s: %s", state.session_id, call_id, note)
            held = [*state.held_results, *recovery.known]
            decided = {**recovery.decisions, **decided}
            rerun = recovery.rerun
            if rerun:
                state.pending_calls = tuple(rerun)
                state.held_results = tuple(held)
                state.status = LoopState.PAUSED
                keep = {c.id for c in rerun}
                decided = {k: v for k, v in decided.items() if k in keep}
                return await self._drive(state, lock, persisted, prompt=prompt, decisions=decided)
            calls = state.messages[-1].tool_calls
            state.messages.append(Message("tool", in_call_order(calls, held)))
            state.pending_calls, state.held_results = (), ()
            state.status = LoopState.OBSERVE
            return await self._drive(state, lock, persisted, prompt=prompt)
        if stop is not None and stop is not RunStop.AWAITING_CONFIRMATION and prompt is None:
            return state.result(detail=state.detail or "already finished")
        if prompt is None and not _owes_model_turn(state):
            last = state.messages[-1] if state.messages else None
            if last is None or last.role != "assistant" or last.tool_calls:
                raise UserError(
                    f"session {state.session_id!r} has nothing to continue (no pending calls, "
                    "no unanswered message); give it a prompt: "
                    f"Durable.run(prompt, session_id={state.session_id!r}) or "
                    f"`loopwright chat --session {state.session_id} PROMPT`"
                )
            # the final answer was stored but the process died before the final checkpoint
            return state.result(RunStop.FINAL_ANSWER, state.detail or "already finished")
        state.status = LoopState.OBSERVE
        return await self._drive(state, lock, persisted, prompt=prompt)

    async def _drive(
        self,
        state: RunState,
        lock: _SessionLock,
        persisted: int,
        *,
        prompt: Prompt | None = None,
        decisions: Mapping[str, Confirmation] | None = None,
    ) -> RunResult:
        cfg = self.config
        checkpointer = Checkpointer(
            self.aio,
            state,
            CheckpointConfig(cfg.policy, cfg.interval, lock.owner, cfg.lock_ttl),
            persisted,
        )
        recorder = self._recorder(state.session_id, checkpointer)
        agent = self._run_agent()
        claim = lock.claim  # not None: the lock is still being taken
        if claim is not None:
            checkpointer.hold_until(claim)
        if len(state.messages) != persisted:
            await checkpointer.save()  # the recovered results, before anything runs
        token = _RUN.set(_RunObjects(checkpointer, recorder))
        try:  # the run's task is created here and keeps this context
            if decisions is not None and state.pending_calls:
                run = agent.resume(state, decisions, prompt=prompt, events=False)
            else:
                run = agent.resume(state, prompt=prompt, events=False)
        finally:
            _RUN.reset(token)
        if claim is not None:
            claim.add_done_callback(lambda f: None if claim_refusal(f) is None else run.cancel())
        # a run that lost its lock stops: another process may be running the session
        checkpointer.on_lost = lambda exc: run.cancel()
        lock.on_lost(checkpointer.lose)
        if self.on_run is not None:
            self.on_run(run)
        try:
            result = await run.result()
        except BaseException:
            # keep what the run repaired (results of a cut-off batch) if the store allows
            checkpointer.request()
            with contextlib.suppress(Exception):
                await recorder.flush()
                await checkpointer.flush()
            if claim is not None and claim.done() and claim_refusal(claim) is not None:
                await checkpointer.lock_held()  # raises why the lock was not taken
            raise
        await checkpointer.lock_held()  # the lock was not taken: its error, not the result
        await recorder.flush()  # result records written in the background
        # the final checkpoint (requested by RunFinished) and the lock's release share
        # one store call: the heartbeat stops first, so no refresh can re-take the lock
        await lock.quiet()
        lock.released = True
        await checkpointer.finish(release=lock.owner)
        return result

    def _run_agent(self) -> Agent:
        """The agent durable runs are driven by: :attr:`agent` with hooks that hand each
        event and tool call to the checkpointer and intent recorder of the run they
        belong to (:data:`_RUN`, set for the run's task when it starts). Built once per
        agent, not once per run: a run's own objects are its checkpointer and recorder."""
        agent = self.agent
        built = self._built
        if built is not None and built[0] is agent and built[1] is agent.config:
            return built[2]
        config = agent.config
        hooks = config.hooks
        user_on_event = hooks.on_event

        def on_event(event: RunEvent) -> None:
            _current().checkpointer.on_event(event)
            if user_on_event is not None:
                user_on_event(event)

        new_config = replace(
            config,
            hooks=Hooks(
                before_tool_call=None,
                after_tool_call=None,
                transform_context=hooks.transform_context,
                on_event=on_event,
            ),
            dispatch=replace(
                config.dispatch,
                before_tool_call=_before_tool_call,
                after_tool_call=_after_tool_call,
                # a tool's ToolContext gets the run's own session id (Agent gives it
                # state.session_id when the config names none)
                session_id=None,
            ),
            ledger=config.ledger if config.ledger is not None else self.aio,
        )
        run_agent = Agent.from_config(new_config)
        self._built = (agent, config, run_agent)
        return run_agent

    def _recorder(self, session_id: str, checkpointer: Checkpointer) -> IntentRecorder:
        dispatch = self.agent.config.dispatch
        return IntentRecorder(
            self.aio,
            session_id,
            self.agent.config.registry,
            dispatch.before_tool_call,
            dispatch.after_tool_call,
            checkpointer,
        )


@dataclass(frozen=True, slots=True)
class _RunObjects:
    """What the shared hooks of :meth:`Durable._run_agent` hand a run's events to."""

    checkpointer: Checkpointer
    recorder: IntentRecorder


_RUN: ContextVar[_RunObjects] = ContextVar("loopwright.durable.run")
"""The durable run whose task this is: set while the run's task is created, so the task
(and every task it starts: tool calls) carries it in its context."""


def _current() -> _RunObjects:
    try:
        return _RUN.get()
    except LookupError:
        raise RuntimeError(
            "a durable run's hook was called outside the run's task; durable runs are "
            "started by Durable.run/arun/resume"
        ) from None


def _before_tool_call(call: ToolCallPart, spec: ToolSpec) -> Awaitable[str | None]:
    return _current().recorder.before(call, spec)


def _after_tool_call(
    call: ToolCallPart, result: ToolResultPart
) -> Awaitable[ToolResultPart | None]:
    return _current().recorder.after(call, result)


class _SessionLock:
    """``async with``: hold the session lock for the duration of a run; ``stored`` is the
    session as loaded once the lock is held (``None``: not stored yet).

    A :class:`~loopwright.store.heartbeat.LockHeartbeat` keeps the lock alive, so a tool
    that runs longer than the TTL (between two checkpoints) does not lose the lock to
    another process. A run that releases the lock with its final checkpoint sets
    ``released``."""

    def __init__(
        self, store: AsyncStore, session_id: str, ttl: float, break_lock: bool, wait: bool = True
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.ttl = ttl
        self.break_lock = break_lock
        self.wait = wait
        self.owner = lock_owner_id()
        self.stored: RunState | None = None
        self.released = False
        self.claim: asyncio.Future[RunState | None] | None = None
        """With ``wait=False``: the lock being taken (a new session's: nothing stored)."""
        self._quiet = False
        self._held = wait  # whether __aexit__ has a lock to release
        self._heartbeat = LockHeartbeat(store, session_id, self.owner, ttl)

    async def __aenter__(self) -> _SessionLock:
        if not self.wait:
            self.claim = self._new_session_claim()
            return self
        # taking the lock and loading the session are one store call (one thread hop)
        self.stored = await self.store.lock_and_load(
            self.session_id, self.owner, self.ttl, break_first=self.break_lock
        )
        self._heartbeat.start()
        return self

    def _new_session_claim(self) -> asyncio.Future[RunState | None]:
        """Queue the claim without waiting for it (see ``Durable._start_new``); the
        heartbeat starts once it took the lock (:func:`claim_refusal` says whether)."""

        def landed(f: asyncio.Future[RunState | None]) -> None:
            if f.cancelled() or f.exception() is not None:
                return
            self._held = True  # even over a stored session: __aexit__ releases it
            if f.result() is None and not self._quiet:
                self._heartbeat.start()

        claim = self.store.claim(self.session_id, self.owner, self.ttl)
        claim.add_done_callback(landed)
        return claim

    def on_lost(self, callback: Callable[[SessionLocked], None]) -> None:
        """Call ``callback`` when the heartbeat finds the lock held by another owner."""
        self._heartbeat.on_lost = callback

    async def quiet(self) -> None:
        """Stop the heartbeat (a refresh in flight finishes first)."""
        self._quiet = True
        await self._heartbeat.stop()

    async def __aexit__(self, *exc: object) -> None:
        await self.quiet()
        if self.claim is not None and not self.claim.done():
            # released after the claim, never before it in a concurrent batch
            await asyncio.wait((self.claim,))
        if self.released or not self._held:
            return
        try:
            await self.store.release_lock(self.session_id, self.owner)
        except Exception:
            # the store may be down now; the lock expires after its TTL anyway
            if exc[0] is None:
                raise


def _owes_model_turn(state: RunState) -> bool:
    return bool(state.steering or state.follow_ups) or (
        bool(state.messages) and state.messages[-1].role in ("user", "tool")
    )


def decisions_for(state: RunState, approve: Approve, deny: Deny) -> dict[str, Confirmation]:
    """The confirmation of each pending call of ``state`` that ``approve``/``deny`` decide.

    A ``UserError`` for a call that is not pending, and for a call both listed in
    ``approve`` and given a reason in ``deny``: the later rule used to win silently, so a
    call its reviewer had also denied ran (an email sent)."""
    ids = [c.id for c in state.pending_calls]
    if isinstance(deny, Mapping) and not isinstance(approve, bool):
        both = sorted(set(approve) & set(deny))
        if both:
            raise UserError(
                f"call(s) {both} of session {state.session_id!r} are both approved and "
                "denied; decide each call once"
            )
    unknown: set[str] = set()
    out: dict[str, Confirmation] = {}
    if isinstance(deny, Mapping):
        unknown |= set(deny) - set(ids)
        out.update({k: Confirmation.deny(v) for k, v in deny.items() if k in ids})
    if approve is True:
        approved = [i for i in ids if i not in out]
    elif approve is False:
        approved = []
    else:
        approved = list(approve)
        unknown |= set(approved) - set(ids)
    if unknown:
        raise UserError(
            f"session {state.session_id!r} has no pending call(s) {sorted(unknown)}; "
            f"its pending calls are {ids}"
        )
    out.update({i: Confirmation.approve() for i in approved})
    if isinstance(deny, str):
        out.update({i: Confirmation.deny(deny) for i in ids if i not in out})
    return out


def _awaiting_message(state: RunState) -> str:
    calls = ", ".join(f"{c.id} ({c.name})" for c in state.pending_calls)
    return (
        f"session {state.session_id!r} awaits confirmation for {calls}; resume it with "
        f"`loopwright resume {state.session_id} --approve` or `--deny REASON` "
        "(Durable.resume(session_id, approve=True / deny='reason'))"
    )
