"""Values shared by every sandbox backend: the limits a run gets and what it returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Resource limits for one sandboxed execution.

    ``wall_time`` (seconds) is enforced from outside: the whole process tree is killed.
    ``cpu_time`` (seconds), ``memory_bytes`` (address space), ``max_processes``,
    ``max_file_bytes`` (largest file the code may write) and ``max_open_files`` are kernel
    resource limits. ``max_output_bytes`` caps stdout and stderr each; the process is
    killed once it writes more.
    """

    wall_time: float = 10.0
    cpu_time: int = 10
    memory_bytes: int = 512 * 2**20
    max_processes: int = 32
    max_file_bytes: int = 16 * 2**20
    max_open_files: int = 256
    max_output_bytes: int = 64_000

    def __post_init__(self) -> None:
        # each value goes to prlimit or a timer: one it cannot take failed every run with
        # prlimit's own message, as if the program had
        for name in _WHOLE_LIMITS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"SandboxLimits.{name} must be a whole number > 0, got {value!r}")
        value = self.wall_time
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0 < value < math.inf  # also refuses NaN
        ):
            raise ValueError(
                f"SandboxLimits.wall_time must be a finite number of seconds > 0, got {value!r}"
            )


_WHOLE_LIMITS = (
    "cpu_time",
    "memory_bytes",
    "max_processes",
    "max_file_bytes",
    "max_open_files",
    "max_output_bytes",
)


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """Where and how code runs.

    ``backend``: ``"auto"`` (bubblewrap, else nsjail; never the weaker fallback silently),
    or one of ``"bwrap"``, ``"nsjail"``, ``"rlimit"`` (the fallback: resource limits and a
    separate user only; see docs/security.md for what it does not confine).
    ``workdir``: the private writable directory mounted at ``/work`` (``None``: a fresh
    temporary directory per tool instance). ``readonly``: host paths shown read-only under
    ``/input/<name>``; they must be readable by the sandbox user (uid 65534 when the host
    process runs as root). ``python``: the interpreter ``python_exec`` runs, which must live
    under ``/usr`` so the sandbox can see it.
    """

    backend: str = "auto"
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    workdir: Path | None = None
    readonly: tuple[Path, ...] = ()
    python: str = "/usr/bin/python3"

    def __post_init__(self) -> None:
        # bwrap and nsjail mount each at its input_name: a second path of one name hid
        # the first without a word
        seen: dict[str, Path] = {}
        for path in self.readonly:
            shown = input_name(Path(path))
            if shown in seen:
                raise ValueError(
                    f"SandboxConfig.readonly: {seen[shown]} and {path} would both be {shown}; "
                    "give paths with different last names (e.g. link one under another name)"
                )
            seen[shown] = Path(path)


def input_name(path: Path) -> str:
    """Where a ``readonly`` host path shows inside the sandbox."""
    return f"/input/{path.name or 'root'}"


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """What one execution did. ``exit_code`` is ``None`` when the sandbox killed the code
    (time limit or output limit); ``signal`` names the signal that ended it, if any."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    output_truncated: bool
    backend: str
    seconds: float
    signal: str | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"exit_code": self.exit_code}
        if self.signal:
            out["signal"] = self.signal
        if self.timed_out:
            out["timed_out"] = True
        if self.output_truncated:
            out["output_truncated"] = True
        out["stdout"] = self.stdout
        out["stderr"] = self.stderr
        return out
