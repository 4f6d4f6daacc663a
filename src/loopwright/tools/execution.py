"""How one tool call executes: under its deadline, and for a plain ``def`` tool, on a
worker thread or inline.

**Deadlines and failures** (:func:`attempt`, the dispatcher's hot path: see there why a
call that never suspends pays for no deadline). Deadlines are cheap: one watchdog timer
per event loop instead of one per call. ``asyncio.timeout`` (or ``wait_for``) schedules and cancels a timer handle for every
call; that was ~30 % of a whole tool dispatch in profiles. Here a call registers its
deadline in a dict (O(1)) and removes it when done; one timer per loop is armed at the
earliest pending deadline. When it fires it cancels the tasks whose deadlines passed and
re-arms for the next one. Semantics match ``asyncio.timeout``: the task is cancelled at
the deadline and the cancellation becomes a ``timeout`` failure.

**Worker threads for sync tools**, without letting a stuck one starve the rest. Python cannot kill a thread, so a sync tool that never returns keeps its thread for
good. The pool is built around that fact (see docs/tools.md, "Sync tools"):

* Workers are daemon threads (``asyncio.to_thread``'s executor joins its threads at
  interpreter exit, so one hung tool would hang the process on exit). At most
  ``MAX_WORKERS`` of them serve calls; calls beyond that queue.
* A call whose caller stops waiting (a timeout, a cancelled run) is **abandoned**: a
  queued one never starts; a running one is written off the pool, which may start a
  replacement at once. The abandoned thread finishes the function on its own, then
  rejoins the pool if there is room or exits.
* Abandoned calls are bounded per owner (one tool): after ``MAX_STUCK_PER_OWNER``
  calls of a tool still running past their deadline, further calls of that tool are
  refused at once with a ``timeout`` :class:`ToolError` instead of taking more threads,
  and ``MAX_ABANDONED`` bounds them process-wide. Other tools keep their workers.
* ``execution``: a ``concurrent.futures.Future`` resolved with ``(value, exception)``
  when the function really ends, whether or not anyone still waits. The dispatcher
  uses it so a keyed call that timed out but still runs is not started twice.

Context variables are copied into the worker like ``to_thread`` does.

:class:`SyncProfile` decides where a plain ``def`` tool runs (``inline=None``, the
default): on a worker while it is unknown; on the event loop once it has proved short
and non-blocking (see :meth:`SyncProfile.ran`); back on workers for good the first time
an inline run is slow.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import logging
import queue
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Generator
from types import CoroutineType
from typing import TYPE_CHECKING, Any, TypeVar

from loopwright.core.errors import ToolError, ToolErrorKind, UserError

if TYPE_CHECKING:
    from loopwright.tools.decorator import Tool

log = logging.getLogger("loopwright.tools")

MAX_WORKERS = 64
MAX_STUCK_PER_OWNER = 4
MAX_ABANDONED = 256
_RUNNING_LOOP = "running event loop"
"""In the message of the error ``asyncio.run`` (``RuntimeError``) and ``Agent.run``
(``UserError``) raise when called on a thread whose event loop is running."""

Execution = concurrent.futures.Future
"""Resolved with ``(value, exception)`` when a worker finishes the function."""

_QUEUED, _RUNNING, _ABANDONED, _CANCELLED, _DONE = range(5)


class SyncProfile:
    """Where a plain ``def`` tool runs, learned from its own runs.

    A worker times every run (wall clock and the thread's CPU time). After
    ``PROMOTE_AFTER`` runs in a row that each took under ``FAST_S`` and spent almost
    all of it computing (``wall - cpu`` under ``BLOCKED_S``: no sleeping, no waiting on
    I/O, locks or the event loop), the tool runs inline on the event loop, which saves
    the thread hop (~50-150 us of a ~5 us dispatch, docs/tools.md). ``DEMOTE_AFTER``
    inline runs in a row slower than ``DEMOTE_S`` send it back to workers for good (one
    slow run alone is usually the loop's thread being preempted on a busy machine, not
    the tool). A tool that waits on anything never shows a CPU-bound streak, so it is
    never inlined and never blocks the loop; declare ``inline=False`` to opt out.
    """

    __slots__ = ("demoted", "inline", "name", "slow", "streak")

    PROMOTE_AFTER = 8
    FAST_S = 0.0005
    BLOCKED_S = 0.0001
    DEMOTE_S = 0.002
    DEMOTE_AFTER = 2

    def __init__(self, name: str = "") -> None:
        self.name = name
        """What the profiled function is (a tool's or a node's name): for log lines."""
        self.inline = False
        self.demoted = False
        self.streak = 0
        self.slow = 0

    def ran(self, wall: float, cpu: float) -> None:
        """Record one worker run (called on the worker thread; races only delay a
        promotion)."""
        if wall < self.FAST_S and wall - cpu < self.BLOCKED_S:
            self.streak += 1
            if self.streak >= self.PROMOTE_AFTER and not self.demoted:
                self.inline = True
        else:
            self.streak = 0

    def refuse_inline(self) -> None:
        """Back to workers for good: the function cannot run on the event loop's thread."""
        self.inline = False
        self.demoted = True
        log.info("%r starts an event loop of its own; it runs on worker threads", self.name)

    def ran_inline(self, wall: float) -> None:
        if wall <= self.DEMOTE_S:
            self.slow = 0
            return
        self.slow += 1
        if self.slow >= self.DEMOTE_AFTER:
            self.inline = False
            self.demoted = True
            log.info(
                "%r took %.1f ms inline; it runs on worker threads from now on",
                self.name,
                wall * 1e3,
            )


class _Job:
    __slots__ = ("ctx", "execution", "fn", "fut", "kwargs", "loop", "owner", "profile", "state")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fut: asyncio.Future[Any],
        fn: Callable[..., Any],
        kwargs: dict[str, Any],
        owner: object,
        execution: Execution[Any] | None,
        profile: SyncProfile | None,
    ) -> None:
        self.loop = loop
        self.fut = fut
        self.ctx = contextvars.copy_context()
        self.fn = fn
        self.kwargs = kwargs
        self.owner = owner
        self.execution = execution
        self.profile = profile
        self.state = _QUEUED


