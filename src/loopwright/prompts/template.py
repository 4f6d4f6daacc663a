"""Prompt templates with strict variables, versions and fingerprints.

Syntax (``str.format``-like, checked when the template is built):

* ``{name}`` is a variable (an identifier);
* ``{{`` and ``}}`` are literal braces (JSON examples in a prompt are written with them);
* any other brace is an error naming its line and column, so a typo never ships.

Rendering is strict: a missing variable or an unknown one (a typo) raises
:class:`TemplateError` naming it, suggesting the closest expected name and listing the
expected ones. Strings are inserted as they are; dicts, lists, tuples, numbers,
booleans and ``None`` as JSON (``true``, ``null``; dicts/lists indented).

A rendered prompt is a :class:`PromptText` (a ``str``) that carries the fingerprints
(``name@version#hash``) of every template it came from, so the loop can record which
prompt versions produced a reply.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from loopwright.core.errors import UserError
from loopwright.core.messages import JSONValue, Message, TextPart

_TOKEN: Final = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|\{|\}")


class PromptError(UserError):
    """Base class of prompt toolkit errors; ``str(err)`` names the problem and the fix."""


class TemplateError(PromptError):
    """A template is malformed, or rendered with missing/unknown/unrenderable variables."""


class PromptText(str):
    """A rendered prompt: a ``str`` that remembers the fingerprints it was built from."""

    fingerprints: tuple[str, ...]

    def __new__(cls, text: str, fingerprints: Iterable[str] = ()) -> PromptText:
        obj = super().__new__(cls, text)
        obj.fingerprints = tuple(fingerprints)
        return obj


def fingerprints_of(*texts: object) -> tuple[str, ...]:
    """All fingerprints carried by the given texts (plain strings carry none), in order."""
    seen: dict[str, None] = {}
    for t in texts:
        for fp in getattr(t, "fingerprints", ()):
            seen.setdefault(fp, None)
    return tuple(seen)


# ``json.dumps(indent=...)`` runs the pure-Python encoder (a generator per nesting level;
# ~100 us for a small plan), and strategies render plans and results into a prompt on
# every turn. :func:`_indented` writes the same text for plain JSON data, with the C
# encoder for the leaves; anything else (subclasses, non-str keys, cycles) goes the
# standard way, which also owns the error messages.
_encode_leaf: Final = json.JSONEncoder(ensure_ascii=False).encode
_encode_str: Final = json.encoder.encode_basestring  # what ensure_ascii=False uses
_LITERALS: Final = {True: "true", False: "false", None: "null"}


class _NotPlain(Exception):
    pass


def _indented(value: object, pad: str) -> str:
    t = type(value)
    if t is dict:
        if not value:
            return "{}"
        inner = pad + "  "
        items = []
        for k, v in value.items():  # type: ignore[attr-defined]
            if type(k) is not str:
                raise _NotPlain
            items.append(f"{inner}{_encode_str(k)}: {_indented(v, inner)}")
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if t is list or t is tuple:
        if not value:
            return "[]"
        inner = pad + "  "
        body = ",\n".join(inner + _indented(v, inner) for v in value)  # type: ignore[attr-defined]
        return "[\n" + body + "\n" + pad + "]"
    if t is str:
        return _encode_str(value)  # type: ignore[arg-type]
    if t is int:
        return int.__repr__(value)  # type: ignore[arg-type]
    if t is bool or value is None:
        return _LITERALS[value]  # type: ignore[index]
    if t is float:
        return _encode_leaf(value)  # repr, or NaN/Infinity as json writes them
    raise _NotPlain


def _render_value(name: str, value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        try:
            return _indented(value, "")
        except (_NotPlain, RecursionError):
            pass
        try:
            return json.dumps(value, indent=2, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise TemplateError(f"variable {name!r} cannot be rendered as JSON: {exc}") from exc
    if value is None or isinstance(value, (bool, int, float)):
        return json.dumps(value)
    raise TemplateError(
        f"variable {name!r} is a {type(value).__name__}; pass a str, number, bool, None, "
        "dict or list (render other objects to text first)"
    )


def render_value(value: object, name: str = "value") -> str:
    """``value`` as a template inserts it (strings as they are, the rest as JSON): text
    to pass as a variable when the same value goes into many prompts."""
    return _render_value(name, value)


def _check_identity(name: object, version: object, text: object) -> None:
    """The fingerprint ``name@version#hash`` names a template in traces and prompt tests:
    an empty part, or one holding its separators, would name nothing or two things."""
    for field_name, value in (("name", name), ("version", version)):
        if not isinstance(value, str) or not value.strip() or "@" in value or "#" in value:
            raise TemplateError(
                f"PromptTemplate {field_name} must be a non-empty str without '@' or '#' "
                f"(the fingerprint is name@version#hash), got {value!r}"
            )
    if not isinstance(text, str):
        raise TemplateError(
            f"PromptTemplate {name}@{version}: text must be a str, got {type(text).__name__}"
        )


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    """A named, versioned template (see module docstring for its syntax).

    ``variables`` (the names the text uses, in order of first use) is computed when the
    template is built; a malformed text raises :class:`TemplateError` then, not later.
    """

    name: str
    version: str
    text: str
    description: str = ""
    metadata: Mapping[str, JSONValue] = field(default_factory=dict)
    variables: tuple[str, ...] = field(init=False)
    _segments: tuple[tuple[bool, str], ...] = field(init=False, repr=False, compare=False)
    _hash: str = field(init=False, repr=False, compare=False)
    _names: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_identity(self.name, self.version, self.text)
        segments: list[tuple[bool, str]] = []
        names: dict[str, None] = {}
        pos = 0
        for m in _TOKEN.finditer(self.text):
            if m.start() > pos:
                segments.append((False, self.text[pos : m.start()]))
            tok = m.group()
            if tok in ("{{", "}}"):
                segments.append((False, tok[0]))
            elif m.group(1) is not None:
                segments.append((True, m.group(1)))
                names.setdefault(m.group(1), None)
            else:
                line = self.text.count("\n", 0, m.start()) + 1
                col = m.start() - (self.text.rfind("\n", 0, m.start()) + 1) + 1
                snippet = self.text[m.start() : m.start() + 20].split("\n")[0]
                raise TemplateError(
                    f"template {self.name}@{self.version} line {line} column {col}: {tok!r} "
                    f"does not start a {{variable}} (near {snippet!r}); write "
                    f"{tok * 2!r} for a literal brace"
                )
            pos = m.end()
        if pos < len(self.text):
            segments.append((False, self.text[pos:]))
        object.__setattr__(self, "_segments", tuple(segments))
        object.__setattr__(self, "variables", tuple(names))
        object.__setattr__(self, "_names", frozenset(names))
        # hashed once: the fingerprint goes on every rendered prompt
        digest = hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()
        object.__setattr__(self, "_hash", digest[:12])

    @property
    def hash(self) -> str:
        return self._hash

    @property
    def fingerprint(self) -> str:
        """``name@version#<first 12 hex of sha256(text)>``: which exact text was used."""
        return f"{self.name}@{self.version}#{self.hash}"

    def check_variables(self, provided: Iterable[str]) -> None:
        """Raise :class:`TemplateError` if ``provided`` is not exactly :attr:`variables`."""
        given = set(provided)
        expected = set(self.variables)
        listing = ", ".join(self.variables) or "(none)"
        unknown = sorted(given - expected)
        if unknown:
            hints = []
            for u in unknown:
                close = difflib.get_close_matches(u, self.variables, n=1)
                hints.append(f"{u!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise TemplateError(
                f"template {self.name}@{self.version} got unknown variable(s) "
                f"{', '.join(hints)}; it expects: {listing}"
            )
        missing = [v for v in self.variables if v not in given]
        if missing:
            raise TemplateError(
                f"template {self.name}@{self.version} is missing variable(s) "
                f"{', '.join(repr(m) for m in missing)}; it expects: {listing}"
            )

    def render(self, values: Mapping[str, object] | None = None, /, **kwargs: object) -> PromptText:
        """Render with exactly the template's variables (mapping and/or keywords)."""
        merged: dict[str, object] = dict(values or {})
        merged.update(kwargs)
        if merged.keys() != self._names:  # the exact set: nothing to explain
            self.check_variables(merged)
        out = [
            _render_value(text, merged[text]) if is_var else text for is_var, text in self._segments
        ]
        return PromptText("".join(out), (self.fingerprint,))


def prompt_message(text: str, role: Literal["system", "user"] = "user") -> Message:
    """A message holding a rendered prompt; its fingerprints go in
    ``provider_meta["loopwright"]["prompt_fingerprints"]`` so they survive storage."""
    fps = list(getattr(text, "fingerprints", ()))
    meta: dict[str, JSONValue] = {"loopwright": {"prompt_fingerprints": fps}} if fps else {}
    return Message(role, (TextPart(str(text)),), meta)


def request_fingerprints(system: object, messages: Sequence[Message] = ()) -> tuple[str, ...]:
    """Fingerprints of every prompt in a request: a :class:`PromptText` system prompt and
    messages built by :func:`prompt_message`. What the loop records on model-call events."""
    seen: dict[str, None] = dict.fromkeys(getattr(system, "fingerprints", ()))
    for m in messages:
        own = m.provider_meta.get("loopwright")
        if isinstance(own, dict):
            for fp in own.get("prompt_fingerprints", ()):
                seen.setdefault(str(fp), None)
    return tuple(seen)
