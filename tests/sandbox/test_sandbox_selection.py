"""Backend choice and the weaker fallback's honesty."""

from __future__ import annotations

import socket

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


def test_the_fallback_lists_what_it_does_not_confine(monkeypatch: pytest.MonkeyPatch) -> None:
    with_landlock = Sandbox(SandboxConfig(backend="rlimit"))
    assert with_landlock.backend.landlock, backends.landlock_problem()
    assert any("UDP" in gap for gap in with_landlock.gaps)
    assert not any("file reads" in gap for gap in with_landlock.gaps)
    monkeypatch.setattr(backends, "landlock_problem", lambda: "no Landlock in this kernel")
    bare = Sandbox(SandboxConfig(backend="rlimit"))
    assert not bare.backend.landlock
    assert any("network" in gap for gap in bare.gaps)
    assert any("file reads" in gap for gap in bare.gaps)
    assert Sandbox(SandboxConfig(backend="bwrap")).gaps == ()


async def test_the_landlock_fallback_confines_files_and_tcp(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    secret.chmod(0o644)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    box = Sandbox(SandboxConfig(backend="rlimit", limits=SandboxLimits(wall_time=5)))
    code = f"""
import socket
for label, fn in [
    ("read", lambda: open({str(secret)!r}).read()),
    ("write", lambda: open({str(tmp_path / "out.txt")!r}, "w").write("x")),
    ("tcp", lambda: socket.create_connection(("127.0.0.1", {listener.getsockname()[1]}), 1)),
]:
    try:
        fn()
        print("OPEN", label)
    except OSError as exc:
        print("blocked", label, type(exc).__name__)
open("inside.txt", "w").write("ok")
print(open("inside.txt").read())
"""
    try:
        result = await box.run_python(code)
    finally:
        box.close()
        listener.close()
    assert "OPEN" not in result.stdout, result
    assert result.stdout.strip().endswith("ok")
    assert not (tmp_path / "out.txt").exists()


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
