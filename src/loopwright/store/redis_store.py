"""Redis checkpoint store (redis-py, ``pip install loopwright[redis]``).

Keys (``prefix`` defaults to ``loopwright``)::

    {prefix}:s:{sid}:meta     hash  status, stop, turn, message_count, last, checkpoints, ...
    {prefix}:s:{sid}:msgs     list  the history, one JSON message per item (RPUSH only)
    {prefix}:s:{sid}:ckpt     hash  checkpoint number -> {ref fields, header}
    {prefix}:s:{sid}:intents  hash  call id -> intent record
    {prefix}:sessions         zset  session id -> updated_at
    {prefix}:unfinished       zset  the same, for sessions without a result (``stop``)
    {prefix}:unfinished:built string  set once ``unfinished`` covers every stored session
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
from loopwright.store.base import DEFAULT_LOCK_TTL, save_one, save_rounds
from loopwright.store.codec import (
    check_continues,
    decode_intent,
    decode_result,
    decode_state,
    encode_intent,
    encode_result,
)
from loopwright.store.codec import encoded as encoded_state
from loopwright.store.errors import (
    CheckpointNotFound,
    CorruptCheckpoint,
    HistoryConflict,
    HistoryRewritten,
    SessionLocked,
    SessionNotFound,
    StoreUnavailable,
)
from loopwright.store.state import (
    CheckpointRef,
    Claim,
    ClaimOutcome,
    Encoded,
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
    def save(
        self, state: RunState, *, rewrite_from: int | None = None, encoded: Encoded | None = None
    ) -> CheckpointRef:
        return save_one(self.write, state, rewrite_from, encoded)

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        """Every write in one ``MULTI``/``EXEC``, guarded by ``WATCH`` on what it depends
        on (the sessions' meta keys, the locks it releases), with the reads pipelined:
        four round trips for the whole batch. A save that fails its own checks fails
        alone; a concurrent writer of one of the sessions makes the batch start over."""
        outcomes: list[WriteOutcome] = [None] * len(writes)
        rounds = save_rounds(writes) or [[]]
        with self._guard(), self._r.pipeline(transaction=True) as pipe:
            for k, batch in enumerate(rounds):
                # intents and releases go with the last round: every save's outcome is known
                extras = list(writes) if k == len(rounds) - 1 else []
                while True:
                    try:
                        self._write_round(pipe, [(i, writes[i]) for i in batch], extras, outcomes)
                        break
                    except self._redis.WatchError:
                        continue
        return outcomes

    def _write_round(
        self,
        pipe: Any,
        saves: list[tuple[int, Write]],
        extras: list[Write],
        outcomes: list[WriteOutcome],
    ) -> None:
        """Checkpoints of distinct sessions, plus the intents and releases of ``extras``."""
        releases = [w.release for w in extras if w.release is not None]
        metas = [self._k(w.state.session_id, "meta") for _, w in saves if w.state is not None]
        locks = [f"{self.prefix}:lock:{sid}" for sid, _ in releases]
        if metas or locks:
            pipe.watch(*metas, *locks)
        reads = self._r.pipeline(transaction=False)
        for meta in metas:
            reads.hmget(meta, "message_count", "last", "created_at", "checkpoints")
        for lock in locks:
            reads.get(lock)
        got = reads.execute() if metas or locks else []
        plans = self._plan_saves(saves, got[: len(metas)], outcomes)
        now = time.time()
        pipe.multi()
        for i, state, enc, plan, fields in plans:
            ref = CheckpointRef(
                state.session_id, fields["last"], state.turn, state.status, state.stop,
                len(state.messages), now,
            )  # fmt: skip
            fields.update(updated_at=now, last=ref.checkpoint)
            self._write(pipe, state, ref, enc, plan)
            sid = state.session_id
            pipe.hset(self._k(sid, "meta"), mapping=fields)
            pipe.zadd(f"{self.prefix}:sessions", {sid: now})
            if state.stop is None:
                pipe.zadd(f"{self.prefix}:unfinished", {sid: now})
            else:
                pipe.zrem(f"{self.prefix}:unfinished", sid)
            self._expire(pipe, sid, ("meta", "msgs", "ckpt", "intents"))
            outcomes[i] = ref
        for k, w in enumerate(extras):  # extras are all the writes, or none
            for intent in () if isinstance(outcomes[k], Exception) else w.intents:
                pipe.hset(
                    self._k(intent.session_id, "intents"), intent.call_id, encode_intent(intent)
                )
                self._expire(pipe, intent.session_id, ("intents",))
        for (sid, owner), holder in zip(releases, got[len(metas) :], strict=True):
            if holder == owner.encode():
                pipe.delete(f"{self.prefix}:lock:{sid}")
        pipe.execute()

    def _plan_saves(
        self, saves: list[tuple[int, Write]], metas: list[Any], outcomes: list[WriteOutcome]
    ) -> list[tuple[int, RunState, Encoded, tuple[int, int, list[bytes]], dict[str, Any]]]:
        """What each save appends (one pipelined read for the continuity checks and the
        checkpoints a rewrite drops); a save that fails its checks gets its error."""
        staged = []
        for (i, w), (stored_raw, last_raw, created_raw, count_raw) in zip(
            saves, metas, strict=True
        ):
            state = w.state
            assert state is not None
            stored, last = int(stored_raw or 0), int(last_raw or 0)
            try:
                start = self._start(state.session_id, stored, len(state.messages), w.rewrite_from)
            except (HistoryRewritten, ValueError) as exc:
                outcomes[i] = exc
                continue
            created = float(created_raw) if created_raw else state.created_at
            enc = encoded_state(state, w.encoded)
            staged.append((i, state, enc, start, stored, last, created, int(count_raw or last)))
        reads = self._r.pipeline(transaction=False)
        for _, state, _enc, start, stored, *_ in staged:
            sid = state.session_id
            reads.lindex(self._k(sid, "msgs"), max(0, start - 1))
            if start < stored:  # a rewrite: the checkpoints it drops
                reads.hgetall(self._k(sid, "ckpt"))
            else:  # keeps the replies two per save
                reads.exists(self._k(sid, "ckpt"))
        got = reads.execute() if staged else []
        plans = []
        for k, (i, state, enc, start, stored, last, created, count) in enumerate(staged):
            sid = state.session_id
            if start > 0:
                try:
                    check_continues(sid, start - 1, (got[2 * k],), enc.rows[start - 1])
                except HistoryConflict as exc:
                    outcomes[i] = exc
                    continue
            drop = _stale(got[2 * k + 1], start) if start < stored else []
            fields: dict[str, Any] = _meta(state, last + 1, created)
            fields["checkpoints"] = count + 1 - len(drop)
            plans.append((i, state, enc, (start, stored, drop), fields))
        return plans

    def _expire(self, pipe: Any, sid: str, parts: Sequence[str]) -> None:
        if self.ttl is not None:
            for part in parts:
                pipe.expire(self._k(sid, part), int(max(1, self.ttl)))

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

    def _write(
        self,
        pipe: Any,
        state: RunState,
        ref: CheckpointRef,
        enc: Encoded,
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
        rows = [enc.rows[i] for i in range(start, len(state.messages))]
        if rows:
            pipe.rpush(msgs, *rows)
        entry = {
            "turn": ref.turn,
            "status": ref.status.value,
            "stop": None if ref.stop is None else ref.stop.value,
            "message_count": ref.message_count,
            "created_at": ref.created_at,
            "header": enc.header,
        }
        pipe.hset(ckpt, str(ref.checkpoint), json.dumps(entry, separators=(",", ":")))

    def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        (outcome,) = self._loads([(session_id, checkpoint)])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def _loads(self, wanted: Sequence[tuple[str, int | None]]) -> list[RunState | Exception]:
        """Checkpoints ``(session, number or None for the latest)``, three pipelined
        reads for all of them; a missing or unreadable one is its error."""
        with self._guard():
            reads = self._r.pipeline(transaction=False)
            for sid, _ in wanted:
                reads.hget(self._k(sid, "meta"), "last")
            lasts = reads.execute()
            out: list[Exception | tuple[int, dict[str, Any]]] = []
            for (sid, checkpoint), last in zip(wanted, lasts, strict=True):
                if last is None:
                    out.append(SessionNotFound(sid))
                    continue
                number = int(last) if checkpoint is None else checkpoint
                reads.hget(self._k(sid, "ckpt"), str(number))
                out.append((number, {"last": int(last)}))
            raws = iter(reads.execute())
            for k, (sid, _) in enumerate(wanted):
                item = out[k]
                if isinstance(item, Exception):
                    continue
                number, info = item
                raw = next(raws)
                try:
                    if raw is None:
                        raise CheckpointNotFound(sid, number, info["last"])
                    entry = _entry(sid, number, raw)
                except (CheckpointNotFound, CorruptCheckpoint) as exc:
                    out[k] = exc
                    continue
                count = int(entry["message_count"])
                reads.lrange(self._k(sid, "msgs"), 0, count - 1)
                out[k] = (number, entry)
            rows = iter(reads.execute())
        states: list[RunState | Exception] = []
        for (sid, _), item in zip(wanted, out, strict=True):
            if isinstance(item, Exception):
                states.append(item)
                continue
            number, entry = item
            messages = next(rows)
            try:
                states.append(
                    decode_state(entry["header"], messages, session_id=sid, checkpoint=number)
                )
            except Exception as exc:  # CorruptCheckpoint, SchemaVersionError ...
                states.append(exc)
        return states

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

    def sessions(self, *, limit: int | None = None, unfinished: bool = False) -> list[SessionInfo]:
        if not unfinished:
            return self._listed(f"{self.prefix}:sessions", limit)
        built = f"{self.prefix}:unfinished:built"
        with self._guard():
            if not self._r.exists(built):
                self._build_unfinished()
                self._r.set(built, "1")
        return self._listed(f"{self.prefix}:unfinished", limit, unfinished=True)

    def _listed(
        self, zkey: str, limit: int | None, *, unfinished: bool = False
    ) -> list[SessionInfo]:
        with self._guard():
            ids = [i.decode() for i in self._r.zrevrange(zkey, 0, -1)]
            pipe = self._r.pipeline(transaction=False)
            for sid in ids:
                pipe.hgetall(self._k(sid, "meta"))
            metas = pipe.execute() if ids else []
            infos = {sid: _info(sid, m) for sid, m in zip(ids, metas, strict=True) if m}
            # retention: their keys expired; in ``unfinished``, a member whose meta
            # has a result is left over from a stale rebuild
            gone = {s for s in ids if s not in infos or (unfinished and infos[s].stop)}
            if gone:
                self._r.zrem(zkey, *gone)
        rows = [infos[s] for s in ids if s not in gone]
        return rows if limit is None else rows[:limit]

    def _build_unfinished(self) -> None:
        """Fill ``unfinished`` from every session once (stores written before it
        existed); saves keep it up to date afterwards."""
        rows = self._listed(f"{self.prefix}:sessions", None)
        todo = {r.session_id: r.updated_at for r in rows if r.stop is None and not r.problem}
        if todo:
            self._r.zadd(f"{self.prefix}:unfinished", todo)

    def delete(self, session_id: str) -> bool:
        keys = [self._k(session_id, p) for p in ("meta", "msgs", "ckpt", "intents")]
        with self._guard():
            pipe = self._r.pipeline(transaction=True)
            pipe.delete(*keys, f"{self.prefix}:lock:{session_id}")
            pipe.zrem(f"{self.prefix}:sessions", session_id)
            pipe.zrem(f"{self.prefix}:unfinished", session_id)
            deleted, *_ = pipe.execute()
        return bool(deleted)

    # -- locks --------------------------------------------------------------------
    def acquire_lock(self, session_id: str, owner: str, ttl: float = DEFAULT_LOCK_TTL) -> None:
        outcomes: list[ClaimOutcome] = [None]
        self._lock_many([Claim(session_id, owner, ttl)], outcomes)
        if isinstance(outcomes[0], Exception):
            raise outcomes[0]

    def claim(self, claims: Sequence[Claim]) -> list[ClaimOutcome]:
        """The locks in one ``WATCH``/``MULTI`` for all of them, then the sessions in
        three pipelined reads (:meth:`_loads`)."""
        outcomes: list[ClaimOutcome] = [None] * len(claims)
        granted = self._lock_many(claims, outcomes)
        loaded = self._loads([(claims[i].session_id, None) for i in granted])
        failed = []
        for i, state in zip(granted, loaded, strict=True):
            if isinstance(state, SessionNotFound):
                continue  # not stored yet: the lock is held, the outcome is None
            outcomes[i] = state
            if isinstance(state, Exception):
                failed.append(claims[i])
        for c in failed:  # could not load: do not keep the lock
            self.release_lock(c.session_id, c.owner)
        return outcomes

    def _lock_many(self, claims: Sequence[Claim], outcomes: list[ClaimOutcome]) -> list[int]:
        """Take the claims' locks (``SET PX``; a live holder means ``SessionLocked`` in
        ``outcomes``); the indexes of the claims that got theirs."""
        keys = sorted({f"{self.prefix}:lock:{c.session_id}" for c in claims})
        breaks = sorted({f"{self.prefix}:lock:{c.session_id}" for c in claims if c.break_first})
        with self._guard(), self._r.pipeline(transaction=True) as pipe:
            if breaks:
                self._r.delete(*breaks)
            while True:
                try:
                    pipe.watch(*keys)
                    reads = self._r.pipeline(transaction=False)
                    for key in keys:
                        reads.get(key)
                        reads.pttl(key)
                    got = reads.execute()
                    holders = {
                        key: (got[2 * k].decode() if got[2 * k] else None, got[2 * k + 1])
                        for k, key in enumerate(keys)
                    }
                    granted = []
                    for i, c in enumerate(claims):
                        key = f"{self.prefix}:lock:{c.session_id}"
                        holder, left = holders[key]
                        if holder and holder != c.owner and not owner_is_dead(holder):
                            outcomes[i] = SessionLocked(c.session_id, holder, max(0, left) / 1000)
                            continue
                        holders[key] = (c.owner, 0)
                        granted.append(i)
                    pipe.multi()
                    for i in granted:
                        c = claims[i]
                        ms = max(1, int(c.ttl * 1000))
                        pipe.set(f"{self.prefix}:lock:{c.session_id}", c.owner, px=ms)
                    pipe.execute()
                    return granted
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


def _meta(state: RunState, last: int, created: float) -> dict[str, Any]:
    return {
        "status": state.status.value,
        "stop": "" if state.stop is None else state.stop.value,
        "turn": state.turn,
        "message_count": len(state.messages),
        "last": last,
        "parent": state.parent or "",
        "created_at": created,
    }


def _stale(checkpoints: Mapping[bytes, bytes], start: int) -> list[bytes]:
    """The checkpoints (fields of the ``ckpt`` hash) that reference messages from
    ``start`` on: a rewrite from ``start`` drops them."""
    stale = []
    for field, raw in checkpoints.items():
        try:
            if int(json.loads(raw)["message_count"]) > start:
                stale.append(field)
        except (ValueError, KeyError, TypeError):
            continue
    return stale


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
