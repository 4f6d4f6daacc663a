"""docs/serve.md: its agents module serves, and its curl and httpx clients print what
the page says."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_harness import Server

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
