"""Three `loopwright serve` processes sharing one PostgreSQL store and one Redis.

Sessions created through one process run on whichever worker claims them and are
streamed, steered, cancelled and approved through any other; a SIGKILLed worker's run
completes on another with every side effect exactly once; tenants stay apart across
processes; an approval that arrives hours later (a simulated clock) resumes the run.
"""

from __future__ import annotations

import collections
import json
import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serve_harness import ALPHA, BRAVO, Server, create, drop_redis_keys, read_events
from served_agents import SENDS
from tests.services import POSTGRES_ENV, REDIS_ENV, service_url

pytestmark = pytest.mark.services


class Cluster:
    """Three servers over one fresh PostgreSQL schema and one Redis key prefix."""

    def __init__(self, tmp: Path) -> None:
        import psycopg

        base = service_url(POSTGRES_ENV)
        self.redis_url = service_url(REDIS_ENV)
        self.schema = f"serve_cluster_{secrets.token_hex(4)}"
        self.prefix = f"lwtest:{self.schema}"
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {self.schema}")
        self.base = base
        self.store_url = f"{base}?options=-csearch_path%3D{self.schema}"
        self.outbox = tmp / "outbox.jsonl"
        self.servers = [self.server(tmp) for _ in range(3)]

    def server(self, tmp: Path, env: dict[str, str] | None = None) -> Server:
        extra = [
            "--redis-url",
            self.redis_url,
            "--redis-prefix",
            self.prefix,
            "--lock-ttl",
            "2",
            "--recover-every",
            "0.5",
            "--drain",
            "0.3",
            "--no-access-log",
        ]
        return Server(
            tmp / "unused.db", self.outbox, extra, store_url=self.store_url, env=env or {}
        )

    def start(self) -> None:
        for srv in self.servers:
            srv.start()

    def stop(self) -> None:
        for srv in self.servers:
            srv.stop()

    def close(self) -> None:
        import psycopg

        self.stop()
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {self.schema} CASCADE")
        drop_redis_keys(self.redis_url, self.prefix)

    def runner(self, session_id: str) -> Server:
        """The server process holding the session's lease (its lock in the store)."""
        from loopwright.store import PostgresStore

        store = PostgresStore(self.store_url, migrate=False)
        try:
            deadline = time.monotonic() + 10
            while (owner := store.lock_owner(session_id)) is None:
                assert time.monotonic() < deadline, "no worker took the session"
                time.sleep(0.02)
        finally:
            store.close()
        pid = int(owner.split(":")[1])
        return next(s for s in self.servers if s.proc is not None and s.pid == pid)

    def sent(self) -> collections.Counter[str]:
        lines = self.outbox.read_text().splitlines() if self.outbox.exists() else []
        return collections.Counter(json.loads(x)["key"] for x in lines if "key" in x)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("serve-cluster"))
    try:
        c.start()
        yield c
    finally:
        c.close()


def wait_status(client: httpx.Client, sid: str, status: str, headers=ALPHA) -> dict:
    deadline = time.monotonic() + 30
    while True:
        state = client.get(f"/v1/sessions/{sid}", headers=headers).json()
        if state["status"] == status:
            return state
        assert time.monotonic() < deadline, state
        time.sleep(0.05)


def test_created_on_one_streamed_on_another_steered_through_a_third(cluster: Cluster) -> None:
    one, two, three = cluster.servers
    with one.client() as a, two.client() as b, three.client() as c:
        sid = create(a, ALPHA, "slow", "first")
        assert read_events(b, sid, ALPHA, limit=1)[0].event == "run_started"
        queued = c.post(f"/v1/sessions/{sid}/messages", json={"text": "more"}, headers=ALPHA)
        assert queued.status_code == 202 and queued.json()["result"] == "queued"
        events = read_events(b, sid, ALPHA)
        assert [e.id for e in events] == list(range(1, len(events) + 1))
        assert events[-1].data["result"]["answer"] == "heard: first | more"
        # every process replays the same numbered events, and resumes after Last-Event-ID
        assert [(e.id, e.data) for e in read_events(a, sid, ALPHA)] == [
            (e.id, e.data) for e in events
        ]
        tail = read_events(c, sid, ALPHA, last_event_id=len(events) - 2)
        assert [e.id for e in tail] == [len(events) - 1, len(events)]
        assert wait_status(c, sid, "finished")["answer"] == "heard: first | more"
        # the next turn, asked through a third process, continues the numbering
        nxt = c.post(f"/v1/sessions/{sid}/messages", json={"text": "again"}, headers=ALPHA)
        assert nxt.json()["result"] == "started"
        later = read_events(a, sid, ALPHA, last_event_id=len(events))
        assert later[0].id == len(events) + 1
        assert later[-1].data["result"]["answer"] == "heard: first | more | again"


