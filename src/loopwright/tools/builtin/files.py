"""``read_file``: read a UTF-8 text file inside one root directory.

The path is opened without a gap between checking and using it: no component is ever
looked up by a path string that something else could change in between. The walk starts
from a descriptor of the root and opens one component at a time relative to the
directory descriptor before it (``openat``) with ``O_NOFOLLOW``, so swapping a directory
for a symlink mid-walk makes that open fail instead of leaving the root. A symlink met on
the way is read (``readlinkat``) and its target walked the same way, component by
component from the root or the current directory: links that stay inside the root work,
links that point out (or ``..`` above the root) are refused. The final file is opened
with ``O_NONBLOCK`` (a FIFO opens at once instead of blocking the worker), then the
*opened* descriptor is checked with ``fstat``: only a regular file is read, and a file
with more than one hard link is refused (a hard link can make a file outside the root
appear inside it). At most ``max_bytes`` are returned, with a note saying how much was cut.

Text is UTF-8. A file that is not UTF-8 but reads as Windows-1252 (the superset of
Latin-1 that legacy Western text files use) without control characters other than
whitespace is returned decoded so, with a note saying so. Anything else (NUL bytes,
control characters, bytes Windows-1252 leaves undefined) is binary and refused as
``invalid_arguments``: the path names a file this tool cannot read, and retrying will
not change that, whereas ``permission_denied`` would send the model looking for access.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from loopwright.core.errors import ToolError, ToolErrorKind
from loopwright.core.text import lone_surrogate
from loopwright.core.tools import ToolSpec

DEFAULT_MAX_BYTES = 64_000

SPEC = ToolSpec(
    name="read_file",
    description="Read a text file and return its contents (files under the working directory).",
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "file path relative to the root directory",
                "examples": ["notes/todo.txt", "README.md"],
                "minLength": 1,
                "maxLength": 1024,
            }
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    idempotent=True,
    timeout=10.0,
)


def _refuse(message: str, kind: ToolErrorKind = ToolErrorKind.PERMISSION_DENIED) -> ToolError:
    return ToolError(message, kind=kind)


@dataclass(frozen=True, slots=True)
class FileReader:
    """Reads files confined to ``root`` (default: the working directory at creation)."""

    root: Path = field(default_factory=Path.cwd)
    max_bytes: int = DEFAULT_MAX_BYTES

    def read(self, path: str) -> str:
        """Return the file's text, cut to ``max_bytes`` with a note when larger."""
        fd = self.open(path)
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(self.max_bytes + 1)
        truncated = len(data) > self.max_bytes
        data = data[: self.max_bytes]
        if b"\x00" in data:
            raise _not_text(path, "NUL bytes")
        text = _decode_prefix(data, truncated, path)
        if truncated:
            text += f"\n[truncated: showing the first {len(data)} of {size} bytes]"
        return text

    def open(self, path: str) -> int:
        """A read-only descriptor of the regular file ``path`` names inside the root
        (module doc); the caller closes it."""
        if not isinstance(path, str) or not path.strip():
            raise _refuse(
                "path is empty; pass a file path such as 'notes.txt'",
                ToolErrorKind.INVALID_ARGUMENTS,
            )
        if "\x00" in path:
            raise _refuse("path contains a NUL byte", ToolErrorKind.INVALID_ARGUMENTS)
        offset = lone_surrogate(path)
        if offset is not None:  # no file name holds one (os.open: UnicodeEncodeError)
            raise _refuse(
                f"path holds an unpaired surrogate at offset {offset}; send valid Unicode text",
                ToolErrorKind.INVALID_ARGUMENTS,
            )
        root = self.root.resolve()
        walk = _Walk(path, root, _open_root(root))
        try:
            fd = walk.run(_parts(path, root, path))
        finally:
            walk.close()
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
                raise _refuse(f"{path}: {kind}; pass a text file", ToolErrorKind.INVALID_ARGUMENTS)
            if path.rstrip().endswith(("/", os.sep)):  # as open("a.txt/") fails: ENOTDIR
                raise _refuse(
                    f"{path}: a file, not a directory; drop the trailing '/'",
                    ToolErrorKind.INVALID_ARGUMENTS,
                )
            if info.st_nlink > 1:
                raise _refuse(f"{path}: a file with several hard links is not read")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def __call__(self, path: str) -> str:
        return self.read(path)


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_MAX_LINKS = 40  # like the kernel's own bound on symlinks in one lookup


