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
