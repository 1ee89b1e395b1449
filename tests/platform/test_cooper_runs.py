"""CooperBench end to end through the real driver on the synthetic pool: scripted agents
apply their gold patches through the sandboxed tools, the patches are merged and tested,
and each pair's outcome must be the one the pool was designed to give (synthetic.py's
`expected`, written independently of the run code): a clean merge, a conflict the union
merge resolves, or a union that breaks a feature's tests. Also: solo, nocomm (no messages
in execution), the conflicting scripted variant, and the events of a run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from masgrid.analysis.transcript import calls
from masgrid.envs.tasks.cooper.sandbox import sandbox_problem
from masgrid.envs.tasks.cooper.synthetic import write_synthetic_pool
from masgrid.platform.config import ConfigError, RunConfig
from masgrid.platform.launch import run_local
from masgrid.platform.recorder import partition_dir

#: designed outcome -> (merge stage, success)
OUTCOME = {"clean": ("naive", True), "union": ("union", True), "union_breaks": ("union", False)}
SANDBOX = "bwrap" if sandbox_problem() is None else "none"


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cooper")
    return write_synthetic_pool(root / "pool"), root / "cache"


def cfg_of(pool, results: Path, features: list[int], **cooper: object) -> RunConfig:
    written, cache = pool
    return RunConfig.from_mapping({
        "task": f"cooper/{written.pool}/{written.task_id}", "protocol": "workspace", "results_dir": str(results),
        "cooper": {"features": features, "data_dir": str(written.data_dir), "repos_dir": str(written.repos_dir),
                   "cache_dir": str(cache), "sandbox": SANDBOX, **cooper},
        "execution": {"executor": "local"}})


def pair_of(outcome: str, pool) -> list[int]:
    return [int(x) for x in next(k for k, v in sorted(pool[0].expected.items()) if v == outcome).split(",")]


#: the runs the tests read: name -> (designed outcome of the pair, cooper options)
RUNS = {"clean": ("clean", {}), "union": ("union", {}), "union_breaks": ("union_breaks", {}),
        "nocomm": ("union", {"setting": "nocomm"}), "solo": ("clean", {"setting": "solo"}),
        "conflicting": ("clean", {"policy": "conflicting"})}


@pytest.fixture(scope="module")
def runs(pool, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[RunConfig, dict]]:
    """Every run once (each costs a few seconds, mostly the sandboxed test commands)."""
    results = tmp_path_factory.mktemp("results")
    out = {}
    for name, (outcome, options) in RUNS.items():
        cfg = cfg_of(pool, results, pair_of(outcome, pool), **options)
        summary = run_local(cfg)
        assert summary.status == "ok", summary.error
        path = partition_dir(results, "runs", cfg.partition) / f"part-{cfg.run_id}.parquet"
        out[name] = (cfg, pq.read_table(path).to_pylist()[0])
    return out


@pytest.mark.parametrize("outcome", ["clean", "union", "union_breaks"])
def test_coop_pairs_give_their_designed_outcome(pool, runs, outcome: str) -> None:
    features = pair_of(outcome, pool)
    row = runs[outcome][1]
    stage, success = OUTCOME[outcome]
    assert (row["merge_stage"], row["success"]) == (stage, success)
    assert (row["conflicts_naive"] == 0) == (stage == "naive")
    passed = json.loads(row["feature_pass_json"])
    assert sorted(passed) == sorted(str(f) for f in features)
    assert row["features_passed"] == sum(passed.values()) and row["features_total"] == 2
    assert (row["features_passed"] == 2) == success
    assert row["cooper_setting"] == "coop" and row["cooper_sandbox"] == SANDBOX
    assert row["cooper_features"] == ",".join(map(str, features)) and row["agents"] == 2
    # each agent: a view and a str_replace per hunk, one message, finish (the synthetic patches have one hunk)
    assert row["messages_total"] == 2 and row["actions_total"] == 8 and row["agents_capped"] == 0


def test_nocomm_solo_and_conflicting(runs) -> None:
    row = runs["nocomm"][1]
    assert (row["merge_stage"], row["success"], row["messages_total"], row["actions_total"]) == ("union", True, 0, 6)
    row = runs["solo"][1]
    assert (row["merge_stage"], row["success"], row["agents"], row["messages_total"]) == ("single", True, 1, 0)
    assert row["conflicts_naive"] is None
    # the conflicting variant edits the partner's spot too: a clean pair now conflicts in the
    # naive merge, and the union stage produces the tree that is tested
    row = runs["conflicting"][1]
    assert row["merge_stage"] == "union" and row["conflicts_naive"] > 0 and row["actions_total"] == 10


def test_events_of_a_run(runs) -> None:
    cfg, _ = runs["clean"]
    events = pd.read_parquet(partition_dir(Path(cfg.results_dir), "events", cfg.partition))
    events = events[events.run_id == cfg.run_id].sort_values("seq")
    kinds = set(events.kind)
    assert {"prompt", "model_call", "action", "tool_result", "message", "plan", "finish", "observation"} <= kinds
    assert events.t.notna().all()  # every event, prompts included
    timed = events[events.kind != "prompt"]
    actions = events[events.kind == "action"]
    assert set(actions.tool) == {"send_message", "finish", "view", "str_replace"}
    assert all(isinstance(json.loads(t), dict) for t in actions.text)
    # a message names its receiver; the plan of phase 1 reaches the execution prompt of phase 2
    messages = events[events.kind == "message"]
    assert [list(p) for p in messages.peers] == [[1 - a] for a in messages.agent]
    plans = events[events.kind == "plan"]
    assert len(plans) == 2
    prompts2 = events[(events.kind == "prompt") & (events.phase == 2)]
    for _, plan in plans.iterrows():
        assert plan.text in prompts2[prompts2.agent == plan.agent].text.iloc[0]
    # the events alone rebuild every model call's input, tool results and deliveries included
    rebuilt = calls(events)
    assert len(rebuilt) == (events.kind == "model_call").sum()
    last = [c for c in rebuilt if c.reply.agent == 1 and c.reply.phase == 2][-1]
    roles = [m["role"] for m in last.messages]
    assert roles[0] == "system" and "tool" in roles and roles.count("assistant") == len(
        [c for c in rebuilt if c.reply.agent == 1 and c.reply.phase == 2]) - 1
    # per agent, event times follow the recorded order within a phase
    for _, group in timed.groupby(["agent", "phase"]):
        assert group.t.is_monotonic_increasing


def test_bad_configs_are_one_line(pool, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cooper.features"):
        cfg_of(pool, tmp_path, [1, 99])
    with pytest.raises(ConfigError, match="distinct"):
        cfg_of(pool, tmp_path, [1, 1])
    with pytest.raises(ConfigError, match="cooper/<pool>/<ID>"):
        RunConfig.from_mapping({"task": "cooper/textkit_task", "protocol": "workspace"})
    with pytest.raises(ConfigError, match="cooper.resolver_model: scripted agents have no model"):
        cfg_of(pool, tmp_path, [1, 2], resolver="llm")  # scripted agents: the resolver needs its own model
    with pytest.raises(ConfigError, match="no clone of masgrid/textkit.*fetch"):
        cfg_of(pool, tmp_path, [1, 2], repos_dir=str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="no task directory"):
        cfg_of(pool, tmp_path, [1, 2], data_dir=str(tmp_path))
    # the number of agents follows from the setting, whatever `agents` says
    assert cfg_of(pool, tmp_path, [1, 2, 3]).agents == 3
    assert cfg_of(pool, tmp_path, [1, 2, 3], setting="solo").agents == 1
