"""Errors raised by checkpoint stores. Each message names the session and the fix."""

from __future__ import annotations

from loopwright.core.errors import LoopwrightError, UserError


class StoreError(LoopwrightError):
    """Base class of every store failure."""


class SessionNotFound(StoreError, UserError):
    """No session (or no checkpoint) with that id exists in the store."""

    def __init__(self, session_id: str, detail: str = "") -> None:
        self.session_id = session_id
        msg = f"session {session_id!r} not found"
        super().__init__(
            f"{msg}{': ' + detail if detail else ''}; "
            "list the stored sessions with `loopwright sessions` (or store.sessions())"
        )


class CheckpointNotFound(StoreError, UserError):
    def __init__(self, session_id: str, checkpoint: int, available: int) -> None:
        self.session_id = session_id
        self.checkpoint = checkpoint
        super().__init__(
            f"session {session_id!r} has no checkpoint {checkpoint}; "
            f"it has checkpoints 1..{available} (see store.history({session_id!r}))"
        )


class CorruptCheckpoint(StoreError):
    """A stored row does not decode. The row is left untouched for inspection."""

    def __init__(self, session_id: str, where: str, detail: str) -> None:
        self.session_id = session_id
        self.where = where
        super().__init__(
            f"corrupt checkpoint data for session {session_id!r} at {where}: {detail}; "
            "the stored rows were left untouched: load an earlier checkpoint "
            "(store.load(session_id, checkpoint=N)) or delete the session"
        )


class SchemaVersionError(StoreError):
    """A checkpoint was written with a schema version this loopwright cannot read."""


class SessionLocked(StoreError, UserError):
    """The session is being run by another process (its lock is held and not stale)."""

    def __init__(self, session_id: str, owner: str, expires_in: float | None) -> None:
        self.session_id = session_id
        self.owner = owner
        self.expires_in = expires_in
        left = f"; the lock expires in {expires_in:.0f}s" if expires_in is not None else ""
        super().__init__(
            f"session {session_id!r} is already running elsewhere (locked by {owner}){left}; "
            "if that process is gone, break the stale lock with "
            f"`loopwright resume {session_id} --break-lock` (or store.break_lock({session_id!r}))"
        )


class StoreUnavailable(StoreError):
    """The store's server cannot be reached (down, wrong URL, network)."""

    def __init__(self, store: str, target: str, detail: str, fix: str | None = None) -> None:
        self.store = store
        self.target = target
        fix = fix or (
            "check that the path is a loopwright SQLite file in a writable folder, or point "
            "--store-url / LOOPWRIGHT_STORE_URL at another one (sqlite:///path/to/file.db)"
            if store == "sqlite"
            else "check that the server is running and that --store-url / "
            "LOOPWRIGHT_STORE_URL points to it"
        )
        super().__init__(
            f"{store} store at {target} is unavailable: {detail}; {fix} (nothing was written)"
        )


class StoreMissing(StoreUnavailable):
    """A store file opened with ``create=False`` does not exist (nothing was created)."""


class HistoryRewritten(StoreError):
    """A save whose history is shorter than what is stored, without ``rewrite_from``."""


class HistoryConflict(StoreError):
    """A save whose history does not continue the stored one: another writer saved the
    session since this state was loaded. Nothing was written."""

    def __init__(self, session_id: str, index: int) -> None:
        self.session_id = session_id
        self.index = index
        super().__init__(
            f"session {session_id!r}: message {index} of this state differs from the stored "
            "one (another writer saved the session since this state was loaded); nothing was "
            "written: load the latest checkpoint and apply the change to it, or hold the "
            "session lock (store.acquire_lock) while writing"
        )
