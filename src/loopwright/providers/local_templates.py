"""Placeholders in a decoded call's string arguments, filled from the call and the request.

Tool schemas often give a string parameter a template rather than a value, as its
default (``"https://<ip>/api/nodes?fabricName={fabricName}"``), and requests hand one
over ("the URL formatted as 'https://{ip}/summary', where {ip} is the IP address
'192.168.1.1'"). A text still holding ``<ip>`` or ``{fabricName}`` is not something
a tool can use, and a 270M model copies it as written or leaves the parameter out.

:func:`fill_templates` runs on the decoded call: each placeholder names another
argument of the same call (``{fabricName}`` takes ``fabricName``'s value) or a kind of
value the request writes exactly once (an IP address for ``<ip>``/``{host}``, an
e-mail address for ``{email}``). A template is filled only when every placeholder in
it is; an optional parameter the call left out whose default is such a template is
added, filled. Generic: it reads only the schema, the call and the request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# ``{name}`` or ``<name>``: a name of letters, digits, ``_`` and ``-``.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w-]{0,40})\}|<([A-Za-z_][\w-]{0,40})>")

# Dotted numbers of four parts (not checked against 255: requests write "3.321.3232.2").
_IP = re.compile(r"(?<![\w.])\d{1,4}(?:\.\d{1,4}){3}(?!\w|\.\d)")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")

# What a placeholder's name says its value is, by the words of the name.
_KINDS: tuple[tuple[frozenset[str], re.Pattern[str]], ...] = (
    (frozenset({"ip", "ipaddress", "ipv4", "host", "hostname", "server"}), _IP),
    (frozenset({"email", "mail"}), _EMAIL),
)


def _key(name: str) -> str:
    """A name compared without case or separators (``fabric_name`` is ``fabricName``)."""
    return re.sub(r"[\W_]+", "", name).lower()


def _words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).lower()
    parts = set(re.findall(r"[a-z0-9]+", spaced))
    return parts | {_key(name)}


def _kind_value(name: str, request: str) -> str | None:
    """The one value of the kind ``name`` says (an IP address for ``ip``) that the
    request writes, or ``None`` when it writes none or several different ones."""
    words = _words(name)
    for names, pattern in _KINDS:
        if words & names:
            found = set(pattern.findall(request))
            return found.pop() if len(found) == 1 else None
    return None


def fill(text: str, arguments: Mapping[str, Any], request: str) -> str | None:
    """``text`` with every placeholder replaced, or ``None`` when ``text`` holds none or
    one of them cannot be filled (see the module docstring). An argument that is
    itself a template does not fill another."""
    if PLACEHOLDER.search(text) is None:
        return None
    own = {_key(k): v for k, v in arguments.items()}
    failed = False

    def replace(match: re.Match[str]) -> str:
        nonlocal failed
        name = match.group(1) or match.group(2)
        value = own.get(_key(name))
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            value = _kind_value(name, request)
        if value is None or PLACEHOLDER.search(str(value)):
            failed = True
            return match.group(0)
        return str(value)

    filled = PLACEHOLDER.sub(replace, text)
    return None if failed else filled


def fill_templates(
    parameters: Mapping[str, Any], arguments: Mapping[str, Any], request: str
) -> dict[str, Any]:
    """``arguments`` (a decoded call's, top level) with their templates filled, and each
    optional string parameter left out whose ``default`` is a template that can be
    filled added, filled. Everything else is returned as it was."""
    out = dict(arguments)
    for key, value in arguments.items():
        if isinstance(value, str) and (filled := fill(value, arguments, request)) is not None:
            out[key] = filled
    props = parameters.get("properties")
    if not isinstance(props, Mapping):
        return out
    for key, schema in props.items():
        default = schema.get("default") if isinstance(schema, Mapping) else None
        if key in out or not isinstance(default, str):
            continue
        if (filled := fill(default, arguments, request)) is not None:
            out[key] = filled
    return out


__all__ = ["PLACEHOLDER", "fill", "fill_templates"]
