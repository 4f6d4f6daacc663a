"""Durable execution state: a versioned codec and checkpoint stores.

Stores: :class:`MemoryStore`, :class:`SQLiteStore` (default), :class:`RedisStore`,
:class:`PostgresStore`, all implementing :class:`CheckpointStore`. Resume, approval and
crash recovery on top of them live in :mod:`loopwright.durable` (it needs the loop).
"""

from typing import TYPE_CHECKING

from loopwright.core.lazy import lazy_exports

if TYPE_CHECKING:
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
        StoreMissing,
        StoreUnavailable,
    )
    from loopwright.store.factory import open_store
    from loopwright.store.memory import MemoryStore
    from loopwright.store.postgres import PostgresStore
    from loopwright.store.redis_store import RedisStore
    from loopwright.store.sqlite import SQLiteStore, default_path
    from loopwright.store.state import (
        SCHEMA_VERSION,
        CheckpointRef,
        IntentRecord,
        IntentStatus,
        SessionInfo,
        Write,
        lock_owner_id,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "loopwright.store.aio": ("AsyncStore",),
        "loopwright.store.base": (
            "DEFAULT_LOCK_TTL",
            "Checkpoints",
            "CheckpointStore",
            "Intents",
            "Ledger",
            "Locks",
            "fork",
        ),
        "loopwright.store.codec": ("decode_state", "encode_header", "encode_state", "migrate"),
        "loopwright.store.errors": (
            "CheckpointNotFound",
            "CorruptCheckpoint",
            "HistoryConflict",
            "HistoryRewritten",
            "SchemaVersionError",
            "SessionLocked",
            "SessionNotFound",
            "StoreError",
            "StoreMissing",
            "StoreUnavailable",
        ),
        "loopwright.store.factory": ("open_store",),
        "loopwright.store.memory": ("MemoryStore",),
        # Redis / PostgreSQL import their client libraries when first used
        "loopwright.store.postgres": ("PostgresStore",),
        "loopwright.store.redis_store": ("RedisStore",),
        "loopwright.store.sqlite": ("SQLiteStore", "default_path"),
        "loopwright.store.state": (
            "SCHEMA_VERSION",
            "CheckpointRef",
            "IntentRecord",
            "IntentStatus",
            "SessionInfo",
            "Write",
            "lock_owner_id",
        ),
    },
)


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
    "StoreMissing",
    "StoreUnavailable",
    "Write",
    "decode_state",
    "default_path",
    "encode_header",
    "encode_state",
    "fork",
    "lock_owner_id",
    "migrate",
    "open_store",
]
