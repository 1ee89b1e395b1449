"""The SIMAS sweep benchmark does not rot: its latency server answers SIMAS prompts over real
HTTP as documented, its list-schedule bound agrees with an independent simulation, and the
script runs end to end (a real `masgrid run -m` sweep of two runs on Ray) and writes its table."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import ModuleType

from masgrid.families.simas.answers import parse_choice
from masgrid.families.simas.profiles import parse_profiles

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))  # the script imports its server module by name
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module
    finally:
        sys.path.remove(str(BENCH))


def post(url: str, body: dict) -> tuple[dict, float]:
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read()), time.monotonic() - t0


def test_latency_server_answers_simas_prompts() -> None:
    server_mod = load("simas_latency_server")
    latency = server_mod.Latency(base_s=0.02, per_token_s=0.004)
    with server_mod.LatencyServer(latency, tokens=25) as server:
        turn, took = post(server.base_url, {"messages": [{"role": "system", "content": "You are Agent_1, the"},
                                                         {"role": "user", "content": "Question? Round 1"}]})
        text = turn["choices"][0]["message"]["content"]
        assert len(text.split()) == 25 == turn["usage"]["completion_tokens"]
        assert parse_choice(text, 4) == "B"
        assert took >= latency.of(25)
        panel, _ = post(server.base_url, {"messages": [
            {"role": "system", "content": "You set up a panel of 5 assistants who will discuss"},
            {"role": "user", "content": "Write the profiles."}]})
        assert len(parse_profiles(panel["choices"][0]["message"]["content"], 5)) == 5
        final, _ = post(server.base_url, {"messages": [
            {"role": "user", "content": "history\nThe discussion is over. As the first assistant ..."}]})
        assert parse_choice(final["choices"][0]["message"]["content"], 4) == "B"
        probe, _ = post(server.base_url, {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1})
        assert probe["usage"]["completion_tokens"] == 1
        time.sleep(0.05)  # the handler logs after its reply is written
        log = server.log
    assert log.probes == 1 and len(log.calls) == 3
    expected = latency.of(25) + latency.of(len(panel["choices"][0]["message"]["content"].split())) \
        + latency.of(final["usage"]["completion_tokens"])
    assert abs(sum(c[2] for c in log.calls) - expected) < 1e-9


def slots_by_events(durations: list[float], c: int) -> float:
    """Makespan by stepping time: at each moment start queued runs while fewer than c run."""
    running: list[float] = []  # end times
    queue, now = list(durations), 0.0
    while queue or running:
        while queue and len(running) < c:
            running.append(now + queue.pop(0))
        now = min(running)
        running = [e for e in running if e > now]
    return now


def test_list_schedule_matches_a_step_simulation() -> None:
    bench = load("bench_simas_sweep")
    rng = random.Random(7)
    for _ in range(300):
        durations = [rng.choice([0.5, 1.0, 2.5, rng.uniform(0.1, 9)]) for _ in range(rng.randint(1, 40))]
        c = rng.randint(1, 12)
        assert abs(bench.list_schedule(durations, c) - slots_by_events(durations, c)) < 1e-9
    assert bench.list_schedule([3.0] * 4, 4) == 3.0  # ideal: sum / C
    assert bench.list_schedule([1.0, 1.0, 4.0], 2) == 5.0  # the long run started last is the tail


def test_benchmark_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "simas_sweep.md"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    cmd = [sys.executable, str(BENCH / "bench_simas_sweep.py"), "--concurrency", "2", "--repeat", "1",
           "--agents", "1,2", "--questions", "1", "--subjects", "college_physics", "--rounds", "1",
           "--tokens", "5", "--base-s", "0.01", "--per-token-s", "0.001", "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = [line for line in out.read_text().splitlines() if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    values = dict(zip(header, (c.strip() for c in rows[2].strip("|").split("|"))))
    # two runs, n = 1 and n = 2, one round: n*T turns plus the final answer each
    assert (values["C"], values["runs"], values["calls"]) == ("2", "2", str(sum(n * 1 + 1 for n in (1, 2))))
    assert 0 < float(values["ideal/span"]) <= 1.0 and 0 < float(values["ideal/wall"]) <= float(values["ideal/span"])
    assert 0 < float(values["packing bound"]) <= 1.0
    # ideal = every call's simulated latency / C: three 5-word turns and two 9-word final answers
    final_words = len("Weighing the discussion, the group agrees. Final answer: B".split())
    ideal = (3 * (0.01 + 0.001 * 5) + 2 * (0.01 + 0.001 * final_words)) / 2
    assert abs(float(values["ideal s"]) - ideal) <= 0.0006
    assert "'C': 2" in done.stdout  # the per-sweep line
