"""Two server processes over one store: when the one running a session is SIGKILLed,
the other takes the session over once its lease (the session lock) is gone, and the run
completes there."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from serve_harness import ALPHA, Server, create, read_events


def test_a_session_of_a_killed_process_completes_on_another(tmp_path: Path) -> None:
    opts = ["--lock-ttl", "2", "--recover-every", "0.5"]
    doomed = Server(tmp_path / "s.db", tmp_path / "outbox", extra=opts)
    survivor = Server(tmp_path / "s.db", tmp_path / "outbox", extra=opts)
    doomed.start()
    survivor.start()
    try:
        with doomed.client() as a:
            sid = create(a, ALPHA, "slow", "carry on")
            read_events(a, sid, ALPHA, limit=1)  # the run has started in `doomed`
        doomed.stop(signal.SIGKILL)
        with survivor.client() as b:
            deadline = time.monotonic() + 30
            state = b.get(f"/v1/sessions/{sid}", headers=ALPHA).json()
            while state["status"] != "finished":
                assert time.monotonic() < deadline, state
                time.sleep(0.2)
                state = b.get(f"/v1/sessions/{sid}", headers=ALPHA).json()
            assert state["answer"] == "heard: carry on"
            events = read_events(b, sid, ALPHA)
            assert events[-1].data["result"]["answer"] == "heard: carry on"
            assert [e.event for e in events].count("serve_error") == 0
    finally:
        doomed.stop()
        survivor.stop()
