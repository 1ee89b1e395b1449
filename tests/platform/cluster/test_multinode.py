"""Issue 12, item 9: a sweep on a real multi-node Ray cluster (head + 2 worker nodes on loopback).

The cluster is started by a separate process (tests/support/multinode_sweep.py), so it
never meets this session's Ray. That process runs a sweep whose drivers ask for a
resource only worker nodes have, kills one worker node while it runs drivers, then runs
the same sweep again (a plain resume). Judged here: the sweep spread over both worker nodes,
no completed run was lost or run again, the runs the dead node held were re-run on the
surviving node within the same sweep (an interrupted run is retried; docs/sweeps.md), the
resume found nothing left to do, and one recorder on the submitting (head) node wrote
everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


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
    # one endpoint limit for the whole cluster, on the head, and the agent hosts calling
    # through it ran on other nodes too: the server never had more requests than it allows
    assert facts["limit_nodes"] == [facts["head"]]
    assert set(facts["host_nodes"]) - {facts["head"]}, facts["host_nodes"]
    assert facts["most_requests_in_flight"] <= 2
    # one recorder, on the node the sweep was submitted from (the head)
    assert facts["submitter_node"] == facts["head"]
    assert facts["recorder_nodes"] == [facts["head"]]

    # the node was killed while it ran drivers; those runs were interrupted and run again, in
    # the same sweep, on the node left; no run failed and no completed run ran twice
    victim_node = facts["workers"][1]
    survivor = (workers - {victim_node}).pop()
    completed = facts["completed_before_kill"]
    victims = set(facts["running_on_victim"])
    assert completed and victims and not victims & set(completed)
    assert facts["first_pass"]["failed"] == 0 and facts["first_pass"]["ok"] == facts["first_pass"]["ran"]
    assert set(facts["status_after_first"]) == run_ids and set(facts["status_after_first"].values()) == {"ok"}
    assert facts["second_pass"] == {"ran": 0, "ok": 0, "failed": 0}  # the resume had nothing left to do
    final = facts["final"]
    assert set(final) == run_ids and all(v["status"] == "ok" for v in final.values())
    for run_id, started in completed.items():  # completed runs were kept, not run again
        assert final[run_id]["started_at"] == started
    # killed on the lost node (those seen there, plus any placed there just before the kill),
    # re-run on the one left; every other run had exactly one driver
    retried = {r for r, nodes in facts["driver_nodes"].items() if len(nodes) > 1}
    assert retried and not retried & set(completed)
    for run_id in victims - retried:  # seen running there, but it finished as the node went
        assert facts["driver_nodes"][run_id] == [victim_node]
    for run_id in retried:
        assert facts["driver_nodes"][run_id] == sorted([victim_node, survivor])
    for run_id in run_ids - retried:
        assert len(facts["driver_nodes"][run_id]) == 1
