"""Harness cost per model call: masgrid against a loopback server that answers at once.

The server (benchmarks/zero_latency_server.py) runs in its own process and reports its own
CPU; the model costs nothing, so what a run spends beyond the server is the harness: the
driver, the agent hosts, the environment, the HTTP client, event records. Per scenario and
repeat we report

- `steady_ms_per_call`: a round's wall time in steady state (median over rounds 2.. of the
  gap between consecutive rounds' last events) per call of the round, less the server's
  mean CPU per call: what each further call of a long run costs;
- `harness_ms_per_call` = (rounds wall - server CPU during the run) / calls, where rounds
  wall is the run's `wall_s - startup_s` (actors already started, as in a sweep's warm pool);
- `run_ms_per_call` = (wall_s - server CPU) / calls (actor start-up included);
- `process_ms_per_call` = whole `masgrid run` process wall / calls (Ray start included; only
  with `--process`, which runs the CLI in a subprocess);
- `server_cpu_ms_per_call`, so the two sides are separable.

Scenarios (`--scenarios`): AgentsNet consensus on a Watts-Strogatz graph with N = 100 and
1,000 (`an100`, `an1000`), MAS-Bench sorting on the key-value store with N = 100 (`kv100`).
Medians over `--repeats` interleaved repeats.

    python benchmarks/bench_harness_per_call.py --repeats 3 --out benchmarks/results/harness_per_call.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
#: extra execution.* settings for every run (--set key=value)
EXECUTION: dict = {}

SCENARIOS: dict[str, dict] = {
    "an100": {"task": "agentsnet/consensus", "protocol": "local", "agents": 100, "graph": "ws"},
    "an1000": {"task": "agentsnet/consensus", "protocol": "local", "agents": 1000, "graph": "ws"},
    "kv100": {"task": "sorting", "protocol": "kv", "agents": 100, "max_rounds": 16},
}


class Server:
    """The zero-latency server in a child process; `cpu_s()` reads its CPU over HTTP."""

    def __init__(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        port_file = Path(self.tmp.name) / "port"
        self.proc = subprocess.Popen([sys.executable, str(HERE / "zero_latency_server.py"), "--port-file", str(port_file)])
        deadline = time.time() + 30
        while not port_file.exists() or not port_file.read_text():
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("the zero-latency server did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as reply:
            return json.loads(reply.read())

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.tmp.cleanup()


def config(name: str, server: Server, results: Path, seed: int, client: str, warm: bool = False) -> dict:
    return {**SCENARIOS[name], "seed": seed, "results_dir": str(results), "backend": "openai", "preflight": False,
            "model": {"name": "zero", "base_url": server.base_url, "http_client": client, "max_retries": 0,
                      "max_concurrency": 1024},
            "execution": {"token_counter": "approx", "reuse_actors": warm, **EXECUTION}}


class CpuSampler:
    """CPU seconds of this process's Ray descendants during a run, by process title (the
    actor class). Actor processes exit when their run ends, so each one's CPU is sampled
    every 20 ms and its last sample kept; the start-up of a fresh process (imports) is
    included, and whatever Ray's own daemons spend lands under `ray-system`."""

    def __init__(self) -> None:
        import threading

        self.last: dict[int, tuple[str, float]] = {}
        self.first: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        import psutil

        for proc in psutil.Process().children(recursive=True):
            try:
                cmd = proc.cmdline()
                times = proc.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            title = cmd[0] if cmd and cmd[0].startswith("ray::") else "ray-system" if "ray" in " ".join(cmd) else "other"
            key = title.removeprefix("ray::").split(".")[0].split(" ")[0]
            cpu = times.user + times.system
            self.first.setdefault(proc.pid, cpu if self._initial else 0.0)  # a process born later: all its CPU
            old = self.last.get(proc.pid)
            self.last[proc.pid] = (key if key != "IDLE" or old is None else old[0], cpu)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(0.02)

    def __enter__(self) -> CpuSampler:
        self._initial = True  # processes alive now: count their CPU from here
        self._sample()
        self._initial = False
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def by_title(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for pid, (title, cpu) in self.last.items():
            out[title] = out.get(title, 0.0) + cpu - self.first.get(pid, 0.0)
        return out


def in_ray(name: str, server: Server, results: Path, seed: int, client: str, warm: bool = False) -> dict:
    from masgrid._private.platform.run.config import RunConfig
    from masgrid._private.platform.sweeps.ray_runs import run_one

    cfg = RunConfig.from_mapping(config(name, server, results, seed, client, warm))
    before = server.stats()
    with CpuSampler() as sampler:
        summary = run_one(cfg)
    after = server.stats()
    if summary.status != "ok":
        raise RuntimeError(f"{name}: run {summary.status}: {summary.error}")
    runs = pd.read_parquet(results / "runs", filters=[("run_id", "==", cfg.run_id)])
    run = runs.iloc[0]
    calls = int(run["model_calls"])
    server_cpu = after["cpu_s"] - before["cpu_s"]
    events = pd.read_parquet(results / "events", columns=["run_id", "round", "kind", "time"],
                             filters=[("run_id", "==", cfg.run_id)])
    ends = events.groupby("round")["time"].max().sort_index()
    per_round = events[events["kind"] == "model_call"].groupby("round").size()
    gaps = ends.diff().dt.total_seconds().iloc[1:]  # round r's end to round r+1's end (r >= 1)
    steady = (gaps / per_round.reindex(gaps.index)).median()
    rounds_wall = float(run["wall_s"]) - float(run["startup_s"])
    return {"scenario": name + (" (warm)" if warm else ""), "seed": seed, "calls": calls, "server_calls": after["calls"] - before["calls"],
            "wall_s": float(run["wall_s"]), "startup_s": float(run["startup_s"]),
            "harness_ms_per_call": 1000 * (rounds_wall - server_cpu) / calls,
            "steady_ms_per_call": 1000 * (steady - server_cpu / calls),
            "run_ms_per_call": 1000 * (float(run["wall_s"]) - server_cpu) / calls,
            "server_cpu_ms_per_call": 1000 * server_cpu / calls,
            "cpu_ms_per_call": {k: round(1000 * v / calls, 3) for k, v in sampler.by_title().items() if v > 0.005}}


def in_process(name: str, server: Server, results: Path, seed: int, client: str) -> dict:
    """The same run without Ray (`execution.executor=local`): every component in this process,
    so its CPU time per call is the harness's CPU, robust to other load on the machine."""
    from masgrid._private.platform.run.config import RunConfig
    from masgrid._private.platform.sweeps.ray_runs import run_local

    data = config(name, server, results, seed, client)
    data["execution"]["executor"] = "local"
    cfg = RunConfig.from_mapping(data)
    before, cpu0 = server.stats(), time.process_time()
    summary = run_local(cfg)
    cpu, after = time.process_time() - cpu0, server.stats()
    if summary.status != "ok":
        raise RuntimeError(f"{name}: run {summary.status}: {summary.error}")
    calls = after["calls"] - before["calls"]
    return {"scenario": name, "seed": seed, "calls": calls, "local_cpu_ms_per_call": 1000 * cpu / calls,
            "server_cpu_ms_per_call": 1000 * (after["cpu_s"] - before["cpu_s"]) / calls}


def as_process(name: str, server: Server, results: Path, seed: int, client: str) -> dict:
    """The whole `masgrid run` command, Ray start included."""
    cfg = config(name, server, results, seed, client)
    model = {**cfg.pop("model"), "served_name": "zero"}
    model.pop("name")
    args = ["model=local_vllm", *(f"{k}={v}" for k, v in cfg.items() if not isinstance(v, dict))]
    # `++` sets a key whether or not the composed config lists it
    args += [f"++model.{k}={v}" for k, v in model.items()]
    args += [f"++execution.{k}={v}" for k, v in cfg["execution"].items()]
    before = server.stats()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", *args], check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    wall = time.perf_counter() - t0
    after = server.stats()
    calls = after["calls"] - before["calls"]
    return {"scenario": name, "seed": seed, "process_wall_s": wall, "process_ms_per_call": 1000 * wall / calls}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenarios", nargs="+", default=["an100", "kv100", "an1000"], choices=sorted(SCENARIOS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--client", default="direct", choices=["direct", "lean", "aiohttp", "httpx"])
    ap.add_argument("--warm", action="store_true", help="also runs on warm actors (a sweep's pool, "
                    "execution.reuse_actors): one discarded warm-up run, then the same repeats")
    ap.add_argument("--local", action="store_true", help="only in-process runs (no Ray): harness CPU per call")
    ap.add_argument("--process", action="store_true", help="also time the whole CLI process (Ray start included)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an execution.* setting for every run, e.g. agents_per_actor=50")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    for item in args.set:
        key, _, value = item.partition("=")
        EXECUTION[key] = json.loads(value) if value[:1].isdigit() or value in ("true", "false", "null") else value

    from masgrid._private.platform.cluster.ray_session import ensure_ray

    server = Server()
    rows: list[dict] = []
    try:
        if not args.local:
            ensure_ray(None, num_cpus=2, include_dashboard=False, log_to_driver=False)
        with tempfile.TemporaryDirectory() as tmp:
            # One results_dir, as in a sweep: a new one per repeat started a new recorder
            # process whose start-up CPU landed on that repeat's first run (0.7-0.8 ms a call).
            results = Path(tmp) / "results"
            for rep in range(args.repeats):
                for name in args.scenarios:  # interleaved: load changes hit every scenario alike
                    row = (in_process if args.local else in_ray)(name, server, results, rep, args.client)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
            if args.warm and not args.local:
                for name in args.scenarios:
                    in_ray(name, server, results, 999, args.client, warm=True)
                for rep in range(args.repeats):
                    for name in args.scenarios:
                        row = in_ray(name, server, results, 200 + rep, args.client, warm=True)
                        print(json.dumps(row), flush=True)
                        rows.append(row)
            if args.process:
                import ray

                ray.shutdown()
                for rep in range(args.repeats):
                    for name in args.scenarios:
                        row = as_process(name, server, Path(tmp) / f"p{rep}", 100 + rep, args.client)
                        print(json.dumps(row), flush=True)
                        rows.append(row)
    finally:
        server.close()
    df = pd.DataFrame([{k: v for k, v in r.items() if k != "cpu_ms_per_call"} for r in rows])
    cols = [c for c in ("calls", "startup_s", "steady_ms_per_call", "harness_ms_per_call", "run_ms_per_call", "server_cpu_ms_per_call",
                        "process_ms_per_call", "local_cpu_ms_per_call") if c in df]
    table = df.groupby("scenario", sort=False)[cols].median().reset_index()
    table.insert(1, "repeats", df.groupby("scenario", sort=False).size().values // (2 if args.process else 1))
    text = table.round(3).to_markdown(index=False)
    print(text)
    if args.out:
        load = os.getloadavg()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(f"# Harness cost per model call ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
                            f"load {load[0]:.1f} at the end, client {args.client}; medians)\n\n{text}\n")


if __name__ == "__main__":
    main()
