"""Kill-and-resume soak: a scripted sweep whose process is SIGKILLed at random moments, then
resumed with the same command until it completes; counts runs lost and duplicated.

Each attempt is `python -m masgrid._private.platform.commands.cli run -m ...` joining one local Ray instance
started here (as `ray job submit` joins a cluster). An attempt is killed once the dataset has
gained a random number of completed runs, plus a random fraction of a second, so kills land
while runs are in flight. After `--kills` kills the same command runs to the end. Then:

- lost: grid points without exactly one ok `runs` row (target 0);
- duplicated: `runs` rows beyond one per run id, `agents` rows beyond one per (run, agent),
  `events` rows beyond one per (run, seq) (target 0);
- foreign: `events`/`agents` rows of run ids that have no `runs` row (target 0).

    PYTHONPATH=. RAY_AUTH_MODE=disabled python benchmarks/bench_soak.py --runs 300 --kills 5
"""

from __future__ import annotations

import argparse
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = ("broadcast", "p2p", "kv")
AGENTS = (1, 2)


def command(results_dir: Path, seeds: int, concurrency: int) -> list[str]:
    return [sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "-m", f"protocol={','.join(PROTOCOLS)}",
            f"agents={','.join(map(str, AGENTS))}", "k=1", f"seed=range(0,{seeds})", f"results_dir={results_dir}",
            f"sweep.max_concurrent={concurrency}", "sweep.progress=plain", "sweep.log_every_s=5"]


def completed(results_dir: Path) -> int:
    runs = results_dir / "runs"
    return sum(1 for _ in runs.rglob("part-*.parquet")) if runs.is_dir() else 0


def audit(results_dir: Path, grid: int) -> dict[str, int]:
    runs = pd.read_parquet(results_dir / "runs")
    ok = runs[runs["status"] == "ok"]
    agents = pd.read_parquet(results_dir / "agents")
    events = pd.read_parquet(results_dir / "events")
    known = set(runs["run_id"])
    return {
        "grid": grid,
        "runs_rows": len(runs),
        "lost": grid - ok["run_id"].nunique(),
        "duplicated": int(runs["run_id"].duplicated().sum() + agents.duplicated(["run_id", "agent"]).sum()
                          + events.duplicated(["run_id", "seq"]).sum()),
        "foreign": int((~agents["run_id"].isin(known)).sum() + (~events["run_id"].isin(known)).sum()),
        "not_ok": int((runs["status"] != "ok").sum()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="grid size (rounded up to a multiple of 6)")
    parser.add_argument("--kills", type=int, default=5, help="SIGKILLs of the sweep process")
    parser.add_argument("--concurrency", type=int, default=4, help="sweep.max_concurrent")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill schedule")
    parser.add_argument("--results-dir", type=Path, default=None, help="default: a fresh temporary directory")
    args = parser.parse_args()

    import ray

    rng = random.Random(args.seed)
    seeds = math.ceil(args.runs / (len(PROTOCOLS) * len(AGENTS)))
    grid = seeds * len(PROTOCOLS) * len(AGENTS)
    results = args.results_dir or Path(tempfile.mkdtemp(prefix="masgrid-soak-")) / "results"
    ray.init(num_cpus=os.cpu_count() or 2, include_dashboard=False, namespace="masgrid", log_to_driver=False)
    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "disabled")}
    cmd = command(results, seeds, args.concurrency)
    t0 = time.perf_counter()
    kills = 0
    attempts = 0
    log = results.parent / "soak.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        while True:
            attempts += 1
            before = completed(results)
            last = kills >= args.kills
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            if last:
                rc = proc.wait()
                if rc != 0:
                    print(f"final resume exited {rc}; see {log}", file=sys.stderr)
                break
            left = grid - before
            target = before + rng.randint(1, max(1, left // (args.kills - kills + 1)))
            while completed(results) < target and proc.poll() is None:
                time.sleep(0.05)
            time.sleep(rng.uniform(0, 0.5))  # into the next runs' execution
            if proc.poll() is not None:  # it finished before the kill: nothing left to interrupt
                break
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
            print(f"kill {kills}: {completed(results)}/{grid} runs recorded, {time.perf_counter() - t0:.0f} s",
                  flush=True)
    wall = time.perf_counter() - t0
    figures = audit(results, grid)
    print(f"soak: {figures['grid']} runs, {kills} kills, {attempts} sweep processes, lost {figures['lost']}, "
          f"duplicated {figures['duplicated']}, foreign {figures['foreign']}, not ok {figures['not_ok']}, "
          f"wall {wall:.0f} s (max_concurrent {args.concurrency}, results in {results})")
    ray.shutdown()
    return 0 if figures["lost"] == figures["duplicated"] == figures["foreign"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
