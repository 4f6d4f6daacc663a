"""Which MCP servers to connect to: one :class:`MCPServerConfig` per server.

A server is a command line (spoken to over stdio) or a URL (streamable HTTP, with
optional headers for auth). Configs come from a ``--mcp`` string
(:meth:`MCPServerConfig.parse`) or from a JSON/YAML file of named servers
(:func:`load_config`); see ``docs/mcp.md`` for the file format.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopwright.core.errors import ConfigError

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FIELDS = {
    "command",
    "args",
    "url",
    "headers",
    "env",
    "cwd",
    "prefix",
    "timeout",
    "trusted",
    "tools",
    "confirm_destructive",
    "roots",
}


@dataclass(frozen=True, slots=True)
class MCPServerConfig:
    """One MCP server.

    Exactly one of ``command`` (argv of a stdio server) and ``url`` (streamable HTTP) is
    set. ``headers`` go with every HTTP request (``Authorization: Bearer ...``). ``prefix``
    is put before each tool name (``time_`` + ``get_current_time``) to keep servers'
    names apart. ``timeout`` bounds each call in seconds. ``trusted=False`` (the default)
    wraps every result as untrusted data. ``tools`` keeps only the named tools.
    ``confirm_destructive`` makes tools that may be destructive ask for confirmation.
    ``roots`` are directories offered to the server as MCP roots (the places it may work
    in); without them the client does not declare the roots capability.
    """

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    prefix: str = ""
    timeout: float | None = 60.0
    trusted: bool = False
    tools: tuple[str, ...] | None = None
    confirm_destructive: bool = True
    roots: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.command, str):  # command[0] would be its first letter
            raise ConfigError(
                f"MCP server {self.name!r}: command is the argv as a tuple, e.g. "
                f"command={tuple(shlex.split(self.command))!r} "
                f"(or MCPServerConfig.parse({self.command!r}))"
            )
        if bool(self.command) == bool(self.url):
            raise ConfigError(
                f"MCP server {self.name!r}: give either a command (stdio) or a url (HTTP)"
            )
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"MCP server {self.name!r}: url must start with http:// or https://")
        timeout = self.timeout
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < math.inf  # refuses nan
        ):
            raise ConfigError(
                f"MCP server {self.name!r}: timeout must be > 0 seconds, got {timeout!r}"
            )
        self._check_types()

    def _check_types(self) -> None:
        """The fields a file is checked for (``from_mapping``), checked for code that
        builds a config directly: ``trusted="false"`` would trust the server, and a
        ``tools="get_time"`` string would keep every tool whose name is in it."""
        where = f"MCP server {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"an MCP server needs a name (a non-empty str), got {self.name!r}")
        for flag in ("trusted", "confirm_destructive"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(
                    f"{where}: {flag} must be True or False, got {getattr(self, flag)!r}"
                )
        if not isinstance(self.prefix, str):
            raise ConfigError(f"{where}: prefix must be a str, got {self.prefix!r}")
        for names in ("tools", "roots"):
            value = getattr(self, names)
            if value is None and names == "tools":
                continue
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ConfigError(
                    f"{where}: {names} must be a tuple of str, e.g. ({value!r},), got {value!r}"
                )

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    @classmethod
    def parse(cls, spec: str, name: str | None = None) -> MCPServerConfig:
        """A server from a ``--mcp`` value: a URL, or a shell-quoted command line."""
        spec = spec.strip()
        if not spec:
            raise ConfigError('--mcp needs a command or a URL, e.g. --mcp "mcp-server-time"')
        if spec.startswith(("http://", "https://")):
            return cls(name or _name_from_url(spec), url=spec)
        try:
            argv = tuple(shlex.split(spec))
        except ValueError as exc:
            raise ConfigError(f"--mcp {spec!r}: cannot split the command line ({exc})") from None
        return cls(name or Path(argv[0]).name, command=argv)

    @classmethod
    def from_mapping(cls, name: str, data: Mapping[str, Any]) -> MCPServerConfig:
        """A server from one entry of a config file (see :func:`load_config`)."""
        unknown = set(data) - _FIELDS
        if unknown:
            raise ConfigError(
                f"MCP server {name!r}: unknown field(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(_FIELDS))}"
            )
        argv = (*_strings(name, data, "command"), *_strings(name, data, "args"))
        tools = data.get("tools")
        env = _str_map(name, data, "env") if data.get("env") is not None else None
        return cls(
            name=name,
            command=argv if data.get("command") is not None else (),
            url=_text(name, data, "url"),
            headers=_str_map(name, data, "headers"),
            env=env,
            cwd=_text(name, data, "cwd"),
            prefix=_text(name, data, "prefix") or "",
            timeout=_timeout(name, data.get("timeout", 60.0)),
            trusted=_flag(name, data, "trusted", False),
            tools=_strings(name, data, "tools") if tools is not None else None,
            confirm_destructive=_flag(name, data, "confirm_destructive", True),
            roots=_strings(name, data, "roots"),
        )


def expand_env(value: str) -> str:
    """``${NAME}`` replaced by the environment variable (so tokens stay out of files)."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ConfigError(f"MCP config refers to ${{{name}}} but {name} is not set")
        return os.environ[name]

    return _ENV_REF.sub(one, value)


