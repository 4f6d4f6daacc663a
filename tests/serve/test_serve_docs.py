"""docs/serve.md: its agents module serves, and its curl and httpx clients print what
the page says."""

from __future__ import annotations

import contextlib
import io
import os
import re
import secrets
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_harness import ALPHA, Server, create, drop_redis_keys, read_events
from tests.services import POSTGRES_ENV, REDIS_ENV, service_url

DOC = (Path(__file__).resolve().parents[2] / "docs" / "serve.md").read_text("utf-8")
PYTHON = re.findall(r"```python\n(.*?)```", DOC, re.S)
BASH = re.findall(r"```bash\n(.*?)```", DOC, re.S)


@pytest.fixture(scope="module")
def doc_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("serve-doc")
    assert PYTHON[0].startswith("# myagents.py")
    (tmp / "myagents.py").write_text(PYTHON[0], "utf-8")
    srv = Server(tmp / "s.db", tmp / "outbox", agents="myagents:agents", cwd=tmp)
    srv.start()
    yield srv
    srv.stop()


def test_the_documented_keys_and_command_are_the_ones_served() -> None:
    start = BASH[0]
    assert "key-team-a-0001=team-a" in start
    assert "loopwright serve --agents myagents:agents" in start


def test_curl_example(doc_server: Server) -> None:
    # the test server's keys are the harness's: give the doc's key to this one
    script = BASH[1].replace("key-team-a-0001", "key-alpha-0001")
    out = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        env={**os.environ, "LOOPWRIGHT_URL": doc_server.url},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert '"stop_reason":"awaiting_confirmation"' in out[0]
    assert '"result":"resumed"' in out[1]
    assert out[-1] == "sent to ann@example.org"


def test_httpx_example(doc_server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_URL", doc_server.url)
    code = PYTHON[1].replace("key-team-a-0001", "key-alpha-0001")
    promised = re.findall(r"print\(.*\)\s*# (.+)", code)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "serve.md", "exec"), {"__name__": "serve_doc"})
    assert out.getvalue().splitlines() == promised


def _documented_cluster_command() -> list[str]:
    block = BASH[2]
    assert "LOOPWRIGHT_SERVE_KEYS" in block
    line = next(x for x in block.splitlines() if x.startswith("loopwright serve"))
    return shlex.split(line)[2:]


@pytest.mark.services
def test_the_documented_cluster_command_serves_as_one(tmp_path: Path) -> None:
    """Two processes started with the page's cluster command (its store and Redis URLs
    pointed at the test services): a session created through one is streamed and
    approved through the other."""
    import psycopg

    args = _documented_cluster_command()
    values = dict(zip(args[::2], args[1::2], strict=True))
    assert set(values) == {
        "--agents", "--host", "--port", "--store-url", "--redis-url", "--lock-ttl"
    }  # fmt: skip
    pg = service_url(POSTGRES_ENV)
    schema = f"serve_doc_{secrets.token_hex(4)}"
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    (tmp_path / "myagents.py").write_text(PYTHON[0], "utf-8")
    extra = [
        "--redis-url", service_url(REDIS_ENV), "--redis-prefix", f"lwtest:{schema}",
        "--lock-ttl", values["--lock-ttl"],
    ]  # fmt: skip
    servers = [
        Server(
            tmp_path / "unused.db",
            tmp_path / "outbox",
            extra=extra,
            agents=values["--agents"],
            cwd=tmp_path,
            store_url=f"{pg}?options=-csearch_path%3D{schema}",
        )
        for _ in range(2)
    ]
    try:
        for srv in servers:
            srv.start()
        with servers[0].client() as a, servers[1].client() as b:
            sid = create(a, ALPHA, "mailer", "email ann")
            assert read_events(b, sid, ALPHA)[-1].data["result"]["stop_reason"] == (
                "awaiting_confirmation"
            )
            resp = b.post(f"/v1/sessions/{sid}/approvals", json={"approve": True}, headers=ALPHA)
            assert resp.status_code == 202
            events = read_events(a, sid, ALPHA, last_event_id=1)
            assert events[-1].data["result"]["answer"] == "sent to ann@example.org"
    finally:
        for srv in servers:
            srv.stop()
        with psycopg.connect(pg, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
        drop_redis_keys(service_url(REDIS_ENV), f"lwtest:{schema}")
