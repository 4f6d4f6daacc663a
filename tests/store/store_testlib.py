"""Helpers shared by the store tests (backends, service URLs, corruption).

Redis and PostgreSQL need real servers (``source .ci/services.sh``). Their URLs come from
LOOPWRIGHT_TEST_REDIS_URL / LOOPWRIGHT_TEST_POSTGRES_URL; under CI=true a missing URL is a
FAILURE (CI must run them), locally the tests skip with the reason.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.services import POSTGRES_ENV, REDIS_ENV, service_url

from loopwright.store import CheckpointStore, MemoryStore, SQLiteStore


def make_store(kind: str, tmp_path: Path) -> CheckpointStore:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "lw.db")
    if kind == "redis":
        from loopwright.store.redis_store import RedisStore

        return RedisStore(service_url(REDIS_ENV), prefix=f"lwtest-{uuid.uuid4().hex[:8]}")
    from loopwright.store.postgres import PostgresStore

    return PostgresStore(service_url(POSTGRES_ENV))


def corrupt_header(store: CheckpointStore, session_id: str, checkpoint: int, text: str) -> None:
    """Overwrite one stored checkpoint header with ``text`` (backend-specific)."""
    if isinstance(store, MemoryStore):
        session = store._sessions[session_id]
        ref, _ = session.checkpoints[checkpoint]
        session.checkpoints[checkpoint] = (ref, text)
        return
    if store.kind == "redis":
        import json

        r = store._r  # type: ignore[attr-defined]
        key = store._k(session_id, "ckpt")  # type: ignore[attr-defined]
        entry = json.loads(r.hget(key, str(checkpoint)))
        entry["header"] = text
        r.hset(key, str(checkpoint), json.dumps(entry))
        return
    with store._tx() as cur:  # type: ignore[attr-defined]
        cur.execute(
            store._q("UPDATE lw_checkpoints SET header = ? WHERE session_id = ? AND seq = ?"),  # type: ignore[attr-defined]
            (text, session_id, checkpoint),
        )


def sid() -> str:
    return "t-" + uuid.uuid4().hex[:12]
