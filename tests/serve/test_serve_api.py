"""`loopwright serve` end to end: a real server process on 127.0.0.1 driven with httpx."""

from __future__ import annotations

import json
import time

import httpx
from serve_harness import ALPHA, BRAVO, Server, create, read_events


def _wait_status(http: httpx.Client, sid: str, status: str, timeout: float = 15) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        body = http.get(f"/v1/sessions/{sid}", headers=ALPHA).json()
        if body["status"] == status or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def test_create_then_stream_to_completion(http: httpx.Client) -> None:
    sid = create(http, ALPHA, "echo", "hello there")
    events = read_events(http, sid, ALPHA)
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    types = [e.event for e in events]
    assert types[0] == "run_started" and types[-1] == "run_finished"
    assert "model_streamed" in types  # the stand-in model streams in 3-character chunks
    result = events[-1].data["result"]
    assert result["answer"] == "echo: hello there"
    assert result["stop_reason"] == "final_answer"
    state = http.get(f"/v1/sessions/{sid}", headers=ALPHA).json()
    assert state["status"] == "finished" and state["agent"] == "echo"
    assert [m["role"] for m in state["messages"]] == ["user", "assistant"]
    assert state["answer"] == "echo: hello there"


def test_reconnect_with_last_event_id_replays_only_what_was_missed(http: httpx.Client) -> None:
    sid = create(http, ALPHA, "slow", "first")
    head = read_events(http, sid, ALPHA, limit=2)  # disconnects mid-run
    assert [e.id for e in head] == [1, 2]
    rest = read_events(http, sid, ALPHA, last_event_id=2)
    assert [e.id for e in rest] == list(range(3, len(rest) + 3))
    assert rest[-1].event == "run_finished"
    everything = read_events(http, sid, ALPHA)  # a fresh client gets the whole log
    assert [(e.id, e.event, e.data) for e in everything] == [
        (e.id, e.event, e.data) for e in head + rest
    ]
    # the same through the query parameter (EventSource cannot set headers on first use)
    tail = http.get(
        f"/v1/sessions/{sid}/events?last_event_id={len(everything) - 1}", headers=ALPHA
    ).text
    assert f"id: {len(everything)}\nevent: run_finished" in tail
    assert f"id: {len(everything) - 1}\n" not in tail


def test_follow_up_while_running_and_next_turn_when_idle(http: httpx.Client) -> None:
    sid = create(http, ALPHA, "slow", "first")
    resp = http.post(f"/v1/sessions/{sid}/messages", json={"text": "more"}, headers=ALPHA)
    assert resp.status_code == 202 and resp.json()["result"] == "queued"
    events = read_events(http, sid, ALPHA)
    assert events[-1].data["result"]["answer"] == "heard: first | more"
    resp = http.post(
        f"/v1/sessions/{sid}/messages", json={"text": "again", "mode": "steer"}, headers=ALPHA
    )
    assert resp.json()["result"] == "started"
    later = read_events(http, sid, ALPHA, last_event_id=len(events))
    assert later[0].id == len(events) + 1
    assert later[-1].data["result"]["answer"] == "heard: first | more | again"


def test_cancel_stops_the_run(http: httpx.Client) -> None:
    sid = create(http, ALPHA, "slow", "never mind")
    read_events(http, sid, ALPHA, limit=1)  # the run has started
    assert http.post(f"/v1/sessions/{sid}/cancel", headers=ALPHA).status_code == 202
    events = read_events(http, sid, ALPHA)
    assert events[-1].data["result"]["stop_reason"] == "cancelled"
    state = _wait_status(http, sid, "finished")
    assert state["stop"] == "cancelled"
    again = http.post(f"/v1/sessions/{sid}/cancel", headers=ALPHA)
    assert again.status_code == 409 and again.json()["error"]["code"] == "session_busy"
    # says what happened, not the advice for a paused session ("deny its calls")
    error = again.json()["error"]
    assert "already finished (stop reason 'cancelled')" in error["message"]
    assert "deny" not in error["fix"] and "/messages" in error["fix"]


def test_approval_pauses_then_completes(http: httpx.Client, server: Server) -> None:
    sid = create(http, ALPHA, "mailer", "email ann")
    events = read_events(http, sid, ALPHA)
    assert events[-1].data["result"]["stop_reason"] == "awaiting_confirmation"
    state = _wait_status(http, sid, "awaiting_confirmation")
    assert [c["id"] for c in state["pending_calls"]] == ["call-1"]
    assert not server.outbox.exists()
    paused = http.post(f"/v1/sessions/{sid}/cancel", headers=ALPHA).json()["error"]
    assert "waiting for approval of call-1" in paused["message"]
    assert "deny" in paused["fix"]
    bad = http.post(f"/v1/sessions/{sid}/approvals", json={"approve": ["call-9"]}, headers=ALPHA)
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "body.approve"
    both = {"approve": ["call-1"], "deny": {"call-1": "not ann"}}  # was approved: sent
    bad = http.post(f"/v1/sessions/{sid}/approvals", json=both, headers=ALPHA)
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "conflicting_decisions"
    assert not server.outbox.exists()
    resp = http.post(f"/v1/sessions/{sid}/approvals", json={"approve": True}, headers=ALPHA)
    assert resp.status_code == 202
    after = read_events(http, sid, ALPHA, last_event_id=len(events))
    assert after[-1].data["result"]["answer"] == "sent to ann@example.org"
    sent = [json.loads(line) for line in server.outbox.read_text().splitlines()]
    assert sent == [{"to": "ann@example.org"}]