def load_config(path: str | Path) -> dict[str, MCPServerConfig]:
    """Named servers from a JSON or YAML file.

    The file holds ``{"servers": {NAME: ENTRY, ...}}`` (``mcpServers`` is accepted too,
    the key other MCP clients use). An entry has ``command`` (+ ``args``) or ``url`` (+
    ``headers``), and optionally ``env``, ``cwd``, ``prefix``, ``timeout``, ``trusted``,
    ``tools``, ``confirm_destructive`` and ``roots``. ``${VAR}`` in headers and env is expanded.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read MCP config {file}: {exc.strerror or exc}") from None
    try:
        if file.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as exc:
        raise ConfigError(f"MCP config {file} does not parse: {exc}") from None
    servers = data.get("servers", data.get("mcpServers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise ConfigError(f'MCP config {file} needs a "servers" object of named servers')
    out: dict[str, MCPServerConfig] = {}
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"MCP config {file}: server {name!r} must be an object")
        out[str(name)] = MCPServerConfig.from_mapping(str(name), entry)
    return out


# Each field is read with its JSON type checked: bool("false") is True (a server silently
# trusted), tuple("--port") is ('-', '-', 'p', ...) (a command the server never saw).
def _flag(name: str, data: Mapping[str, Any], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"MCP server {name!r}: {key} must be true or false, got {value!r}")
    return value


def _text(name: str, data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"MCP server {name!r}: {key} must be a string, got {value!r}")
    return value


def _strings(name: str, data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list of strings (numbers allowed: ``--port 8080`` written as a number)."""
    value = data.get(key)
    if value is None:
        return ()
    if isinstance(value, str) and key == "command":
        return (value,)
    if not isinstance(value, list) or not all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value
    ):
        raise ConfigError(
            f"MCP server {name!r}: {key} must be a list of strings, got {value!r}"
            + (f' (e.g. "{key}": [{json.dumps(value)}])' if isinstance(value, str) else "")
        )
    return tuple(str(v) for v in value)


def _str_map(name: str, data: Mapping[str, Any], key: str) -> dict[str, str]:
    """An object of string (or number) values; ``${VAR}`` in them is expanded."""
    value = data.get(key) or {}
    if not isinstance(value, Mapping) or not all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value.values()
    ):
        raise ConfigError(
            f'MCP server {name!r}: {key} must be an object of strings, e.g. {{"NAME": "value"}}'
            f", got {value!r}"
        )
    return {str(k): expand_env(str(v)) for k, v in value.items()}


def _timeout(name: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"MCP server {name!r}: timeout must be a number of seconds or null")
    return float(value)


def _name_from_url(url: str) -> str:
    host = url.split("//", 1)[1].split("/", 1)[0]
    return re.sub(r"[^A-Za-z0-9_-]", "_", host)
