"""How a stored session's agent is rebuilt, without trusting the store.

A session keeps the *recipe* of its agent -- what the user gave on the command line
(model, endpoint, system prompt, tools, the folders and files the built-in tools may
touch, limits) -- so that ``loopwright resume`` and ``loopwright chat --session`` can go
on in another process. The store is not a trusted place: whoever can write it could
point the endpoint elsewhere (the API key would be sent there), widen ``read_file`` to
``/`` or name a module to import. So the recipe is stored *sealed*: with an
HMAC-SHA256 tag under a key that lives only in this user's configuration
(``$XDG_CONFIG_HOME/loopwright/session.key``, created on first use, mode 0600).

* A sealed recipe whose tag verifies was written by this user on this machine: it is
  used as if typed again.
* Anything else (a changed field, a recipe written elsewhere, an old unsealed shape) is
  never used: the command says so and asks for the agent on the command line.
* Never stored, always re-derived on this machine: API keys (from the environment), the
  store itself, and every approval or denial (``--approve``/``--deny``/``--yes``/``--no``).

See docs/cli.md ("What a session stores").
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Final

from loopwright.core.errors import UserError

RECIPE_VERSION: Final = 1
KEY_ENV: Final = "LOOPWRIGHT_SESSION_KEY_FILE"


class RecipeError(UserError):
    """A stored recipe that cannot be used (missing, malformed, or not sealed by us)."""


@dataclass(frozen=True, slots=True)
class AgentRecipe:
    """Everything needed to rebuild an agent, as given on a command line.

    ``tools`` holds built-in tool names and ``MODULE:ATTR`` references to your own tools
    (a Tool, a list of tools or a registry). ``agent`` is ``MODULE:ATTR`` of an ``Agent``
    or of a zero-argument factory returning one (then the other fields are unused).
    ``root``/``database``/``outbox`` are absolute paths for the built-in tools.
    ``strategy`` names the reasoning strategy a ``run --strategy`` session answers with
    and ``strategy_settings`` the settings it was built with (numbers and flags), so
    ``resume`` rebuilds the same strategy (docs/strategies.md). ``mcp`` holds the
    ``--mcp`` values (command lines, URLs, absolute config-file paths with an optional
    ``#NAME``) whose servers' tools join the agent; they are reconnected when the agent is
    rebuilt. Headers and environment of a config file's servers are not stored: the file
    is read again (``${VAR}`` expanded from this environment), so tokens stay out of the
    store.
    """

    model: str | None = None
    base_url: str | None = None
    system: str | None = None
    tools: tuple[str, ...] = ()
    agent: str | None = None
    root: str | None = None
    database: str | None = None
    outbox: str | None = None
    max_turns: int | None = None
    token_budget: int | None = None
    timeout: float | None = None
    strategy: str | None = None
    strategy_settings: Mapping[str, int | float | bool] = field(default_factory=dict)
    mcp: tuple[str, ...] = ()

    def updated(self, fields: Mapping[str, object]) -> AgentRecipe:
        """This recipe with ``fields`` (given on a command line) in place of its own; an
        ``agent`` given replaces the model setup altogether."""
        values = {name: _checked(name, value) for name, value in fields.items()}
        if values.get("agent"):
            values.setdefault("model", None)
        return replace(self, **values)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["tools"] = list(self.tools)
        data["mcp"] = list(self.mcp)
        data["strategy_settings"] = dict(self.strategy_settings)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> AgentRecipe:
        """Rebuild from :meth:`to_dict`; a field of the wrong type is a :class:`RecipeError`
        naming it."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RecipeError(f"unknown field(s) {', '.join(unknown)}")
        values: dict[str, object] = {}
        for name in known & set(data):
            values[name] = _checked(name, data[name])
        return cls(**values)  # type: ignore[arg-type]


_TEXT_FIELDS: Final = frozenset(
    {"model", "base_url", "system", "agent", "root", "database", "outbox", "strategy"}
)
_INT_FIELDS: Final = frozenset({"max_turns", "token_budget"})


def _checked(name: str, value: object) -> object:
    if value is None:
        return None
    if name in _TEXT_FIELDS and isinstance(value, str):
        return value
    if name in _INT_FIELDS and isinstance(value, int) and not isinstance(value, bool):
        return value
    if name == "timeout" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if (
        name in ("tools", "mcp")
        and isinstance(value, list | tuple)
        and all(isinstance(t, str) for t in value)
    ):
        return tuple(value)
    if name == "strategy_settings" and _is_settings(value):
        return dict(value)  # type: ignore[call-overload]
    expected = {
        "tools": "a list of strings",
        "mcp": "a list of strings",
        "timeout": "a number",
        "strategy_settings": "an object of numbers and flags",
    }.get(name, "an integer" if name in _INT_FIELDS else "a string")
    raise RecipeError(f"field {name!r} must be {expected}, got {type(value).__name__}")


def _is_settings(value: object) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, int | float | bool) for k, v in value.items()
    )


