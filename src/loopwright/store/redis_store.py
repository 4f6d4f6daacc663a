"""Redis checkpoint store (redis-py, ``pip install loopwright[redis]``).

Keys (``prefix`` defaults to ``loopwright``)::

    {prefix}:s:{sid}:meta     hash  status, stop, turn, message_count, last, checkpoints, ...
    {prefix}:s:{sid}:msgs     list  the history, one JSON message per item (RPUSH only)
    {prefix}:s:{sid}:ckpt     hash  checkpoint number -> {ref fields, header}
    {prefix}:s:{sid}:intents  hash  call id -> intent record
    {prefix}:sessions         zset  session id -> updated_at
    {prefix}:lock:{sid}       string owner, with a TTL
    {prefix}:ledger:{key}     string result (SET NX: the first result wins)

A save is one ``MULTI``/``EXEC`` guarded by ``WATCH`` on the session's meta key, so two
writers of one session never interleave. ``ttl`` (seconds) is the retention: every save
re-arms the expiry of all of the session's keys; expired sessions drop out of
``sessions()``. ``ledger_ttl`` bounds ledger keys the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from loopwright.core.messages import ToolResultPart
from loopwright.core.run import LoopState, RunState, RunStop
from loopwright.store.base import DEFAULT_LOCK_TTL, claim_each, write_each
from loopwright.store.codec import (
    check_continues,
    decode_intent,
    decode_result,
    decode_state,
    encode_header,
    encode_intent,
    encode_message,
    encode_result,
)
from loopwright.store.errors import (
    CheckpointNotFound,
    CorruptCheckpoint,
    HistoryRewritten,
    SessionLocked,
    SessionNotFound,
    StoreUnavailable,
)
from loopwright.store.state import (
    CheckpointRef,
    Claim,
    ClaimOutcome,
    IntentRecord,
    SessionInfo,
    Write,
    WriteOutcome,
    owner_is_dead,
)


def _redact(url: str) -> str:
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"redis://{parts.hostname or 'localhost'}{port}{parts.path}"


class RedisStore:
    kind = "redis"
    blocking = True

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "loopwright",
        ttl: float | None = None,
        ledger_ttl: float | None = None,
        socket_timeout: float = 5.0,
    ) -> None:
        try:
            import redis
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise StoreUnavailable(
                "redis", _redact(url), "pip install 'loopwright[redis]'"
            ) from exc
        self._redis: Any = redis
        self.url = url
        self.target = _redact(url)
        self.prefix = prefix
        self.ttl = ttl
        self.ledger_ttl = ledger_ttl
        self._r: Any = redis.Redis.from_url(
            url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout
        )

    # -- keys / errors ------------------------------------------------------------
    def _k(self, sid: str, part: str) -> str:
        return f"{self.prefix}:s:{sid}:{part}"

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except (self._redis.ConnectionError, self._redis.TimeoutError) as exc:
            raise StoreUnavailable("redis", self.target, str(exc) or type(exc).__name__) from None

    # -- checkpoints ------------------------------------------------------------
    def save(self, state: RunState, *, rewrite_from: int | None = None) -> CheckpointRef:
        sid, n = state.session_id, len(state.messages)
        header = encode_header(state)
        meta, msgs, ckpt = self._k(sid, "meta"), self._k(sid, "msgs"), self._k(sid, "ckpt")
        with self._guard(), self._r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(meta)
                    stored_raw, last_raw, created_raw, count_raw = pipe.hmget(
                        meta, "message_count", "last", "created_at", "checkpoints"
                    )
                    stored, last = int(stored_raw or 0), int(last_raw or 0)
                    count = int(count_raw or last)
                    start = self._start(sid, stored, n, rewrite_from)
                    if start > 0:
                        check_continues(sid, start - 1, (pipe.lindex(msgs, start - 1),), state)
                    drop = self._stale_checkpoints(pipe, ckpt, start) if start < stored else []
                    now = time.time()
                    ref = CheckpointRef(sid, last + 1, state.turn, state.status, state.stop, n, now)
                    pipe.multi()
                    self._write(pipe, state, ref, header, (start, stored, drop))
                    created = float(created_raw) if created_raw else state.created_at
                    fields = _meta(state, ref, created)
                    fields["checkpoints"] = count + 1 - len(drop)
                    pipe.hset(meta, mapping=fields)
                    pipe.zadd(f"{self.prefix}:sessions", {sid: now})
                    if self.ttl is not None:
                        for key in (meta, msgs, ckpt, self._k(sid, "intents")):
                            pipe.expire(key, int(max(1, self.ttl)))
                    pipe.execute()
                    return ref
                except self._redis.WatchError:
                    continue

    @staticmethod
    def _start(sid: str, stored: int, n: int, rewrite_from: int | None) -> int:
        if rewrite_from is not None:
            if rewrite_from < 0:
                raise ValueError(f"rewrite_from must be >= 0, got {rewrite_from}")
            return min(rewrite_from, stored, n)
        if n < stored:
            raise HistoryRewritten(
                f"session {sid!r}: the state has {n} messages but {stored} are stored; "
                "pass rewrite_from=<first changed index> or fork the session"
            )
        return stored

    @staticmethod
    def _stale_checkpoints(pipe: Any, ckpt: str, start: int) -> list[bytes]:
        stale = []
        for field, raw in pipe.hgetall(ckpt).items():
            try:
                if int(json.loads(raw)["message_count"]) > start:
                    stale.append(field)
            except (ValueError, KeyError, TypeError):
                continue
        return stale

    def _write(
        self,
        pipe: Any,
        state: RunState,
        ref: CheckpointRef,
        header: str,
        plan: tuple[int, int, list[bytes]],
    ) -> None:
        start, stored, drop = plan
        sid = state.session_id
        msgs, ckpt = self._k(sid, "msgs"), self._k(sid, "ckpt")
        if start < stored:
            if start == 0:
                pipe.delete(msgs)
            else:
                pipe.ltrim(msgs, 0, start - 1)
            if drop:
                pipe.hdel(ckpt, *drop)
        rows = [encode_message(state.messages[i]) for i in range(start, len(state.messages))]
        if rows:
            pipe.rpush(msgs, *rows)
        entry = {
            "turn": ref.turn,
            "status": ref.status.value,
            "stop": None if ref.stop is None else ref.stop.value,
            "message_count": ref.message_count,
            "created_at": ref.created_at,
            "header": header,
        }
        pipe.hset(ckpt, str(ref.checkpoint), json.dumps(entry, separators=(",", ":")))

    def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        ckpt = self._k(session_id, "ckpt")
        with self._guard():
            last = self._r.hget(self._k(session_id, "meta"), "last")
            if last is None:
                raise SessionNotFound(session_id)
            number = int(last) if checkpoint is None else checkpoint
            raw = self._r.hget(ckpt, str(number))
            if raw is None:
                raise CheckpointNotFound(session_id, number, int(last))
            entry = _entry(session_id, number, raw)
            count = int(entry["message_count"])
            rows = self._r.lrange(self._k(session_id, "msgs"), 0, count - 1) if count else []
        return decode_state(entry["header"], rows, session_id=session_id, checkpoint=number)

    def history(self, session_id: str) -> list[CheckpointRef]:
        with self._guard():
            raw = self._r.hgetall(self._k(session_id, "ckpt"))
        if not raw:
            raise SessionNotFound(session_id)
        refs = []
        for field, value in raw.items():
            number = int(field)
            e = _entry(session_id, number, value)
            stop = e.get("stop")
            refs.append(
                CheckpointRef(
                    session_id,
                    number,
                    int(e["turn"]),
                    LoopState(e["status"]),
                    None if stop is None else RunStop(stop),
                    int(e["message_count"]),
                    float(e["created_at"]),
                )
            )
        return sorted(refs, key=lambda r: r.checkpoint)

    def sessions(self, *, limit: int | None = None) -> list[SessionInfo]:
        zkey = f"{self.prefix}:sessions"
        with self._guard():
            ids = [i.decode() for i in self._r.zrevrange(zkey, 0, -1)]
            pipe = self._r.pipeline(transaction=False)
            for sid in ids:
                pipe.hgetall(self._k(sid, "meta"))
            metas = pipe.execute() if ids else []
            expired = [sid for sid, m in zip(ids, metas, strict=True) if not m]
            if expired:
                self._r.zrem(zkey, *expired)  # retention: their keys expired
        infos = [_info(sid, m) for sid, m in zip(ids, metas, strict=True) if m]
        return infos if limit is None else infos[:limit]

    def delete(self, session_id: str) -> bool:
        keys = [self._k(session_id, p) for p in ("meta", "msgs", "ckpt", "intents")]
        with self._guard():
            pipe = self._r.pipeline(transaction=True)
            pipe.delete(*keys, f"{self.prefix}:lock:{session_id}")
            pipe.zrem(f"{self.prefix}:sessions", session_id)
            deleted, _ = pipe.execute()
        return bool(deleted)

    # -- locks --------------------------------------------------------------------
    def acquire_lock(self, session_id: str, owner: str, ttl: float = DEFAULT_LOCK_TTL) -> None:
        key = f"{self.prefix}:lock:{session_id}"
        ms = max(1, int(ttl * 1000))
        with self._guard(), self._r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(key)
                    holder_raw = pipe.get(key)
                    holder = holder_raw.decode() if holder_raw else None
                    if holder and holder != owner and not owner_is_dead(holder):
                        left = pipe.pttl(key)
                        raise SessionLocked(session_id, holder, max(0, left) / 1000)
                    pipe.multi()
                    pipe.set(key, owner, px=ms)
                    pipe.execute()
                    return
                except self._redis.WatchError:
                    continue

    def release_lock(self, session_id: str, owner: str) -> None:
        key = f"{self.prefix}:lock:{session_id}"
        with self._guard(), self._r.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(key)
                if pipe.get(key) == owner.encode():
                    pipe.multi()
                    pipe.delete(key)
                    pipe.execute()
            except self._redis.WatchError:
                pass  # someone else changed the lock: it is not ours any more

    def break_lock(self, session_id: str) -> bool:
        with self._guard():
            return bool(self._r.delete(f"{self.prefix}:lock:{session_id}"))

    def lock_owner(self, session_id: str) -> str | None:
        with self._guard():
            raw = self._r.get(f"{self.prefix}:lock:{session_id}")
        return raw.decode() if raw else None

    # -- intents and ledger -----------------------------------------------------
    def put_intent(self, intent: IntentRecord) -> None:
        key = self._k(intent.session_id, "intents")
        with self._guard():
            pipe = self._r.pipeline(transaction=True)
            pipe.hset(key, intent.call_id, encode_intent(intent))
            if self.ttl is not None:
                pipe.expire(key, int(max(1, self.ttl)))
            pipe.execute()

    def intents(self, session_id: str) -> list[IntentRecord]:
        with self._guard():
            raw = self._r.hvals(self._k(session_id, "intents"))
        records = [decode_intent(r, session_id) for r in raw]
        return sorted(records, key=lambda r: (r.created_at, r.call_id))

    def ledger_get(self, key: str) -> ToolResultPart | None:
        with self._guard():
            raw = self._r.get(f"{self.prefix}:ledger:{key}")
        return None if raw is None else decode_result(raw, f"ledger key {key!r}")

    def ledger_put(self, key: str, result: ToolResultPart) -> None:
        ex = None if self.ledger_ttl is None else int(max(1, self.ledger_ttl))
        with self._guard():
            self._r.set(f"{self.prefix}:ledger:{key}", encode_result(result), nx=True, ex=ex)

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        return write_each(self, writes)

    def claim(self, claims: Sequence[Claim]) -> list[ClaimOutcome]:
        return claim_each(self, claims)

    def close(self) -> None:
        try:
            self._r.close()
        except Exception:  # closing a dead connection pool may raise anything
            pass

    def __repr__(self) -> str:
        return f"RedisStore({self.target!r}, prefix={self.prefix!r})"


def _entry(session_id: str, number: int, raw: bytes | str) -> dict[str, Any]:
    where = f"checkpoint {number}"
    try:
        entry = json.loads(raw)
        if not isinstance(entry, dict) or "header" not in entry or "message_count" not in entry:
            raise ValueError("missing 'header' or 'message_count'")
        return entry
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptCheckpoint(session_id, where, str(exc)) from None


def _meta(state: RunState, ref: CheckpointRef, created: float) -> dict[str, str | int | float]:
    return {
        "status": state.status.value,
        "stop": "" if state.stop is None else state.stop.value,
        "turn": state.turn,
        "message_count": len(state.messages),
        "last": ref.checkpoint,
        "parent": state.parent or "",
        "created_at": created,
        "updated_at": ref.created_at,
    }


def _info(sid: str, meta: Mapping[bytes, bytes]) -> SessionInfo:
    m = {k.decode(): v.decode() for k, v in meta.items()}
    try:
        return SessionInfo(
            sid,
            LoopState(m["status"]),
            RunStop(m["stop"]) if m.get("stop") else None,
            int(m["turn"]),
            int(m.get("checkpoints", m["last"])),
            int(m["message_count"]),
            float(m["created_at"]),
            float(m["updated_at"]),
            m.get("parent") or None,
        )
    except (KeyError, ValueError) as exc:  # listed as unreadable: the others still show
        return SessionInfo.unreadable(
            sid, str(CorruptCheckpoint(sid, "session meta", f"{type(exc).__name__}: {exc}"))
        )