def _open_root(root: Path) -> int:
    """A descriptor of the root directory; a missing root is the configuration's fault,
    said as such (not a bare ``FileNotFoundError`` naming no setting)."""
    try:
        return os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise _refuse(
            f"the root directory {root} cannot be opened ({exc.strerror}); "
            "configure read_file with an existing directory (loopwright: --root DIR)",
            ToolErrorKind.NOT_FOUND,
        ) from None


def _parts(text: str, root: Path, shown: str) -> list[str]:
    """The components of ``text`` relative to the root (absolute paths must name a
    place inside it, compared without touching the file system)."""
    # only "~" and "~/..." name the home directory: "~notes.txt" is a file name (as
    # "~user" it raised RuntimeError for want of such a user)
    home = text == "~" or text.startswith("~/")
    candidate = Path(text).expanduser() if home else Path(text)
    if candidate.is_absolute():
        if not candidate.is_relative_to(root):
            raise _refuse(f"{shown}: outside the allowed directory {root}; use a path inside it")
        candidate = candidate.relative_to(root)
    return [p for p in candidate.parts if p not in ("", ".")]


class _Walk:
    """One lookup from the root descriptor, one ``openat`` per component."""

    def __init__(self, shown: str, root: Path, root_fd: int) -> None:
        self.shown = shown
        self.root = root
        self.dirs = [root_fd]  # descriptors of the directories walked so far
        self.links = 0

    def close(self) -> None:
        for fd in self.dirs:
            os.close(fd)
        self.dirs.clear()

    def up(self) -> None:
        if len(self.dirs) == 1:
            raise _refuse(f"{self.shown}: outside the allowed directory {self.root}")
        os.close(self.dirs.pop())

    def run(self, parts: list[str]) -> int:
        todo = list(reversed(parts))  # a stack: the next component last
        while todo:
            name = todo.pop()
            if name == ".":
                continue
            if name == "..":
                self.up()
                continue
            flags = _NOFOLLOW | (os.O_RDONLY if not todo else _DIR_FLAGS)
            try:
                fd = os.open(name, flags, dir_fd=self.dirs[-1])
            except OSError as exc:
                target = self._link(name, exc)
                todo.extend(reversed(target))
                continue
            if not todo:
                return fd
            self.dirs.append(fd)
        raise _refuse(
            f"{self.shown}: a directory; pass a text file", ToolErrorKind.INVALID_ARGUMENTS
        )

    def _link(self, name: str, exc: OSError) -> list[str]:
        """The components to walk instead of the symlink ``name`` (else the error)."""
        if exc.errno == errno.ENOENT:
            raise _refuse(
                f"{self.shown}: no such file under {self.root}", ToolErrorKind.NOT_FOUND
            ) from None
        if exc.errno == errno.ENAMETOOLONG:
            raise _refuse(
                f"{self.shown}: a name in the path is too long for the file system; "
                "pass the path of an existing file",
                ToolErrorKind.INVALID_ARGUMENTS,
            ) from None
        try:
            target = os.readlink(name, dir_fd=self.dirs[-1])
        except OSError:  # not a symlink: a file where a directory was expected, EACCES...
            if exc.errno == errno.ENOTDIR:
                raise _refuse(
                    f"{self.shown}: no such file under {self.root}", ToolErrorKind.NOT_FOUND
                ) from None
            raise _refuse(f"{self.shown}: cannot open ({exc.strerror})") from None
        self.links += 1
        if self.links > _MAX_LINKS:
            raise _refuse(f"{self.shown}: too many symbolic links")
        if os.path.isabs(target):
            parts = _parts(target, self.root, self.shown)
            while len(self.dirs) > 1:
                os.close(self.dirs.pop())
            return parts
        return [p for p in Path(target).parts if p not in ("", ".")]


def _decode_prefix(data: bytes, truncated: bool, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut may split one multi-byte character at the very end: drop up to 3 bytes.
        if truncated and exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8")
    legacy = _legacy_text(data)
    if legacy is None:
        raise _not_text(path, "not UTF-8, nor Windows-1252/Latin-1 text")
    return legacy + f"\n[{path} is not UTF-8: decoded as Windows-1252]"


# a C0 control other than the whitespace ones (tab, newline, vertical tab, form feed,
# carriage return: 0x09-0x0d), or DEL: what text files do not hold
_BINARY_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def _legacy_text(data: bytes) -> str | None:
    """``data`` as Windows-1252 text, or ``None`` when it does not look like text."""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:  # 0x81, 0x8d, 0x8f, 0x90, 0x9d are undefined there
        return None
    return None if _BINARY_CONTROL.search(text) else text


def _not_text(path: str, why: str) -> ToolError:
    return _refuse(
        f"{path}: binary file ({why}); only text files can be read, pass a text file",
        ToolErrorKind.INVALID_ARGUMENTS,
    )
