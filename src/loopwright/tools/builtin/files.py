"""``read_file``: read a UTF-8 text file inside one root directory.

Safety rules (each has a test): the path is resolved (symlinks followed) and must stay
inside the root, so ``..`` traversal, absolute paths elsewhere and symlinks pointing out
are refused; only regular files are read (a FIFO would block forever); files with NUL
bytes or invalid UTF-8 are refused as binary; at most ``max_bytes`` are returned, with a
note saying how much was cut.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from loopwright.core.errors import ToolError, ToolErrorKind
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

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` if it is a regular file inside the root."""
        if not isinstance(path, str) or not path.strip():
            raise _refuse(
                "path is empty; pass a file path such as 'notes.txt'",
                ToolErrorKind.INVALID_ARGUMENTS,
            )
        if "\x00" in path:
            raise _refuse("path contains a NUL byte", ToolErrorKind.INVALID_ARGUMENTS)
        root = self.root.resolve()
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = root / candidate
        try:
            real = candidate.resolve(strict=True)
        except FileNotFoundError:
            raise _refuse(f"{path}: no such file under {root}", ToolErrorKind.NOT_FOUND) from None
        except (OSError, RuntimeError) as exc:  # symlink loops, permission errors
            raise _refuse(f"{path}: cannot resolve ({exc})") from None
        if not real.is_relative_to(root):
            raise _refuse(f"{path}: outside the allowed directory {root}; use a path inside it")
        mode = real.stat().st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise _refuse(f"{path}: {kind}; pass a text file", ToolErrorKind.INVALID_ARGUMENTS)
        return real

    def read(self, path: str) -> str:
        """Return the file's text, cut to ``max_bytes`` with a note when larger."""
        real = self.resolve(path)
        try:
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            raise _refuse(f"{path}: cannot open ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(self.max_bytes + 1)
        truncated = len(data) > self.max_bytes
        data = data[: self.max_bytes]
        if b"\x00" in data:
            raise _refuse(f"{path}: binary file (NUL bytes); only text files can be read")
        text = _decode_prefix(data, truncated, path)
        if truncated:
            text += f"\n[truncated: showing the first {len(data)} of {size} bytes]"
        return text

    def __call__(self, path: str) -> str:
        return self.read(path)


def _decode_prefix(data: bytes, truncated: bool, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut may split one multi-byte character at the very end: drop up to 3 bytes.
        if truncated and exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8")
        raise _refuse(
            f"{path}: not UTF-8 text (binary file?); only text files can be read"
        ) from None
