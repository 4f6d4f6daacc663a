"""Backend choice and the weaker fallback's honesty."""

from __future__ import annotations

import pytest

from loopwright.tools.sandbox import (
    Sandbox,
    SandboxConfig,
    SandboxLimits,
    SandboxUnavailable,
    backends,
)


def test_auto_prefers_bubblewrap() -> None:
    assert Sandbox(SandboxConfig()).backend.name == "bwrap"


def test_auto_never_falls_back_to_rlimit_silently(monkeypatch: pytest.MonkeyPatch) -> None:
    def unusable(name: str) -> str | None:
        return None if name == "rlimit" else f"{name} missing"

    monkeypatch.setattr(backends, "backend_problem", unusable)
    with pytest.raises(SandboxUnavailable) as err:
        Sandbox(SandboxConfig(backend="auto"))
    message = str(err.value)
    assert "apt-get install bubblewrap" in message and "backend='rlimit'" in message


def test_unknown_backend_is_a_user_error_naming_the_choices() -> None:
    with pytest.raises(Exception, match="use auto, bwrap, nsjail or rlimit"):
        Sandbox(SandboxConfig(backend="docker"))


def test_the_fallback_lists_what_it_does_not_confine() -> None:
    box = Sandbox(SandboxConfig(backend="rlimit"))
    assert any("network" in gap for gap in box.gaps)
    assert any("file reads" in gap for gap in box.gaps)
    assert Sandbox(SandboxConfig(backend="bwrap")).gaps == ()


@pytest.mark.parametrize("field", ["wall_time", "memory_bytes", "max_output_bytes"])
@pytest.mark.parametrize("value", [0, -1, float("nan")])
def test_limits_refuse_non_positive_and_nan(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        SandboxLimits(**{field: value})  # type: ignore[arg-type]


async def test_the_fallback_still_enforces_time_output_and_environment(monkeypatch) -> None:
    monkeypatch.setenv("LOOPWRIGHT_TEST_SECRET", "do-not-leak")
    box = Sandbox(SandboxConfig(backend="rlimit", limits=SandboxLimits(wall_time=1.5)))
    try:
        env = await box.run_shell("env")
        assert "do-not-leak" not in env.stdout
        slow = await box.run_shell("sleep 30")
        assert slow.timed_out and slow.exit_code is None
        loud = await box.run_python("print('x' * 10**6)")
        assert loud.output_truncated
    finally:
        box.close()