class _Pool:
    def __init__(self, max_workers: int, max_stuck: int, max_abandoned: int) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._workers = 0  # live workers: abandoned ones are not counted
        self._max = max_workers
        self._max_stuck = max_stuck
        self._max_abandoned = max_abandoned
        self._stuck: dict[object, int] = {}
        self._abandoned = 0

    def stuck(self, owner: object) -> int:
        """Calls of ``owner`` abandoned by their callers and still running."""
        return self._stuck.get(owner, 0)

    @property
    def workers(self) -> int:
        return self._workers

    def submit(self, job: _Job) -> None:
        with self._lock:
            stuck = self._stuck.get(job.owner, 0)
            if stuck >= self._max_stuck or self._abandoned >= self._max_abandoned:
                raise _busy(job, stuck, self._abandoned)
            spawn = self._idle == 0 and self._workers < self._max
            if spawn:
                self._workers += 1
            elif self._idle > 0:
                self._idle -= 1
        self._jobs.put(job)
        if spawn:
            self._spawn()

    def abandon(self, job: _Job) -> None:
        """The caller stopped waiting for ``job``."""
        with self._lock:
            if job.state == _QUEUED:
                job.state = _CANCELLED  # the worker that dequeues it skips it
                return
            if job.state != _RUNNING:
                return
            job.state = _ABANDONED
            self._workers -= 1
            self._abandoned += 1
            self._stuck[job.owner] = self._stuck.get(job.owner, 0) + 1
            spawn = self._idle == 0 and self._jobs.qsize() > 0
            if spawn:
                self._workers += 1
        if spawn:
            self._spawn()

    def _spawn(self) -> None:
        threading.Thread(target=self._work, name="loopwright-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            with self._lock:
                if job.state == _CANCELLED:
                    self._idle += 1
                    continue
                job.state = _RUNNING
                if job.execution is not None:
                    job.execution.set_running_or_notify_cancel()
            value, exc = _run(job)
            if job.execution is not None:
                job.execution.set_result((value, exc))
            with self._lock:
                abandoned = job.state == _ABANDONED
                job.state = _DONE
                if not abandoned:
                    self._idle += 1
                    rejoin = True
                else:
                    self._abandoned -= 1
                    left = self._stuck[job.owner] - 1
                    if left:
                        self._stuck[job.owner] = left
                    else:
                        del self._stuck[job.owner]
                    rejoin = self._workers < self._max
                    if rejoin:
                        self._workers += 1
                        self._idle += 1
            if not abandoned:
                _deliver(job.loop, job.fut, value, exc)
            del job, value, exc
            if not rejoin:
                return


def _run(job: _Job) -> tuple[Any, BaseException | None]:
    profile = job.profile
    try:
        if profile is None:
            return job.ctx.run(job.fn, **job.kwargs), None
        wall, cpu = time.perf_counter(), time.thread_time()
        value = job.ctx.run(job.fn, **job.kwargs)
        profile.ran(time.perf_counter() - wall, time.thread_time() - cpu)
        return value, None
    except GeneratorExit:
        # thrown into the awaiting coroutine, GeneratorExit would close the whole run
        # instead of failing this call: deliver it as an ordinary exception
        return None, RuntimeError("the tool raised GeneratorExit")
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
        if isinstance(exc, StopIteration):
            # asyncio refuses it in a future: the call would never be settled
            return None, RuntimeError(f"the tool raised {describe(exc)}")
        return None, exc
    except BaseException as exc:
        # raised on this worker thread, it is the tool's own fault whatever its class;
        # re-raised in the awaiting task it would end the whole run, not this call
        return None, RuntimeError(f"the tool raised {describe(exc)}")


def _busy(job: _Job, stuck: int, abandoned: int) -> ToolError:
    name = getattr(job.owner, "name", None) or getattr(job.fn, "__name__", "function")
    if stuck >= MAX_STUCK_PER_OWNER:
        why = f"{stuck} earlier calls of {name!r} are still running after their timeout"
    else:
        why = f"{abandoned} timed-out sync tool calls are still running in this process"
    return ToolError(
        f"not started: {why}; try again later or use another tool",
        kind=ToolErrorKind.TIMEOUT,
    )


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


POOL = _Pool(MAX_WORKERS, MAX_STUCK_PER_OWNER, MAX_ABANDONED)


async def run_in_worker(
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    *,
    owner: object = None,
    execution: Execution[Any] | None = None,
    profile: SyncProfile | None = None,
) -> Any:
    """``fn(**kwargs)`` on a worker thread. Cancelling the await abandons the call (a
    queued call never starts; a running one finishes on its own). ``owner`` is what
    stuck calls are counted against (the tool); ``execution`` is resolved when ``fn``
    ends; ``profile`` receives the run's timings. Raises a ``timeout``
    :class:`ToolError` without starting ``fn`` when ``owner`` has too many stuck calls."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()
    job = _Job(loop, fut, fn, kwargs, fn if owner is None else owner, execution, profile)
    POOL.submit(job)
    try:
        return await fut
    except asyncio.CancelledError:
        POOL.abandon(job)
        raise


async def call_sync(
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    placement: tuple[bool | None, SyncProfile],
    *,
    owner: object,
    execution: Execution[Any] | None = None,
) -> Any:
    """``fn(**kwargs)`` for a plain ``def`` (a tool or a graph node) where its placement
    ``(inline, profile)`` says: ``inline=True`` on the event loop, ``False`` on a worker,
    ``None`` wherever ``profile`` has learned (module doc). ``owner`` is what stuck
    calls are counted against in :func:`run_in_worker` (hashable; the tool, the node's
    profile)."""
    inline, profile = placement
    if inline is None:
        if profile.inline:
            started = time.perf_counter()
            # in a copy of the context, as on a worker: a function setting a context
            # variable behaves the same wherever it was placed
            try:
                result = contextvars.copy_context().run(fn, **kwargs)
            except (RuntimeError, UserError) as exc:
                if _RUNNING_LOOP not in str(exc):
                    raise
                # the function starts an event loop of its own (``asyncio.run``, a
                # synchronous ``Agent.run``): fine on a worker, refused on the loop's
                # thread before it runs anything. Workers for good, and this call too.
                profile.refuse_inline()
                return await run_in_worker(
                    fn, kwargs, owner=owner, execution=execution, profile=profile
                )
            profile.ran_inline(time.perf_counter() - started)
            return result
        return await run_in_worker(fn, kwargs, owner=owner, execution=execution, profile=profile)
    if inline:
        return fn(**kwargs)
    return await run_in_worker(fn, kwargs, owner=owner, execution=execution)


ERROR_KINDS = frozenset(k.value for k in ToolErrorKind)
_T = TypeVar("_T")

Attempt = tuple[object, str | None, str]
"""``(value, None, "")`` for a success, ``(None, kind, message)`` for a failure."""


class Deadline:
    """One registered deadline; ``fired`` turns true when the watchdog cancelled it."""

    __slots__ = ("fired", "task", "when")

    def __init__(self, when: float, task: asyncio.Task[Any]) -> None:
        self.when = when
        self.task = task
        self.fired = False


class _Watchdog:
    __slots__ = ("_armed_at", "_handle", "entries", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        # insertion-ordered set of pending deadlines (Deadline hashes by identity)
        self.entries: dict[Deadline, None] = {}
        self._handle: asyncio.TimerHandle | None = None
        self._armed_at = float("inf")

    def add(self, timeout: float, task: asyncio.Task[Any]) -> Deadline:
        """Register a deadline ``timeout`` seconds from now; pass it to :meth:`discard`
        when the call ends first."""
        d = Deadline(self.loop.time() + timeout, task)
        self.entries[d] = None
        if d.when < self._armed_at:
            self._arm(d.when)
        return d

    def discard(self, d: Deadline) -> None:
        self.entries.pop(d, None)

    def _arm(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed_at = when
        self._handle = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._armed_at = float("inf")
        now = self.loop.time()
        nxt = float("inf")
        for d in list(self.entries):
            if d.when <= now:
                del self.entries[d]
                d.fired = True
                d.task.cancel()
            elif d.when < nxt:
                nxt = d.when
        if nxt != float("inf"):
            self._arm(nxt)


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watchdog] = (
    weakref.WeakKeyDictionary()
)
_last: list[_Watchdog] = []


def watchdog(loop: asyncio.AbstractEventLoop | None = None) -> _Watchdog:
    """The watchdog of ``loop`` (default: the running loop), created on first use."""
    if loop is None:
        loop = asyncio.get_running_loop()
    if _last and _last[0].loop is loop:
        return _last[0]
    wd = _BY_LOOP.get(loop)
    if wd is None:
        wd = _BY_LOOP[loop] = _Watchdog(loop)
    _last[:] = [wd]
    return wd


async def run_tool(t: Tool, kwargs: dict[str, Any], execution: Execution[Any] | None = None) -> Any:
    """``t.fn(**kwargs)``: awaited if async, inline or on a worker thread if a plain
    ``def`` (see :func:`call_sync`; a ``def`` returning an awaitable has it awaited).
    ``execution`` is resolved by the worker when a threaded run ends. Running a tool is
    this module's concern: :meth:`Tool.call_bound` delegates here."""
    if t.is_async:
        return await t.fn(**kwargs)
    result = await call_sync(t.fn, kwargs, (t.inline, t.profile), owner=t, execution=execution)
    if hasattr(result, "__await__"):  # cheaper than inspect.isawaitable on the hot path
        return await result
    return result


def attempt(
    t: Tool, kwargs: dict[str, Any], execution: Execution[Any] | None = None
) -> Attempt | Awaitable[Attempt]:
    """One execution: ``(value, None, "")`` or ``(None, kind, message)``, returned as is
    when the tool finished in its first step, else as an awaitable of it.

    This is the dispatch hot path. The tool's coroutine takes its first step right here,
    synchronously: a tool that finishes without suspending (most pure-computation tools)
    costs no coroutine of this function's own (one per call less, measured as part of
    the step in ``benchmarks/notes/loop.md``, "values"), and could not be interrupted
    by a deadline anyway (a deadline only acts at a suspension point), so it pays for
    none. One that suspends continues in :func:`_rest`, under :class:`_Deadlined` when
    it has a timeout, its deadline still counted from before its first step. Measured
    against ``async with asyncio.timeout(...)`` around the call (the default 30 s
    timeout): 0.9 vs 4.4 us for a tool that does not suspend, 5.5 vs 7.2 us for one that
    suspends once; the 3.5 us is a seventh of the 25 us per-step goal.
    ``execution`` goes to the worker thread of a sync tool (see :func:`run_in_worker`).
    Callers await the result when it is not a tuple."""
    started = time.monotonic()
    try:
        coro = t.fn(**kwargs) if t.is_async else run_tool(t, kwargs, execution)
        if type(coro) is not CoroutineType:  # some other awaitable (a future...)
            coro = _awaiting(coro)
        try:
            first = coro.send(None)
        except StopIteration as done:
            value = done.value
            if type(value) is CoroutineType:
                return _unawaited(t, value)
            timeout = t.spec.timeout
            if timeout is not None and time.monotonic() - started > timeout:
                return _overran(t, time.monotonic() - started)
            return value, None, ""
    except BaseException as exc:
        return _failed(t, exc)
    return _rest(t, coro, first, started)


def _overran(t: Tool, elapsed: float) -> Attempt:
    """A run that finished without ever giving the event loop a chance to stop it (a
    plain ``def`` run inline, an ``async def`` that never awaited), later than its
    timeout. It could not be cut, but it is measured: the call fails as ``timeout`` like
    a run abandoned at its deadline, whose result nobody reads either (its side effects,
    if any, happened in both cases)."""
    if t.is_async:
        where, fix = "without reaching an await", "await while it works"
    else:
        where, fix = "inline on the event loop", "declare it inline=False"
    return (
        None,
        ToolErrorKind.TIMEOUT.value,
        f"tool {t.name!r} ran {elapsed:.3g} s, past its timeout of {t.spec.timeout:g} s, "
        f"{where}, where nothing can interrupt it; its result was discarded ({fix} to "
        "be stopped at the timeout, or raise the timeout)",
    )


async def _rest(t: Tool, coro: Coroutine[Any, Any, Any], first: Any, started: float) -> Attempt:
    """The rest of a tool run that suspended in its first step (see :func:`attempt`)."""
    timeout = t.spec.timeout
    try:
        if timeout is None or (t.inline and not t.is_async):
            value = await _Resumed(coro, first)
        else:
            remaining = timeout - (time.monotonic() - started)
            value = await _Deadlined(coro, first, remaining)
        if type(value) is CoroutineType:
            return _unawaited(t, value)
        return value, None, ""
    except BaseException as exc:
        return _failed(t, exc)


def _unawaited(t: Tool, value: CoroutineType[Any, Any, Any]) -> Attempt:
    """An ``async def`` tool returned a coroutine instead of its result: an ``await``
    is missing. Its work never ran; closed here, it never will (and Python does not
    warn later that it was never awaited)."""
    name = getattr(value, "__qualname__", "a coroutine")
    value.close()
    return (
        None,
        ToolErrorKind.PERMANENT.value,
        f"tool {t.name!r} returned the coroutine {name}() instead of its result; it needs an await",
    )


def _failed(t: Tool, exc: BaseException) -> Attempt:
    """The outcome of a tool run that raised ``exc`` (re-raised when the caller's task is
    being cancelled, or when it may not be the tool's: another ``BaseException`` out of
    an async tool, which may be an event-loop library's own signal; a plain ``def`` has
    no such thing, so whatever it raised is its fault)."""
    if isinstance(exc, _Expired):
        return (
            None,
            ToolErrorKind.TIMEOUT.value,
            f"tool {t.name!r} did not finish within {t.spec.timeout:g} s",
        )
    if isinstance(exc, asyncio.CancelledError):
        if being_cancelled():
            raise exc
        return None, ToolErrorKind.PERMANENT.value, "the tool raised CancelledError"
    if isinstance(exc, (Exception, SystemExit, KeyboardInterrupt, GeneratorExit)):
        # a tool raising sys.exit(), KeyboardInterrupt or GeneratorExit is a tool fault: a
        # real Ctrl-C under asyncio.run reaches the run as a cancellation (docs/loop.md)
        return (None, *classify(exc))
    if not t.is_async:
        return None, ToolErrorKind.PERMANENT.value, f"the tool raised {describe(exc)}"
    raise exc


def classify(exc: BaseException) -> tuple[str, str]:
    """``(kind, message)`` of an exception a tool raised: ``ToolError`` carries its kind,
    ``TimeoutError``/``ConnectionError`` are ``transient``, anything else ``permanent``."""
    if isinstance(exc, ToolError):
        kind = exc.kind.value if isinstance(exc.kind, ToolErrorKind) else str(exc.kind)
        if kind not in ERROR_KINDS:
            kind = ToolErrorKind.PERMANENT.value
        return kind, str(exc) or type(exc).__name__
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return ToolErrorKind.TRANSIENT.value, describe(exc)
    return ToolErrorKind.PERMANENT.value, describe(exc)


def settled(execution: Execution[Any]) -> Attempt:
    """The outcome of a finished worker run, classified like :func:`attempt`."""
    value, exc = execution.result()
    if exc is None:
        return value, None, ""
    return (None, *classify(exc))


class _Expired(Exception):
    """The dispatcher's own deadline for a call passed."""


class _Deadlined:
    """Awaits ``coro`` under the loop's watchdog, ``seconds`` from now: the
    semantics of ``asyncio.timeout`` (cancel the task at the deadline, turn that
    cancellation into :class:`_Expired`, leave outside cancellations alone) without a
    timer handle per call (see :func:`watchdog`). ``coro`` already took its first step, which
    yielded ``first``."""

    __slots__ = ("coro", "first", "seconds")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any, seconds: float) -> None:
        self.coro = coro
        self.first = first
        self.seconds = seconds

    def __await__(self) -> Generator[Any, Any, object]:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        assert task is not None
        baseline = task.cancelling()
        wd = watchdog(loop)
        deadline = wd.add(self.seconds, task)
        # a tool that swallows the deadline's cancellation gets GRACE_S more seconds (to
        # finish what it does on cancellation), then is no longer driven: otherwise it
        # ran on as long as it liked and the call's timeout did not hold
        grace: list[Deadline] = []
        try:
            value = yield from _resume(self.coro, self.first, deadline, grace, wd)
        except asyncio.CancelledError:
            left = _uncancel(task, deadline, grace)
            if deadline.fired and left <= baseline:
                raise _Expired from None
            raise
        finally:
            for d in (deadline, *grace):
                if not d.fired:
                    wd.discard(d)
        _uncancel(task, deadline, grace)  # fired, but the tool ended meanwhile
        return value


