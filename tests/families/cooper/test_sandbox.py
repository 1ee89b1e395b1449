"""The bubblewrap sandbox contains what an agent's shell command can do (real bwrap, no mocks).

Each containment test has a control (the same probe with kind="none" or from the host)
showing the probe would detect the escape, so none of them passes vacuously.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from masgrid.families.cooper.sandbox import (
    INSTALL_HINT,
    Sandbox,
    SandboxError,
    SandboxSettings,
    _Capture,
    interpreter_paths,
    sandbox_problem,
)

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))


@pytest.fixture()
def agents(tmp_path: Path) -> tuple[Path, Path]:
    """Two agents' worktrees side by side, as the run lays them out."""
    a, b = tmp_path / "agent0", tmp_path / "agent1"
    a.mkdir()
    b.mkdir()
    (a / "mine.txt").write_text("mine\n")
    (b / "secret.txt").write_text("the other agent's work\n")
    return a, b


def box(worktree: Path, kind: str = "bwrap", **limits: object) -> Sandbox:
    return Sandbox(SandboxSettings(kind=kind, **limits), writable=[worktree])


def test_writes_land_only_in_the_worktree(agents: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = agents
    marker = f"sbx-{uuid.uuid4().hex}"
    outside = tmp_path / f"{marker}.txt"
    cmd = (f"echo x > {outside}; echo x > {b}/planted.txt; echo x > /usr/{marker}; echo x > /etc/{marker}; "
           f"echo x > /tmp/{marker}; echo ok > inside.txt")
    res = box(a).run(cmd, cwd=a)
    assert (a / "inside.txt").read_text() == "ok\n"
    assert not outside.exists() and not (b / "planted.txt").exists()
    assert not Path("/usr", marker).exists() and not Path("/etc", marker).exists()
    assert not Path("/tmp", marker).exists(), "the sandbox's /tmp must be private"
    assert res.stderr.count("Read-only file system") == 2  # /usr and /etc; the rest is not even there
    # control: without isolation the same write outside succeeds, so the check above can fail
    box(a, kind="none").run(f"echo x > {outside}", cwd=a)
    assert outside.exists()


def test_other_worktrees_and_homes_are_invisible(agents: tuple[Path, Path]) -> None:
    a, b = agents
    probe = f"cat {b}/secret.txt; ls {a.parent}; ls /root; ls /home; cat mine.txt"
    res = box(a).run(probe, cwd=a)
    assert "the other agent's work" not in res.stdout
    assert b.name not in res.stdout
    assert res.stdout.strip().endswith("mine")
    assert "the other agent's work" in box(a, kind="none").run(probe, cwd=a).stdout


@pytest.mark.skipif(not os.access("/etc/shadow", os.R_OK), reason="needs a readable /etc/shadow to compare")
def test_system_secrets_are_hidden(agents: tuple[Path, Path]) -> None:
    a, _ = agents
    probe = "cat /etc/shadow; ls /etc/ssh"
    assert "root:" not in box(a).run(probe, cwd=a).stdout
    assert "root:" in box(a, kind="none").run(probe, cwd=a).stdout


def test_host_environment_does_not_leak(agents: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    a, _ = agents
    monkeypatch.setenv("MASGRID_TEST_SECRET", "s3cr3t")
    res = box(a).run("env", cwd=a, env={"EXTRA": "given"})
    assert "s3cr3t" not in res.stdout and "EXTRA=given" in res.stdout


def test_no_network_even_to_the_host_loopback(agents: tuple[Path, Path]) -> None:
    a, _ = agents
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    accepted: list[bool] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(True)
            conn.sendall(b"hello\n")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && head -1 <&3"
    try:
        res = box(a, timeout_s=10).run(probe, cwd=a)
        assert res.exit_code != 0 and "hello" not in res.stdout and not accepted
        control = box(a, kind="none", timeout_s=10).run(probe, cwd=a)
        assert control.exit_code == 0 and "hello" in control.stdout and accepted
        shared = box(a, network=True, timeout_s=10).run(probe, cwd=a)  # the explicit opt-in works
        assert shared.exit_code == 0 and "hello" in shared.stdout and len(accepted) == 2
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()


def test_time_limit_kills_everything_the_command_started(agents: tuple[Path, Path]) -> None:
    a, _ = agents
    # a detached grandchild (own session) would write late.txt after the limit
    cmd = "setsid bash -c 'sleep 1.5; echo late > late.txt' & sleep 30"
    res = box(a).run(cmd, cwd=a, timeout_s=0.5)
    assert res.timed_out and res.killed == "timeout" and res.exit_code is None
    assert res.wall_s < 5
    time.sleep(2.0)
    assert not (a / "late.txt").exists()


def _processes_with(marker: str) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    count += 1
            except OSError:
                pass
    return count


def test_fork_bomb_is_bounded_and_leaves_nothing_behind(agents: tuple[Path, Path]) -> None:
    a, _ = agents
    fn = f"bomb_{uuid.uuid4().hex[:8]}"
    cmd = f"{fn}() {{ {fn} | {fn} & }}; {fn}; sleep 2; echo survived"
    start = time.monotonic()
    res = box(a, max_procs=64, timeout_s=4).run(cmd, cwd=a)
    assert time.monotonic() - start < 15
    assert "Resource temporarily unavailable" in res.stderr, "the process limit was never reached"
    time.sleep(0.2)
    assert _processes_with(fn) == 0


def test_huge_output_is_cut_off_fast_without_being_held(agents: tuple[Path, Path]) -> None:
    a, _ = agents
    s = box(a, output_cap_bytes=10_000, output_kill_bytes=8 << 20, timeout_s=30)
    res = s.run("head -c 1000000000 /dev/zero | tr '\\0' a", cwd=a)
    assert res.killed == "output" and res.truncated and not res.timed_out
    assert len(res.stdout) < 10_200 and res.stdout.startswith("a" * 7_000)
    assert 8 << 20 < res.stdout_bytes < 1_000_000_000
    assert res.wall_s < 10


def test_truncated_output_keeps_exact_head_and_tail(agents: tuple[Path, Path]) -> None:
    a, _ = agents
    n = 200_000
    full = "".join(f"{i}\n" for i in range(1, n + 1))
    res = box(a, output_cap_bytes=4_000).run(f"seq 1 {n}", cwd=a)
    assert res.exit_code == 0 and res.truncated and res.killed is None
    assert res.stdout_bytes == len(full)
    dropped = len(full) - 3_000 - 1_000
    assert res.stdout == full[:3_000] + f"\n[... {dropped} bytes of output omitted ...]\n" + full[-1_000:]


def test_capture_matches_slicing_on_random_streams() -> None:
    rng = random.Random(16)
    for _ in range(300):
        cap = rng.randint(1, 400)
        data = bytes(rng.randrange(97, 123) for _ in range(rng.randint(0, 1500)))
        cut = sorted(rng.sample(range(len(data) + 1), k=min(len(data) + 1, rng.randint(0, 8))))
        cap_obj = _Capture(cap)
        for lo, hi in zip([0, *cut], [*cut, len(data)]):
            cap_obj.add(data[lo:hi])
            assert len(cap_obj.tail) <= 2 * (cap // 4) + 1500  # bounded by cap plus one chunk
        head_n, tail_n = cap - cap // 4, cap // 4
        assert cap_obj.total == len(data)
        if len(data) <= head_n + tail_n:
            assert not cap_obj.truncated and cap_obj.text() == data.decode()
        else:
            dropped = len(data) - head_n - tail_n
            want = data[:head_n].decode() + f"\n[... {dropped} bytes of output omitted ...]\n"
            want += data[len(data) - tail_n:].decode() if tail_n else ""
            assert cap_obj.truncated and cap_obj.text() == want


def test_memory_cpu_and_file_limits_bite(agents: tuple[Path, Path]) -> None:
    a, _ = agents
    hungry = "x=$(head -c 30000000 /dev/zero | tr '\\0' a); echo ${#x}"
    assert box(a, memory_mb=32).run(hungry, cwd=a).stdout.strip() != "30000000"
    assert box(a).run(hungry, cwd=a).stdout.strip() == "30000000"  # control: the default limit allows it
    spin = box(a, cpu_s=1, timeout_s=20).run("while :; do :; done", cwd=a)
    assert not spin.timed_out and spin.exit_code not in (0, None) and spin.wall_s < 10  # SIGXCPU
    big = box(a, file_mb=1).run("head -c 3000000 /dev/zero > big.bin; echo $?", cwd=a)
    assert big.stdout.strip() != "0" and (a / "big.bin").stat().st_size <= 1 << 20
    fill_tmp = "for i in 1 2 3 4; do head -c 8000000 /dev/zero > /tmp/f$i || exit 7; done"
    small = box(a, tmp_mb=16)
    if small.enforcement["tmp"].startswith("private tmpfs of"):
        assert small.run(fill_tmp, cwd=a).exit_code == 7  # /tmp is host memory: capped
        assert box(a).run(fill_tmp, cwd=a).exit_code == 0


def test_opt_out_is_explicit_and_limits_are_reported(agents: tuple[Path, Path]) -> None:
    a, _ = agents
    assert box(a, kind="none").enforcement["isolation"] == "none (opt-out)"
    sb = box(a)
    assert sb.enforcement["isolation"] == "bubblewrap"
    if os.geteuid() == 0:
        assert sb.enforcement["processes"] in {"pids cgroup", "not enforced (root without a writable pids cgroup)"}


def test_bad_setup_gives_one_line_errors(agents: tuple[Path, Path], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = agents
    with pytest.raises(SandboxError, match="must be absolute"):
        Sandbox(SandboxSettings(), writable=[Path("relative")])
    with pytest.raises(SandboxError, match="does not exist"):
        Sandbox(SandboxSettings(), writable=[tmp_path / "missing"])
    with pytest.raises(SandboxError, match="not inside"):
        box(a).run("true", cwd=b)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert sandbox_problem() == INSTALL_HINT
    with pytest.raises(SandboxError) as err:
        Sandbox(SandboxSettings(), writable=[a])
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("kind", ["bwrap", "none"])
def test_exit_codes_pass_through_and_background_leftovers_do_not_hang(agents: tuple[Path, Path], kind: str) -> None:
    a, _ = agents
    assert box(a, kind=kind).run("echo out; echo err >&2; exit 3", cwd=a).model_dump(
        include={"exit_code", "stdout", "stderr", "timed_out"}) == {
        "exit_code": 3, "stdout": "out\n", "stderr": "err\n", "timed_out": False}
    res = box(a, kind=kind, timeout_s=20).run("sleep 30 & echo started", cwd=a)
    assert res.exit_code == 0 and not res.timed_out and res.wall_s < 5
    assert box(a, kind=kind).run(["printf", "%s|", "a b", "$HOME"], cwd=a).stdout == "a b|$HOME|"


@pytest.mark.parametrize("kind", ["bwrap", "none"])
def test_the_exit_status_is_the_commands_not_our_cleanup(agents: tuple[Path, Path], kind: str) -> None:
    """Pipes close a moment before the process is gone: the group kill must wait for it."""
    a, _ = agents
    sb = box(a, kind=kind)
    n = 40 if kind == "none" else 10  # the race showed on ~10% of quick commands without bwrap
    assert [sb.run("ls -la", cwd=a).exit_code for _ in range(n)] == [0] * n
    res = sb.run("exec >&- 2>&-; sleep 0.3; exit 4", cwd=a)
    assert res.exit_code == 4 and not res.timed_out
    res = sb.run("exec >&- 2>&-; sleep 10", cwd=a, timeout_s=0.5)
    assert res.timed_out and res.exit_code is None and res.wall_s < 5


def test_a_venv_runs_when_its_interpreter_paths_are_readable(agents: tuple[Path, Path]) -> None:
    """How the evaluator runs a task's tests: the venv and its base interpreter read-only."""
    a, _ = agents
    python = Path(sys.executable)
    cmd = [str(python), "-c", "import pydantic, sys; print(sys.prefix)"]
    ok = Sandbox(SandboxSettings(), writable=[a], readable=interpreter_paths(python)).run(cmd, cwd=a)
    assert ok.exit_code == 0 and ok.stdout.strip() == sys.prefix
    if not any(p.is_relative_to("/usr") for p in interpreter_paths(python)):
        assert box(a).run(cmd, cwd=a).exit_code != 0  # not mounted: not there


def test_concurrent_commands_of_two_agents_stay_apart(agents: tuple[Path, Path]) -> None:
    """The asynchronous schedule runs both agents' commands at once, from threads."""
    from concurrent.futures import ThreadPoolExecutor

    a, b = agents
    boxes = {a: box(a), b: box(b)}
    jobs = [(wt, i) for i in range(6) for wt in (a, b)]

    def job(item: tuple[Path, int]) -> tuple[Path, int, str]:
        wt, i = item
        res = boxes[wt].run(f"echo {i} > out{i}.txt; sleep 0.1; ls {a.parent}; cat out{i}.txt", cwd=wt)
        return wt, i, res.stdout

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(job, jobs))
    for wt, i, stdout in results:
        assert stdout.split() == [wt.name, str(i)]
        assert (wt / f"out{i}.txt").read_text() == f"{i}\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root needs the pids cgroup")
def test_an_unenforced_process_limit_is_flagged_on_every_result(agents: tuple[Path, Path],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from masgrid.families.cooper import sandbox as sandbox_module
    from masgrid.families.cooper.tools import ToolBox

    a, _ = agents
    monkeypatch.setattr(sandbox_module, "_cgroup_parent", lambda: None)
    sb = box(a)
    assert sb.enforcement["processes"].startswith("not enforced")
    assert sb.run("true", cwd=a).notes == ["process limit not enforced"]
    assert ToolBox(a, sb).call("bash", {"command": "true"}).notes == ["process limit not enforced"]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to act as a user")
def test_as_a_plain_user_the_process_limit_is_rlimit_nproc(monkeypatch: pytest.MonkeyPatch) -> None:
    """The usual developer set-up (not root): the argv the sandbox builds, run as `nobody`,
    stops forking at max_procs (RLIMIT_NPROC counted in bubblewrap's own user namespace)."""
    import tempfile

    from masgrid.families.cooper import sandbox as sandbox_module

    monkeypatch.setattr(sandbox_module.os, "geteuid", lambda: 65534)
    with tempfile.TemporaryDirectory(prefix="sbx-nobody-") as holder:  # pytest's tmp_path is private to root
        Path(holder).chmod(0o755)
        wt = Path(holder) / "agent0"
        wt.mkdir()
        os.chown(wt, 65534, 65534)
        sb = Sandbox(SandboxSettings(max_procs=10), writable=[wt])
        assert sb.enforcement["processes"] == "RLIMIT_NPROC" and sb._cgroup_parent is None
        # outside a user namespace the rlimit would count all the user's processes: not used, and said so
        opt_out = Sandbox(SandboxSettings(kind="none"), writable=[wt])
        assert opt_out.enforcement["processes"] == "not enforced (kind=none without root)"
        assert not any(a.startswith("--nproc") for a in opt_out._limits_argv())
        spawn = "for i in $(seq 30); do sleep 0.3 & done; wait; echo done"
        argv = sb._bwrap_argv(wt, dict(sandbox_module.BASE_ENV)) + sb._limits_argv() + ["/bin/bash", "-c", spawn]
        as_nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--"]
        limited = subprocess.run(as_nobody + argv, capture_output=True, text=True, timeout=60)
        assert "Resource temporarily unavailable" in limited.stderr, limited.stderr[-300:]
        plain = subprocess.run(as_nobody + ["/bin/bash", "-c", spawn], capture_output=True, text=True, timeout=60)
        assert plain.returncode == 0 and plain.stderr == ""  # control: without the limit all 30 run


def test_the_check_command_reports_status_and_limits(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from masgrid.families.cooper.sandbox import main

    assert main() == 0
    assert capsys.readouterr().out.startswith("bubblewrap works (ok, ")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main() == 1
    assert capsys.readouterr().out == INSTALL_HINT + "\n"
