"""AgentsNet through the platform driver (in-process): same answers as the simulator, the
round budget, the family option block, the sweep presets."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from masgrid.families.agentsnet.analysis import write_report
from masgrid._private.envs.tasks import get_task
from masgrid.families.agentsnet.prompts import variants
from masgrid.families.agentsnet.simulate import run_scripted
from masgrid._private.resources import conf_file
from masgrid._private.platform.run.config import ConfigError, RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local


def _cfg(tmp: Path, **over: object) -> RunConfig:
    data = {"task": "agentsnet/matching", "protocol": "local", "agents": 8, "graph": "ba", "seed": 3,
            "results_dir": str(tmp), "execution": {"executor": "local"}}
    data.update(over)
    return RunConfig.from_mapping(data)


def test_driver_matches_simulator_and_records_budget(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    summary = run_local(cfg)
    assert summary.status == "ok", summary.error
    task = get_task(cfg.task)
    inst = task.generate(8, cfg.k, 3, graph="ba")
    sim = run_scripted(task, inst, cfg.seed)
    agents = pd.read_parquet(tmp_path / "agents").sort_values("agent")
    assert [json.loads(s) for s in agents["submission"]] == sim.answers
    run = pd.read_parquet(tmp_path / "runs").iloc[0]
    assert run["message_rounds"] == 5 and run["rounds"] == 6 and run["model_calls"] == 8 * 6
    assert run["success"] == sim.score.success and run["soft_score"] == pytest.approx(sim.score.metrics["soft_score"])
    assert run["byzantine_setting"] == "none" and run["fallbacks"] == 0
    report = write_report(tmp_path, tmp_path / "report").read_text()
    assert "Table 2" in report and "Matching" in report and (tmp_path / "report" / "agentsnet_fig4.png").is_file()


def test_rounds_override_and_byzantine_through_config(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, task="agentsnet/consensus", agentsnet={"rounds": 3, "byzantine": "unaware"})
    assert run_local(cfg).status == "ok"
    run = pd.read_parquet(tmp_path / "runs").iloc[0]
    assert run["message_rounds"] == 3 and run["rounds"] == 4 and run["byzantine_agents"] == 2
    prompts = pd.read_parquet(tmp_path / "agents")["system_prompt"]
    assert prompts.str.contains("make the network fail").sum() == 2


def test_agentsnet_block_does_not_change_other_run_ids(tmp_path: Path) -> None:
    plain = RunConfig.from_mapping({"task": "sorting", "results_dir": str(tmp_path)})
    tweaked = RunConfig.from_mapping({"task": "sorting", "results_dir": str(tmp_path), "agentsnet": {"rounds": 9}})
    assert plain.run_id == tweaked.run_id and "agentsnet" not in plain.identity()
    a, b = _cfg(tmp_path), _cfg(tmp_path, agentsnet={"rounds": 9})
    assert a.run_id != b.run_id
    with pytest.raises(ConfigError, match="agentsnet.byzantine"):
        _cfg(tmp_path, agentsnet={"byzantine": "sometimes"})
    with pytest.raises(ConfigError, match="protocol"):
        _cfg(tmp_path, protocol="p2p")
    with pytest.raises(ConfigError, match="graph"):
        _cfg(tmp_path, graph=None)
    with pytest.raises(ConfigError, match="agents"):
        _cfg(tmp_path, agents=3)


@pytest.mark.parametrize("preset", ["agentsnet", "agentsnet_scaling", "agentsnet_byzantine", "agentsnet_prompts"])
def test_sweep_presets_name_valid_values(preset: str, tmp_path: Path) -> None:
    spec = yaml.safe_load(conf_file(f"sweep/{preset}.yaml").read_text())
    params = {k: str(v).split(",") for k, v in spec["hydra"]["sweeper"]["params"].items()}
    for task in params["task"]:
        get_task(task)
    for condition in params.get("condition", ["base"]):
        assert condition in variants()
    for agents in params["agents"]:
        for task in params["task"][:1]:
            _cfg(tmp_path, task=task, agents=int(agents), graph=params["agentsnet.graph"][0])


def test_vertex_cover_baseline_solves_the_issue_case_through_the_driver(tmp_path: Path) -> None:
    """Issue 14 item 9: ws, 16 agents, seed 4 scored 0.909 with the round-by-round Luby rule."""
    cfg = _cfg(tmp_path, task="agentsnet/vertex_cover", agents=16, graph="ws", seed=4)
    assert run_local(cfg).status == "ok"
    run = pd.read_parquet(tmp_path / "runs").iloc[0]
    assert run["success"] and run["soft_score"] == 1.0
    inst = get_task(cfg.task).generate(16, cfg.k, 4, graph="ws")
    agents = pd.read_parquet(tmp_path / "agents").sort_values("agent")
    assert [json.loads(s) for s in agents["submission"]] == run_scripted(get_task(cfg.task), inst, 4).answers