# ------------------------------------------------------------------ the key
def key_path() -> Path:
    """Where this user's session key lives (``$LOOPWRIGHT_SESSION_KEY_FILE`` overrides)."""
    override = os.environ.get(KEY_ENV)
    if override:
        return Path(override)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(base) / "loopwright" / "session.key"


def load_key(create: bool) -> bytes | None:
    """The key (32 bytes); created atomically when ``create`` and missing, else ``None``.

    A key that other users can read or write is refused: with it they could seal a recipe.
    """
    path = key_path()
    if not path.exists():
        if not create:
            return None
        _create_key(path)
    info = path.stat()
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise RecipeError(
            f"the session key {path} is readable or writable by other users; "
            f"restrict it with `chmod 600 {path}`"
        )
    key = path.read_bytes()
    if len(key) < 32:
        raise RecipeError(f"the session key {path} is too short; delete it to make a new one")
    return key


def _create_key(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(32))
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # atomic; a concurrent creator's key wins and is used by both
    except FileExistsError:
        pass
    finally:
        tmp.unlink()


# ------------------------------------------------------------------ sealing
def _tag(key: bytes, recipe: Mapping[str, object]) -> str:
    canonical = json.dumps(recipe, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hmac.new(key, canonical.encode("ascii"), hashlib.sha256).hexdigest()


def seal(recipe: AgentRecipe) -> dict[str, object]:
    """The form stored in a session's metadata: the recipe and its tag."""
    key = load_key(create=True)
    assert key is not None
    data = recipe.to_dict()
    return {"version": RECIPE_VERSION, "recipe": data, "mac": _tag(key, data)}


def unseal(stored: object, session_id: str) -> AgentRecipe:
    """The recipe stored with ``session_id``, if this user sealed it on this machine.

    Raises :class:`RecipeError` saying what is wrong and what to pass instead.
    """
    fix = "pass the agent on the command line (--agent MODULE:ATTR, or --model SPEC with --tools)"
    if stored is None:
        raise RecipeError(f"session {session_id!r} has no agent setup recorded; {fix}")
    if not isinstance(stored, Mapping) or "mac" not in stored:
        raise RecipeError(
            f"session {session_id!r} holds an agent setup that is not sealed (an older "
            f"format, or written by something else), so it is not trusted; {fix}"
        )
    data = stored.get("recipe")
    if not isinstance(data, Mapping) or stored.get("version") != RECIPE_VERSION:
        raise RecipeError(
            f"the agent setup stored with session {session_id!r} is malformed "
            f"(expected version {RECIPE_VERSION} with a 'recipe' object); {fix}"
        )
    key = load_key(create=False)
    mac = stored.get("mac")
    if key is None or not isinstance(mac, str) or not hmac.compare_digest(mac, _tag(key, data)):
        raise RecipeError(
            f"the agent setup stored with session {session_id!r} does not carry this "
            f"machine's seal (key {key_path()}): it was changed after it was written, or "
            "written by another user or machine. A stored setup chooses the endpoint your "
            f"API key is sent to, what the tools may read and what code is imported; {fix}"
        )
    try:
        return AgentRecipe.from_dict(data)
    except RecipeError as exc:
        raise RecipeError(
            f"the agent setup stored with session {session_id!r} is malformed ({exc}); {fix}"
        ) from None
