"""The no-communication floor: no SILO task may be solvable by agents that never talk.

Every task states `chance_sr` (and `ceiling(n)` where it depends on N), the largest mean S
an agent answering from its own shard alone may reach, and the largest fraction of instances
silent agents may solve outright (the chance level of its answer space plus a margin, argued per task in
docs/tasks/silo-isolated.md). The isolated baseline must stay at or below it at every N of
the paper's grid; a generator or scorer change that lets silent agents score fails here.
The isolated answer is also run through the real platform (condition=isolated).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from masgrid._private.envs.tasks import get_task
from masgrid.families.silo.catalog import SILO_SPECS
from masgrid.families.silo.isolated import FLOOR_SCALES, isolated_answers
from masgrid._private.platform.run.config import ConfigError, RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from masgrid._private.platform.results.recorder import partition_dir

TASK_IDS = sorted(SILO_SPECS)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_isolated_agents_stay_at_chance(task_id: str, silent_floor) -> None:
    spec = SILO_SPECS[task_id]
    assert spec.chance_sr is not None, f"{task_id} states no no-communication ceiling (chance_sr)"
    assert 0.0 <= spec.chance_sr < 1.0
    for n in FLOOR_SCALES:
        cell, ceiling = silent_floor(task_id, n), spec().ceiling(n)
        assert ceiling is not None and ceiling < 1.0
        assert cell.sr <= ceiling, f"{task_id} N={n}: isolated S {cell.sr:.2f} > ceiling {ceiling}"
        assert cell.success <= spec.chance_sr, f"{task_id} N={n}: {cell.success:.0%} of instances solved silently"


@pytest.mark.parametrize("task_id", ["I-01", "II-11", "III-21"])
def test_isolated_answer_reads_only_the_own_shard(task_id: str) -> None:
    """Replacing every other agent's shard by another instance's leaves each answer unchanged."""
    task = get_task(f"silo/{task_id}")
    data, other = task.silo_data(5, task.default_k, 1), task.silo_data(5, task.default_k, 2)
    before = isolated_answers(task.spec, data)
    for agent in range(5):
        mixed = other.model_copy(update={"shards": [data.shards[agent] if j == agent else s
                                                    for j, s in enumerate(other.shards)]})
        assert isolated_answers(task.spec, mixed)[agent] == before[agent]


def _row(cfg: RunConfig) -> dict:
    path = partition_dir(Path(cfg.results_dir), "runs", cfg.partition) / f"part-{cfg.run_id}.parquet"
    return pq.read_table(path).to_pylist()[0]


@pytest.mark.parametrize("task_id", ["I-03", "II-12", "III-22"])
def test_isolated_condition_runs_on_the_platform(tmp_path: Path, task_id: str) -> None:
    """condition=isolated through the real driver: no message, S equals the recorded floor."""
    cfg = RunConfig.from_mapping({"results_dir": str(tmp_path), "execution": {"executor": "local"},
                                  "task": f"silo/{task_id}", "protocol": "p2p", "agents": 5, "seed": 3,
                                  "condition": "isolated"})
    summary = run_local(cfg)
    assert summary.status == "ok", summary.error
    row = _row(cfg)
    assert row["messages_sent"] == 0 and row["density"] == 0.0
    assert row["sr"] == pytest.approx(row["floor_sr"]) and row["pcs"] == pytest.approx(row["floor_pcs"])
    # a base run of the same instance records the same floor next to its own (coordinated) score
    base = RunConfig.from_mapping({**cfg.model_dump(mode="json"), "condition": "base"})
    assert run_local(base).sr == 1.0
    assert _row(base)["floor_sr"] == pytest.approx(row["floor_sr"])


def test_isolated_condition_refuses_a_model_backend(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="scripted baseline"):
        RunConfig.from_mapping({"results_dir": str(tmp_path), "task": "silo/I-01", "agents": 4,
                                "condition": "isolated", "backend": "openai",
                                "model": {"name": "m", "base_url": "http://127.0.0.1:9/v1"}})


def test_a_failing_silent_guess_is_an_error_not_a_lower_floor() -> None:
    """Swallowing a broken guess would score it as 'no answer' and flatter every score above it."""
    from masgrid.families.silo.isolated import isolated_score

    task = get_task("silo/I-01")

    class Broken(type(task.spec)):
        def isolated_answer(self, agent, n, shard, public):
            raise KeyError("peer payload")

    with pytest.raises(KeyError):
        isolated_score(Broken(), task.silo_data(3, task.default_k, 0))
