"""The escape corpus: model-written code that tries to leave the sandbox, run against every
confining backend. Each case asserts the host-side fact that would change on an escape
(a file written, a secret printed, a packet received, a process left behind)."""

from __future__ import annotations

import asyncio
import os
import socket
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from loopwright.tools.sandbox import Sandbox
from loopwright.tools.sandbox.process import SANDBOX_UID

pytestmark = pytest.mark.asyncio


def _absent(*paths: str) -> bool:
    return not any(os.path.exists(p) for p in paths)


def _code(src: str) -> str:
    return textwrap.dedent(src).strip() + "\n"


async def test_plain_code_runs_and_sees_only_its_work_directory(make_sandbox) -> None:
    box: Sandbox = make_sandbox()
    result = await box.run_python("import os; print(os.getcwd(), 6 * 7)")
    assert result.exit_code == 0, result
    assert result.stdout.strip() == "/work 42"


async def test_writes_outside_the_work_directory_fail(make_sandbox, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    box: Sandbox = make_sandbox()
    code = f"""
    import os
    for path in [{str(target)!r}, "/usr/escaped.txt", "/escaped.txt", "/work/../escaped.txt"]:
        try:
            open(path, "w").write("x")
            print("WROTE", path)
        except OSError as exc:
            print("denied", path, type(exc).__name__)
    """
    result = await box.run_python(_code(code))
    assert "WROTE" not in result.stdout, result
    assert not target.exists()
    assert _absent("/usr/escaped.txt", "/escaped.txt")
    assert not (box.workdir.parent / "escaped.txt").exists()


async def test_host_secrets_are_unreadable(make_sandbox, tmp_path: Path) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    home_file = tmp_path / "credentials"
    home_file.write_text(secret)
    home_file.chmod(0o644)  # even a world-readable host file stays invisible
    box: Sandbox = make_sandbox()
    code = f"""
    for path in ["/etc/shadow", "/etc/passwd", {str(home_file)!r}, "/root/.bashrc",
                 "/proc/1/environ", "/proc/self/environ"]:
        try:
            print(path, open(path, errors="replace").read()[:200])
        except OSError as exc:
            print(path, "denied", type(exc).__name__)
    """
    result = await box.run_python(_code(code))
    assert secret not in result.stdout
    assert "root:" not in result.stdout  # neither passwd nor shadow content


async def test_environment_secrets_are_removed(make_sandbox, monkeypatch) -> None:
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("LOOPWRIGHT_TEST_SECRET", secret)
    box: Sandbox = make_sandbox()
    result = await box.run_shell("env; cat /proc/1/environ 2>/dev/null; cat /proc/*/environ")
    assert secret not in result.stdout + result.stderr
    assert "OPENAI_API_KEY" not in result.stdout


async def test_tcp_udp_dns_and_unix_sockets_are_unreachable(make_sandbox, tmp_path: Path) -> None:
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    tcp.settimeout(0.2)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.2)
    unix_path = tmp_path / "host.sock"
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(unix_path))
    unix.listen()
    abstract_name = f"\0loopwright-{uuid.uuid4().hex}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(abstract_name)
    abstract.listen()
    box: Sandbox = make_sandbox()
    code = f"""
    import socket
    def attempt(label, fn):
        try:
            fn()
            print("OPEN", label)
        except OSError as exc:
            print("blocked", label, type(exc).__name__)
    attempt("tcp", lambda: socket.create_connection(("127.0.0.1", {tcp.getsockname()[1]}), 1))
    attempt("tcp-out", lambda: socket.create_connection(("1.1.1.1", 53), 1))
    attempt("dns", lambda: socket.getaddrinfo("pypi.org", 443))
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    attempt("udp", lambda: u.sendto(b"leak", ("127.0.0.1", {udp.getsockname()[1]})))
    attempt("unix", lambda: socket.socket(socket.AF_UNIX).connect({str(unix_path)!r}))
    attempt("abstract", lambda: socket.socket(socket.AF_UNIX).connect({abstract_name!r}))
    """
    try:
        result = await box.run_python(_code(code))
        for sock in (tcp, unix, abstract):
            with pytest.raises((TimeoutError, BlockingIOError, OSError)):
                sock.settimeout(0.2)
                sock.accept()
        with pytest.raises(TimeoutError):
            udp.recvfrom(100)
    finally:
        for sock in (tcp, udp, unix, abstract):
            sock.close()
    assert result.exit_code == 0, result
    # udp "sendto" may succeed inside the empty network namespace's loopback; what matters
    # is that the host socket above received nothing
    opened = [line for line in result.stdout.splitlines() if line.startswith("OPEN")]
    assert opened in ([], ["OPEN udp"]), result.stdout


