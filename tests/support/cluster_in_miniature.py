"""The cluster in miniature (issue 33, item 6): model phases on real multi-node Ray clusters on loopback.

    python -m tests.support.cluster_in_miniature gh200 OUT.json WORKDIR
    python -m tests.support.cluster_in_miniature tiny OUT.json WORKDIR

Run as its own process by tests/platform/sweeps/model_phases/test_cluster_in_miniature.py: it
starts its own cluster (`ray.cluster_utils.Cluster`: every node a real raylet with its own
ports, in a private Ray temp dir), which must not meet the test session's Ray, and writes
what it saw as JSON for the test to judge.

gh200: four nodes, each declaring 4 logical GPUs and `accelerator_type:GH200` (Ray accepts
`num_gpus` on a node without GPUs). The MAS-Bench grid over the three GH200 presets is
planned against the live cluster (runner.current_plan); each phase's replica and ingress
placement groups are then created with exactly the plan's bundles and strategy and placed by
Ray itself; `masgrid run -m ... --plan` runs against the same cluster; a team needing two of
the models at once is planned. No engine is started.

tiny: two nodes of 2 logical CPUs; two presets derived from tiny_cpu, each reserving more
than half of what the cluster can give both (a 1.5-CPU replica and a 1-CPU ingress), swept as
a researcher would (`masgrid run -m --config-dir DIR backend=serve model=tiny_a,tiny_b ...`)
through the real vLLM CPU engine, killed with SIGKILL inside tiny_a's phase and resumed with
the same command, while this process watches Serve's replica placement groups and the token
counters each engine exports through Ray's metrics agents (the acceptance sweep of model
phases: one cluster and two engine loads serve both checks).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.kill import kill_when
from tests.support.ray_resources import wait_resources_free

GH200_MODELS = ("deepseek_v31", "qwen3_next_80b", "gpt_oss_120b")
#: the MAS-Bench grid cut to two runs per model (sweep=masbench varies far more)
GH200_CUT = ("agents=3", "k=1", "mode=asc", "condition=base", "seed=0")
GH200_PROTOCOLS = ("kv", "p2p")
#: per node: 4 logical GPUs, the accelerator marker the presets ask for, CPUs for 1 per GPU
#: worker + the replica actor + an ingress
GH200_NODE = {"num_cpus": 32, "num_gpus": 4, "resources": {"accelerator_type:GH200": 1}}
PG_READY_S = 60.0
#: how long the next phase's groups are given while this phase holds the cluster
BLOCKED_PROBE_S = 3.0

TINY_NODE_CPUS = 2
#: five runs a model, one at a time: tiny_a's phase must still have runs to do when the first
#: command is killed (with three, a quiet machine finished them all between the first record and the kill)
TINY_SWEEP = ("backend=serve", "model=tiny_a,tiny_b", "task=sorting", "protocol=kv", "agents=2", "k=2",
              "max_rounds=4", "seed=0,1,2,3,4", "sweep.max_concurrent=1")
#: tiny_a's replies are longer, so its runs last long enough (about a second each) for the kill
#: to land inside its phase
TINY_MAX_TOKENS = {"a": 64, "b": 16}


def _env() -> None:
    # Cluster() records its address in <ray temp dir>/ray_current_cluster, where any plain
    # ray.init() on this machine would find and join it: a private temp dir keeps other
    # processes out of this cluster and this one out of theirs.
    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix="mgmini", dir="/tmp")  # short: socket path limit
    # a raylet starts num_cpus idle workers for the first driver by default: 32 per GH200 node
    os.environ["RAY_prestart_worker_first_driver"] = "0"
    os.environ.pop("RAY_ADDRESS", None)


def _start(nodes: list[dict[str, Any]]) -> Any:
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"include_dashboard": False, **nodes[0]})
    for args in nodes[1:]:
        cluster.add_node(**args)
    cluster.wait_for_nodes()
    return cluster


def _connect(cluster: Any) -> None:
    from masgrid._private.platform.cluster.ray_session import ensure_ray

    ensure_ray(cluster.address, include_dashboard=False, log_to_driver=False, configure_logging=False)


def _cli(args: list[str], address: str, timeout: float, extra_env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAY_ADDRESS": address, **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def _serve_actors() -> list[str]:
    """Names of the Serve actors (controller, proxies, replicas) alive on the cluster."""
    from ray._private import state

    return sorted(str(a.get("Name") or a.get("ActorClassName")) for a in state.actors().values()
                  if a.get("State") in ("ALIVE", 2, "PENDING_CREATION", "DEPENDENCIES_UNREADY", "RESTARTING")
                  and ("SERVE_" in str(a.get("Name") or "") or "Serve" in str(a.get("ActorClassName") or "")))


def _live_groups() -> dict[str, dict[str, Any]]:
    import ray

    return {pg_id: info for pg_id, info in ray.util.placement_group_table().items() if info.get("state") != "REMOVED"}


# -- gh200 --------------------------------------------------------------------------------------
def gh200(out: Path, work: Path) -> None:
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    import masgrid._api as api
    from masgrid._private.platform.sweeps.model_phases.capacity import cluster_now
    from masgrid._private.platform.sweeps.model_phases.plan import PhasePlanError, plan_phases
    from masgrid._private.platform.sweeps.model_phases.runner import current_plan

    facts: dict[str, Any] = {}
    cluster = _start([GH200_NODE] * 4)
    try:
        _connect(cluster)
        facts["nodes"] = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
        facts["cluster_resources"] = {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU")}

        # `masgrid run -m ... --plan` against this cluster: prints the phases, starts nothing
        results = work / "results-plan"
        plan_cli = _cli(["run", "-m", "sweep=masbench", f"model={','.join(GH200_MODELS)}", "backend=serve",
                         *GH200_CUT, f"protocol={','.join(GH200_PROTOCOLS)}", f"results_dir={results}", "--plan"],
                        cluster.address, timeout=300)
        facts["plan_cli"] = {"rc": plan_cli.returncode, "stdout": plan_cli.stdout, "stderr": plan_cli.stderr[-4000:]}
        facts["after_plan_cli"] = {"serve_actors": _serve_actors(), "placement_groups": len(_live_groups()),
                                   "results_dir_exists": results.exists()}

        cfgs = api.grid(["sweep=masbench", "backend=serve", "task=sorting", *GH200_CUT],
                        model=list(GH200_MODELS), protocol=list(GH200_PROTOCOLS))
        facts["runs"] = {c.run_id: c.model.name for c in cfgs}
        plan = current_plan(cfgs)
        facts["plan_text"] = plan.text()
        facts["plan_loads"] = plan.loads
        facts["demands"] = {app: {"name": d.name, "bundles": d.replica_bundles, "strategy": d.strategy,
                                  "ingress": d.ingress_resources} for app, d in plan.demands.items()}
        phases = []
        for phase in plan.phases:
            assert phase.placement is not None, f"phase {phase.index} has no placement"
            phases.append({"index": phase.index, "models": [plan.demands[a].name for a in phase.models],
                           "apps": list(phase.models), "loads": [plan.demands[a].name for a in phase.loads],
                           "keeps": phase.keeps, "releases": [plan.demands[a].name for a in phase.releases],
                           "replicas": phase.replicas, "runs": sorted(c.run_id for c in phase.runs),
                           "planned": [[app, replica, bundle, node] for (app, replica, bundle), node
                                       in sorted(phase.placement.bundles.items())],
                           "planned_ingress": phase.placement.ingress})
        facts["phases"] = phases

        # each phase's placement groups, exactly as the plan reserves them, placed by Ray
        placed = []
        for i, phase in enumerate(plan.phases):
            groups: list[tuple[str, int, Any]] = []  # (app, replica or -1 for the ingress, group)
            for app in phase.models:
                demand = plan.demands[app]
                for replica in range(phase.replicas[app]):
                    groups.append((app, replica, placement_group(demand.replica_bundles, strategy=demand.strategy,
                                                                 name=f"mini:{app}#{replica}")))
                if demand.ingress_resources:
                    groups.append((app, -1, placement_group([demand.ingress_resources], strategy="PACK",
                                                            name=f"mini:{app}#ingress")))
            seen: dict[str, Any] = {"index": phase.index, "groups": []}
            t0 = time.monotonic()
            for app, replica, pg in groups:
                ready = True
                try:
                    ray.get(pg.ready(), timeout=PG_READY_S)
                except ray.exceptions.GetTimeoutError:
                    ready = False
                table = ray.util.placement_group_table(pg)
                seen["groups"].append({"app": app, "replica": replica, "ready": ready, "state": table.get("state"),
                                       "strategy": table.get("strategy"),
                                       "bundles": {str(k): v for k, v in (table.get("bundles") or {}).items()},
                                       "bundles_to_node_id": {str(k): v for k, v in
                                                              (table.get("bundles_to_node_id") or {}).items()}})
            seen["ready_s"] = time.monotonic() - t0
            # what a plan made now would see: the phase's groups hold their resources (the GCS learns
            # of a placed group from the raylets' resource reports, a moment after it is ready)
            taken = sum(b.get("CPU", 0.0) for _, _, pg in groups for b in pg.bundle_specs)
            t1 = time.monotonic()
            held = cluster_now()
            while held.totals().get("CPU", 0.0) > ray.cluster_resources()["CPU"] - taken + 1e-6 \
                    and time.monotonic() - t1 < 15:
                time.sleep(0.2)
                held = cluster_now()
            seen["cluster_while_held"] = {"describe": held.describe(), "totals": held.totals(),
                                          "wait_s": time.monotonic() - t1}
            # while this phase holds the cluster, the next phase's model cannot be placed
            if i + 1 < len(plan.phases):
                nxt = plan.demands[plan.phases[i + 1].models[0]]
                probe = placement_group(nxt.replica_bundles, strategy=nxt.strategy, name="mini:probe")
                try:
                    ray.get(probe.ready(), timeout=BLOCKED_PROBE_S)
                    seen["next_phase_placeable_now"] = True
                except ray.exceptions.GetTimeoutError:
                    seen["next_phase_placeable_now"] = False
                remove_placement_group(probe)
            for _, _, pg in groups:
                remove_placement_group(pg)
            deadline = time.monotonic() + 30
            while _live_groups() and time.monotonic() < deadline:
                time.sleep(0.2)
            seen["left_after_remove"] = len(_live_groups())
            placed.append(seen)
        facts["placed"] = placed

        # a team needing two of the models at once does not fit: refused with the numbers (once
        # the resource view has caught up with the removed groups: it lags the group table)
        facts["resources_free_s"] = wait_resources_free()
        team = api.grid(["sweep=masbench", "backend=serve", "task=sorting", "protocol=kv", *GH200_CUT,
                         "team.models=[deepseek_v31,qwen3_next_80b,deepseek_v31]"])
        facts["team_needs"] = sorted({s.name for c in team for s in c.agent_endpoints()})
        try:
            plan_phases(team, cluster_now())
            facts["team_error"] = None
        except PhasePlanError as exc:
            facts["team_error"] = str(exc)
        facts["serve_actors_at_end"] = _serve_actors()
    finally:
        ray.shutdown()
        cluster.shutdown()
    out.write_text(json.dumps(facts, indent=2, default=str))


# -- tiny ---------------------------------------------------------------------------------------
def tiny_presets(conf: Path, http_port: int) -> None:
    """tiny_a and tiny_b: tiny_cpu with their own app, route and served name, each replica
    asking 1.5 CPUs (1 for Serve LLM's replica actor, 0.5 for the engine worker) and its
    ingress Serve LLM's default 1 CPU: one model fits on two 2-CPU nodes (replica on one,
    ingress on the other), two do not (the second replica finds 0.5 and 1 CPU free)."""
    folder = conf / "model"
    folder.mkdir(parents=True, exist_ok=True)
    for x in ("a", "b"):
        (folder / f"tiny_{x}.yaml").write_text(
            "defaults: [tiny_cpu]\n"
            f"name: tiny-{x}\nserved_name: tiny-{x}\n"
            f"max_tokens: {TINY_MAX_TOKENS[x]}\n"
            f"serving:\n  app: tiny-{x}\n  route_prefix: /tiny-{x}\n  http_port: {http_port}\n"
            "  cpus_per_worker: 0.5\n  ingress_cpus: 1.0\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Watch(threading.Thread):
    """Polls the cluster's Serve replica placement groups (state CREATED) every second: which
    apps held one at once, and on which nodes their bundles were."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.together: list[list[str]] = []  # distinct sets of apps seen holding replicas at once
        self.nodes: dict[str, list[str]] = {}  # app -> nodes its replica bundles were on
        self.bundles: dict[str, list[dict[str, float]]] = {}  # app -> its replica group's bundles, as Serve asked
        self.ingress: dict[str, dict[str, Any]] = {}  # app -> its ingress actor's resources and node
        self.polls = 0
        self.errors: list[str] = []
        self.counters: list[dict[str, dict[str, float]]] = []  # every poll's engine token counters, by model

    def sample_counters(self) -> None:
        """The vLLM token counters every node's metrics agent exports (Serve LLM's
        `log_engine_metrics`), summed by served model."""
        import ray

        from tests.support.serve_replicas import model_counters

        total: dict[str, dict[str, float]] = {}
        for node in ray.nodes():
            if node["Alive"]:
                for model, values in model_counters(int(node["MetricsExportPort"]), node["NodeManagerAddress"]).items():
                    entry = total.setdefault(model, {})
                    for name, value in values.items():
                        entry[name] = entry.get(name, 0.0) + value
        self.counters.append(total)

    def run(self) -> None:
        while not self.stop.wait(1.0):
            try:
                self.poll()
            except Exception as exc:  # recorded for the test to see
                self.errors.append(repr(exc))

    def poll(self) -> None:
        import ray

        apps = set()
        for info in ray.util.placement_group_table().values():
            name = str(info.get("name") or "")
            if info.get("state") != "CREATED" or not name.startswith("SERVE_REPLICA::"):
                continue
            app = name.split("::", 1)[1].split("#", 1)[0]
            apps.add(app)
            self.bundles.setdefault(app, [dict(b) for _, b in sorted((info.get("bundles") or {}).items())])
            nodes = self.nodes.setdefault(app, [])
            for node in (info.get("bundles_to_node_id") or {}).values():
                if node not in nodes:
                    nodes.append(node)
        if apps - set(self.ingress):
            for name, node, resources in _actors_reserving():
                if name.startswith("SERVE_REPLICA::") and "Ingress" in name:
                    app = name.split("::", 1)[1].split("#", 1)[0]
                    self.ingress.setdefault(app, {"resources": resources, "node": node})
        key = sorted(apps)
        if key not in self.together:
            self.together.append(key)
        self.sample_counters()
        self.polls += 1


