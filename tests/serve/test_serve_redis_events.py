"""Events kept in Redis: a session run by one server process is streamed through
another, and replayed after its process restarted."""

from __future__ import annotations

from pathlib import Path

import pytest
from serve_harness import ALPHA, BRAVO, Server, create, read_events
from tests.services import REDIS_ENV, service_url

pytestmark = pytest.mark.services


def test_stream_through_another_process_and_replay_after_a_restart(tmp_path: Path) -> None:
    extra = ["--events-url", service_url(REDIS_ENV), "--no-resume"]
    first = Server(tmp_path / "s.db", tmp_path / "outbox", extra=extra)
    second = Server(tmp_path / "s.db", tmp_path / "outbox", extra=extra)
    first.start()
    second.start()
    try:
        with first.client() as a, second.client() as b:
            sid = create(a, ALPHA, "slow", "first")
            read_events(b, sid, ALPHA, limit=1)  # the run has started (in the first process)
            busy = b.post(f"/v1/sessions/{sid}/messages", json={"text": "x"}, headers=ALPHA)
            assert busy.status_code == 409 and "another server process" in busy.text
            busy = b.post(f"/v1/sessions/{sid}/cancel", headers=ALPHA)
            assert busy.status_code == 409 and "another server process" in busy.text
            # the run executes in the first process; the second streams it from Redis
            remote = read_events(b, sid, ALPHA)
            assert [e.id for e in remote] == list(range(1, len(remote) + 1))
            assert remote[-1].data["result"]["answer"] == "heard: first"
            local = read_events(a, sid, ALPHA)
            assert [(e.id, e.event, e.data) for e in local] == [
                (e.id, e.event, e.data) for e in remote
            ]
            tail = read_events(b, sid, ALPHA, last_event_id=len(remote) - 2)
            assert [e.id for e in tail] == [len(remote) - 1, len(remote)]
            assert b.get(f"/v1/sessions/{sid}/events", headers=BRAVO).status_code == 404
        first.restart()
        with first.client() as a:
            replay = read_events(a, sid, ALPHA)
            assert [e.id for e in replay] == [e.id for e in remote]
            # the next turn continues the numbering after the stored events
            a.post(f"/v1/sessions/{sid}/messages", json={"text": "again"}, headers=ALPHA)
            more = read_events(a, sid, ALPHA, last_event_id=len(remote))
            assert more[0].id == len(remote) + 1
            assert more[-1].data["result"]["answer"] == "heard: first | again"
    finally:
        first.stop()
        second.stop()
