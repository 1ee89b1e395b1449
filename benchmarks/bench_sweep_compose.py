"""How long `masgrid run -m sweep=masbench` (2,700 jobs) takes before its first run.

    PYTHONPATH=. RAY_AUTH_MODE=disabled python benchmarks/bench_sweep_compose.py --repeat 3

Three measurements, medians of --repeat repeats:

1. composition per job, in process: Hydra's full per-job composition (`load_sweep_config`,
   what the launcher did before; timed on a --sample of the jobs) against
   `masgrid._private.platform.sweeps.compose` over all 2,700 jobs, and validation (`RunConfig`) per job;
2. resume planning: `plan_sweep` over the 2,700 configs against a results_dir in which all
   of them are recorded (one runs file each, as the recorder writes them);
3. end to end (--e2e): the real CLI in a subprocess, from launch to the plan line
   (composition, validation, planning), to the line printed when drivers are submitted
   (Ray started), and to the first completed run (sweep.max_concurrent=2 so the benchmark
   does not flood a shared machine), then the sweep is interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from masgrid._private.platform.sweeps.compose import multirun_jobs
from masgrid._private.platform.sweeps.sweep import plan_sweep, split_job_config

SWEEP = ["sweep=masbench"]


def compose_times(sample: int) -> dict[str, float]:
    composer, jobs = multirun_jobs([*SWEEP, "results_dir=unused"])
    t0 = time.perf_counter()
    datas = [composer.compose(job, i)[1] for i, job in enumerate(jobs)]
    fast = (time.perf_counter() - t0) / len(jobs)
    t0 = time.perf_counter()
    for data in datas:
        split_job_config(data)
    validate = (time.perf_counter() - t0) / len(jobs)
    picked = jobs[:: len(jobs) // sample][:sample]
    t0 = time.perf_counter()
    for i, job in enumerate(picked):
        composer.full(job, i)
    full = (time.perf_counter() - t0) / len(picked)
    return {"jobs": len(jobs), "full_ms_per_job": full * 1e3, "fast_ms_per_job": fast * 1e3,
            "validate_ms_per_job": validate * 1e3}


def resume_plan_time(results_dir: str) -> dict[str, float]:
    from masgrid._private.platform.results.recorder import Recorder

    composer, jobs = multirun_jobs([*SWEEP, f"results_dir={results_dir}"])
    cfgs = [split_job_config(composer.compose(job, i)[1])[0] for i, job in enumerate(jobs)]
    recorder = Recorder(results_dir)
    if not any(Path(results_dir, "runs").rglob("*.parquet")):
        for cfg in cfgs:
            recorder.finish_run({**cfg.columns(), "status": "ok", "error": None}, [], cfg.partition)
    t0 = time.perf_counter()
    plan = plan_sweep(cfgs)
    assert plan.skipped_ok == len(cfgs) and not plan.todo
    return {"plan_resume_s": time.perf_counter() - t0}


def e2e(results_dir: str) -> dict[str, float]:
    cmd = [sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "-m", *SWEEP, f"results_dir={results_dir}",
           "sweep.progress=plain", "sweep.log_every_s=0", "sweep.max_concurrent=2"]
    marks: dict[str, float] = {}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.perf_counter() - t0
        if line.startswith("sweep: "):
            marks["planned_s"] = now
        elif line.startswith("masgrid: ") and "run(s)" in line:
            marks["submitted_s"] = now
        elif line.startswith("[sweep] 1/"):
            marks["first_run_done_s"] = now
            break
    os.killpg(proc.pid, signal.SIGINT)  # interrupt the sweep as Ctrl-C would
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return marks


def median_of(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sample", type=int, default=30, help="jobs composed the full (old) way per repeat")
    ap.add_argument("--no-resume", action="store_true", help="skip the resume-planning measurement")
    ap.add_argument("--e2e", action="store_true", help="also time the real CLI to its first run")
    ap.add_argument("--json", type=Path, default=None)
    ns = ap.parse_args()
    out: dict[str, object] = {"compose": median_of([compose_times(ns.sample) for _ in range(ns.repeat)])}
    print(json.dumps(out), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_compose_") as tmp:
        if not ns.no_resume:
            out["resume"] = median_of([resume_plan_time(tmp) for _ in range(ns.repeat)])
            print(json.dumps(out["resume"]), flush=True)
        if ns.e2e:
            runs = []
            for r in range(ns.repeat):
                runs.append(e2e(str(Path(tmp) / f"e2e{r}")))
                print(json.dumps(runs[-1]), flush=True)
            out["e2e"] = median_of(runs)
    compose = out["compose"]
    assert isinstance(compose, dict)
    print(f"\ncomposition per job: full {compose['full_ms_per_job']:.1f} ms -> fast {compose['fast_ms_per_job']:.2f} ms "
          f"(+ validation {compose['validate_ms_per_job']:.2f} ms) over {compose['jobs']:.0f} jobs")
    print(json.dumps(out, indent=2))
    if ns.json:
        ns.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