def _sandbox_processes(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    return found


async def test_fork_bomb_is_contained_and_leaves_nothing(make_sandbox) -> None:
    marker = f"bomb{uuid.uuid4().hex[:8]}"
    box: Sandbox = make_sandbox(wall_time=3.0, max_processes=16)
    code = f"""
    import os, sys
    sys.argv[0] = {marker!r}
    n = 0
    try:
        while True:
            os.fork()
            n += 1
    except OSError as exc:
        print("fork refused after", n, type(exc).__name__)
        import time; time.sleep(30)
    """
    start = time.monotonic()
    result = await box.run([box.config.python, "-I", "-c", _code(code), marker])
    assert time.monotonic() - start < 10
    assert result.timed_out or result.exit_code is not None
    await asyncio.sleep(0.3)
    assert _sandbox_processes(marker) == []


async def test_memory_bomb_fails_inside_the_limit(make_sandbox) -> None:
    box: Sandbox = make_sandbox(memory_bytes=128 * 2**20)
    result = await box.run_python("x = bytearray(1024 * 2**20)\nprint('allocated', len(x))")
    assert "allocated" not in result.stdout
    assert result.exit_code not in (0, None) or result.signal is not None
    assert "MemoryError" in result.stderr or result.signal is not None


async def test_cpu_loop_is_killed(make_sandbox) -> None:
    box: Sandbox = make_sandbox(wall_time=2.0, cpu_time=1)
    start = time.monotonic()
    result = await box.run_python("while True:\n    pass\n")
    assert time.monotonic() - start < 6
    assert result.exit_code != 0


async def test_huge_output_is_cut_and_the_program_stopped(make_sandbox) -> None:
    box: Sandbox = make_sandbox()
    result = await box.run_python("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n")
    assert result.output_truncated
    assert not result.timed_out
    assert len(result.stdout) < box.config.limits.max_output_bytes + 200


async def test_signals_cannot_reach_the_host(make_sandbox) -> None:
    box: Sandbox = make_sandbox()
    code = f"""
    import os, signal
    for pid in (os.getppid(), {os.getpid()}, 1):
        try:
            os.kill(pid, signal.SIGKILL if pid != 1 else 0)
            print("signalled", pid)
        except OSError as exc:
            print("denied", pid, type(exc).__name__)
    try:
        os.kill(-1, signal.SIGTERM)
    except OSError:
        pass
    """
    await box.run_python(_code(code))
    assert not _absent(f"/proc/{os.getpid()}")  # this test process survived


async def test_proc_shows_only_the_sandbox(make_sandbox) -> None:
    box: Sandbox = make_sandbox()
    code = f"""
    import os
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    print(len(pids), {os.getpid()} in pids)
    try:
        print(os.listdir("/proc/1/root/root"))
    except OSError as exc:
        print("denied", type(exc).__name__)
    """
    result = await box.run_python(_code(code))
    count, host_visible = result.stdout.splitlines()[0].split()
    assert int(count) <= 4
    assert host_visible == "False" or int(count) <= 4
    assert ".bashrc" not in result.stdout


async def test_symlinks_out_of_the_work_directory_lead_nowhere(
    make_sandbox, tmp_path: Path
) -> None:
    outside = tmp_path / "keep.txt"
    outside.write_text("host data")
    outside.chmod(0o666)
    box: Sandbox = make_sandbox()
    code = f"""
    import os
    os.symlink({str(outside)!r}, "link")
    try:
        open("link", "w").write("overwritten")
        print("WROTE")
    except OSError as exc:
        print("denied", type(exc).__name__)
    """
    await box.run_python(_code(code))
    assert outside.read_text() == "host data"
    box.close()  # removing the work directory must not follow the link
    assert outside.read_text() == "host data"


async def test_no_process_outlives_the_time_limit(make_sandbox) -> None:
    marker = f"left{uuid.uuid4().hex[:8]}"
    box: Sandbox = make_sandbox(wall_time=1.5)
    result = await box.run_shell(
        f"(setsid sh -c 'exec -a {marker} sleep 600' &) ; (nohup sh -c 'exec -a {marker} sleep 600' &); sleep 600"
    )
    assert result.timed_out
    await asyncio.sleep(0.5)
    assert _sandbox_processes(marker) == []


async def test_files_persist_between_runs_of_one_sandbox(make_sandbox) -> None:
    box: Sandbox = make_sandbox()
    await box.run_shell("echo kept > note.txt")
    result = await box.run_python("print(open('note.txt').read().strip())")
    assert result.stdout.strip() == "kept"
    if os.geteuid() == 0:
        assert (box.workdir / "note.txt").stat().st_uid == SANDBOX_UID


def _processes_of_sandbox_user() -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += os.stat(f"/proc/{entry}").st_uid == SANDBOX_UID
            except OSError:
                continue
    return count


async def test_many_runs_and_kills_leave_no_process_behind(make_sandbox) -> None:
    """Each run and each kill must leave nothing counting against the sandbox user's
    process budget: an orphaned zombie per run exhausted RLIMIT_NPROC after ~30 runs."""
    before = _processes_of_sandbox_user()
    box: Sandbox = make_sandbox(wall_time=0.5, max_processes=8, max_output_bytes=2000)
    for _ in range(40):
        assert (await box.run_python("print(1)")).exit_code == 0
    for _ in range(4):
        assert (await box.run_shell("sleep 5")).timed_out
        assert (await box.run_python("while True: print('x' * 100)")).output_truncated
    await asyncio.sleep(0.2)
    assert _processes_of_sandbox_user() <= before
