"""The SILO sweep presets compose and span the paper's grid."""

from __future__ import annotations

from hydra import compose, initialize_config_dir

from masgrid._private.resources import conf_dir


def params(preset: str) -> dict[str, list[str]]:
    with initialize_config_dir(str(conf_dir()), version_base="1.3"):
        cfg = compose("config", overrides=[f"sweep={preset}"], return_hydra_config=True)
    return {key: str(value).split(",") for key, value in cfg.hydra.sweeper.params.items()}


def test_main_grid_is_30_tasks_x_6_scales_x_3_protocols() -> None:
    grid = params("silo")
    assert len(grid["task"]) == 30 and len(set(grid["task"])) == 30
    assert grid["agents"] == ["2", "5", "10", "20", "50", "100"]
    assert sorted(grid["protocol"]) == ["broadcast", "kv", "p2p"]
    assert grid["task"][0] == "silo/I-01" and grid["task"][-1] == "silo/III-30"


def test_oracle_and_ablation_presets() -> None:
    assert params("silo_oracle")["condition"] == [f"oracle-{n}" for n in (2, 5, 10, 20, 50, 100)]
    assert params("silo_ablation")["condition"] == ["base", "planning", "reminder", "scratchpad"]
