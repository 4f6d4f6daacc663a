"""``loopwright batch --engine ray --address ...`` joining a cluster started apart from the
command, as on real machines: ``ray start --head`` (one node, started once for this
module), joined with ``--address auto`` and through Ray Client (``ray://``)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from click.testing import CliRunner

from loopwright.cli.main import main

AGENTS = Path(__file__).with_name("batch_agents.py")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def cluster() -> Iterator[int]:
    """A head node started by ``ray start --block`` (stopping that process stops the
    node); yields its Ray Client port."""
    gcs, client = _free_port(), _free_port()
    command = [
        "ray", "start", "--head", "--block", f"--port={gcs}",
        f"--ray-client-server-port={client}", "--num-cpus=2", "--include-dashboard=false",
        "--disable-usage-stats",
    ]  # fmt: skip
    # Ray's client proxy forks a server per client from a process busy with gRPC threads;
    # with gRPC's fork handlers on, that child died at once now and then ("Other threads
    # are currently calling into gRPC, skipping fork() handlers"): the proxy only execs it
    env = {**os.environ, "GRPC_ENABLE_FORK_SUPPORT": "0"}
    head = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        deadline = time.monotonic() + 120
        while True:  # ready once the Ray Client server accepts connections
            assert head.poll() is None, head.stderr.read() if head.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", client), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "ray start did not come up in 120 s"
                time.sleep(0.5)
        yield client
    finally:
        head.terminate()  # the node drains and stops its processes
        head.wait(timeout=60)
        # `ray start` leaves its address file behind when stopped this way; `ray.init()`
        # with no address would try to join the dead node
        current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        if current.exists() and current.read_text().strip().endswith(f":{gcs}"):
            current.unlink()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(AGENTS, tmp_path / "batch_agents.py")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.jsonl").write_text(
        "".join(f'{{"prompt": "q{i}", "id": "q{i}"}}\n' for i in range(6))
    )
    return tmp_path


def _run(address: str) -> list[dict]:
    out = CliRunner().invoke(
        main,
        ["batch", "p.jsonl", "--engine", "ray", "--address", address,
         "--agent", "batch_agents:standin", "--out", "r.jsonl", "--chunk-size", "2"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert not ray.is_initialized()  # the command left the cluster it joined
    return [json.loads(line) for line in Path("r.jsonl").read_text().splitlines()]


def test_address_auto_joins_the_cluster_started_on_this_machine(
    cluster: int, workdir: Path
) -> None:
    records = _run("auto")
    assert sorted(r["task"] for r in records) == [f"q{i}" for i in range(6)]
    assert all(r["answer"] == f"echo {r['task']}" for r in records)


def test_a_ray_client_address_runs_the_batch_through_ray_client(
    cluster: int, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a cluster started by `ray start` (Ray >= 2.59) requires its token: a client sends the
    # one in ~/.ray/auth_token when told the cluster uses token authentication
    if os.path.exists(os.path.expanduser("~/.ray/auth_token")):
        monkeypatch.setenv("RAY_AUTH_MODE", "token")
    # the command runs in its own interpreter, as a user's would: after this test
    # session's earlier in-process Ray drivers, the cluster's proxy failed to start the
    # client's server (twice in full runs, never alone)
    done = subprocess.run(
        [sys.executable, "-m", "loopwright.cli", "batch", "p.jsonl", "--engine", "ray",
         "--address", f"ray://127.0.0.1:{cluster}", "--agent", "batch_agents:standin",
         "--out", "r.jsonl", "--chunk-size", "2"],
        capture_output=True, text=True, timeout=300, cwd=workdir,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in (workdir / "r.jsonl").read_text().splitlines()]
    assert sorted(r["task"] for r in records) == [f"q{i}" for i in range(6)]