def test_cancel_and_approve_through_other_processes(cluster: Cluster) -> None:
    one, two, three = cluster.servers
    with one.client() as a, two.client() as b, three.client() as c:
        sid = create(a, ALPHA, "sender", "cancel-me")
        read_events(b, sid, ALPHA, limit=1)
        assert c.post(f"/v1/sessions/{sid}/cancel", headers=ALPHA).status_code == 202
        assert read_events(b, sid, ALPHA)[-1].data["result"]["stop_reason"] == "cancelled"
        assert wait_status(a, sid, "finished")["stop"] == "cancelled"
        again = c.post(f"/v1/sessions/{sid}/cancel", headers=ALPHA)
        assert again.status_code == 409
        assert cluster.sent()["cancel-me|3"] == 0  # stopped before its last send

        paused = create(b, ALPHA, "mailer", "email ann")
        assert read_events(c, paused, ALPHA)[-1].data["result"]["stop_reason"] == (
            "awaiting_confirmation"
        )
        busy = a.post(f"/v1/sessions/{paused}/messages", json={"text": "x"}, headers=ALPHA)
        assert busy.status_code == 409
        ok = a.post(f"/v1/sessions/{paused}/approvals", json={"approve": True}, headers=ALPHA)
        assert ok.status_code == 202
        events = read_events(c, paused, ALPHA, last_event_id=1)
        assert events[-1].data["result"]["answer"] == "sent to ann@example.org"


def test_tenants_stay_apart_across_processes(cluster: Cluster) -> None:
    one, two, three = cluster.servers
    with one.client() as a, two.client() as b, three.client() as c:
        sid = create(a, ALPHA, "mailer", "email ann")
        wait_status(a, sid, "awaiting_confirmation")
        for client in (b, c):
            base = f"/v1/sessions/{sid}"
            answers = [
                client.get(base, headers=BRAVO),
                client.get(f"{base}/events", headers=BRAVO),
                client.post(f"{base}/messages", json={"text": "hi"}, headers=BRAVO),
                client.post(f"{base}/approvals", json={"approve": True}, headers=BRAVO),
                client.post(f"{base}/cancel", headers=BRAVO),
            ]
            assert [r.status_code for r in answers] == [404] * 5
            assert {r.json()["error"]["code"] for r in answers} == {"session_not_found"}
            listed = client.get("/v1/sessions", headers=BRAVO).json()["sessions"]
            assert sid not in {s["id"] for s in listed}
        assert wait_status(c, sid, "awaiting_confirmation")["pending_calls"]


def test_a_sigkilled_worker_s_session_completes_on_another(cluster: Cluster) -> None:
    entry = cluster.servers[0]
    with entry.client() as a:
        sid = create(a, ALPHA, "sender", "survive")
        victim = cluster.runner(sid)
        time.sleep(0.45)  # mid-run: after a send or two
        victim.stop(signal.SIGKILL)
        survivor = next(s for s in cluster.servers if s.proc is not None)
        with survivor.client() as s:
            state = wait_status(s, sid, "finished")
            events = read_events(s, sid, ALPHA)
        victim.start()  # the next tests get three processes again
    assert state["answer"] == f"delivered {SENDS}"
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert [e.event for e in events].count("serve_error") == 0
    sent = cluster.sent()
    assert {k: n for k, n in sent.items() if k.startswith("survive|")} == {
        f"survive|{n}": 1 for n in range(SENDS)
    }


def test_sigterm_hands_an_unfinished_run_to_another_worker(cluster: Cluster) -> None:
    """A worker told to stop takes no new job, lets runs finish for --drain seconds,
    then interrupts the rest at a checkpoint and puts them back on the queue."""
    entry = cluster.servers[0]
    with entry.client() as a:
        sid = create(a, ALPHA, "sender", "drained")
        victim = cluster.runner(sid)
        time.sleep(0.3)
        assert victim.proc is not None
        victim.proc.send_signal(signal.SIGTERM)
        # uvicorn re-raises the signal once its graceful shutdown is done
        assert victim.proc.wait(30) in (0, -signal.SIGTERM)
        assert victim.proc.stderr is not None
        log = victim.proc.stderr.read().decode()
        assert f"session {sid}: handed back to the queue" in log, log[-3000:]
        victim.proc = None
        survivor = next(s for s in cluster.servers if s.proc is not None)
        with survivor.client() as s:
            state = wait_status(s, sid, "finished")
            events = read_events(s, sid, ALPHA)
        victim.start()
    assert state["answer"] == f"delivered {SENDS}"
    assert [e.event for e in events].count("serve_error") == 0
    assert [e.event for e in events].count("run_started") == 2  # one per worker
    sent = cluster.sent()
    assert {k: n for k, n in sent.items() if k.startswith("drained|")} == {
        f"drained|{n}": 1 for n in range(SENDS)
    }


def test_an_approval_hours_later_resumes_the_run(cluster: Cluster, tmp_path: Path) -> None:
    import libfaketime

    with cluster.servers[0].client() as a:
        sid = create(a, ALPHA, "mailer", "email bob")
        before = wait_status(a, sid, "awaiting_confirmation")
    # every worker is replaced by one whose clock is six hours ahead
    cluster.stop()
    _, faked = libfaketime.get_reload_information()
    later = {**faked, "FAKETIME": "+6h"}
    cluster.servers = [cluster.server(tmp_path, later) for _ in range(3)]
    cluster.start()
    one, two, three = cluster.servers
    with one.client() as a, two.client() as b, three.client() as c:
        assert wait_status(b, sid, "awaiting_confirmation")["pending_calls"]
        ok = c.post(f"/v1/sessions/{sid}/approvals", json={"approve": True}, headers=ALPHA)
        assert ok.status_code == 202
        events = read_events(a, sid, ALPHA, last_event_id=before["events"])
        assert events[-1].data["result"]["answer"] == "sent to ann@example.org"
        after = wait_status(b, sid, "finished")
    assert after["updated_at"] - before["updated_at"] > 5.9 * 3600
