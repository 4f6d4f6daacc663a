"""Helpers of the serve tests: a real `loopwright serve` process on 127.0.0.1 (a free
port), and an SSE reader over httpx."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
KEYS = {"key-alpha-0001": "alpha", "key-bravo-0002": "bravo"}
ALPHA = {"Authorization": "Bearer key-alpha-0001"}
BRAVO = {"Authorization": "Bearer key-bravo-0002"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """One server process over ``db``; ``restart()`` stops it and starts a new one."""

    db: Path
    outbox: Path
    extra: list[str] = field(default_factory=list)
    agents: str = "served_agents:agents"
    cwd: Path = HERE
    store_url: str = ""
    """Default: SQLite at ``db``."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment of the server process."""
    proc: subprocess.Popen[bytes] | None = None
    url: str = ""

    def start(self) -> None:
        port = free_port()
        env = {
            **os.environ,
            "LOOPWRIGHT_SERVE_KEYS": ",".join(f"{k}={t}" for k, t in KEYS.items()),
            "SERVE_TEST_OUTBOX": str(self.outbox),
            **self.env,
        }
        cmd = [
            sys.executable,
            "-m",
            "loopwright.cli",
            "serve",
            "--agents",
            self.agents,
            "--port",
            str(port),
            "--store-url",
            self.store_url or f"sqlite:///{self.db}",
            *self.extra,
        ]
        self.proc = subprocess.Popen(
            cmd, cwd=self.cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"server exited: {err}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError("server did not start in 30 s")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)
        self.proc = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def restart(self) -> None:
        self.stop()
        self.start()

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=20)


@dataclass(frozen=True)
class SseEvent:
    id: int | None
    event: str
    data: dict


def read_events(
    client: httpx.Client,
    session_id: str,
    headers: dict[str, str],
    *,
    last_event_id: int | None = None,
    limit: int | None = None,
) -> list[SseEvent]:
    """The session's SSE events (without the leading ``session`` snapshot) until the
    server ends the stream, or the first ``limit`` events (then the client disconnects)."""
    hdrs = dict(headers)
    if last_event_id is not None:
        hdrs["Last-Event-ID"] = str(last_event_id)
    out: list[SseEvent] = []
    with client.stream("GET", f"/v1/sessions/{session_id}/events", headers=hdrs) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers["content-type"].startswith("text/event-stream")
        fields: dict[str, str] = {}
        for line in resp.iter_lines():
            if line:
                if not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")
                continue
            if "event" in fields and fields["event"] != "session":
                raw_id = fields.get("id")
                out.append(
                    SseEvent(
                        int(raw_id) if raw_id else None, fields["event"], json.loads(fields["data"])
                    )
                )
                if limit is not None and len(out) >= limit:
                    break
            fields = {}
    return out


def create(client: httpx.Client, headers: dict[str, str], agent: str, prompt: str) -> str:
    resp = client.post("/v1/sessions", json={"agent": agent, "prompt": prompt}, headers=headers)
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


def drop_redis_keys(url: str, prefix: str) -> None:
    """Delete a test's Redis keys (the server is shared with other tests)."""
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(f"{prefix}:*"))
    if keys:
        client.delete(*keys)
    client.close()
