"""Open a store by kind and URL (what the CLI's ``--store`` / ``--store-url`` map to).

``LOOPWRIGHT_STORE`` and ``LOOPWRIGHT_STORE_URL`` supply defaults. URLs:
``sqlite:///abs/path.db`` or a plain path (default: the user's data dir),
``redis://host:port/db``, ``postgresql://user@host:port/db``, ``memory://``.
"""

from __future__ import annotations

import os

from loopwright.core.errors import ConfigError
from loopwright.store.base import CheckpointStore

KINDS = ("sqlite", "redis", "postgres", "memory")


def kind_from_url(url: str) -> str:
    scheme = url.split("://", 1)[0].lower() if "://" in url else "sqlite"
    if scheme in ("postgresql", "postgres"):
        return "postgres"
    if scheme in ("redis", "rediss", "unix"):
        return "redis"
    if scheme in ("sqlite", "memory"):
        return scheme
    raise ConfigError(
        f"store URL {url!r} has an unknown scheme {scheme!r}; use sqlite:///path.db, "
        "redis://host:port/0, postgresql://user@host:port/db or memory://"
    )


def open_store(
    kind: str | None = None, url: str | None = None, *, create: bool = True
) -> CheckpointStore:
    """Open the store ``kind`` at ``url`` (both default from the environment).

    Without a kind the URL's scheme decides; without either, SQLite at the default path.
    ``create=False``: a SQLite file that does not exist is an error, not a new store
    (commands that only read or change existing sessions).
    """
    if kind is not None and "://" in kind:
        raise ConfigError(
            f"open_store: {kind!r} is a URL, but the first argument is the kind ("
            f"{', '.join(KINDS)}); pass the URL by name: open_store(url={kind!r})"
        )
    url = url or os.environ.get("LOOPWRIGHT_STORE_URL") or None
    kind = (
        kind or os.environ.get("LOOPWRIGHT_STORE") or (kind_from_url(url) if url else "sqlite")
    ).lower()
    if kind not in KINDS:
        raise ConfigError(f"unknown store {kind!r}; use one of {', '.join(KINDS)}")
    if url is not None and kind_from_url(url) != kind:
        raise ConfigError(
            f"--store {kind} does not match the store URL {url.split('://', 1)[0]}://...; "
            "fix --store or --store-url / LOOPWRIGHT_STORE_URL"
        )
    if kind == "memory":
        from loopwright.store.memory import MemoryStore

        return MemoryStore()
    if kind == "sqlite":
        from loopwright.store.sqlite import SQLiteStore

        path = url[len("sqlite://") :] if url and url.startswith("sqlite://") else url
        return SQLiteStore(path or None, create=create)
    if url is None:
        raise ConfigError(
            f"the {kind} store needs a URL: pass --store-url or set LOOPWRIGHT_STORE_URL"
        )
    if kind == "redis":
        from loopwright.store.redis_store import RedisStore

        return RedisStore(url)
    from loopwright.store.postgres import PostgresStore

    return PostgresStore(url)