GRACE_S = 2.0
"""Seconds an async tool that swallowed its deadline's cancellation may still run."""


def _uncancel(task: asyncio.Task[Any], deadline: Deadline, grace: list[Deadline]) -> int:
    """Take back the cancellations the deadlines that fired made; the task's count."""
    left = task.cancelling()
    for d in (deadline, *grace):
        if d.fired:
            left = task.uncancel()
    return left


class _Resumed:
    """``await`` a coroutine whose first step already yielded ``first``."""

    __slots__ = ("coro", "first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self.coro = coro
        self.first = first

    def __await__(self) -> Generator[Any, Any, object]:
        return _resume(self.coro, self.first)


async def _awaiting(awaitable: Awaitable[_T]) -> _T:
    return await awaitable


def _resume(
    coro: Coroutine[Any, Any, Any],
    first: Any,
    deadline: Deadline | None = None,
    grace: list[Deadline] | None = None,
    wd: _Watchdog | None = None,
) -> Generator[Any, Any, object]:
    """``yield from coro`` for a coroutine whose first step already yielded ``first``.
    With ``deadline`` (see :class:`_Deadlined`): when ``coro`` swallows the cancellation
    the deadline made, a grace deadline is added to ``grace``; once that one fires too,
    ``coro`` is closed and the cancellation raised here instead of thrown into it."""
    yielded = first
    try:
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                if grace and grace[0].fired:
                    with contextlib.suppress(RuntimeError):  # it ignored GeneratorExit
                        coro.close()
                    raise
                yielded = coro.throw(exc)
                if deadline is not None and deadline.fired and not grace:
                    assert grace is not None and wd is not None
                    task = deadline.task
                    grace.append(wd.add(GRACE_S, task))
            else:
                yielded = coro.send(sent)
    except StopIteration as done:
        return done.value


def describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
