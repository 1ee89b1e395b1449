"""A results_dir filled by two masgrid versions: files written before a column existed sit
beside files that have it. Loading keeps every column (null where a file lacks it), where
pandas' own reader takes the first file's schema and silently drops the newer columns."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from masgrid._private.analysis.load import read_table
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one


def test_older_files_without_the_new_columns_read_as_null(tmp_path: Path) -> None:
    ids = []
    for seed, extra in ((0, {}), (1, {"channel": {"loss": 0.5}}), (2, {"topology": {"kind": "ring"}, "protocol": "p2p"})):
        cfg = RunConfig.from_mapping({"results_dir": str(tmp_path), "agents": 3, "k": 2, "seed": seed,
                                      "execution": {"executor": "local"}, **extra})
        assert run_one(cfg).status == "ok"
        ids.append(cfg.run_id)
    # make seed 0's files look written by a version without the channel/topology/team columns,
    # and sort first, as the oldest file of a directory does
    dropped = {"runs": [c for c in ("channel_loss", "channel_sent", "topology", "topology_edges", "team_composition")],
               "agents": ["degree", "backend"]}
    for table, columns in dropped.items():
        (old,) = (tmp_path / table).rglob(f"part-{ids[0]}*.parquet")
        data = pq.read_table(old)
        data = data.drop_columns([c for c in columns if c in data.column_names])
        old.unlink()
        pq.write_table(data, old.with_name(f"part-0000-{old.name.removeprefix('part-')}"))

    runs = read_table(tmp_path, "runs").set_index("run_id")
    assert set(runs.index) == set(ids)
    assert runs.loc[ids[0], ["channel_loss", "topology", "team_composition"]].isna().all()
    assert runs.loc[ids[1], "channel_loss"] == 0.5 and runs.loc[ids[1], "channel_sent"] > 0
    assert runs.loc[ids[2], "topology"] == "ring" and runs.loc[ids[2], "topology_edges"]
    agents = read_table(tmp_path, "agents")
    assert agents[agents["run_id"] == ids[0]]["degree"].isna().all()
    assert (agents[agents["run_id"] == ids[2]]["degree"] == 2).all()


def test_a_column_null_in_one_file_and_typed_in_another_is_promoted(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "task=sorting" / "protocol=kv"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"run_id": ["a"], "x": pa.array([None], pa.null())}), folder / "part-a.parquet")
    pq.write_table(pa.table({"run_id": ["b"], "x": pa.array([3], pa.int64()), "y": ["new"]}), folder / "part-b.parquet")
    df = read_table(tmp_path, "runs").set_index("run_id")
    assert df.loc["b", "x"] == 3 and df.loc["b", "y"] == "new" and df.loc["a", ["x", "y"]].isna().all()
    assert set(df["task"]) == {"sorting"} and set(df["protocol"]) == {"kv"}
