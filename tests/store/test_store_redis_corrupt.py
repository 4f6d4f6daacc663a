"""A Redis store with one session's keys damaged (a key of the wrong type, a counter that
is not a number): that session fails with CorruptCheckpoint naming it, the others list,
load and save as before."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from store_testlib import REDIS_ENV, service_url

from loopwright.core.messages import Message
from loopwright.core.run import RunState
from loopwright.store import CorruptCheckpoint

pytestmark = pytest.mark.services


@pytest.fixture
def store() -> Iterator:
    from loopwright.store.redis_store import RedisStore

    prefix = f"lwcorrupt-{uuid.uuid4().hex[:8]}"
    s = RedisStore(service_url(REDIS_ENV), prefix=prefix)
    try:
        yield s
    finally:
        for key in s._r.scan_iter(f"{prefix}:*"):
            s._r.delete(key)
        s.close()


def _two(store) -> tuple[str, str]:
    store.save(RunState("bad", messages=[Message.user("a")]))
    store.save(RunState("good", messages=[Message.user("b")]))
    return "bad", "good"


def test_a_meta_key_of_the_wrong_type_spoils_only_its_session(store) -> None:
    bad, good = _two(store)
    key = store._k(bad, "meta")
    store._r.delete(key)
    store._r.set(key, "not a hash")
    listed = {i.session_id: i.problem for i in store.sessions()}
    assert listed[good] == "" and bad in listed[bad], listed
    with pytest.raises(CorruptCheckpoint, match=bad):
        store.load(bad)
    assert store.load(good).messages[0].text == "b"


def test_a_counter_that_is_not_a_number_is_corrupt_not_a_value_error(store) -> None:
    bad, good = _two(store)
    store._r.hset(store._k(bad, "meta"), "last", "abc")
    with pytest.raises(CorruptCheckpoint, match=bad):
        store.load(bad)
    with pytest.raises(CorruptCheckpoint, match=bad):
        store.save(RunState(bad, messages=[Message.user("a"), Message.user("c")]))
    store.save(RunState(good, messages=[Message.user("b"), Message.user("c")]))
    assert len(store.load(good).messages) == 2


def test_a_server_that_refuses_writes_is_store_unavailable(tmp_path) -> None:
    """A Redis that became a read-only replica (a failover) refuses every write: that is
    the store being unavailable, with the server's reason, not a raw redis exception."""
    import shutil

    from test_store_servers import _free_port, _start_redis

    from loopwright.store import StoreUnavailable
    from loopwright.store.redis_store import RedisStore

    service_url(REDIS_ENV)
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed; run `source .ci/services.sh`")
    port = _free_port()
    server = _start_redis(port, tmp_path)
    try:
        url = f"redis://127.0.0.1:{port}/0"
        store = RedisStore(url)
        store.save(RunState("s", messages=[Message.user("a")]))
        store._r.replicaof("127.0.0.1", _free_port())  # nothing listens there
        writes = [
            lambda: store.save(RunState("s", messages=[Message.user("a"), Message.user("b")])),
            lambda: store.acquire_lock("s", "me"),
            lambda: store.delete("s"),
        ]
        for write in writes:
            with pytest.raises(StoreUnavailable, match="read only replica"):
                write()
        assert store.load("s").messages[0].text == "a"  # reads still work
        store.close()
    finally:
        server.terminate()
        server.wait()


@pytest.mark.parametrize("part", ["ckpt", "msgs", "meta"])
def test_a_key_of_the_wrong_type_fails_only_its_save_in_a_batch(store, part: str) -> None:
    from loopwright.store import Write

    bad, good = _two(store)
    key = store._k(bad, part)
    store._r.delete(key)
    store._r.set(key, "someone's string")
    out = store.write(
        [
            Write(RunState(bad, messages=[Message.user("a"), Message.user("c")])),
            Write(RunState(good, messages=[Message.user("b"), Message.user("d")])),
        ]
    )
    assert isinstance(out[0], CorruptCheckpoint), out
    assert bad in str(out[0]) and key in str(out[0])
    assert not isinstance(out[1], Exception), out
    assert [m.text for m in store.load(good).messages] == ["b", "d"]
    assert store._r.get(key) == b"someone's string"  # left untouched


def test_an_intent_key_of_the_wrong_type_fails_only_its_write(store) -> None:
    from loopwright.store import IntentRecord, Write

    bad, good = _two(store)
    store._r.set(store._k(bad, "intents"), "x")
    out = store.write(
        [
            Write(intents=(IntentRecord(bad, "c1", "send", "k1", {}),)),
            Write(RunState(good, messages=[Message.user("b"), Message.user("d")])),
            Write(intents=(IntentRecord(good, "c2", "send", "k2", {}),)),
        ]
    )
    assert isinstance(out[0], CorruptCheckpoint) and store._k(bad, "intents") in str(out[0])
    assert out[1] is not None and not isinstance(out[1], Exception)
    assert [x.call_id for x in store.intents(good)] == ["c2"]
    assert len(store.load(good).messages) == 2


def test_a_broken_save_still_releases_its_lock(store) -> None:
    from loopwright.store import Write

    bad, _ = _two(store)
    store.acquire_lock(bad, "me")
    store._r.delete(store._k(bad, "ckpt"))
    store._r.set(store._k(bad, "ckpt"), "x")
    state = RunState(bad, messages=[Message.user("a"), Message.user("c")])
    (out,) = store.write([Write(state, release=(bad, "me"))])
    assert isinstance(out, CorruptCheckpoint)
    assert store.lock_owner(bad) is None
