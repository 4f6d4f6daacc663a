"""Helpers for the MCP tests: reference servers installed from PyPI (test extra) and
npm (.ci/install-node-tools.sh), and a local faulty server. Nothing is downloaded here.

(Not a package and not ``conftest``: ``tests/mcp`` must never shadow the ``mcp`` SDK.)"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install -e '.[mcp]'")

HERE = Path(__file__).parent
FAULTY = HERE / "servers" / "faulty.py"
LIBRARY = HERE / "servers" / "library.py"
NODE_TOOLS = Path(
    os.environ.get("LOOPWRIGHT_NODE_TOOLS", Path.home() / ".cache/loopwright/node-tools")
)


def node_bin(name: str) -> str:
    path = NODE_TOOLS / "node_modules" / ".bin" / name
    if not path.exists():
        pytest.fail(f"{name} is not installed in {NODE_TOOLS}; run .ci/install-node-tools.sh")
    return str(path)


def python_bin(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(found).exists():
        pytest.fail(f"{name} is not installed; pip install -e '.[test]'")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


def serve(argv: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[str]:
    proc = subprocess.Popen(
        argv,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
