"""Durable execution state: a versioned codec and checkpoint stores.

Stores: :class:`MemoryStore`, :class:`SQLiteStore` (default), :class:`RedisStore`,
:class:`PostgresStore`, all implementing :class:`CheckpointStore`. Resume, approval and
crash recovery on top of them live in :mod:`loopwright.durable` (it needs the loop).
"""

from loopwright.store.aio import AsyncStore
from loopwright.store.base import (
    DEFAULT_LOCK_TTL,
    Checkpoints,
    CheckpointStore,
    Intents,
    Ledger,
    Locks,
    fork,
)
from loopwright.store.codec import decode_state, encode_header, encode_state, migrate
from loopwright.store.errors import (
    CheckpointNotFound,
    CorruptCheckpoint,
    HistoryConflict,
    HistoryRewritten,
    SchemaVersionError,
    SessionLocked,
    SessionNotFound,
    StoreError,
    StoreUnavailable,
)
from loopwright.store.factory import open_store
from loopwright.store.memory import MemoryStore
from loopwright.store.sqlite import SQLiteStore, default_path
from loopwright.store.state import (
    SCHEMA_VERSION,
    CheckpointRef,
    IntentRecord,
    IntentStatus,
    SessionInfo,
    lock_owner_id,
)


def __getattr__(name: str) -> object:
    # Redis / PostgreSQL stores import their client libraries lazily.
    if name == "RedisStore":
        from loopwright.store.redis_store import RedisStore

        return RedisStore
    if name == "PostgresStore":
        from loopwright.store.postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module 'loopwright.store' has no attribute {name!r}")


__all__ = [
    "AsyncStore",
    "Checkpoints",
    "Intents",
    "Ledger",
    "Locks",
    "DEFAULT_LOCK_TTL",
    "SCHEMA_VERSION",
    "CheckpointNotFound",
    "CheckpointRef",
    "CheckpointStore",
    "CorruptCheckpoint",
    "HistoryConflict",
    "HistoryRewritten",
    "IntentRecord",
    "IntentStatus",
    "MemoryStore",
    "PostgresStore",
    "RedisStore",
    "SQLiteStore",
    "SchemaVersionError",
    "SessionInfo",
    "SessionLocked",
    "SessionNotFound",
    "StoreError",
    "StoreUnavailable",
    "decode_state",
    "default_path",
    "encode_header",
    "encode_state",
    "fork",
    "lock_owner_id",
    "migrate",
    "open_store",
]
