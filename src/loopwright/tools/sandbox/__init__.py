"""Run model-written code confined by the operating system (see docs/security.md).

    sandbox = Sandbox(SandboxConfig(limits=SandboxLimits(wall_time=5)))
    result = await sandbox.run_python("print(2 + 2)")   # SandboxResult(exit_code=0, stdout="4\\n", ...)
    sandbox.close()                                     # removes the private work directory

A :class:`Sandbox` owns one private work directory (``/work`` inside the sandbox) that
persists across its runs, so code can write a file in one call and read it in the next.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from loopwright.tools.sandbox.backends import (
    Backend,
    SandboxUnavailable,
    available_backends,
    resolve_backend,
)
from loopwright.tools.sandbox.limits import SandboxConfig, SandboxLimits, SandboxResult
from loopwright.tools.sandbox.process import run_confined, sandbox_uid


class Sandbox:
    """One confined work area and the backend that runs code in it.

    Construction resolves the backend and raises :class:`SandboxUnavailable` (a
    ``UserError`` naming the fix) when no backend confines code on this machine.
    """

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self.backend: Backend = resolve_backend(self.config.backend)
        self._owned = self.config.workdir is None
        self._workdir = self.config.workdir

    @property
    def workdir(self) -> Path:
        """The host directory mounted at ``/work`` (created on first use)."""
        if self._workdir is None:
            path = Path(tempfile.mkdtemp(prefix="loopwright-sandbox-"))
            uid = sandbox_uid()
            if uid is not None:
                os.chown(path, uid, uid)
            self._workdir = path
        return self._workdir

    @property
    def gaps(self) -> tuple[str, ...]:
        """What this backend does not confine (empty for bubblewrap and nsjail)."""
        return self.backend.gaps

    def _env(self) -> dict[str, str]:
        home = "/work" if self.backend.confined_root else str(self.workdir)
        tmp = "/tmp" if self.backend.confined_root else str(self.workdir)
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": home,
            "TMPDIR": tmp,
            "LANG": "C.UTF-8",
        }

    async def run(self, argv: Sequence[str], stdin: bytes | None = None) -> SandboxResult:
        """Run ``argv`` (an absolute program path visible in the sandbox, under /usr)."""
        from loopwright.tools.sandbox.process import prlimit_prefix

        inner = self.backend.command(argv, self.workdir, self.config.readonly)
        # bwrap and nsjail each add a supervising process inside the limit
        cmd = [*prlimit_prefix(self.config.limits, extra_processes=3), *inner]
        return await run_confined(
            cmd,
            limits=self.config.limits,
            cwd=self.workdir,
            env=self._env(),
            stdin=stdin,
            backend=self.backend.name,
            switch_user=self.backend.switch_user,
        )

    async def run_python(self, code: str) -> SandboxResult:
        """Run a Python program (read from stdin; ``-I``: no user site, no PYTHON* env)."""
        return await self.run([self.config.python, "-I", "-X", "utf8", "-"], code.encode())

    async def run_shell(self, command: str) -> SandboxResult:
        """Run a shell command line with ``/bin/sh -c``."""
        return await self.run(["/bin/sh", "-c", command])

    def close(self) -> None:
        """Remove the work directory if this sandbox created it."""
        if self._owned and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


__all__ = [
    "Sandbox",
    "SandboxConfig",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "available_backends",
]