def _actors_reserving() -> list[tuple[str, str, dict[str, float]]]:
    """(name, node id, reserved resources) of the alive actors, from the GCS table as stored
    (`ray._private.state.actors()` does not report what an actor reserved)."""
    from ray._private import state
    from ray.core.generated import gcs_pb2

    out = []
    for raw in state.state._connect_and_get_accessor().get_actor_table(None, "ALIVE"):
        data = gcs_pb2.ActorTableData.FromString(raw)
        out.append((data.name, data.address.node_id.hex(), dict(data.required_resources)))
    return out


def _chat(port: int, model: str) -> dict[str, Any]:
    """One 1-token request through Serve's HTTP route; its usage."""
    import urllib.request

    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/{model}/v1/chat/completions", body,
                                     {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return dict(json.loads(response.read())["usage"])


def _runs(results: Path) -> list[dict[str, Any]]:
    import pandas as pd

    if not any((results / "runs").rglob("part-*.parquet")):
        return []
    runs = pd.read_parquet(results / "runs", columns=["run_id", "model", "status"])
    return list(runs.to_dict(orient="records"))


def tiny(out: Path, work: Path) -> None:
    import ray

    from masgrid._private.analysis.model_phases import read_phases

    conf, results, model_dir = work / "conf", work / "results", work / "tiny-model"
    port = _free_port()
    tiny_presets(conf, port)
    facts: dict[str, Any] = {"http_port": port}
    # engine counters reach the metrics agents every 0.5 s instead of 10 s
    head = {"num_cpus": TINY_NODE_CPUS, "_system_config": {"metrics_report_interval_ms": 500}}
    cluster = _start([head, {"num_cpus": TINY_NODE_CPUS}])
    watch = _Watch()
    try:
        _connect(cluster)
        facts["nodes"] = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
        facts["head"] = cluster.head_node.node_id
        args = ["run", "-m", "--config-dir", str(conf), *TINY_SWEEP, f"results_dir={results}", "sweep.progress=plain"]
        extra = {"MASGRID_TINY_MODEL": str(model_dir)}
        plan = _cli([*args, "--plan"], cluster.address, timeout=300, extra_env=extra)
        facts["plan_cli"] = {"rc": plan.returncode, "stdout": plan.stdout, "stderr": plan.stderr[-4000:]}
        watch.start()
        t0 = time.monotonic()
        # the first command, SIGKILLed (its process group) once its first run is recorded
        log = work / "first.log"
        with log.open("wb") as sink:
            first = subprocess.Popen([sys.executable, "-m", "masgrid._private.platform.commands.cli", *args],
                                     env={**os.environ, "RAY_ADDRESS": cluster.address, **extra},
                                     stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        kill_when(first, lambda: any((results / "runs").rglob("part-*.parquet")), log, 900,
                  "the first command recorded no run")
        facts["runs_before"] = _runs(results)
        # the same command again: resumes and finishes everything
        proc = _cli(args, cluster.address, timeout=1500, extra_env=extra)
        facts["sweep_s"] = time.monotonic() - t0
        facts["sweep"] = {"rc": proc.returncode, "stdout": proc.stdout[-6000:], "stderr": proc.stderr[-8000:]}
        # vLLM logs an engine step's stats on its next step: one more request (1 token) makes the
        # sweep's last step reach tiny_b's counters
        try:
            facts["nudge"] = _chat(port, "tiny-b")
        except OSError as exc:
            facts["nudge"] = {"error": repr(exc)}
        time.sleep(3)  # a last sample of the counters
        watch.stop.set()
        watch.join(timeout=10)
        facts["watch"] = {"together": watch.together, "nodes": watch.nodes, "bundles": watch.bundles,
                          "ingress": watch.ingress, "polls": watch.polls, "errors": watch.errors[:5],
                          "counters": watch.counters}
        facts["serve_actors_at_end"] = _serve_actors()
        # what the next sweep's plan would see: the apps a phased sweep left deployed count as free
        from masgrid._private.platform.sweeps.model_phases import cluster_state
        from masgrid._private.platform.sweeps.model_phases.capacity import cluster_now

        registry = cluster_state.managed_apps()
        left = sorted(registry)
        held = {app: (entry.get("bundles") or [], entry.get("ingress") or {}) for app, entry in registry.items()}
        facts["after_sweep"] = {"managed_apps": left, "free": cluster_now().totals(),
                                "free_if_released": cluster_now(held).totals()}
    finally:
        watch.stop.set()
        ray.shutdown()
        cluster.shutdown()
    probes = results / "preflight.jsonl"
    facts["probes"] = [json.loads(line) for line in probes.read_text().splitlines()] if probes.exists() else []
    phases = read_phases(results)
    facts["phases"] = json.loads(phases.to_json(orient="records", date_format="iso")) if len(phases) else []
    if (results / "runs").is_dir():
        import pandas as pd

        runs = pd.read_parquet(results / "runs", columns=["run_id", "model", "status", "error", "tokens_in",
                                                           "tokens_out", "model_calls", "calls_usage_estimated",
                                                           "started_at", "finished_at"])
        facts["runs"] = json.loads(runs.to_json(orient="records", date_format="iso"))
        events = pd.read_parquet(results / "events", columns=["run_id", "kind", "ok", "error_class", "usage_source",
                                                               "tokens_in", "tokens_out"])
        calls = events[events["kind"] == "model_call"]
        facts["model_calls"] = {run_id: {"calls": len(c), "usage_sources": c["usage_source"].value_counts().to_dict(),
                                         "errors": c[~c["ok"].astype(bool)]["error_class"].value_counts().to_dict(),
                                         "tokens_in": int(c["tokens_in"].fillna(0).sum()),
                                         "tokens_out": int(c["tokens_out"].fillna(0).sum())}
                                for run_id, c in calls.groupby("run_id")}
    out.write_text(json.dumps(facts, indent=2, default=str))


def main(mode: str, out: Path, work: Path) -> None:
    _env()
    private = os.environ["RAY_TMPDIR"]
    try:
        {"gh200": gh200, "tiny": tiny}[mode](out, work)
    finally:
        shutil.rmtree(private, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
