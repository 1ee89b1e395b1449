"""AgentsNet with scripted agents on 100- and 1000-node graphs: round overhead and memory.

For each graph size and task, three ways to run the same classical baseline:
- `sim`: the in-process simulator (protocol + policies only, no driver, no recording);
- `local`: the full driver in one process (execution.executor=local), with Parquet records;
- `ray`: the full driver with Ray actors (environment actor, 25 agents per AgentHost actor).
Reported per run: calls per agent (T + 1), wall time (including actor start-up for `ray`),
steady-state time per round (median gap between the last events of consecutive rounds;
the model answers instantly, so this is pure harness cost: Ray calls, protocol, delivery,
event records), events recorded, and peak RSS above the start (`local`/`sim`: this
process; `ray`: this process and the Ray processes it started). With `ray`, agents are packed max(25, n/4) per
AgentHost actor so a 1000-agent run starts 4 host actors, not 40.

    python benchmarks/bench_agentsnet.py --sizes 100 1000 --out benchmarks/results/agentsnet.md \
        --figure docs/figures/agentsnet_bench.png
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import psutil

from masgrid._private.envs.tasks import get_task
from masgrid.families.agentsnet.simulate import run_scripted
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.cluster.ray_session import ensure_ray


from masgrid._private.platform.sweeps.ray_runs import run_local, run_one
def rss_mb(with_children: bool) -> float:
    """RSS of this process, plus (Ray) every descendant: the GCS, raylet and the worker
    processes of the cluster this script started. Other users' Ray clusters on a shared
    machine are not descendants, so they are not counted."""
    me = psutil.Process()
    procs = [me, *me.children(recursive=True)] if with_children else [me]
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total / 2**20


class Peak:
    """Samples RSS every 50 ms while the block runs."""

    def __init__(self, with_children: bool) -> None:
        self.with_children = with_children
        self.base = rss_mb(with_children)
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(self.with_children))
            time.sleep(0.05)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def bench_one(mode: str, problem: str, n: int, graph: str, seed: int, results: Path) -> dict:
    task = get_task(f"agentsnet/{problem}")
    row: dict = {"mode": mode, "task": problem, "agents": n, "graph": graph}
    if mode == "sim":
        inst = task.generate(n, 1, seed, graph=graph)
        with Peak(False) as peak:
            t0 = time.perf_counter()
            out = run_scripted(task, inst, seed)
            wall = time.perf_counter() - t0
        row.update(calls=out.calls, success=out.score.success, events=0, round_ms=1000 * wall / out.calls)
    else:
        cfg = RunConfig.from_mapping({"task": f"agentsnet/{problem}", "protocol": "local", "agents": n, "graph": graph,
                                      "seed": seed, "results_dir": str(results / mode),
                                      "execution": {"executor": "local" if mode == "local" else "ray",
                                                    "agents_per_actor": max(25, n // 4)}})
        with Peak(mode == "ray") as peak:
            t0 = time.perf_counter()
            summary = run_local(cfg) if mode == "local" else run_one(cfg)
            wall = time.perf_counter() - t0
        if summary.status != "ok":
            raise RuntimeError(summary.error)
        runs = pd.read_parquet(results / mode / "runs")
        run = runs[runs["run_id"] == cfg.run_id].iloc[0]
        events = pd.read_parquet(results / mode / "events", columns=["run_id", "round", "time"])
        events = events[events["run_id"] == cfg.run_id]
        ends = events.groupby("round")["time"].max().sort_index()
        gaps = ends.diff().dropna().dt.total_seconds()
        row.update(calls=int(run["rounds"]), success=bool(run["success"]), events=len(events),
                   round_ms=1000 * float(gaps.median()))
    row.update(wall_s=wall, peak_mb=peak.peak - peak.base)
    return row


def figure(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for mode, part in df.groupby("mode"):
        agg = part.groupby("agents")[["round_ms", "peak_mb"]].median()
        axes[0].plot(agg.index, agg["round_ms"], marker="o", label=mode)
        axes[1].plot(agg.index, agg["peak_mb"], marker="o", label=mode)
    for ax, label in zip(axes, ("time per round (ms)", "peak memory above start (MiB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("agents")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    fig.suptitle("AgentsNet, scripted agents (median over tasks and graph models)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--tasks", nargs="+", default=["consensus", "coloring"])
    parser.add_argument("--graphs", nargs="+", default=["ws", "dt"])
    parser.add_argument("--modes", nargs="+", default=["sim", "local", "ray"])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/agentsnet.md"))
    parser.add_argument("--figure", type=Path, default=Path("docs/figures/agentsnet_bench.png"))
    args = parser.parse_args()
    if "ray" in args.modes:
        ensure_ray(None, num_cpus=2, include_dashboard=False, log_to_driver=False)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            for problem in args.tasks:
                for graph in args.graphs:
                    for mode in args.modes:
                        row = bench_one(mode, problem, n, graph, 0, Path(tmp))
                        print(json.dumps(row), flush=True)
                        rows.append(row)
    df = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table = df.round({"wall_s": 2, "round_ms": 1, "peak_mb": 0})
    args.out.write_text("# AgentsNet scripted benchmark\n\n" + table.to_markdown(index=False) + "\n")
    figure(df, args.figure)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
