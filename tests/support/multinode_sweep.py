"""A sweep on a real three-node Ray cluster on loopback, with one worker node killed mid-sweep.

    python -m tests.support.multinode_sweep OUT.json RESULTS_DIR

Run as its own process by tests/platform/cluster/test_multinode.py: it starts its own cluster
(`ray.cluster_utils.Cluster`: a head and two worker nodes, each a real raylet with its own
worker processes), which must not meet the test session's Ray. Drivers ask for the custom
resource `worker`, which only the worker nodes have, so they run there; the recorder is
pinned to the head, where this process (the submitter) is connected. Writes what it saw as
JSON for the test to judge.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd

N_RUNS = 10
#: model.max_connections of the sweep: one limit shared by the runs on both worker nodes
MAX_CONNECTIONS = 2


def actor_nodes(prefix: str) -> dict[str, list[tuple[str, str]]]:
    """name -> [(node id, state)] of every actor of this cluster whose name starts with prefix
    (the GCS keeps dead actors, so finished runs are listed too; a re-run adds an entry)."""
    import ray

    out: dict[str, list[tuple[str, str]]] = {}
    for info in ray._private.state.actors().values():
        name = info.get("Name") or ""
        if name.startswith(prefix):
            out.setdefault(name, []).append((info["Address"]["NodeID"], info["State"]))
    return out


def recorded(results: Path) -> pd.DataFrame:
    if not any((results / "runs").rglob("part-*.parquet")):
        return pd.DataFrame(columns=["run_id", "status", "started_at"])
    return pd.read_parquet(results / "runs", columns=["run_id", "status", "started_at", "error"])


def main(out: Path, results: Path) -> None:
    # Cluster() records its address in <ray temp dir>/ray_current_cluster, where any plain
    # ray.init() on this machine would find and join it: a private temp dir keeps other
    # processes (other test sessions, benchmarks) out of this cluster and this one out of theirs.
    private = tempfile.mkdtemp(prefix="mgcl", dir="/tmp")  # short: Ray's socket paths have a length limit
    os.environ["RAY_TMPDIR"] = private
    try:
        _sweep(out, results)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _sweep(out: Path, results: Path) -> None:
    import ray
    from ray.cluster_utils import Cluster

    from masgrid._private.platform.run.config import RunConfig
    from masgrid._private.platform.cluster.ray_session import ensure_ray
    from masgrid._private.platform.sweeps.sweep import SweepSettings, run_sweep
    from tests.support.chat_server import Reply, agent_and_turn
    from tests.support.rate_limited_provider import RateLimitedProvider

    def script(request: dict) -> Reply:  # a slow model (0.4 s an answer): each run takes a few seconds
        _, turn = agent_and_turn(request)
        text = "```\nbroadcast_message hello\n```\n```\nreceive_messages\n```" if turn < 3 else "```\nsubmit_result [1]\n```"
        return Reply(text)

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    workers = [cluster.add_node(num_cpus=1, resources={"worker": 2}) for _ in range(2)]
    cluster.wait_for_nodes()
    facts: dict[str, Any] = {"head": cluster.head_node.node_id, "workers": [w.node_id for w in workers]}
    try:
        ensure_ray(cluster.address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        facts["submitter_node"] = ray.get_runtime_context().get_node_id()
        # no rate limit; at most MAX_CONNECTIONS requests in flight, from every node together
        with RateLimitedProvider(rate=10**6, latency_s=0.4, answer=script) as server:
            cfgs = [RunConfig.from_mapping({
                "task": "sorting", "agents": 2, "k": 1, "max_rounds": 5, "seed": seed, "backend": "openai",
                "preflight": False, "results_dir": str(results),
                "model": {"name": "slow", "base_url": server.base_url, "max_retries": 0, "timeout_s": 5,
                          "max_connections": MAX_CONNECTIONS},
                "execution": {"driver_resources": {"worker": 1}}}) for seed in range(N_RUNS)]
            facts["run_ids"] = [c.run_id for c in cfgs]
            settings = SweepSettings(max_concurrent=4, progress="off", reuse_actors=False)
            first: dict[str, Any] = {}
            sweep = threading.Thread(target=lambda: first.update(result=run_sweep(cfgs, settings)))
            sweep.start()
            victim = workers[1]
            deadline = time.time() + 240
            while time.time() < deadline:  # kill node 2 once each worker node finished a run and node 2 runs one
                # the recorder is read before the actor table: a driver stays ALIVE for a moment
                # after its run is recorded ok, and a run may finish between the two reads, so a
                # run counts as busy only if it is alive on the victim and not yet recorded ok
                done = recorded(results)
                nodes = actor_nodes("run:")
                ok_runs = set(done[done["status"] == "ok"]["run_id"])
                ok_nodes = {node for r in ok_runs for node, _ in nodes.get(f"run:{r}", [])}
                busy = [r for r in (n[4:].split("#")[0] for n, places in nodes.items()
                                    if (victim.node_id, "ALIVE") in places) if r not in ok_runs]
                if {w.node_id for w in workers} <= ok_nodes and busy:
                    facts["completed_before_kill"] = {r: str(t) for r, t, s in
                                                      zip(done["run_id"], done["started_at"], done["status"])
                                                      if s == "ok"}
                    facts["running_on_victim"] = busy
                    cluster.remove_node(victim)
                    break
                time.sleep(0.2)
            sweep.join(timeout=300)
            facts["first_pass"] = {"ran": first["result"].ran, "ok": first["result"].ok,
                                   "failed": first["result"].failed}
            after_first = recorded(results)
            facts["status_after_first"] = dict(zip(after_first["run_id"], after_first["status"]))
            facts["errors_after_first"] = {r: e for r, e in zip(after_first["run_id"], after_first["error"]) if isinstance(e, str)}
            # the resume: failed runs (their driver's node died) run again on the surviving nodes
            second = run_sweep(cfgs, settings)  # a plain resume: interrupted runs are re-run
            facts["second_pass"] = {"ran": second.ran, "ok": second.ok, "failed": second.failed}
            facts["most_requests_in_flight"] = server.log.max_in_flight
        final = recorded(results)
        facts["final"] = {r: {"status": s, "started_at": str(t)}
                          for r, s, t in zip(final["run_id"], final["status"], final["started_at"])}
        drivers: dict[str, set[str]] = {}  # a retried run's driver is named run:<id>#<attempt>
        for name, places in actor_nodes("run:").items():
            drivers.setdefault(name[4:].split("#")[0], set()).update(node for node, _ in places)
        facts["driver_nodes"] = {run_id: sorted(nodes) for run_id, nodes in drivers.items()}
        facts["limit_places"] = actor_nodes("masgrid-endpoint-limits")
        facts["limit_nodes"] = sorted({node for places in actor_nodes("masgrid-endpoint-limits").values()
                                       for node, _ in places})
        facts["host_nodes"] = sorted({info["Address"]["NodeID"] for info in ray._private.state.actors().values()
                                      if info.get("ActorClassName", "").endswith("AgentHost")})
        facts["recorder_nodes"] = sorted({node for places in actor_nodes("recorder:").values() for node, _ in places})
    finally:
        ray.shutdown()
        cluster.shutdown()
    out.write_text(json.dumps(facts, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
