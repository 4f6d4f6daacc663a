"""Hostile request bodies, headers and query strings, in process (no server process):
each is a 4xx naming the field and the fix, never a 500."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from loopwright.loop import Agent
from loopwright.providers.scripted import FunctionModel
from loopwright.serve import ApiKeys
from loopwright.serve.app import create_app
from loopwright.store import SQLiteStore

KEY = {"Authorization": "Bearer secret-key-1"}


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    echo = Agent(FunctionModel(lambda messages, request: "hi " + messages[-1].text))
    app = create_app(
        {"echo": echo},
        SQLiteStore(tmp_path / "s.db"),
        ApiKeys.from_mapping({"secret-key-1": "alpha"}),
    )
    await app.manager.start(False, 0)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as http:
            yield http
    finally:
        await app.manager.close()


async def test_a_body_nested_too_deep_is_a_400_not_a_500(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/sessions", content=b"[" * 100_000, headers=KEY)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["field"] == "body" and "nest" in error["message"] and error["fix"]


async def test_non_ascii_digits_in_numbers_are_422_not_500(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/sessions", json={"agent": "echo", "prompt": "x"}, headers=KEY)
    sid = r.json()["id"]
    # "²" is str.isdigit() but not a number int() reads; latin-1 header bytes decode to it
    r = await client.get("/v1/sessions?limit=%C2%B2", headers=KEY)
    assert r.status_code == 422 and r.json()["error"]["field"] == "query.limit", r.text
    r = await client.get(f"/v1/sessions/{sid}/events", headers={**KEY, "last-event-id": b"\xb2"})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == "header.Last-Event-ID"


async def test_an_oversized_session_id_is_not_echoed_whole(client: httpx.AsyncClient) -> None:
    r = await client.get("/v1/sessions/" + "a" * 50_000, headers=KEY)
    assert r.status_code == 404, r.text
    error = r.json()["error"]
    assert error["field"] == "path.session_id" and len(r.content) < 1_000, len(r.content)
