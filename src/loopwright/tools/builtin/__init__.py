"""Built-in tools, each safe by construction (see each module's docstring).

``BUILTIN_TOOLS`` maps a tool name to a factory ``(config: BuiltinConfig) -> Tool``::

    from loopwright.tools.builtin import BUILTIN_TOOLS, BuiltinConfig, make_tools
    tools = make_tools(["calculator", "get_weather"])             # default config
    reader = BUILTIN_TOOLS["read_file"](BuiltinConfig(root=Path("docs")))

``DEFAULT_TOOLS`` (calculator, get_weather) is what the CLI uses without ``--tools``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loopwright.core.errors import UserError
from loopwright.core.tools import ToolSpec
from loopwright.tools.builtin import arithmetic, calculator, code, email, files, sql, weather
from loopwright.tools.decorator import Tool
from loopwright.tools.invocation import ToolContext
from loopwright.tools.sandbox import Sandbox, SandboxConfig


@dataclass(frozen=True, slots=True)
class BuiltinConfig:
    """Where the file-touching built-ins work. ``root``: read_file's root directory;
    ``database``: sql_query's SQLite file; ``outbox``: send_email's JSON-lines file;
    ``sandbox``: where python_exec/shell run (``None``: the default backend, overridable
    with ``LOOPWRIGHT_SANDBOX``)."""

    root: Path = field(default_factory=Path.cwd)
    database: Path = field(default_factory=lambda: Path("loopwright.db"))
    outbox: Path = field(default_factory=lambda: Path("outbox.jsonl"))
    max_file_bytes: int = files.DEFAULT_MAX_BYTES
    max_rows: int = sql.DEFAULT_MAX_ROWS
    sandbox: SandboxConfig | None = None


def _from_spec(spec: ToolSpec, fn: Callable[..., Any], **flags: Any) -> Tool:
    return Tool.from_schema(
        spec.name,
        spec.description,
        spec.parameters,
        fn,
        requires_confirmation=spec.requires_confirmation,
        permission=spec.permission,
        idempotent=spec.idempotent,
        timeout=spec.timeout,
        max_result_chars=spec.max_result_chars,
        unknown_outcome=spec.unknown_outcome,
        **flags,
    )


def make_calculator(config: BuiltinConfig | None = None) -> Tool:
    return _from_spec(calculator.SPEC, calculator.calculator)


def make_add(config: BuiltinConfig | None = None) -> Tool:
    return _from_spec(arithmetic.ADD_SPEC, arithmetic.add)


def make_multiply(config: BuiltinConfig | None = None) -> Tool:
    return _from_spec(arithmetic.MULTIPLY_SPEC, arithmetic.multiply)


def make_divide(config: BuiltinConfig | None = None) -> Tool:
    return _from_spec(arithmetic.DIVIDE_SPEC, arithmetic.divide)


def make_get_weather(config: BuiltinConfig | None = None) -> Tool:
    return _from_spec(weather.SPEC, weather.get_weather)


def make_read_file(config: BuiltinConfig | None = None) -> Tool:
    cfg = config or BuiltinConfig()
    reader = files.FileReader(cfg.root, cfg.max_file_bytes)

    def read_file(path: str) -> str:
        return reader.read(path)

    # file I/O can block (a slow disk, a network mount): always on a worker thread
    return _from_spec(files.SPEC, read_file, inline=False, untrusted_output=True)


def make_sql_query(config: BuiltinConfig | None = None) -> Tool:
    cfg = config or BuiltinConfig()
    runner = sql.SqlRunner(cfg.database, cfg.max_rows)

    def sql_query(query: str, params: list[object] | None = None) -> dict[str, object]:
        return runner.query(query, params)

    props = dict(sql.SPEC.parameters["properties"])
    props["query"] = {**props["query"], "description": sql.query_description(runner.values())}
    spec = replace(
        sql.SPEC,
        description=sql.description(runner.tables()),
        parameters={**sql.SPEC.parameters, "properties": props},
    )
    return _from_spec(spec, sql_query, inline=False, untrusted_output=True)


def make_send_email(config: BuiltinConfig | None = None) -> Tool:
    cfg = config or BuiltinConfig()
    outbox = email.Outbox(cfg.outbox)

    def send_email(to: str, subject: str, body: str, ctx: ToolContext) -> dict[str, object]:
        key = ctx.idempotency_key or email.email_key({"to": to, "subject": subject, "body": body})
        return outbox.send(to, subject, body, key)

    return _from_spec(
        email.SPEC,
        send_email,
        idempotency_key=email.email_key,
        outcome_check=outbox.outcome,
        validators=(email.check_arguments,),
        inline=False,  # waits on a file lock
    )


def _sandbox_for(config: BuiltinConfig | None) -> Sandbox:
    cfg = config or BuiltinConfig()
    return Sandbox(cfg.sandbox or code.sandbox_config_from_env())


def make_python_exec(config: BuiltinConfig | None = None) -> Tool:
    sandbox = _sandbox_for(config)

    async def python_exec(code: str) -> dict[str, object]:
        return (await sandbox.run_python(code)).to_dict()

    weakref.finalize(python_exec, sandbox.close)  # the work directory lives as long as the tool
    return _from_spec(
        code.python_spec(sandbox.config),
        python_exec,
        untrusted_output=True,
        confirm_when_tainted=_gated_when_tainted(sandbox),
    )


def make_shell(config: BuiltinConfig | None = None) -> Tool:
    sandbox = _sandbox_for(config)

    async def shell(command: str) -> dict[str, object]:
        return (await sandbox.run_shell(command)).to_dict()

    weakref.finalize(shell, sandbox.close)
    return _from_spec(
        code.shell_spec(sandbox.config),
        shell,
        untrusted_output=True,
        confirm_when_tainted=_gated_when_tainted(sandbox),
    )


def _gated_when_tainted(sandbox: Sandbox) -> bool | None:
    """A sandbox that confines everything (bubblewrap, nsjail: no network, nothing written
    outside its own work directory) gives model code no way to move data out or change
    the host, so a tainted run may keep running code without a person (the tools that
    could carry data out stay gated). The fallback backend leaves gaps (the network
    among them): its calls stay gated like any write tool (docs/security.md, "Taint")."""
    return False if not sandbox.gaps else None


BUILTIN_TOOLS: Mapping[str, Callable[[BuiltinConfig | None], Tool]] = {
    "calculator": make_calculator,
    "get_weather": make_get_weather,
    "read_file": make_read_file,
    "sql_query": make_sql_query,
    "send_email": make_send_email,
    "add": make_add,
    "multiply": make_multiply,
    "divide": make_divide,
    "python_exec": make_python_exec,
    "shell": make_shell,
}
DEFAULT_TOOLS: tuple[str, ...] = ("calculator", "get_weather")
# run model-written code: only when named explicitly (never part of "every built-in")
OPT_IN_TOOLS: tuple[str, ...] = ("python_exec", "shell")


def builtin_specs() -> list[ToolSpec]:
    """The spec of every built-in, without building the opt-in tools (building one needs
    a working sandbox; listing them must not)."""
    specs = []
    for name, factory in BUILTIN_TOOLS.items():
        if name == "python_exec":
            specs.append(code.python_spec(SandboxConfig()))
        elif name == "shell":
            specs.append(code.shell_spec(SandboxConfig()))
        else:
            specs.append(factory(None).spec)
    return specs


def make_tools(names: Iterable[str], config: BuiltinConfig | None = None) -> list[Tool]:
    """Build the named built-ins. An unknown name is a :class:`UserError` listing them."""
    out: list[Tool] = []
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        factory = BUILTIN_TOOLS.get(name)
        if factory is None:
            known = ", ".join(BUILTIN_TOOLS)
            raise UserError(f"unknown tool {name!r}; choose from: {known}")
        out.append(factory(config))
    return out


__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_TOOLS",
    "OPT_IN_TOOLS",
    "BuiltinConfig",
    "builtin_specs",
    "make_tools",
]