def test_a_key_cannot_touch_another_tenants_session(http: httpx.Client) -> None:
    sid = create(http, ALPHA, "mailer", "email ann")
    read_events(http, sid, ALPHA)  # paused, awaiting approval
    for method, path, body in [
        ("GET", f"/v1/sessions/{sid}", None),
        ("GET", f"/v1/sessions/{sid}/events", None),
        ("POST", f"/v1/sessions/{sid}/approvals", {"approve": True}),
        ("POST", f"/v1/sessions/{sid}/cancel", None),
        ("POST", f"/v1/sessions/{sid}/messages", {"text": "hi"}),
    ]:
        resp = http.request(method, path, json=body, headers=BRAVO)
        assert resp.status_code == 404, (method, path, resp.text)
        assert resp.json()["error"]["code"] == "session_not_found"
    listed = http.get("/v1/sessions", headers=BRAVO).json()["sessions"]
    assert sid not in {s["id"] for s in listed}
    mine = http.get("/v1/sessions", headers=ALPHA).json()["sessions"]
    assert sid in {s["id"] for s in mine}
    # still paused: bravo's approval did nothing
    assert http.get(f"/v1/sessions/{sid}", headers=ALPHA).json()["status"] == (
        "awaiting_confirmation"
    )


def test_bad_requests_name_the_field_and_the_fix(http: httpx.Client) -> None:
    def error(resp: httpx.Response, status: int) -> dict:
        assert resp.status_code == status, resp.text
        assert resp.headers["content-type"] == "application/json"
        return resp.json()["error"]

    err = error(http.post("/v1/sessions", json={"agent": "echo"}), 401)
    assert err["field"] == "header.Authorization" and "Bearer" in err["fix"]
    err = error(
        http.post("/v1/sessions", json={"agent": "echo"}, headers={"X-API-Key": "nope-nope"}),
        401,
    )
    assert err["code"] == "unknown_api_key"
    err = error(http.post("/v1/sessions", json={"agent": "echo"}, headers=ALPHA), 422)
    assert err["field"] == "body.prompt" and "add the field" in err["fix"]
    err = error(http.post("/v1/sessions", json={"agent": "zed", "prompt": "x"}, headers=ALPHA), 422)
    assert err["field"] == "body.agent" and "echo" in err["fix"]
    blank = {"agent": "echo", "prompt": " \n "}  # the agent refuses a blank prompt
    err = error(http.post("/v1/sessions", json=blank, headers=ALPHA), 422)
    assert err["field"] == "body.prompt"
    body = {"agent": "echo", "prompt": "x", "colour": "red"}
    err = error(http.post("/v1/sessions", json=body, headers=ALPHA), 422)
    assert err["field"] == "body.colour" and "remove the field" in err["fix"]
    err = error(http.post("/v1/sessions", content=b"{not json", headers=ALPHA), 400)
    assert err["code"] == "invalid_json"
    big = {"agent": "echo", "prompt": "x" * (2 << 20)}
    err = error(http.post("/v1/sessions", json=big, headers=ALPHA), 413)
    assert err["code"] == "body_too_large"

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(40):
            yield b"x" * 65536

    err = error(http.post("/v1/sessions", content=chunks(), headers=ALPHA), 413)
    assert err["code"] == "body_too_large"
    sid = create(http, ALPHA, "echo", "hi")
    headers = {**ALPHA, "Last-Event-ID": "abc"}
    err = error(http.get(f"/v1/sessions/{sid}/events", headers=headers), 422)
    assert err["field"] == "header.Last-Event-ID"
    err = error(
        http.post(
            f"/v1/sessions/{sid}/messages", json={"text": "x", "mode": "loud"}, headers=ALPHA
        ),
        422,
    )
    assert err["field"] == "body.mode"
    err = error(http.get("/v1/sessions?limit=0", headers=ALPHA), 422)
    assert err["field"] == "query.limit"
    assert "from 1 to 1000, got '0'" in err["message"] and "?limit=N" in err["fix"]
    error(http.get("/v1/sessions/s-nope", headers=ALPHA), 404)
    error(http.get("/v2/nothing", headers=ALPHA), 404)


def test_openapi_schema_lists_every_route(http: httpx.Client) -> None:
    doc = http.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    assert set(doc["paths"]) == {
        "/v1/sessions",
        "/v1/sessions/{session_id}",
        "/v1/sessions/{session_id}/events",
        "/v1/sessions/{session_id}/messages",
        "/v1/sessions/{session_id}/approvals",
        "/v1/sessions/{session_id}/cancel",
    }
    create_body = doc["components"]["schemas"]["CreateSession"]
    assert set(create_body["required"]) == {"agent", "prompt"}
