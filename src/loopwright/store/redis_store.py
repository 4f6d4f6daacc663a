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

A batch of saves (the group commit's ``write``) is two server-side script calls: one
reads each session's counters and last stored message (:data:`scripts.READ_SCRIPT`), the other
checks those are unchanged and applies every write atomically (:data:`scripts.WRITE_SCRIPT`),
so two writers of one session never interleave. The store uses keys of many sessions in
one script and transaction: it needs a single Redis server, not Redis Cluster. ``ttl``
(seconds) is the retention: every save re-arms the expiry of all of the session's keys; expired sessions drop out of
``sessions()``. ``ledger_ttl`` bounds ledger keys the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from loopwright.core.checks import check_seconds
from loopwright.core.messages import ToolResultPart
from loopwright.core.run import LoopState, RunState, RunStop
from loopwright.store import redis_scripts as scripts
from loopwright.store.base import DEFAULT_LOCK_TTL, save_one, save_rounds, write_start
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
        # checked before anything is written: a ttl of 0 (meant as "no expiry") or a
        # negative one expired every session a second after its save, a str one failed
        # at the first save
        for name, value in (("ttl", ttl), ("ledger_ttl", ledger_ttl)):
            if value is not None:
                check_seconds(f"RedisStore({name}=...)", value)
        self._redis: Any = redis
        self.url = url
        self.target = _redact(url)
        self.prefix = prefix
        self.ttl = ttl
        self.ledger_ttl = ledger_ttl
        self._r: Any = redis.Redis.from_url(
            url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout
        )
        # EVALSHA, loading the script again if the server lost it (a restart)
        self._read_script: Any = self._r.register_script(scripts.READ_SCRIPT)
        self._write_script: Any = self._r.register_script(scripts.WRITE_SCRIPT)
        self._sessions_script: Any = self._r.register_script(scripts.SESSIONS_SCRIPT)
        self._lock_script: Any = self._r.register_script(scripts.LOCK_SCRIPT)

    # -- keys / errors ------------------------------------------------------------
    def _k(self, sid: str, part: str) -> str:
        return f"{self.prefix}:s:{sid}:{part}"

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Server conditions that refuse every request of a kind -- down, timing out, a
        read-only replica after a failover, out of memory, unable to persist
        (``MISCONF``) -- are :class:`StoreUnavailable` with the server's reason."""
        redis = self._redis
        try:
            yield
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise StoreUnavailable("redis", self.target, str(exc) or type(exc).__name__) from None
        except (redis.ReadOnlyError, redis.OutOfMemoryError) as exc:
            raise StoreUnavailable(
                "redis", self.target, f"the server refused a write: {exc}"
            ) from None
        except redis.ResponseError as exc:
            if not str(exc).startswith("MISCONF"):
                raise
            raise StoreUnavailable("redis", self.target, str(exc)) from None

    # -- checkpoints ------------------------------------------------------------
    def save(
        self, state: RunState, *, rewrite_from: int | None = None, encoded: Encoded | None = None
    ) -> CheckpointRef:
        return save_one(self.write, state, rewrite_from, encoded)

    def write(self, writes: Sequence[Write]) -> list[WriteOutcome]:
        """Every write in two round trips whatever their number: one script call that
        reads what the saves depend on (each session's counters and last stored
        message, :data:`scripts.READ_SCRIPT`), then ONE call of a script (:data:`scripts.WRITE_SCRIPT`, atomic on the server) that
        checks those are unchanged and applies every write. A save that fails its own
        checks fails alone; a concurrent writer of one of the sessions makes the batch
        read and start over (as ``WATCH`` would)."""
        outcomes: list[WriteOutcome] = [None] * len(writes)
        broken: dict[int, Exception] = {}  # writes to a key of the wrong type: they fail alone
        bad: set[str] = set()  # those keys
        rounds = save_rounds(writes) or [[]]
        with self._guard():
            for k, batch in enumerate(rounds):
                # intents and releases go with the last round: every save's outcome is known
                extras = list(writes) if k == len(rounds) - 1 else []
                while not self._write_round(batch, writes, extras, (outcomes, broken, bad)):
                    continue
        for i, exc in broken.items():
            outcomes[i] = exc
        return outcomes

    def _write_round(
        self,
        batch: list[int],
        writes: Sequence[Write],
        extras: list[Write],
        results: tuple[list[WriteOutcome], dict[int, Exception], set[str]],
    ) -> bool:
        """Checkpoints of distinct sessions (``writes[i]`` for ``i`` in ``batch``), plus the
        intents and releases of ``extras``; False if nothing was written: a session
        changed since it was read, or a key held the wrong type (its writes are then
        recorded in ``broken``, the keys in ``bad``, and left out of the next try; a lock
        is still released unless its own key is bad). The script's arguments are
        flat strings (see :data:`scripts.WRITE_SCRIPT`): the message rows and records go
        as they are, neither escaped again nor one command each."""
        outcomes, broken, bad = results
        now = time.time()
        plans = self._plan_saves([(i, writes[i]) for i in batch if i not in broken], outcomes)
        ttl = int(max(1, self.ttl)) if self.ttl is not None else 0
        args: list[str] = [self.prefix, str(ttl), str(len(plans))]
        owners: dict[str, list[int]] = {}  # which writes each key serves
        for plan in plans:
            self._save_args(plan, now, outcomes, args)
            for part in ("msgs", "ckpt", "meta"):
                owners.setdefault(self._k(plan.state.session_id, part), []).append(plan.index)
        intents = [
            (i, x)
            for i, (w, outcome) in enumerate(zip(extras, outcomes, strict=False))  # all or none
            if not isinstance(outcome, Exception) and i not in broken
            for x in w.intents
        ]
        args.append(str(len(intents)))
        for i, x in intents:
            args += (x.session_id, x.call_id, encode_intent(x))
            owners.setdefault(self._k(x.session_id, "intents"), []).append(i)
        releases = [
            (i, w.release)
            for i, w in enumerate(extras)
            if w.release is not None and f"{self.prefix}:lock:{w.release[0]}" not in bad
        ]
        args.append(str(len(releases)))
        for i, (sid, owner) in releases:
            args += (sid, owner)
            owners.setdefault(f"{self.prefix}:lock:{sid}", []).append(i)
        if not (plans or intents or releases):
            return True
        done = self._write_script(args=args)
        if isinstance(done, list):
            self._wrong_types(done, owners, [p.index for p in plans], (broken, bad))
            return False
        return bool(done)

    def _wrong_types(
        self,
        found: list[Any],
        owners: Mapping[str, list[int]],
        saving: list[int],
        into: tuple[dict[int, Exception], set[str]],
    ) -> None:
        """Record in ``broken`` the writes of the keys the write script found holding
        another Redis type (``found``: key, type, key, type...). A session index (the
        session list itself) of the wrong type spoils every save."""
        broken, bad = into
        for raw_key, raw_type in zip(found[::2], found[1::2], strict=True):
            key, kind = (
                x.decode() if isinstance(x, bytes) else str(x) for x in (raw_key, raw_type)
            )
            bad.add(key)
            expected = _EXPECTED_TYPE.get(key.rsplit(":", 1)[-1], "string")
            detail = _wrong_type_detail(key, kind, expected) + "; nothing of this write was stored"
            sid = self._session_of(key)
            for i in owners.get(key, saving):
                broken[i] = CorruptCheckpoint(sid or key, "session keys", detail)

    def _damaged(self, sid: str, exc: Exception) -> Exception:
        """The error of reading session ``sid`` that failed with ``exc``: when a key of
        the wrong type is the cause (Redis does not say which), the key, found by type."""
        if "WRONGTYPE" not in str(exc):
            return exc
        for part, expected in _EXPECTED_TYPE.items():
            if part in ("sessions", "unfinished"):
                continue
            key = self._k(sid, part)
            kind = self._r.type(key)
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            if kind not in ("none", expected):
                return CorruptCheckpoint(
                    sid, "session keys", _wrong_type_detail(key, kind, expected)
                )
        return _wrong_type(sid, exc)

    def _session_of(self, key: str) -> str | None:
        """The session a key of this store belongs to (``None`` for its indexes)."""
        for head in (f"{self.prefix}:s:", f"{self.prefix}:lock:"):
            if key.startswith(head):
                rest = key[len(head) :]
                return rest if head.endswith("lock:") else rest.rsplit(":", 1)[0]
        return None

    @staticmethod
    def _save_args(
        plan: _RedisSave, now: float, outcomes: list[WriteOutcome], args: list[str]
    ) -> None:
        """One save's arguments of the script (its reference in ``outcomes``)."""
        state, sid = plan.state, plan.state.session_id
        ref = CheckpointRef(
            sid, plan.last + 1, state.turn, state.status, state.stop, len(state.messages), now
        )
        outcomes[plan.index] = ref
        fields = _meta(state, ref.checkpoint, plan.created)
        fields.update(checkpoints=plan.count + 1 - len(plan.drop), updated_at=now)
        entry = {
            "turn": ref.turn,
            "status": ref.status.value,
            "stop": None if ref.stop is None else ref.stop.value,
            "message_count": ref.message_count,
            "created_at": ref.created_at,
            "header": plan.encoded.header,
        }
        args += (
            sid,
            *plan.seen,
            str(plan.start),
            str(plan.stored),
            str(ref.checkpoint),
            repr(now),
            "1" if state.stop is not None else "0",
            str(len(plan.drop)),
            *(d.decode() for d in plan.drop),
            str(len(fields)),
            # as redis-py stores a mapping's values: numbers by repr
            *(x for k, v in fields.items() for x in (k, _text(v))),
            str(len(state.messages) - plan.start),
        )
        args += [plan.encoded.rows[i] for i in range(plan.start, len(state.messages))]
        args.append(json.dumps(entry, separators=(",", ":")))

    def _plan_saves(
        self, saves: list[tuple[int, Write]], outcomes: list[WriteOutcome]
    ) -> list[_RedisSave]:
        """What each save appends, from one read of every session's counters and last
        stored message (:data:`scripts.READ_SCRIPT`; a rewrite reads the message it continues
        from and the checkpoints it drops in a second one); a save that fails its
        checks gets its error."""
        sids = [w.state.session_id for _, w in saves if w.state is not None]
        got = self._read_counters(sids)
        staged: list[_RedisSave] = []
        for k, (i, w) in enumerate(saves):
            state = w.state
            assert state is not None
            read = got[k]
            if isinstance(read, Exception):
                outcomes[i] = read
                continue
            stored_raw, last_raw, created_raw, count_raw, last_row = read
            try:
                stored, last = int(stored_raw or 0), int(last_raw or 0)
                created = float(created_raw) if created_raw else state.created_at
                count = int(count_raw or last)
            except ValueError as exc:
                outcomes[i] = CorruptCheckpoint(state.session_id, "session meta", str(exc))
                continue
            try:
                start = write_start(state.session_id, stored, len(state.messages), w.rewrite_from)
            except (HistoryRewritten, ValueError) as exc:
                outcomes[i] = exc
                continue
            seen = ((stored_raw or b"").decode(), (last_raw or b"").decode())
            enc = encoded_state(state, w.encoded)
            staged.append(
                _RedisSave(i, state, enc, seen, start, stored, last, created, count, last_row)
            )
        staged = self._read_rewrites(staged)
        plans = []
        for p in staged:
            if p.start > 0:
                try:
                    check_continues(
                        p.state.session_id, p.start - 1, (p.before,), p.encoded.rows[p.start - 1]
                    )
                except HistoryConflict as exc:
                    outcomes[p.index] = exc
                    continue
            plans.append(p)
        return plans

    def _read_counters(self, sids: list[str]) -> list[list[Any] | Exception]:
        """Each session's counters and last stored message (:data:`scripts.READ_SCRIPT`), one
        call for all; when a session's keys hold the wrong type (the script fails as a
        whole), each is read alone so that only the damaged one fails."""
        if not sids:
            return []
        try:
            got = self._read_script(args=[self.prefix, *sids])
        except self._redis.ResponseError as exc:
            if "WRONGTYPE" not in str(exc):
                raise
            if len(sids) == 1:
                return [self._damaged(sids[0], exc)]
            return [x for sid in sids for x in self._read_counters([sid])]
        return [got[5 * k : 5 * k + 5] for k in range(len(sids))]

    def _read_rewrites(self, staged: list[_RedisSave]) -> list[_RedisSave]:
        """``staged``, where a save rewrites history with the stored message it
        continues from and the checkpoints it drops (one pipelined read for all)."""
        rewrites = [k for k, p in enumerate(staged) if p.start < p.stored]
        if not rewrites:
            return staged
        reads = self._r.pipeline(transaction=False)
        for k in rewrites:
            sid = staged[k].state.session_id
            reads.lindex(self._k(sid, "msgs"), max(0, staged[k].start - 1))
            reads.hgetall(self._k(sid, "ckpt"))
        got = iter(reads.execute())
        staged = list(staged)
        for k in rewrites:
            before, checkpoints = next(got), next(got)
            staged[k] = replace(
                staged[k], before=before, drop=tuple(_stale(checkpoints, staged[k].start))
            )
        return staged

    def load(self, session_id: str, checkpoint: int | None = None) -> RunState:
        (outcome,) = self._loads([(session_id, checkpoint)])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def _loads(self, wanted: Sequence[tuple[str, int | None]]) -> list[RunState | Exception]:
        """Checkpoints ``(session, number or None for the latest)``, one script call for
        all of them (:data:`scripts.READ_SCRIPT`); a missing or unreadable one is its error."""
        args = [self.prefix, "S", *(x for sid, n in wanted for x in (sid, _arg(n)))]
        with self._guard():
            try:
                got = self._sessions_script(args=args)
            except self._redis.ResponseError as exc:  # a damaged session: read each alone
                if "WRONGTYPE" not in str(exc):
                    raise
                if len(wanted) == 1:
                    return [self._damaged(wanted[0][0], exc)]
                return [x for w in wanted for x in self._loads([w])]
        return [
            _state(sid, checkpoint, *got[3 * k : 3 * k + 3])
            for k, (sid, checkpoint) in enumerate(wanted)
        ]

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

    def sessions(
        self, *, limit: int | None = None, unfinished: bool = False, prefix: str = ""
    ) -> list[SessionInfo]:
        if not unfinished:
            return self._listed(f"{self.prefix}:sessions", limit, prefix=prefix)
        built = f"{self.prefix}:unfinished:built"
        with self._guard():
            if not self._r.exists(built):
                self._build_unfinished()
                self._r.set(built, "1")
        return self._listed(f"{self.prefix}:unfinished", limit, unfinished=True, prefix=prefix)

    def _listed(
        self, zkey: str, limit: int | None, *, unfinished: bool = False, prefix: str = ""
    ) -> list[SessionInfo]:
        """The sessions of ``zkey`` whose id starts with ``prefix``, newest first: their
        rows read a page of ``limit`` at a time (a command each), not all of them."""
        with self._guard():
            ids = [i.decode() for i in self._r.zrevrange(zkey, 0, -1)]
            ids = [i for i in ids if i.startswith(prefix)]
            step = max(1, len(ids) if limit is None else limit)
            rows: list[SessionInfo] = []
            for k in range(0, len(ids), step):
                rows += self._page(zkey, ids[k : k + step], unfinished)
                if limit is not None and len(rows) >= limit:
                    break
        return rows if limit is None else rows[:limit]

    def _page(self, zkey: str, ids: list[str], unfinished: bool) -> list[SessionInfo]:
        pipe = self._r.pipeline(transaction=False)
        for sid in ids:
            pipe.hgetall(self._k(sid, "meta"))
        metas = pipe.execute(raise_on_error=False)  # a damaged session lists as unreadable
        infos = {sid: _info(sid, m) for sid, m in zip(ids, metas, strict=True) if m}
        # retention: their keys expired; in ``unfinished``, a member whose meta has a
        # result is left over from a stale rebuild
        gone = {s for s in ids if s not in infos or (unfinished and infos[s].stop)}
        if gone:
            self._r.zrem(zkey, *gone)
        return [infos[s] for s in ids if s not in gone]

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
        """Two script calls for all the claims: one reads each session's lock holder
        and latest checkpoint, one takes the locks if their holders did not change
        meanwhile (or everything starts over)."""
        outcomes: list[ClaimOutcome] = [None] * len(claims)
        granted, loaded = self._lock_many(claims, outcomes, load=True)
        failed = []
        for i in granted:
            state = loaded[claims[i].session_id]
            if isinstance(state, SessionNotFound):
                continue  # not stored yet: the lock is held, the outcome is None
            outcomes[i] = state
            if isinstance(state, Exception):
                failed.append(claims[i])
        for c in failed:  # could not load: do not keep the lock
            self.release_lock(c.session_id, c.owner)
        return outcomes

    def _lock_many(
        self, claims: Sequence[Claim], outcomes: list[ClaimOutcome], *, load: bool = False
    ) -> tuple[list[int], dict[str, RunState | Exception]]:
        """Take the claims' locks (a live holder other than the claimant means
        ``SessionLocked`` in ``outcomes``): the indexes of the claims that got theirs,
        and with ``load`` each session's latest checkpoint, read with the holders."""
        sids = sorted({c.session_id for c in claims})  # one order for every batch
        breaks = sorted({f"{self.prefix}:lock:{c.session_id}" for c in claims if c.break_first})
        width = 5 if load else 2  # values per session in the script's answer
        at = {sid: width * k for k, sid in enumerate(sids)}
        args = [self.prefix, "LS" if load else "L", *(x for sid in sids for x in (sid, ""))]
        with self._guard():
            if breaks:
                self._r.delete(*breaks)
            while True:
                got = self._sessions_script(args=args)
                seen = {sid: (got[at[sid]] or b"").decode() for sid in sids}
                holders = {sid: (seen[sid], got[at[sid] + 1]) for sid in sids}
                granted, taken = [], {}
                for i, c in enumerate(claims):
                    holder, left = holders[c.session_id]
                    if holder and holder != c.owner and not owner_is_dead(holder):
                        outcomes[i] = SessionLocked(c.session_id, holder, max(0, left) / 1000)
                        continue
                    holders[c.session_id] = (c.owner, 0)
                    granted.append(i)
                    taken[c.session_id] = c  # one lock per session: the last claim's
                locks = [str(len(taken))]
                for sid, c in taken.items():
                    locks += (sid, seen[sid], c.owner, str(max(1, int(c.ttl * 1000))))
                if self._lock_script(args=[self.prefix, *locks]):
                    break
        loaded = {sid: _state(sid, None, *got[at[sid] + 2 : at[sid] + 5]) for sid in taken if load}
        return granted, loaded

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


def _arg(number: int | None) -> str:
    return "" if number is None else str(number)


def _state(
    sid: str, checkpoint: int | None, last: bytes | None, raw: bytes | None, rows: Any
) -> RunState | Exception:
    """A checkpoint as :data:`scripts.SESSIONS_SCRIPT` read it, or why it cannot be loaded."""
    if last is None:
        return SessionNotFound(sid)
    try:
        try:
            newest = int(last)
        except ValueError:
            raise CorruptCheckpoint(sid, "session meta", f"last={last!r} is not a number") from None
        number = newest if checkpoint is None else checkpoint
        if raw is None:
            raise CheckpointNotFound(sid, number, newest)
        entry = _entry(sid, number, raw)
        if rows is None:
            raise CorruptCheckpoint(sid, f"checkpoint {number}", "message_count is not a number")
        return decode_state(entry["header"], rows, session_id=sid, checkpoint=number)
    except Exception as exc:  # CheckpointNotFound, CorruptCheckpoint, SchemaVersionError ...
        return exc


@dataclass(frozen=True, slots=True)
class _RedisSave:
    """One checkpoint of a batch: ``writes[index]``'s state over the stored session as
    read (``seen``: its counters as stored; ``before``: the stored message the save
    continues from; ``drop``: the checkpoints a rewrite drops)."""

    index: int
    state: RunState
    encoded: Encoded
    seen: tuple[str, str]
    start: int
    stored: int
    last: int
    created: float
    count: int
    before: bytes | None
    drop: tuple[bytes, ...] = ()


def _text(value: object) -> str:
    """A hash field's value as redis-py would store it (numbers by ``repr``)."""
    return repr(value) if isinstance(value, int | float) else str(value)


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


# The Redis type of each kind of key the write script touches, by the key's last part
# (a lock key ends with its session id: anything else is a string).
_EXPECTED_TYPE = {
    "msgs": "list",
    "ckpt": "hash",
    "meta": "hash",
    "intents": "hash",
    "sessions": "zset",
    "unfinished": "zset",
}


def _wrong_type_detail(key: str, kind: str, expected: str) -> str:
    return (
        f"the key {key!r} holds a Redis {kind} where the store keeps a {expected} (written "
        "by something other than loopwright?); delete that key (or the session) to save it again"
    )


def _wrong_type(sid: str, exc: Exception) -> Exception:
    """A Redis error reading one session: its keys damaged (``WRONGTYPE``), or another
    server error as it is."""
    if "WRONGTYPE" not in str(exc):
        return exc
    return CorruptCheckpoint(sid, "session keys", f"a key holds the wrong type ({exc})")


def _info(sid: str, meta: Mapping[bytes, bytes] | Exception) -> SessionInfo:
    if isinstance(meta, Exception):
        return SessionInfo.unreadable(sid, str(_wrong_type(sid, meta)))
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
