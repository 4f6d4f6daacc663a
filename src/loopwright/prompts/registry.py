"""A registry of versioned prompt files, with pins, canary rollout and rollback.

Layout (docs/prompts.md)::

    prompts/
      router/
        v1.0.txt        # the template text of version 1.0
        v1.1.txt
        v2.0.0-rc.1.txt # semantic versions: MAJOR.MINOR[.PATCH][-PRERELEASE]
        changelog.md    # what changed in each version (free text)
        schema.json     # optional: the JSON Schema the prompt's output must match
      planner/
        v1.0.txt

Every ``*.txt`` in a prompt folder must be named ``v<semver>.txt``; anything else is an
error naming the file and the expected pattern (a ``v1.10`` typo'd as ``v1,10`` never
silently disappears). ``latest`` is the highest release by semantic order (``1.10`` >
``1.9``); pre-releases (``2.0.0-rc.1``) are served only when asked for by exact version
or through a canary (or when a prompt has nothing but pre-releases).

Deployment: production *pins* a version per prompt (production should not follow
``latest``); a *canary* sends a new version to a percentage of sessions, bucketed by a
SHA-256 of the prompt name and session id (stable across processes and restarts, unlike
``hash()``); *promote* pins the canary; *rollback* returns to the previous pin. The
deployment state can be saved to a JSON file so every process resolves alike.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from loopwright.core.messages import JSONValue
from loopwright.prompts.template import PromptError, PromptTemplate

_VERSION_FILE: Final = re.compile(
    r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?(?:-([0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*))?\.txt$"
)
_NAME: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class RegistryError(PromptError):
    """A prompt folder, version or deployment request is invalid."""


def _read_text(path: Path) -> str:
    """A prompt file's text; one that is not UTF-8 is a :class:`RegistryError` naming it
    (``UnicodeDecodeError`` names neither the file nor the fix)."""
    try:
        return path.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise RegistryError(
            f"prompt file {path} is not UTF-8 text (byte {exc.start}: {exc.reason}); "
            "save it as UTF-8"
        ) from exc


@dataclass(frozen=True, slots=True, order=True)
class Version:
    """A semantic version; orders numerically, a pre-release below its release."""

    major: int
    minor: int
    patch: int
    _pre_key: tuple[int, tuple[tuple[int, int | str], ...]] = field(repr=False)
    pre: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str) -> Version:
        """``"1.2"``, ``"v1.2.3"``, ``"2.0.0-rc.1"`` -> Version; else :class:`RegistryError`."""
        m = _VERSION_FILE.match(f"v{text.removeprefix('v')}.txt")
        if m is None:
            raise RegistryError(
                f"malformed version {text!r}: expected MAJOR.MINOR[.PATCH][-PRERELEASE], "
                "e.g. 1.0, 1.2.3 or 2.0.0-rc.1"
            )
        return cls._of(m)

    @classmethod
    def _of(cls, m: re.Match[str]) -> Version:
        pre = m.group(4) or ""
        idents = tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split(".") if pre)
        # a release (no pre-release) sorts after all its pre-releases
        key = (1, ()) if not pre else (0, idents)
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), key, pre)  # type: ignore[arg-type]

    def __str__(self) -> str:
        base = f"{self.major}.{self.minor}.{self.patch}"
        return f"{base}-{self.pre}" if self.pre else base


@dataclass(frozen=True, slots=True)
class PromptVersion:
    """One version file: its semantic version, the label as written, and its path."""

    version: Version
    label: str  # as in the file name, without "v" (e.g. "1.0")
    path: Path


def bucket(name: str, session_id: str) -> float:
    """Stable bucket in [0, 100) for a session (SHA-256, identical in every process)."""
    digest = hashlib.sha256(f"{name}\x00{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10_000 / 100.0


@dataclass(slots=True)
class _Deployment:
    pinned: str | None = None
    history: list[str] = field(default_factory=list)
    canary: str | None = None
    percent: float = 0.0


class PromptRegistry:
    """Prompts stored as ``<root>/<name>/v<version>.txt`` (see module docstring).

    ``exclude`` names folders that are not versioned prompts. ``state_file`` (optional)
    is a JSON file where pins and canaries are saved and loaded.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        exclude: tuple[str, ...] = (),
        state_file: str | Path | None = None,
    ) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise RegistryError(f"prompt registry folder {str(self.root)!r} does not exist")
        self._exclude = set(exclude)
        self._state_file = Path(state_file) if state_file is not None else None
        self._versions: dict[str, list[PromptVersion]] = {}
        self._cache: dict[Path, PromptTemplate] = {}
        self._deploy: dict[str, _Deployment] = {}
        self.reload()

    # -- discovery ----------------------------------------------------------------
    def reload(self) -> None:
        """Rescan the folder (and the state file). Raises on any malformed version name."""
        found: dict[str, list[PromptVersion]] = {}
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir()):
            if folder.name in self._exclude or folder.name.startswith((".", "_")):
                continue
            versions = [self._version_of(f) for f in sorted(folder.glob("*.txt"))]
            if versions:
                labels: dict[Version, str] = {}
                for v in versions:
                    if v.version in labels:
                        raise RegistryError(
                            f"prompt {folder.name!r} has two files for version {v.version}: "
                            f"v{labels[v.version]}.txt and v{v.label}.txt; keep one"
                        )
                    labels[v.version] = v.label
                found[folder.name] = sorted(versions, key=lambda v: v.version)
        self._versions = found
        self._cache.clear()
        self._load_state()

    def _version_of(self, path: Path) -> PromptVersion:
        m = _VERSION_FILE.match(path.name)
        if m is None:
            raise RegistryError(
                f"prompt file {path.parent.name}/{path.name} has a malformed version name: "
                "expected v<MAJOR>.<MINOR>[.<PATCH>][-<PRERELEASE>].txt, e.g. v1.0.txt, "
                "v1.2.3.txt or v2.0.0-rc.1.txt"
            )
        return PromptVersion(Version._of(m), path.name[1:-4], path)

    def names(self) -> list[str]:
        return sorted(self._versions)

    def versions(self, name: str) -> list[str]:
        """Version labels of ``name`` in semantic order (oldest first)."""
        return [v.label for v in self._entries(name)]

    def _entries(self, name: str) -> list[PromptVersion]:
        try:
            return self._versions[name]
        except KeyError:
            known = ", ".join(self.names()) or "(none)"
            hint = ""
            folder = self.root / name
            if isinstance(name, str) and name and folder.is_dir():
                # a folder laid out another way (greet/1.0/template.txt) was skipped silently
                hint = (
                    f"; its folder {name}/ holds no version file: put each version directly "
                    f"in it as v<MAJOR>.<MINOR>.txt, e.g. {name}/v1.0.txt"
                )
            raise RegistryError(
                f"no prompt named {name!r} in {str(self.root)!r}; known prompts: {known}{hint}"
            ) from None

    def _find(self, name: str, version: str) -> PromptVersion:
        entries = self._entries(name)
        if version == "latest":
            releases = [e for e in entries if not e.version.pre]
            return (releases or entries)[-1]
        wanted = Version.parse(version)
        for e in entries:
            if e.version == wanted:
                return e
        raise RegistryError(
            f"prompt {name!r} has no version {version!r}; available: "
            f"{', '.join(e.label for e in entries)}"
        )

    def get(self, name: str, version: str = "latest") -> PromptTemplate:
        """The template of an exact version (``"1.0"``, ``"v1.0"``) or ``"latest"``."""
        entry = self._find(name, version)
        cached = self._cache.get(entry.path)
        if cached is None:
            cached = PromptTemplate(
                name,
                entry.label,
                _read_text(entry.path),
                metadata={"path": str(entry.path)},
            )
            self._cache[entry.path] = cached
        return cached

    def changelog(self, name: str) -> str:
        self._entries(name)
        path = self.root / name / "changelog.md"
        return _read_text(path) if path.is_file() else ""

    def schema(self, name: str) -> Mapping[str, JSONValue] | None:
        """The prompt's ``schema.json`` (its output contract), if it has one."""
        self._entries(name)
        path = self.root / name / "schema.json"
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text("utf-8"))
        except ValueError as exc:
            raise RegistryError(f"{name}/schema.json is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise RegistryError(f"{name}/schema.json must hold a JSON object")
        return data

    # -- deployment -----------------------------------------------------------------
    def pin(self, name: str, version: str) -> None:
        """Production uses ``version`` of ``name`` (remembering the previous pin)."""
        label = self._find(name, version).label
        d = self._deploy.setdefault(name, _Deployment())
        if d.pinned is not None and d.pinned != label:
            d.history.append(d.pinned)
        d.pinned = label
        self._save_state()

    def pinned(self, name: str) -> str | None:
        d = self._deploy.get(name)
        return d.pinned if d is not None else None

    def start_canary(self, name: str, version: str, percent: float) -> None:
        """Serve ``version`` to ``percent`` % of sessions (stable per session id).

        The other sessions get the pinned version. Without a pin, the version production
        serves at this moment -- the latest release other than the canary -- is pinned
        first; otherwise "the others get latest" would be the canary itself as soon as
        the canary is the newest file, and every session would get it.
        """
        if not 0.0 < percent <= 100.0:
            raise RegistryError(f"canary percent must be in (0, 100], got {percent}")
        label = self._find(name, version).label
        d = self._deploy.setdefault(name, _Deployment())
        if d.pinned is None:
            d.pinned = self._baseline(name, label)
        d.canary, d.percent = label, float(percent)
        self._save_state()

    def _baseline(self, name: str, canary: str) -> str:
        others = [e for e in self._entries(name) if e.label != canary]
        releases = [e for e in others if not e.version.pre]
        if not others:
            raise RegistryError(
                f"prompt {name!r} has no version besides {canary!r} to serve the sessions "
                "outside the canary; add the current version's file, or pin one first"
            )
        return (releases or others)[-1].label

    def promote(self, name: str) -> str:
        """Pin the running canary for everyone; returns its version."""
        d = self._deploy.get(name)
        if d is None or d.canary is None:
            raise RegistryError(f"prompt {name!r} has no canary to promote; start_canary first")
        label = d.canary
        d.canary, d.percent = None, 0.0
        self.pin(name, label)
        return label

    def rollback(self, name: str) -> str | None:
        """Stop any canary and return to the previous pin; returns the version now pinned."""
        d = self._deploy.get(name)
        if d is None or (d.canary is None and not d.history):
            raise RegistryError(
                f"prompt {name!r} has nothing to roll back (no canary, no earlier pin)"
            )
        if d.canary is not None:
            d.canary, d.percent = None, 0.0
        else:
            d.pinned = d.history.pop()
        self._save_state()
        return d.pinned

    def resolve(self, name: str, session_id: str | None = None) -> PromptTemplate:
        """The version a session should use: canary bucket, else the pin, else latest."""
        d = self._deploy.get(name)
        if (
            d is not None
            and d.canary is not None
            and session_id is not None
            and bucket(name, session_id) < d.percent
        ):
            return self.get(name, d.canary)
        if d is not None and d.pinned is not None:
            return self.get(name, d.pinned)
        return self.get(name, "latest")

    def _save_state(self) -> None:
        if self._state_file is None:
            return
        data = {
            n: {"pinned": d.pinned, "history": d.history, "canary": d.canary, "percent": d.percent}
            for n, d in self._deploy.items()
        }
        tmp = self._state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2), "utf-8")
        tmp.replace(self._state_file)

    def _load_state(self) -> None:
        self._deploy = {}
        if self._state_file is None or not self._state_file.is_file():
            return
        try:
            data = json.loads(self._state_file.read_text("utf-8"))
            for n, d in data.items():
                self._deploy[n] = _Deployment(
                    d.get("pinned"),
                    list(d.get("history", [])),
                    d.get("canary"),
                    float(d.get("percent", 0.0)),
                )
        except (ValueError, AttributeError, TypeError) as exc:
            raise RegistryError(
                f"deployment state {str(self._state_file)!r} is malformed ({exc}); fix or delete it"
            ) from exc
