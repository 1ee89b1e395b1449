"""Acceptance (issue 11): a prompt edit followed by a resume re-runs every affected grid point
and nothing else, and the report then uses only the new prompts.

The sweep is a real `masgrid run -m` subprocess joining the session's Ray (RAY_ADDRESS) with
its own copy of conf/ (MASGRID_CONF), which masgrid hands to the job's driver processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.support.conf_copy import copy_all_conf
from masgrid._private.analysis.usable_runs import usable

ROOT = Path(__file__).resolve().parents[2]


def sweep(results: Path, conf: Path, address: str) -> str:
    env = dict(os.environ, RAY_ADDRESS=address, MASGRID_CONF=str(conf), RAY_AUTH_MODE="disabled")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "-m", "task=sorting,max",
                           "agents=1,2", "k=1", f"results_dir={results}", "sweep.progress=plain",
                           "sweep.max_concurrent=2", "execution.actor_start_timeout_s=300"],
                          env=env, cwd=results.parent, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_prompt_edit_then_resume_reruns_exactly_the_affected_points(tmp_path, ray_session):
    address = ray_session.get_runtime_context().gcs_address
    conf = tmp_path / "conf"
    copy_all_conf(conf)
    results = tmp_path / "results"
    first = sweep(results, conf, address)
    assert "4 runs in the grid; 0 already complete" in first
    before = pd.read_parquet(results / "runs")
    assert len(before) == 4 and set(before["status"]) == {"ok"}

    path = conf / "prompts/masbench/task_max.yaml"
    path.write_text(path.read_text().replace("Goal:", "Goal (revised):"))  # both objectives (N = 1 too)
    second = sweep(results, conf, address)
    assert "4 runs in the grid; 2 already complete" in second and "2 to run" in second

    after = pd.read_parquet(results / "runs")
    assert len(after) == 6  # the two max runs of the old prompts stay on disk as history
    old = set(before["run_id"])
    new = after[~after["run_id"].isin(old)]
    assert sorted(new["task"]) == ["max", "max"] and set(new["prompt_hash"]).isdisjoint(before["prompt_hash"])
    kept = before[before["task"] == "sorting"].set_index("run_id")["finished_at"]
    assert (after.set_index("run_id").loc[kept.index, "finished_at"] == kept).all()  # sorting untouched
    used = usable(after)
    assert len(used) == 4 and set(used[used["task"] == "max"]["run_id"]) == set(new["run_id"])
    agents = pd.read_parquet(results / "agents")
    fresh = agents[agents["run_id"].isin(new["run_id"])]["system_prompt"]
    assert len(fresh) == 3 and all("Goal (revised)" in text for text in fresh)  # N=1 and N=2: three agents
