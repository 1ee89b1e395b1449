"""Issue 12, item 9: a sweep on a real multi-node Ray cluster (head + 2 worker nodes on loopback).

The cluster is started by a separate process (tests/support/multinode_sweep.py), so it
never meets this session's Ray. That process runs a sweep whose drivers ask for a
resource only worker nodes have, kills one worker node while it runs drivers, and
resumes with `sweep.retry_failed=true` (until platform-interrupted runs re-run on a plain
resume). Judged here: the sweep spread over both worker nodes, no completed run was lost
or run again, the runs the dead node held were re-run, and one recorder on the submitting
(head) node wrote everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_sweep_survives_losing_a_worker_node(tmp_path):
    out, results = tmp_path / "facts.json", tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run([sys.executable, "-m", "tests.support.multinode_sweep", str(out), str(results)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    check(json.loads(out.read_text()))


def check(facts: dict) -> None:
    """Judge what the cluster process saw (tests/support/multinode_sweep.py writes it)."""
    workers, run_ids = set(facts["workers"]), set(facts["run_ids"])

    # drivers ran on the worker nodes only, and on both
    assert set(facts["driver_nodes"]) == run_ids
    assert {node for nodes in facts["driver_nodes"].values() for node in nodes} == workers
    # one recorder, on the node the sweep was submitted from (the head)
    assert facts["submitter_node"] == facts["head"]
    assert facts["recorder_nodes"] == [facts["head"]]

    # the node was killed while it ran drivers; those runs (and any driver placed there in the
    # moment before the kill) were recorded failed, and no other run was
    victim_node = facts["workers"][1]
    survivor = (workers - {victim_node}).pop()
    completed = facts["completed_before_kill"]
    first = facts["status_after_first"]
    victims = {r for r, status in first.items() if status == "failed"}
    assert completed and set(facts["running_on_victim"]) <= victims and not victims & set(completed)
    for run_id in victims:
        assert "driver died" in facts["errors_after_first"][run_id] and victim_node in facts["driver_nodes"][run_id]
    assert facts["first_pass"]["failed"] == len(victims) and set(first) == run_ids

    # the resume re-ran exactly the failed runs, and every run of the grid is complete once
    assert facts["second_pass"] == {"ran": len(victims), "ok": len(victims), "failed": 0}
    final = facts["final"]
    assert set(final) == run_ids and all(v["status"] == "ok" for v in final.values())
    for run_id, started in completed.items():  # completed runs were kept, not run again
        assert final[run_id]["started_at"] == started
    for run_id in victims:  # killed on the lost node, re-run on the one left
        assert facts["driver_nodes"][run_id] == sorted([victim_node, survivor])
    for run_id in run_ids - victims:  # every other run had exactly one driver
        assert len(facts["driver_nodes"][run_id]) == 1
