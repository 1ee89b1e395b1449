"""The acceptance sweep of model phases on the real engine: two tiny models on vLLM's CPU
build behind Ray Serve LLM, each reserving more than half of the cluster's 2 CPUs, swept as a
researcher would (`masgrid run -m model=tiny_a,tiny_b` against a running head), killed with
SIGKILL mid-phase, and resumed with the same command.

Independent witnesses: a separate process samples Serve's status (never both models up) and
the token counters each engine exports through Ray's metrics agent; the runs table must match
the engine that served a whole phase token for token (its runs plus the phase's one probe).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.support.engine import engine_missing, free_port

ROOT = Path(__file__).resolve().parents[4]
#: five runs a model: tiny_a's phase must still have runs to do when the first command is
#: killed (with three, a quiet machine finished them all between the first record and the kill)
SEEDS = "0,1,2,3,4"


def preset(name: str, port: int, max_tokens: int = 16) -> str:
    return (f"defaults: [tiny_cpu]\nname: {name}\nserved_name: {name}\nmax_tokens: {max_tokens}\n"
            f"serving:\n  app: {name.replace('_', '-')}\n  route_prefix: /{name}\n  http_port: {port}\n"
            "  cpus_per_worker: 0.5\n  ingress_cpus: 0.1\n  placement_timeout_s: 60\n")


def chat(url: str, model: str) -> dict:
    """One 1-token request; its usage."""
    import urllib.request

    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}).encode()
    with urllib.request.urlopen(urllib.request.Request(url, body, {"content-type": "application/json"}),
                                timeout=120) as response:
        return json.loads(response.read())["usage"]


def recorded(results: Path) -> pd.DataFrame:
    if not any((results / "runs").rglob("part-*.parquet")):
        return pd.DataFrame(columns=["run_id", "model", "status", "tokens_in", "tokens_out"])
    return pd.read_parquet(results / "runs", columns=["run_id", "model", "status", "tokens_in", "tokens_out"])


@pytest.fixture
def head(tmp_path, tiny_model):
    if engine_missing():
        pytest.skip(engine_missing())
    private = tempfile.mkdtemp(prefix="mgph", dir="/tmp")  # Ray's socket paths have a length limit
    port, metrics = free_port(), free_port()
    env = {**os.environ, "RAY_TMPDIR": private, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT),
           "MASGRID_TINY_MODEL": str(tiny_model), "RAY_ADDRESS": f"127.0.0.1:{port}"}
    ray = Path(sys.executable).with_name("ray")
    proc = subprocess.Popen([str(ray), "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
                             "--include-dashboard=false", "--disable-usage-stats", f"--metrics-export-port={metrics}",
                             '--system-config={"metrics_report_interval_ms": 500}'],
                            env=env, stdout=open(tmp_path / "head.log", "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        yield env, metrics
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)  # a graceful stop of the head alone took over 30 s: what is left is killed below
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        # this head's processes only (never `ray stop`: it stops every Ray on the machine, the
        # test session's own included, whose loss ends the pytest process)
        subprocess.run(["pkill", "-9", "-f", private], capture_output=True, timeout=30)
        shutil.rmtree(private, ignore_errors=True)


@pytest.mark.slow
def test_two_tiny_engines_that_cannot_share_the_cluster_sweep_in_phases_through_a_kill(head, tmp_path):
    env, metrics = head
    conf, results = tmp_path / "conf", tmp_path / "results"
    (conf / "model").mkdir(parents=True)
    serve_port = free_port()
    # tiny_a's replies are longer, so its runs last long enough (about a second each) for the
    # kill to land inside its phase: with 16 tokens a quiet machine recorded all five between two polls
    for name, max_tokens in (("tiny_a", 64), ("tiny_b", 16)):
        (conf / "model" / f"{name}.yaml").write_text(preset(name, serve_port, max_tokens))
    cmd = [str(Path(sys.executable).with_name("masgrid")), "run", "-m", "--config-dir", str(conf), "backend=serve",
           "model=tiny_a,tiny_b", "task=sorting", "protocol=kv", "agents=2", "k=2", "max_rounds=4", f"seed={SEEDS}",
           "sweep.max_concurrent=1", "sweep.progress=plain", f"results_dir={results}"]
    witness_log, stop = tmp_path / "witness.jsonl", tmp_path / "stop"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the head answers
        if subprocess.run([str(Path(sys.executable).with_name("ray")), "status"], env=env,
                          capture_output=True).returncode == 0:
            break
        time.sleep(1)
    witness = subprocess.Popen([sys.executable, "-m", "tests.support.serve_witness", env["RAY_ADDRESS"], str(metrics),
                                str(witness_log), str(stop)], env=env, cwd=ROOT,
                               stdout=open(tmp_path / "witness.log", "wb"), stderr=subprocess.STDOUT)
    try:
        plan = subprocess.run([*cmd, "--plan"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert plan.returncode == 0, plan.stderr[-2000:]
        assert "model phases: 2 phase(s), 2 model load(s), 10 pending run(s)" in plan.stdout, plan.stdout

        # first command: killed (SIGKILL, its whole process group) once tiny_a's phase has recorded a run
        first = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=open(tmp_path / "first.log", "wb"),
                                 stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and first.poll() is None:
            if any((results / "runs").rglob("part-*.parquet")):  # the first run's row: cheap to look for
                break
            time.sleep(0.05)
        assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
        assert len(recorded(results)) >= 1, (tmp_path / "first.log").read_text()[-3000:]
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
        before = recorded(results)
        assert set(before["model"]) == {"tiny_a"} and len(before) < 5, before  # killed inside tiny_a's phase

        # the same command again: resumes, finishes everything
        second = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert second.returncode in (0, 1), second.stdout[-2000:] + second.stderr[-4000:]
        # vLLM logs an engine step's stats on its next step: one more request (1 token) makes the
        # sweep's last step reach the counters
        nudge = chat(f"http://127.0.0.1:{serve_port}/tiny_b/v1/chat/completions", "tiny_b")
        time.sleep(3)  # a last sample of the counters
    finally:
        stop.touch()
        witness.wait(30)
    runs = recorded(results)
    assert len(runs) == 10 and runs["run_id"].is_unique  # nothing lost, nothing run twice
    assert sorted(runs.groupby("model").size().items()) == [("tiny_a", 5), ("tiny_b", 5)]
    kept = before.set_index("run_id")
    assert all(run_id in set(runs["run_id"]) for run_id in kept.index)

    samples = [json.loads(line) for line in witness_log.read_text().splitlines()]
    ups = [set(s["apps"]) & {"tiny-a", "tiny-b"} for s in samples]
    assert {"tiny-a"} in ups and {"tiny-b"} in ups
    assert {"tiny-a", "tiny-b"} not in ups  # never both deployed at once

    phases = pd.read_parquet(results / "phases")
    loads = [m for row in phases["loaded"] for m in row]
    assert sorted(loads) == ["tiny_a", "tiny_b"]  # each model loaded once over both commands
    assert any("tiny_a" in row for row in phases["kept"])  # the resume kept tiny_a up instead of loading it again
    assert (phases["load_s"] >= 0).all() and phases.loc[[("tiny_b" in r) for r in phases["loaded"]], "load_s"].iloc[0] > 1

    # tiny_b served a whole phase: its engine counted exactly the runs' tokens and the phase's probe
    probes = [json.loads(line) for line in (results / "preflight.jsonl").read_text().splitlines()]
    probe_b = [p for p in probes if p.get("model") == "tiny_b"]
    assert len(probe_b) == 1
    final = max((s["counters"].get("tiny_b", {}) for s in samples), key=lambda c: c.get("prompt_tokens", 0))
    b = runs[runs["model"] == "tiny_b"]
    assert final["prompt_tokens"] == b["tokens_in"].sum() + probe_b[0]["prompt_tokens"] + nudge["prompt_tokens"], final
    generated = b["tokens_out"].sum() + probe_b[0]["completion_tokens"]
    assert final["generation_tokens"] in (generated, generated + nudge["completion_tokens"]), (final, generated)
    # tiny_a's engine counted at least what its recorded runs used (the killed run's calls too)
    counted_a = max(s["counters"].get("tiny_a", {}).get("prompt_tokens", 0) for s in samples)
    assert counted_a >= runs[runs["model"] == "tiny_a"]["tokens_in"].sum()
