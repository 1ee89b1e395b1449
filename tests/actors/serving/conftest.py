"""Serve on loopback inside the session's Ray, and run configs composed as `masgrid run` does."""

from __future__ import annotations

from typing import Any

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.results.table_schemas import RUN_METRICS
from masgrid._private.resources import conf_dir

#: metrics that must not depend on how the model was reached (wall time aside; where the
#: token counts came from: the scripted backend counts them itself, a server reports usage)
COMPARED = [m for m in RUN_METRICS if not m.endswith("_s") and m != "calls_usage_estimated"]


def compose_run(overrides: list[str]) -> RunConfig:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from masgrid._private.platform.sweeps.compose import hydra_override

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):  # `mode=...` as masgrid run reads it
        cfg = compose(config_name="config", overrides=[hydra_override(o) for o in overrides])
    from masgrid._private.platform.sweeps.sweep import split_job_config

    run_cfg, _ = split_job_config(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]
    return run_cfg


def metrics_of(results_dir: str, run_id: str) -> dict[str, Any]:
    import pandas as pd

    runs = pd.read_parquet(f"{results_dir}/runs")
    row = runs[runs.run_id == run_id].iloc[0].to_dict()
    return {k: None if pd.isna(row[k]) else row[k] for k in COMPARED if k in row}
