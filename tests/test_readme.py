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
    # the command runs as one line, optionally followed by `|| exit 1` (set -e does not stop
    # at a failure inside an && list)
    lines = [line.strip().removesuffix("|| exit 1").strip() for line in ci.splitlines()]
    assert test_cmd.strip() in lines


def _requirement_names(reqs: list[str]) -> set[str]:
    names = set()
    for req in reqs:
        name = re.split(r"[\s\[<>=!~;]", req.strip(), maxsplit=1)[0]
        if name.lower() != "loopwright":
            names.add(re.sub(r"[-_.]+", "-", name).lower())
    return names


def test_constraints_pin_every_declared_dependency() -> None:
    """Installs are reproducible only if constraints.txt pins every package pyproject.toml
    names; adding a dependency without re-running .ci/lock fails here."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = _requirement_names(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared |= _requirement_names(extra)
    pinned = {
        re.sub(r"[-_.]+", "-", line.split("==")[0]).lower()
        for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
        if "==" in line and not line.startswith("#")
    }
    assert declared - pinned == set(), "run `bash .ci/lock` and commit constraints.txt"


def test_readme_commands_install_with_the_constraints() -> None:
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.S)
    installs = [c for c in commands if "pip install" in c]
    assert len(installs) >= 2
    assert all("-c constraints.txt" in c for c in installs)
