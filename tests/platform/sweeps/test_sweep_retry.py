"""Failed runs are left alone on resume and re-run with sweep.retry_failed=true (in-process CLI)."""

from __future__ import annotations

import pandas as pd
import pytest

from masgrid._private.platform.commands.cli import main
from masgrid._private.platform.results.recorder import Recorder


@pytest.mark.slow
def test_failed_run_is_rerun_only_with_retry_flag(tmp_path, ray_session, capsys):
    args = ["run", "-m", "protocol=broadcast,kv", "agents=1", "k=1", f"results_dir={tmp_path}",
            "sweep.progress=plain", "sweep.log_every_s=0"]
    assert main(args) == 0
    runs = pd.read_parquet(tmp_path / "runs")
    assert len(runs) == 2 and set(runs["status"]) == {"ok"}

    # mark one run as failed, as the driver records a crashed run (its error kept)
    victim = {k: (None if pd.isna(v) else v) if pd.api.types.is_scalar(v) else list(v)
              for k, v in runs.iloc[0].to_dict().items()}
    victim.update(status="failed", error="RuntimeError: simulated crash")
    Recorder(tmp_path).finish_run(victim, [], {"task": victim["task"], "protocol": str(victim["protocol"])})
    capsys.readouterr()

    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1 already complete, 1 recorded as failed and left alone" in out and "0 to run" in out
    assert pd.read_parquet(tmp_path / "runs").set_index("run_id").loc[victim["run_id"], "status"] == "failed"

    assert main([*args, "sweep.retry_failed=true"]) == 0
    out = capsys.readouterr().out
    assert "1 to run (1 retries)" in out and "1/1 done, 0 degraded, 0 invalid, 0 failed" in out
    after = pd.read_parquet(tmp_path / "runs")
    assert len(after) == 2 and set(after["status"]) == {"ok"} and after["error"].isna().all()
