import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, UTC

import pandas as pd
import pyarrow.dataset as ds

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from masgrid._private.platform.results.recorder import Recorder

PART = {"task": "silo/I-01", "protocol": "kv"}  # a value with '/' must survive the path encoding


def event(i: int) -> dict:
    return dict(run_id="r1", seq=i, phase=1, round=i, agent=0, kind="command", verb="wait", text="wait",
                reply="acknowledged", ok=True, time=datetime.now(UTC))


def test_partition_values_round_trip_in_pandas_and_pyarrow(tmp_path):
    rec = Recorder(tmp_path)
    rec.write_events("r1", PART, 1, [event(i) for i in range(3)])
    df = pd.read_parquet(tmp_path / "events")
    assert set(df["task"].astype(str)) == {"silo/I-01"} and len(df) == 3
    table = ds.dataset(tmp_path / "events", format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 3


def test_rerun_of_same_run_replaces_instead_of_duplicating(tmp_path):
    cfg = RunConfig.from_mapping(dict(agents=3, k=2, results_dir=str(tmp_path), execution={"executor": "local"}))
    run_local(cfg)
    first = pd.read_parquet(tmp_path / "events")
    run_local(cfg)
    assert len(pd.read_parquet(tmp_path / "events")) == len(first)
    assert len(pd.read_parquet(tmp_path / "runs")) == 1
    assert len(pd.read_parquet(tmp_path / "agents")) == 3
    assert Recorder(tmp_path).run_status() == {cfg.run_id: "ok"}


def test_recorded_run_is_the_row_as_written_and_none_when_absent_or_damaged(tmp_path):
    cfg = RunConfig.from_mapping(dict(agents=2, k=2, results_dir=str(tmp_path), execution={"executor": "local"}))
    rec = Recorder(tmp_path)
    assert rec.recorded_run(cfg.run_id, cfg.partition) is None
    run_local(cfg)
    row = rec.recorded_run(cfg.run_id, cfg.partition)
    table = pd.read_parquet(tmp_path / "runs").iloc[0]
    assert row is not None and row["run_id"] == cfg.run_id and row["status"] == table["status"] == "ok"
    assert row["started_at"] == table["started_at"].to_pydatetime() and row["started_at"].tzinfo is not None
    assert row["rounds"] == table["rounds"] and row["model_calls"] == table["model_calls"]
    (path,) = (tmp_path / "runs").rglob(f"part-{cfg.run_id}.parquet")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # a torn file is no proof of completion
    assert rec.recorded_run(cfg.run_id, cfg.partition) is None


def test_writer_killed_mid_write_leaves_a_readable_dataset(tmp_path):
    script = textwrap.dedent(f"""
        from datetime import datetime, timezone
        from masgrid._private.platform.results.recorder import Recorder
        rec = Recorder({str(tmp_path)!r})
        big = "x" * 20000
        chunk = 0
        while True:
            chunk += 1
            rows = [dict(run_id="r9", seq=i, phase=1, round=chunk, agent=i, kind="command", verb="wait",
                         text=big, reply=big, ok=True, time=datetime.now(timezone.utc)) for i in range(400)]
            rec.write_events("r9", {{"task": "sorting", "protocol": "kv"}}, chunk, rows)
            print(chunk, flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "1"
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    df = pd.read_parquet(tmp_path / "events")  # must not raise on a half-written file
    assert len(df) % 400 == 0 and len(df) >= 400
    assert df.groupby("round").size().eq(400).all()


def test_a_crashing_run_is_recorded_as_failed(tmp_path, monkeypatch):
    from masgrid.families.masbench.tasks import SortingTask

    def boom(self, instance, answers):
        raise RuntimeError("scorer exploded")

    monkeypatch.setattr(SortingTask, "score", boom)
    cfg = RunConfig.from_mapping(dict(agents=2, k=2, results_dir=str(tmp_path), execution={"executor": "local"}))
    s = run_local(cfg)
    assert s.status == "failed" and "scorer exploded" in s.error
    (row,) = pd.read_parquet(tmp_path / "runs").to_dict("records")
    assert row["status"] == "failed" and "RuntimeError: scorer exploded" in row["error"]
    assert row["agents"] == 2 and row["wall_s"] > 0
    assert len(pd.read_parquet(tmp_path / "events")) > 0  # what happened before the crash is kept
