"""The prompt fingerprint enters the run id: an edited prompt changes exactly the runs whose
agents receive the edited text, and nothing else.

Each case edits one entry of a copy of conf/ (MASGRID_CONF) and compares the set of grid
points whose run id changed with the set this test names as affected.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from tests.support.conf_copy import copy_all_conf
from masgrid._private import resources
from masgrid._private.platform.run.config import RunConfig

GRID = [
    *(dict(task=t, protocol=p, agents=n, k=2, condition=c)
      for t, p, n, c in itertools.product(("sorting", "max"), ("broadcast", "kv"), (1, 3), ("base", "camoc"))),
    *(dict(task=t, protocol=p, agents=n, mode=None)
      for t, p, n in itertools.product(("silo/I-03", "silo/II-11"), ("p2p", "kv"), (2, 4))),
    *(dict(task=t, protocol="local", agents=4, graph="ws", mode=None)
      for t in ("agentsnet/coloring", "agentsnet/consensus")),
]


@pytest.fixture
def conf_copy(tmp_path, monkeypatch):
    copy = tmp_path / "conf"
    copy_all_conf(copy)
    monkeypatch.setenv("MASGRID_CONF", str(copy))
    resources.reload()
    yield copy
    monkeypatch.delenv("MASGRID_CONF")
    resources.reload()


def run_ids() -> dict[str, str]:
    out = {}
    for point in GRID:
        cfg = RunConfig.from_mapping(point)
        out[f"{cfg.task}|{cfg.protocol}|{cfg.agents}|{cfg.condition}"] = cfg.run_id
    return out


def edit_yaml(path: Path, *keys: str, append: str) -> None:
    data = yaml.safe_load(path.read_text())
    node = data
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = node[keys[-1]] + append
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def changed_after(edit) -> set[str]:
    before = run_ids()
    edit()
    resources.reload()
    after = run_ids()
    assert before.keys() == after.keys()
    return {point for point in before if before[point] != after[point]}


def points(pred) -> set[str]:
    return {p for p in run_ids() if pred(*p.split("|"))}


def test_identity_is_stable_without_edits(conf_copy):
    assert run_ids() == run_ids()
    resources.reload()
    assert changed_after(lambda: None) == set()


def test_editing_one_masbench_task_reruns_that_task_only(conf_copy):
    path = conf_copy / "prompts/masbench/task_max.yaml"
    assert changed_after(lambda: edit_yaml(path, "objective", append=" Be brief.")) == \
        points(lambda task, proto, n, cond: task == "max" and n != "1")  # N = 1 reads objective_solo
    assert changed_after(lambda: edit_yaml(path, "objective_solo", append=" Be brief.")) == \
        points(lambda task, proto, n, cond: task == "max" and n == "1")


def test_editing_the_camoc_rerun_text_reruns_camoc_points_only(conf_copy):
    path = conf_copy / "prompts/masbench/rerun.yaml"
    data = yaml.safe_load(path.read_text())
    first_key = next(k for k, v in data.items() if isinstance(v, str))
    affected = changed_after(lambda: edit_yaml(path, first_key, append=" (rerun)"))
    assert affected and affected <= points(lambda task, proto, n, cond: cond == "camoc")


def test_editing_one_silo_task_reruns_that_task_only(conf_copy):
    path = conf_copy / "prompts/silo/tasks/I-03.yaml"
    assert changed_after(lambda: edit_yaml(path, "description", append=" Count carefully.")) == \
        points(lambda task, *_: task == "silo/I-03")


def test_editing_one_agentsnet_entry_of_a_shared_file_reruns_that_problem_only(conf_copy):
    path = conf_copy / "prompts/agentsnet/tasks.yaml"
    data = yaml.safe_load(path.read_text())
    field = next(k for k, v in data["coloring"].items() if isinstance(v, str))
    assert changed_after(lambda: edit_yaml(path, "coloring", field, append=" Think.")) == \
        points(lambda task, *_: task == "agentsnet/coloring")


def test_editing_a_local_protocol_retry_prompt_reruns_every_agentsnet_point(conf_copy):
    path = conf_copy / "prompts/agentsnet/protocol.yaml"
    data = yaml.safe_load(path.read_text())
    key = next(k for k in data if "retry" in k)
    assert changed_after(lambda: edit_yaml(path, key, append=" Try again.")) == \
        points(lambda task, *_: task.startswith("agentsnet/"))


def test_a_prompt_edited_after_planning_fails_the_run_instead_of_mixing(conf_copy, tmp_path):
    from masgrid._private.platform.sweeps.ray_runs import run_local

    cfg = RunConfig.from_mapping(dict(task="max", agents=2, k=2, results_dir=str(tmp_path / "r"),
                                      execution={"executor": "local"}))
    planned = cfg.run_id
    edit_yaml(conf_copy / "prompts/masbench/task_max.yaml", "objective", append=" Edited mid-sweep.")
    resources.reload()
    summary = run_local(cfg)  # the config still carries the hash it was planned with
    assert summary.run_id == planned and summary.status == "failed"
    assert "PromptMismatch" in summary.error and "differ from those the run was planned with" in summary.error
    assert summary.error_class == "config_error"  # its own terms: a plain resume leaves it (and re-plans)
