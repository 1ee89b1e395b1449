"""`masgrid cooper sweep SUBSET`: the grid of a subset list, as `masgrid run` would compose
each point, run as one sweep (in-process, on the session's Ray)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pandas as pd
import pytest

from masgrid.families.cooper.sandbox import sandbox_problem
from masgrid.families.cooper.synthetic import write_synthetic_pool
from masgrid._private.platform.commands.cli import _compose_once
from masgrid.families.cooper.sweep import subset_configs, sweep_command
from masgrid._private.platform.sweeps.sweep import split_job_config

SANDBOX = "bwrap" if sandbox_problem() is None else "none"


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory, cooper_cache: Path):
    root = tmp_path_factory.mktemp("cooper-sweep")
    written = write_synthetic_pool(root / "pool")
    subsets = written.data_dir / "subsets"
    subsets.mkdir()
    task = {"repo": written.pool, "task_id": written.task_id}
    (subsets / "mini.json").write_text(json.dumps({"name": "mini", "tasks": [{**task, "pairs": [[4, 5], [1, 3]]}]}))
    (subsets / "whole.json").write_text(json.dumps({"name": "whole", "tasks": [task]}))  # lite's shape: no pairs
    (subsets / "trios.json").write_text(json.dumps({"tasks": [{**task, "groups": [[1, 2, 3], [2, 4, 5]]}]}))
    return written, cooper_cache


def overrides(pool, results: Path) -> list[str]:
    written, cache = pool
    return [f"cooper.data_dir={written.data_dir}", f"cooper.repos_dir={written.repos_dir}",
            f"cooper.cache_dir={cache}", f"cooper.sandbox={SANDBOX}", f"results_dir={results}"]


def test_every_subset_shape_gives_its_grid(pool, tmp_path):
    written = pool[0]
    task = f"cooper/{written.pool}/{written.task_id}"
    features = sorted(int(f) for f in json.loads(written.model_dump_json())["expected"]
                      for f in f.split(","))
    every_pair = sorted({p for p in itertools.combinations(sorted(set(features)), 2)})
    for subset, points in (("mini", [(4, 5), (1, 3)]), ("whole", every_pair), ("trios", [(1, 2, 3), (2, 4, 5)])):
        cfgs, _ = subset_configs(subset, ["coop", "solo"], overrides(pool, tmp_path))
        assert [(c.task, tuple(c.cooper.features), c.cooper.setting) for c in cfgs] == [
            (task, p, s) for p in points for s in ("coop", "solo")]
    assert len(every_pair) == 10


def test_a_point_has_the_run_id_masgrid_run_gives_it(pool, tmp_path):
    cfgs, settings = subset_configs("mini", ["nocomm"], [*overrides(pool, tmp_path), "sweep.max_concurrent=2"])
    assert settings.max_concurrent == 2
    written = pool[0]
    for cfg in cfgs:  # what `masgrid run task=... protocol=workspace cooper.setting=... cooper.features=...` composes
        argv = [*overrides(pool, tmp_path), f"task=cooper/{written.pool}/{written.task_id}", "protocol=workspace",
                "cooper.setting=nocomm", f"cooper.features=[{','.join(map(str, cfg.cooper.features))}]"]
        single, _ = split_job_config(_compose_once(argv))
        assert single.run_id == cfg.run_id


@pytest.mark.parametrize(("argv", "message"), [
    (["mini", "--settings", "coop,duo"], "--settings takes some of coop,solo,nocomm, not coop,duo"),
    (["mini", "cooper.features=[1,2]"], "drop cooper.features=[1,2]"),
    (["nope"], "missing subset list 'nope'"),
])
def test_bad_input_is_one_line(pool, tmp_path, capsys, argv, message):
    assert sweep_command([*argv, *overrides(pool, tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("masgrid cooper sweep: ") and message in err


def test_no_data_dir_is_one_line(capsys):
    assert sweep_command(["lite"]) == 2
    assert "cooper.data_dir=DIR is needed" in capsys.readouterr().err


def test_the_sweep_runs_every_point_once_and_resumes(pool, tmp_path, ray_session, capsys):
    argv = ["mini", "--settings", "coop,solo", *overrides(pool, tmp_path), "sweep.progress=plain",
            "sweep.max_concurrent=2"]
    assert sweep_command(argv) == 0
    runs = pd.read_parquet(tmp_path / "runs")
    assert sorted(zip(runs["cooper_features"], runs["cooper_setting"], runs["status"])) == sorted(
        (p, s, "ok") for p in ("4,5", "1,3") for s in ("coop", "solo"))
    capsys.readouterr()
    assert sweep_command(argv) == 0  # a resume: nothing left to run
    assert "4 already complete" in capsys.readouterr().out
    assert len(pd.read_parquet(tmp_path / "runs")) == 4
