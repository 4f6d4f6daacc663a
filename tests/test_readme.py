"""The README's Python example runs and prints what its comment promises; its two shell
commands are the ones .ci/run executes."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_python_example_runs_and_prints_the_promised_line() -> None:
    block = re.search(r"```python\n(.*?)```", README, re.S)
    assert block is not None
    code = block.group(1)
    promised = re.search(r"print\(.*\)\s*# (.+)", code)
    assert promised is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue().strip() == promised.group(1).strip()


def test_ci_runs_exactly_the_readme_test_command() -> None:
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.S)
    test_cmd = next(c for c in commands if "pytest" in c)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # the command runs as one line, optionally followed by `|| exit 1` (set -e skips     assert test_cmd.strip() in [line.strip() for line in ci.splitlines()]    assert test_cmd.strip() in [line.strip() for line in ci.splitlines()] lists)
    lines = [line.strip().removesuffix("|| exit 1").strip() for line in ci.splitlines()]
    assert test_cmd.strip() in lines
