"""Start a confined command, enforce the wall clock and the output cap, kill the tree.

Every backend ends up here: the backend only builds the command line. Kernel resource
limits are applied by util-linux ``prlimit`` wrapping the command, not by a ``preexec_fn``
(running Python in a forked child of a threaded program can deadlock). When the host runs
as root the command is started as the unprivileged uid 65534: ``RLIMIT_NPROC`` is not
enforced for root, and a namespace escape then lands as ``nobody``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from loopwright.tools.sandbox.limits import SandboxLimits, SandboxResult

SANDBOX_UID = 65534  # "nobody" on Debian and most distributions
_CHUNK = 65536
_TRUNCATED = "\n[output truncated: the sandbox stopped the program at {} bytes]"


def sandbox_uid() -> int | None:
    """The uid confined code runs as: ``nobody`` when we are root, else our own uid
    (``None``: no switch)."""
    return SANDBOX_UID if os.geteuid() == 0 else None


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += os.stat(f"/proc/{entry}").st_uid == uid
            except OSError:
                continue
    return count


def prlimit_prefix(limits: SandboxLimits, extra_processes: int = 0) -> list[str]:
    """``prlimit`` arguments applying ``limits``. ``RLIMIT_NPROC`` counts every process of
    the user, so for a non-root host user the cap is its current count plus the budget."""
    uid = sandbox_uid()
    nproc = limits.max_processes + extra_processes
    if uid is None:
        nproc += _processes_of(os.geteuid())
    return [
        "prlimit",
        f"--as={limits.memory_bytes}",
        f"--cpu={limits.cpu_time}",
        f"--nproc={nproc}",
        f"--fsize={limits.max_file_bytes}",
        f"--nofile={limits.max_open_files}",
        "--core=0",
        "--",
    ]


def _kill_program(proc: asyncio.subprocess.Process) -> None:
    """Kill the program: under bwrap/nsjail its monitor's direct children (the confined
    program; the monitor then reaps it and exits on its own), else the process group.
    Killing the monitor first would orphan the program to the host's pid 1, which in
    containers may never reap it (each zombie keeps counting against the sandbox user's
    RLIMIT_NPROC)."""
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    except OSError:
        children = []
    for child in children:
        with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
            os.kill(int(child), signal.SIGKILL)
    if not children:
        _kill_group(proc)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    # start_new_session=True made the child a process-group leader; the namespace
    # backends also tie their program to it with PR_SET_PDEATHSIG (--die-with-parent)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Kill the program, give its monitor a moment to reap it, then kill what is left."""
    _kill_program(proc)
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), 2.0)
    except TimeoutError:
        _kill_group(proc)


async def _pump(
    stream: asyncio.StreamReader, cap: int, buf: bytearray, proc: asyncio.subprocess.Process
) -> bool:
    """Read ``stream`` into ``buf`` up to ``cap`` bytes; past it, kill the program and
    report True. Reading goes on (discarding) until end of file: a pipe left unread keeps
    asyncio's subprocess transport open after the run."""
    over = False
    while chunk := await stream.read(_CHUNK):
        if over:
            continue
        room = cap - len(buf)
        if len(chunk) > room:
            buf += chunk[: max(room, 0)]
            over = True
            _kill_program(proc)
        else:
            buf += chunk
    return over


async def _drain(proc: asyncio.subprocess.Process, seconds: float) -> None:
    """After a kill: read what is left so the pipes reach end of file and close."""
    streams = [s for s in (proc.stdout, proc.stderr) if s is not None]
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*(s.read() for s in streams)), seconds)


def _signal_name(code: int | None) -> str | None:
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


async def run_confined(
    cmd: Sequence[str],
    *,
    limits: SandboxLimits,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bytes | None,
    backend: str,
    switch_user: bool = True,
) -> SandboxResult:
    """Run ``cmd`` and collect its result. Never raises for the program's own failures;
    cancellation kills the process tree before propagating. ``switch_user``: start the
    command as :func:`sandbox_uid` (backends that map users themselves pass False)."""
    uid = sandbox_uid() if switch_user else None
    ids: dict[str, object] = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(cwd),
        env=dict(env),
        start_new_session=True,
        **ids,  # type: ignore[arg-type]
    )
    out, err = bytearray(), bytearray()
    timed_out = False
    try:
        if stdin is not None and proc.stdin is not None:
            proc.stdin.write(stdin)
            proc.stdin.close()
        assert proc.stdout is not None and proc.stderr is not None
        pumps = asyncio.gather(
            _pump(proc.stdout, limits.max_output_bytes, out, proc),
            _pump(proc.stderr, limits.max_output_bytes, err, proc),
        )
        try:
            # the exit under the same deadline: a program that closes its output streams
            # ends the pumps at once and would otherwise run on unbounded
            cut, _ = await asyncio.wait_for(asyncio.gather(pumps, proc.wait()), limits.wall_time)
        except TimeoutError:
            timed_out, cut = True, (False, False)
            await _stop(proc)
            await _drain(proc, 2.0)
        code = await proc.wait()
    finally:
        if proc.returncode is None:
            await asyncio.shield(_stop(proc))
    truncated = any(cut)
    killed = timed_out or truncated
    stdout = out.decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace")
    if cut[0]:
        stdout += _TRUNCATED.format(limits.max_output_bytes)
    if cut[1]:
        stderr += _TRUNCATED.format(limits.max_output_bytes)
    return SandboxResult(
        exit_code=None if killed else code,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
        output_truncated=truncated,
        backend=backend,
        seconds=time.perf_counter() - start,
        signal="SIGKILL" if killed else _signal_name(code),
    )
