"""The results sink: one JSON line per task key, written exactly once.

Exactly-once recording does not depend on tasks running exactly once (they may not: a
worker that dies after finishing a run but before handing its result back makes the
driver run the task again). It rests on three rules:

* **One writer.** Only the driver writes, and a results file is held under an exclusive
  ``flock`` for the whole batch: a second batch on the same file is refused, not
  interleaved.
* **Keyed writes.** :meth:`ResultSink.write` drops a record whose ``task`` key is already
  recorded, whoever delivers it and however often.
* **Whole lines.** Each record is one ``write`` of a complete line, flushed at once.
  Opening a file whose last line has no newline (the previous batch died mid-write) cuts
  that fragment off, so its task is run again instead of being half-recorded.

Opening an existing file resumes it: the keys it holds are "recorded", and the driver
skips those tasks.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from loopwright.core.errors import UserError
from loopwright.core.messages import JSONValue
from loopwright.core.text import to_json


class ResultSink:
    """Writes result records to ``stream``, at most one per ``task`` key.

    Build it with :meth:`open` (a results file: resumable, locked) or :meth:`to_stream`
    (e.g. stdout: nothing recorded before)."""

    def __init__(self, stream: IO[str], recorded: set[str], owns_stream: bool = False) -> None:
        self._stream = stream
        self._recorded = recorded
        self._owns = owns_stream
        self.duplicates = 0
        """Records dropped because their key was already recorded."""

    @classmethod
    def to_stream(cls, stream: IO[str]) -> ResultSink:
        return cls(stream, set())

    @classmethod
    def open(cls, path: Path) -> ResultSink:
        """Append to ``path`` (created if missing), holding it locked; its complete lines
        count as recorded. Raises :class:`UserError` if another batch holds it or a line is
        not a result record."""
        try:
            stream = open(path, "a+", encoding="utf-8")  # noqa: SIM115 -- held until close()
        except OSError as exc:
            raise UserError(f"{path}: cannot open the results file ({exc})") from None
        try:
            fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            stream.close()
            raise UserError(
                f"{path} is being written by another batch (it holds the file's lock); "
                "wait for it to finish or write to another file"
            ) from None
        try:
            recorded = _recorded_keys(stream, path)
        except BaseException:
            stream.close()
            raise
        return cls(stream, recorded, owns_stream=True)

    def __contains__(self, key: str) -> bool:
        return key in self._recorded

    def __len__(self) -> int:
        return len(self._recorded)

    def write(self, record: Mapping[str, JSONValue]) -> bool:
        """Record ``record`` unless its ``task`` key already is; True when written."""
        key = str(record["task"])
        if key in self._recorded:
            self.duplicates += 1
            return False
        self._stream.write(to_json(record, default=str) + "\n")
        self._stream.flush()
        self._recorded.add(key)
        return True

    def close(self) -> None:
        if self._owns:
            self._stream.close()  # closing the file releases the lock


def _recorded_keys(stream: IO[str], path: Path) -> set[str]:
    """The keys of the complete lines of an opened results file; a trailing fragment
    without a newline is cut off (see the module docstring)."""
    stream.seek(0)
    try:
        text = stream.read()
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path}: not UTF-8 text ({exc}); write the results to a new file"
        ) from None
    keep = text.rfind("\n") + 1
    if keep < len(text):
        stream.flush()
        os.ftruncate(stream.fileno(), len(text[:keep].encode("utf-8")))
        stream.seek(0, os.SEEK_END)
    keys: set[str] = set()
    for number, line in enumerate(text[:keep].splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("task"), str):
            raise UserError(
                f'{path}:{number}: not a batch result line (no "task" key); write the '
                "results to a new file, or remove the line"
            )
        keys.add(record["task"])
    return keys
