"""Sessions served over a PostgreSQL store survive a server restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from serve_harness import ALPHA, BRAVO, Server, create, read_events
from tests.services import POSTGRES_ENV, service_url

pytestmark = pytest.mark.services


def test_postgres_sessions_are_listed_and_resumed_after_a_restart(tmp_path: Path) -> None:
    # --no-resume: the database is shared with other tests; this server must not pick up
    # their interrupted sessions
    srv = Server(
        tmp_path / "unused.db",
        tmp_path / "outbox.jsonl",
        extra=["--no-resume"],
        store_url=service_url(POSTGRES_ENV),
    )
    srv.start()
    try:
        with srv.client() as http:
            done = create(http, ALPHA, "echo", "stored in postgres")
            read_events(http, done, ALPHA)
            paused = create(http, ALPHA, "mailer", "email ann")
            read_events(http, paused, ALPHA)
        srv.restart()
        with srv.client() as http:
            mine = {s["id"]: s for s in http.get("/v1/sessions", headers=ALPHA).json()["sessions"]}
            assert mine[done]["status"] == "finished"
            assert mine[paused]["status"] == "awaiting_confirmation"
            theirs = http.get("/v1/sessions", headers=BRAVO).json()["sessions"]
            assert not {done, paused} & {s["id"] for s in theirs}
            state = http.get(f"/v1/sessions/{done}", headers=ALPHA).json()
            assert state["answer"] == "echo: stored in postgres"
            http.post(f"/v1/sessions/{paused}/approvals", json={"approve": True}, headers=ALPHA)
            events = read_events(http, paused, ALPHA)
            assert events[-1].data["result"]["answer"] == "sent to ann@example.org"
    finally:
        srv.stop()
