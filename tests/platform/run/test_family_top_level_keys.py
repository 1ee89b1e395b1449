"""MAS-Bench's `mode` and AgentsNet's `graph` live in their families' option blocks
(`Family.top_level`): written either way, they are the same setting, and every run id and
point id computed before they moved is unchanged.

tests/data/run_ids_before_family_keys.json was written by tests/data/run_ids_before_family_keys.py
run in a checkout of commit 22ac7f3, where both were still top-level fields of RunConfig: 20
configurations across MAS-Bench, AgentsNet, SILO, SIMAS and the outside test family.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from masgrid._private.platform.run.config import ConfigError, RunConfig
from masgrid.family import top_level_keys

BEFORE = json.loads((Path(__file__).resolve().parents[2] / "data" / "run_ids_before_family_keys.json").read_text())


@pytest.mark.parametrize("case", BEFORE, ids=[json.dumps(c["config"], sort_keys=True) for c in BEFORE])
def test_run_and_point_ids_are_those_computed_before_the_move(case):
    cfg = RunConfig.from_mapping(case["config"])
    assert (cfg.run_id, cfg.point_id) == (case["run_id"], case["point_id"])


def test_the_fixture_spans_the_families_and_both_keys():
    tasks = {c["config"]["task"].split("/")[0] for c in BEFORE}
    assert {"sorting", "agentsnet", "silo", "simas", "relay"} <= tasks
    assert any("mode" in c["config"] for c in BEFORE) and any("graph" in c["config"] for c in BEFORE)


def test_the_keys_belong_to_their_families():
    owners = {key: family.name for key, family in top_level_keys().items()}
    assert owners == {"mode": "masbench", "graph": "agentsnet"}
    assert "mode" not in RunConfig.model_fields and "graph" not in RunConfig.model_fields


@pytest.mark.parametrize("top, block", [
    ({"task": "sorting", "mode": "desc"}, {"task": "sorting", "masbench": {"mode": "desc"}}),
    ({"task": "agentsnet/coloring", "graph": "ba", "agents": 8},
     {"task": "agentsnet/coloring", "agentsnet": {"graph": "ba"}, "agents": 8}),
    ({"task": "agentsnet/coloring", "graph": "ws", "agents": 8, "agentsnet": {"rounds": 3}},
     {"task": "agentsnet/coloring", "agentsnet": {"graph": "ws", "rounds": 3}, "agents": 8}),
])
def test_both_spellings_are_one_setting(top, block):
    a, b = RunConfig.from_mapping(top), RunConfig.from_mapping(block)
    assert a.run_id == b.run_id and a.model_dump() == b.model_dump()
    assert a.instance() == b.instance()


def test_a_setting_given_both_ways_must_agree():
    same = RunConfig.from_mapping({"task": "sorting", "mode": "asc", "masbench": {"mode": "asc"}})
    assert same.masbench.mode == "asc"
    with pytest.raises(ConfigError, match=r"mode: given as mode='asc' and as masbench.mode='desc'"):
        RunConfig.from_mapping({"task": "sorting", "mode": "asc", "masbench": {"mode": "desc"}})


def test_a_bad_value_is_refused_naming_the_blocks_key():
    with pytest.raises(ConfigError, match=r"masbench.mode"):
        RunConfig.from_mapping({"task": "sorting", "mode": "sideways"})


def test_the_runs_columns_keep_their_names_and_values():
    sorting = RunConfig.from_mapping({"task": "sorting", "mode": "near_desc"}).columns()
    coloring = RunConfig.from_mapping({"task": "agentsnet/coloring", "graph": "dt", "agents": 8}).columns()
    assert sorting["mode"] == "near_desc" and sorting["graph"] is None
    assert coloring["graph"] == "dt"


def test_a_block_given_as_an_options_object_takes_the_top_level_key_too():
    from masgrid.families.masbench.options import MasBenchOptions

    cfg = RunConfig.from_mapping({"task": "sorting", "mode": "desc", "masbench": MasBenchOptions()})
    assert cfg.masbench.mode == "desc"  # not dropped; the object's default would have been random
    with pytest.raises(ConfigError, match="set it once"):
        RunConfig.from_mapping({"task": "sorting", "mode": "desc", "masbench": MasBenchOptions(mode="asc")})


def test_the_two_spellings_map_onto_each_other():
    from masgrid.family import block_key, top_level_name

    assert [block_key(k) for k in ("mode", "graph", "agents", "simas.rounds")] == \
        ["masbench.mode", "agentsnet.graph", "agents", "simas.rounds"]
    assert [top_level_name(k) for k in ("masbench.mode", "agentsnet.graph", "simas.mode", "mode", "agents")] == \
        ["mode", "graph", "simas.mode", "mode", "agents"]
