"""A restarted server lists its sessions, resumes approvals and interrupted runs."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_harness import ALPHA, Server, create, read_events


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "sessions.db", tmp_path / "outbox.jsonl")
    srv.start()
    yield srv
    srv.stop()


def test_restart_lists_old_sessions_and_resumes_an_approval(own_server: Server) -> None:
    with own_server.client() as http:
        done = create(http, ALPHA, "echo", "before restart")
        read_events(http, done, ALPHA)
        paused = create(http, ALPHA, "mailer", "email ann")
        read_events(http, paused, ALPHA)
    own_server.restart()
    with own_server.client() as http:
        listed = {s["id"]: s for s in http.get("/v1/sessions", headers=ALPHA).json()["sessions"]}
        assert listed[done]["status"] == "finished"
        assert listed[done]["stop"] == "final_answer"
        assert listed[paused]["status"] == "awaiting_confirmation"
        state = http.get(f"/v1/sessions/{done}", headers=ALPHA).json()
        assert state["answer"] == "echo: before restart" and state["agent"] == "echo"
        # the event log of the old process is gone; the stream starts with the snapshot
        snapshot = http.get(f"/v1/sessions/{done}/events", headers=ALPHA).text
        assert snapshot.startswith("retry: 1000\nevent: session\n")
        assert '"status":"finished"' in snapshot
        resp = http.post(f"/v1/sessions/{paused}/approvals", json={"approve": True}, headers=ALPHA)
        assert resp.status_code == 202
        events = read_events(http, paused, ALPHA)
        assert events[-1].data["result"]["answer"] == "sent to ann@example.org"
    sent = [json.loads(x) for x in own_server.outbox.read_text().splitlines()]
    assert sent == [{"to": "ann@example.org"}]


def test_a_run_cut_off_by_a_crash_is_resumed_at_startup(own_server: Server) -> None:
    with own_server.client() as http:
        sid = create(http, ALPHA, "slow", "keep going")
        read_events(http, sid, ALPHA, limit=1)  # the run has started
    own_server.stop(signal.SIGKILL)
    own_server.start()
    with own_server.client() as http:
        events = read_events(http, sid, ALPHA)
        assert events[-1].data["result"]["answer"] == "heard: keep going"
        deadline = time.monotonic() + 10
        while http.get(f"/v1/sessions/{sid}", headers=ALPHA).json()["status"] != "finished":
            assert time.monotonic() < deadline
            time.sleep(0.05)
