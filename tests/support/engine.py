"""The real inference engine for the test suite: vLLM's CPU build serving the tiny model.

One engine per test session (`vllm_engine` in tests/conftest.py): an OpenAI server process
of vLLM itself (`python -m vllm.entrypoints.openai.api_server`, the form its docs give),
in a process group of its own so teardown leaves no engine process behind. The engine's
own counters (/metrics) are the independent measure the tests compare masgrid's records to.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

#: seconds the engine may take to answer /v1/models (36-49 s quiet; 135 s seen under load)
START_TIMEOUT_S = 400.0
SERVED = "tiny"
CONTEXT = 4096


def engine_missing() -> str | None:
    """Why the real engine cannot run here (None: it can). `make test` installs it."""
    if importlib.util.find_spec("vllm") is None:
        return "vLLM's CPU build is not installed (make test installs it; MASGRID_ENGINE=0 leaves it out)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: vLLM's cache, shared by every engine the suite starts: its model-info entry (vLLM inspects the
#: model class in a subprocess, about 9 s of a 36 s start here, once per cache) is then written once
SHARED_CACHE = Path(tempfile.gettempdir()) / f"masgrid-test-vllm-cache-{os.getuid()}"


def engine_env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1", HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1",
               VLLM_CACHE_ROOT=str(SHARED_CACHE), TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"),
               VLLM_LOGGING_LEVEL="WARNING",
               VLLM_SERVER_DEV_MODE="1")  # POST /reset_prefix_cache (execution.prefix_cache=reset_per_run)
    env.pop("PYTHONPATH", None)  # the engine needs nothing of masgrid's
    return env


@dataclass
class Engine:
    base_url: str
    process: subprocess.Popen
    log: Path
    model_dir: Path

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")

    def counters(self) -> dict[str, float]:
        """The engine's own token counters (Prometheus text at /metrics)."""
        with urllib.request.urlopen(f"{self.root}/metrics", timeout=10) as response:
            text = response.read().decode()
        out: dict[str, float] = {}
        for name in ("prompt_tokens_total", "generation_tokens_total", "prefix_cache_hits_total",
                     "prefix_cache_queries_total", "request_success_total"):
            values = re.findall(rf"^vllm:{name}\{{[^}}]*\}} ([0-9.e+]+)$", text, re.MULTILINE)
            out[name] = sum(float(v) for v in values)
        return out

    def chat(self, body: dict) -> tuple[int, dict]:
        request = urllib.request.Request(f"{self.base_url}/chat/completions", json.dumps(body).encode(),
                                         {"content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def stop(self) -> None:
        stop_group(self.process)


def stop_group(process: subprocess.Popen, timeout_s: float = 20.0) -> None:
    """SIGTERM the engine's process group, then SIGKILL what is left (no orphaned workers)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)


def start_engine(model_dir: Path, workdir: Path, *extra: str, port: int | None = None,
                 cpus: set[int] | None = None) -> Engine:
    """Start vLLM's OpenAI server on the tiny model (on `port`, else a free one); returns
    once /v1/models answers. `cpus`: the cores the engine's processes may use (all of them
    bound there, its OpenMP threads too), so a benchmark can keep its clients off them."""
    port = port or free_port()
    env = engine_env(workdir)
    if cpus:
        env["VLLM_CPU_OMP_THREADS_BIND"] = ",".join(str(c) for c in sorted(cpus))
    log = workdir / f"vllm-{port}.log"
    args = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
            "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port),
            "--max-model-len", str(CONTEXT), "--enforce-eager", "--enable-prefix-caching",
            "--enable-prompt-tokens-details", "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
            "--structured-outputs-config", '{"backend": "xgrammar", "disable_any_whitespace": true}', *extra]
    with open(log, "wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                   preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    engine = Engine(f"http://127.0.0.1:{port}/v1", process, log, model_dir)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"vLLM exited with {process.returncode} before serving: {tail(log)}")
        try:
            with urllib.request.urlopen(f"{engine.base_url}/models", timeout=2):
                return engine
        except OSError:
            time.sleep(1.0)
    engine.stop()
    raise RuntimeError(f"vLLM did not serve within {START_TIMEOUT_S:.0f} s: {tail(log)}")


def tail(log: Path, lines: int = 15) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
