"""The phases table: written, read back, the report's share of time spent swapping models
(computed here by hand), and docs/results.md listing exactly its columns."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from masgrid._private.analysis.model_phases import PHASE_COLUMNS, loading_share, phases_section, read_phases
from masgrid._private.platform.sweeps.model_phases.phase_table import write_phases

DOC = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def rows(rng: random.Random, n: int, unfinished: bool) -> list[dict]:
    t0 = datetime(2026, 11, 28, tzinfo=UTC)
    out = []
    for i in range(n):
        load, release, run = rng.uniform(0, 90), rng.uniform(0, 10), rng.uniform(1, 500)
        start = t0 + timedelta(seconds=1000 * i)
        done = not (unfinished and i == n - 1)
        out.append({"sweep_id": "s1", "phase": i + 1, "models": [f"m{i}"], "replicas_json": "{}", "loaded": [f"m{i}"],
                    "kept": [], "released": [f"m{i - 1}"] if i else [], "failed": [], "error": None,
                    "load_s": load, "release_s": release, "run_s": run if done else None, "runs": 3, "runs_held": 0,
                    "cluster": "1 node", "started_at": start,
                    "ended_at": start + timedelta(seconds=load + release + run) if done else None})
    return out


@pytest.mark.parametrize("seed", range(20))
def test_the_share_of_time_spent_swapping_models(tmp_path, seed):
    rng = random.Random(seed)
    written = rows(rng, rng.randint(1, 5), unfinished=seed % 3 == 0)
    write_phases(written, "s1", [str(tmp_path)])
    back = read_phases(tmp_path)
    assert len(back) == len(written) and list(back["phase"]) == [r["phase"] for r in written]
    finished = [r for r in written if r["ended_at"] is not None]
    wall = sum((r["ended_at"] - r["started_at"]).total_seconds() for r in finished)
    swap = sum(r["load_s"] + r["release_s"] for r in finished)
    share = loading_share(back)
    assert share["wall_s"] == pytest.approx(wall) and share["share_loading"] == pytest.approx(swap / wall)
    out = tmp_path / "report"
    out.mkdir()
    lines = phases_section(tmp_path, out)
    assert f"{100 * swap / wall:.1f} %" in "\n".join(lines) and (out / "phases.md").is_file()


def test_no_phases_no_section(tmp_path):
    assert read_phases(tmp_path).empty and phases_section(tmp_path, tmp_path) == []


def test_results_doc_lists_the_phases_columns():
    block = DOC.read_text(encoding="utf-8").split("## phases (sweeps in model phases)", 1)[1]
    documented = [line.split("|")[1].strip().strip("`") for line in block.splitlines()
                  if line.startswith("| `")]
    assert documented == list(PHASE_COLUMNS)
    for name, (kind, meaning) in PHASE_COLUMNS.items():
        assert f"| `{name}` | {kind} | {meaning} |" in block
