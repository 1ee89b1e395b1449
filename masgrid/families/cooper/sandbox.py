"""Run a command an agent (or a task's test suite) asked for, isolated by bubblewrap.

CooperBench agents execute arbitrary shell commands in their own git worktree; the paper
isolates them in Docker containers. We isolate with bubblewrap instead:

- the filesystem is an allow-list: the system directories (/usr, /etc and the /bin, /lib
  links) read-only, `readable` paths read-only, `writable` paths (the agent's worktree)
  read-write, a private tmpfs /tmp, fresh /proc and /dev. Everything else (/root, /home,
  other agents' worktrees, the results directory) is simply absent: not mounted is
  stronger than mounted and then covered with a tmpfs;
- all namespaces are unshared (no network unless `network=True`; own PID namespace, so
  killing bubblewrap's init kills every process the command started), `--cap-drop ALL`,
  `--die-with-parent`, `--new-session`;
- resource limits are set with `prlimit` on the command inside the sandbox: CPU seconds,
  address space, file size, no core dumps, and the process count. The kernel does not
  apply RLIMIT_NPROC to the host's root user, so when we run as root the process limit is
  a pids cgroup (`pids.max`) created per command instead; where neither works,
  `Sandbox.enforcement` says so and the result carries the note;
- the wall-clock limit kills the whole process group (and with it the PID namespace);
- output is read while the command runs and only the first and last parts are kept
  (`output_cap_bytes` per stream); a command whose output passes `output_kill_bytes` is
  killed, so a runaway writer costs neither memory nor time.

`kind="none"` runs the same command with the same limits but without isolation: an
explicit opt-out the run records, never a silent fallback.
"""

from __future__ import annotations

import functools
import os
import selectors
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: system directories made visible (read-only) in every sandbox; symlinks (e.g. /bin ->
#: usr/bin on merged-/usr systems) are recreated as symlinks
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
#: secrets under the system directories, hidden inside the sandbox (the command runs as the
#: owner of root's files when we run as root, so file modes alone would not stop it)
HIDDEN_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
HIDDEN_DIRS = ("/etc/ssh", "/etc/ssl/private", "/etc/sudoers.d")
#: environment every command starts from (the host's environment is not inherited)
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
}
INSTALL_HINT = (
    "bubblewrap (bwrap) is needed for cooper.sandbox=bwrap: run `sudo apt-get install -y bubblewrap` "
    "(or `make install` as root), or set cooper.sandbox=none to run without isolation"
)
_READ_CHUNK = 1 << 16


class SandboxError(ValueError):
    """A sandbox that cannot be set up as asked (one-line message)."""


