"""``python_exec`` and ``shell``: run model-written code in an OS-level sandbox.

Both are off by default (name them explicitly: ``--tools python_exec``). Each tool
instance owns one :class:`~loopwright.tools.sandbox.Sandbox`: a private work directory at
``/work`` that persists between calls of one agent, no network, no host files besides
``/usr``, an empty environment, and the limits of :class:`SandboxLimits`. Building the tool
fails with a message naming the fix when no backend confines code on this machine.
Results are outside content (``untrusted_output``): the program may print anything.
"""

from __future__ import annotations

import os

from loopwright.core.tools import Permission, ToolSpec
from loopwright.tools.sandbox import SandboxConfig

MAX_CODE_CHARS = 100_000


def _spec(name: str, description: str, field: str, field_doc: str, cfg: SandboxConfig) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {
                field: {
                    "type": "string",
                    "description": field_doc,
                    "minLength": 1,
                    "maxLength": MAX_CODE_CHARS,
                },
            },
            "required": [field],
            "additionalProperties": False,
        },
        permission=Permission.WRITE,
        idempotent=False,
        # the sandbox enforces its own wall clock and kills the program; the dispatcher's
        # deadline only backs it up
        timeout=cfg.limits.wall_time + 10.0,
        max_result_chars=2 * cfg.limits.max_output_bytes + 200,
    )


def python_spec(cfg: SandboxConfig) -> ToolSpec:
    return _spec(
        "python_exec",
        "Run a Python 3 program in an isolated sandbox and return its exit code, stdout and "
        "stderr. Print the values you need. No network; files persist in the current "
        "directory between calls; only the standard library is available.",
        "code",
        "the complete Python program to run",
        cfg,
    )


def shell_spec(cfg: SandboxConfig) -> ToolSpec:
    return _spec(
        "shell",
        "Run a POSIX shell command line in an isolated sandbox and return its exit code, "
        "stdout and stderr. No network; files persist in the current directory between calls.",
        "command",
        "the shell command line to run with /bin/sh -c",
        cfg,
    )


def sandbox_config_from_env() -> SandboxConfig:
    """The default sandbox, with the backend overridable by ``LOOPWRIGHT_SANDBOX``
    (``auto``, ``bwrap``, ``nsjail`` or ``rlimit``)."""
    return SandboxConfig(backend=os.environ.get("LOOPWRIGHT_SANDBOX", "auto").strip() or "auto")


__all__ = ["python_spec", "sandbox_config_from_env", "shell_spec"]