class SandboxSettings(BaseModel):
    """Limits for every command run through one `Sandbox`."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["bwrap", "none"] = "bwrap"
    timeout_s: float = Field(120.0, gt=0, description="wall-clock limit per command, seconds")
    cpu_s: int = Field(600, gt=0, description="CPU seconds per process (RLIMIT_CPU)")
    memory_mb: int = Field(4096, gt=0, description="address space per process, MiB (RLIMIT_AS)")
    max_procs: int = Field(256, gt=0, description="processes and threads the command may have at once")
    file_mb: int = Field(1024, gt=0, description="largest file the command may write, MiB (RLIMIT_FSIZE)")
    tmp_mb: int = Field(512, gt=0, description="size of the private /tmp (a tmpfs, i.e. host memory), MiB")
    output_cap_bytes: int = Field(256_000, gt=0, description="bytes kept per stream (head and tail)")
    output_kill_bytes: int = Field(64 << 20, gt=0, description="total output after which the command is killed")
    network: bool = False


class ShellResult(BaseModel):
    """What one command did. `truncated`: some output was dropped (see *_bytes)."""

    exit_code: int | None = Field(description="None when the command was killed before it exited")
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    wall_s: float
    killed: Literal["timeout", "output"] | None = None
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    notes: list[str] = Field(default_factory=list, description="limits that were not enforced")


def sandbox_problem() -> str | None:
    """None when bubblewrap can build a sandbox here; else one line saying what to do."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return INSTALL_HINT
    try:
        proc = subprocess.run(
            [bwrap, "--unshare-all", "--die-with-parent", *_system_binds(), "--proc", "/proc",
             "--dev", "/dev", "--", "true"],
            capture_output=True, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap is installed but cannot run ({exc}); set cooper.sandbox=none to run without isolation"
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
        return (f"bubblewrap cannot create namespaces here ({why[0]}); enable unprivileged user namespaces "
                "(sysctl kernel.unprivileged_userns_clone=1) or set cooper.sandbox=none")
    return None


def interpreter_paths(python: Path) -> list[Path]:
    """Read-only paths a sandboxed command needs to run `python` (a venv and its base prefix)."""
    python = Path(python).absolute()
    out = [python.parent.parent]
    base = python.resolve().parent.parent
    if base != out[0]:
        out.append(base)
    return out


def _system_binds() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in HIDDEN_FILES:
        if os.path.isfile(path):
            args += ["--ro-bind", "/dev/null", path]
    for path in HIDDEN_DIRS:
        if os.path.isdir(path) and not os.path.islink(path):
            args += ["--tmpfs", path, "--remount-ro", path]
    return args


class _Capture:
    """Keeps the first and last bytes of one stream, counting what it drops."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap - cap // 4
        self.tail_cap = cap // 4
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_cap:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + min(len(self.tail), self.tail_cap)

    def text(self) -> str:
        tail = bytes(self.tail[-self.tail_cap:]) if self.tail_cap else b""
        dropped = self.total - len(self.head) - len(tail)
        if dropped <= 0:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace")
        marker = f"\n[... {dropped} bytes of output omitted ...]\n".encode()
        return (bytes(self.head) + marker + tail).decode("utf-8", errors="replace")


class _PidsCgroup:
    """A pids cgroup holding one command (the process limit when we run as root)."""

    def __init__(self, path: Path, max_procs: int) -> None:
        path.mkdir()
        self.path = path
        try:
            (path / "pids.max").write_text(str(max_procs))
        except OSError:
            path.rmdir()
            raise

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` started inside this cgroup: the shell moves itself in, then becomes the
        command, so nothing forks outside it; if the move fails, the command does not run."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *argv]

    @staticmethod
    def candidates() -> list[Path]:
        """pids hierarchies (cgroup v1 or v2) that may take a child cgroup of ours."""
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            _, controllers, rel = line.split(":", 2)
            if "pids" in controllers.split(","):
                out += [Path("/sys/fs/cgroup/pids") / rel.lstrip("/"), Path("/sys/fs/cgroup/pids")]
            elif controllers == "":
                out.append(Path("/sys/fs/cgroup") / rel.lstrip("/"))
        return [p for p in dict.fromkeys(out) if (p / "cgroup.procs").exists() and os.access(p, os.W_OK)]

    @classmethod
    def usable_parent(cls) -> Path | None:
        """The first candidate where a command really starts inside a limited child cgroup."""
        for parent in cls.candidates():
            try:
                group = cls(parent / f"masgrid-probe-{uuid.uuid4().hex[:12]}", 8)
            except OSError:
                continue
            try:
                ok = subprocess.run(group.wrap(["true"]), capture_output=True, timeout=30).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            group.remove()
            if ok:
                return parent
        return None

    def kill_all(self) -> None:
        for _ in range(100):
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except OSError:
                return
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)


class Sandbox:
    """Runs commands with `writable` paths read-write and `readable` paths read-only."""

    def __init__(self, settings: SandboxSettings, writable: list[Path], readable: list[Path] | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.settings = settings
        self.env = dict(env or {})  # variables every command gets (over BASE_ENV; a run's `env` wins)
        self.writable = [self._existing(p, "writable") for p in writable]
        self.readable = [self._existing(p, "readable") for p in (readable or [])]
        self._bwrap = shutil.which("bwrap")
        self._prlimit = shutil.which("prlimit")
        if settings.kind == "bwrap" and self._bwrap is None:
            raise SandboxError(INSTALL_HINT)
        if self._prlimit is None:
            raise SandboxError("prlimit (util-linux) is missing: install util-linux to run sandboxed commands")
        self._cgroup_parent = _cgroup_parent() if os.geteuid() == 0 else None
        self.enforcement = self._enforcement()

    @staticmethod
    def _existing(path: Path, what: str) -> Path:
        path = Path(path)
        if not path.is_absolute():
            raise SandboxError(f"{what} path must be absolute: {path}")
        if not path.exists():
            raise SandboxError(f"{what} path does not exist: {path}")
        return path.resolve()

    def _nproc_applies(self) -> bool:
        """RLIMIT_NPROC limits the command's processes alone only for a non-root user inside
        bubblewrap's user namespace (the kernel exempts root, and counts per user and namespace)."""
        return os.geteuid() != 0 and self.settings.kind == "bwrap"

    def _enforcement(self) -> dict[str, str]:
        """How each limit is enforced (recorded with runs: a limit that is not is flagged)."""
        if self._nproc_applies():
            procs = "RLIMIT_NPROC"
        elif os.geteuid() != 0:
            # outside bubblewrap's own user namespace the limit would count every process of
            # the user on the host, so a busy host would make the command's forks fail
            procs = "not enforced (kind=none without root)"
        elif self._cgroup_parent is not None:
            procs = "pids cgroup"
        else:
            procs = "not enforced (root without a writable pids cgroup)"
        return {
            "isolation": "bubblewrap" if self.settings.kind == "bwrap" else "none (opt-out)",
            "processes": procs,
            "cpu_memory_files": "prlimit",
            "wall_clock": "process-group kill",
            "tmp": ("host /tmp (not private)" if self.settings.kind == "none" else
                    f"private tmpfs of {self.settings.tmp_mb} MiB" if _bwrap_has_size(self._bwrap or "bwrap")
                    else "private tmpfs, size not capped (bubblewrap < 0.7)"),
        }

    def _limits_argv(self) -> list[str]:
        s = self.settings
        argv = [self._prlimit or "prlimit", f"--cpu={s.cpu_s}", f"--as={s.memory_mb << 20}",
                f"--fsize={s.file_mb << 20}", "--core=0"]
        if self._nproc_applies():
            argv.append(f"--nproc={s.max_procs}")
        return argv + ["--"]

    def _bwrap_argv(self, cwd: Path, env: dict[str, str]) -> list[str]:
        argv = [self._bwrap or "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
                "--cap-drop", "ALL", "--hostname", "sandbox", *_system_binds(),
                "--proc", "/proc", "--dev", "/dev"]
        if _bwrap_has_size(argv[0]):
            argv += ["--size", str(self.settings.tmp_mb << 20)]
        argv += ["--tmpfs", "/tmp"]
        if self.settings.network:
            argv.append("--share-net")
        # shallower mounts first, so a read-only path inside a writable one (a worktree's .git)
        # stays read-only, and a writable path inside a readable one stays writable
        mounts = [(p, "--ro-bind") for p in self.readable] + [(p, "--bind") for p in self.writable]
        for path, flag in sorted(mounts, key=lambda m: len(m[0].parts)):
            argv += [flag, str(path), str(path)]
        argv += ["--clearenv"]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        return argv + ["--chdir", str(cwd), "--"]

    def _check_cwd(self, cwd: Path) -> Path:
        cwd = Path(cwd).resolve()
        if self.settings.kind == "bwrap" and not any(
            cwd == p or p in cwd.parents for p in self.writable + self.readable
        ):
            raise SandboxError(f"working directory {cwd} is not inside a writable or readable sandbox path")
        if not cwd.is_dir():
            raise SandboxError(f"working directory does not exist: {cwd}")
        return cwd

    def run(self, command: str | list[str], cwd: Path, timeout_s: float | None = None,
            env: dict[str, str] | None = None) -> ShellResult:
        """Run `command` (a string goes to bash -c) in `cwd`; never raises for what the command does."""
        cwd = self._check_cwd(cwd)
        full_env = {**BASE_ENV, **self.env, **(env or {})}
        inner = ["/bin/bash", "-c", command] if isinstance(command, str) else [str(a) for a in command]
        if not inner:
            raise SandboxError("empty command")
        argv = self._limits_argv() + inner
        if self.settings.kind == "bwrap":
            argv = self._bwrap_argv(cwd, full_env) + argv
        cgroup, unenforced = None, "not enforced" in self.enforcement["processes"]
        if self._cgroup_parent is not None:
            try:
                cgroup = _PidsCgroup(self._cgroup_parent / f"masgrid-sbx-{uuid.uuid4().hex[:12]}",
                                     self.settings.max_procs)
            except OSError:
                unenforced = True  # the hierarchy looked writable but is not: run, and say so
            else:
                argv = cgroup.wrap(argv)
        try:
            result = self._execute(argv, cwd, full_env, timeout_s or self.settings.timeout_s)
        finally:
            if cgroup is not None:
                cgroup.remove()
        if unenforced:
            result.notes.append("process limit not enforced")
        return result

    def _execute(self, argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> ShellResult:
        cap = self.settings.output_cap_bytes
        out, err = _Capture(cap), _Capture(cap)
        start = time.monotonic()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        killed: Literal["timeout", "output"] | None = None
        sel = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None
        sel.register(proc.stdout, selectors.EVENT_READ, out)
        sel.register(proc.stderr, selectors.EVENT_READ, err)
        deadline = start + timeout_s
        drain_until: float | None = None  # set once the command is over: stop waiting on its pipes then
        open_streams = 2
        while open_streams:
            now = time.monotonic()
            if drain_until is None and now >= deadline:
                killed = "timeout"
                _kill_group(proc)
                drain_until = now + 5.0
            if drain_until is not None and now >= drain_until:
                break  # something outside the process group holds a pipe open; give up on it
            wait = (drain_until if drain_until is not None else deadline) - now
            events = sel.select(timeout=max(0.0, min(wait, 0.5)))
            for key, _ in events:
                chunk = os.read(key.fd, _READ_CHUNK)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                    continue
                key.data.add(chunk)
                if drain_until is None and out.total + err.total > self.settings.output_kill_bytes:
                    killed = "output"
                    _kill_group(proc)
                    drain_until = time.monotonic() + 5.0
            if not events and drain_until is None and _exited(proc.pid):
                # the command exited; what it left running in the background still holds the pipes
                _kill_group(proc)
                drain_until = time.monotonic() + 1.0
        sel.close()
        # the pipes closing is not the command ending: wait for it (without reaping, so the
        # group id cannot be reused before the stragglers are killed), then kill the group
        if killed is None and not _exited(proc.pid, until=deadline):
            killed = "timeout"
        _kill_group(proc)
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        for stream in (proc.stdout, proc.stderr):
            stream.close()
        return ShellResult(
            exit_code=None if killed is not None else code,
            stdout=out.text(), stderr=err.text(), timed_out=killed == "timeout",
            truncated=out.truncated or err.truncated, wall_s=time.monotonic() - start, killed=killed,
            stdout_bytes=out.total, stderr_bytes=err.total,
        )


@functools.cache
def _bwrap_has_size(bwrap: str) -> bool:
    """Whether this bubblewrap can cap a tmpfs (`--size`, bubblewrap >= 0.7)."""
    try:
        return "--size" in subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def _cgroup_parent() -> Path | None:
    """Where per-command pids cgroups go (probed once per process)."""
    return _PidsCgroup.usable_parent()


def _exited(pid: int, until: float | None = None) -> bool:
    """Whether the child `pid` has exited, polling until `until`; it stays unreaped."""
    pause = 0.001
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # already reaped (e.g. SIGCHLD ignored in this process)
            return True
        if until is None or time.monotonic() >= until:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's whole process group (bubblewrap's PID namespace goes with it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def main() -> int:
    """`python -m masgrid.families.cooper.sandbox`: can this machine sandbox, and how."""
    problem = sandbox_problem()
    if problem:
        print(problem)
        return 1
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        box = Sandbox(SandboxSettings(), writable=[Path(tmp)])
        res = box.run("echo ok", cwd=Path(tmp))
    print(f"bubblewrap works ({res.stdout.strip()}, {1000 * res.wall_s:.0f} ms); limits: {box.enforcement}")
    return 0 if res.exit_code == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
