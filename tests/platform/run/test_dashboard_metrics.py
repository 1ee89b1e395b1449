"""Run progress metrics: tagged consistently (Ray rejects unknown or missing tag keys)."""

from __future__ import annotations

import pytest

from masgrid._private.platform.run.dashboard_metrics import RunProgress


def test_disabled_outside_ray_records_nothing() -> None:
    progress = RunProgress("r1", "sorting", "kv", enabled=False)
    progress.round(1, 3)
    progress.finished("ok")
    assert progress._m == {}


def test_metrics_accept_every_update(ray_session) -> None:
    progress = RunProgress("r2", "sorting", "broadcast", enabled=True)
    for round_no in range(1, 4):
        progress.round(1, round_no)
    progress.finished("failed")
    assert set(progress._m) == {"round", "phase", "rounds", "finished"}
    with pytest.raises(ValueError):  # the tag contract the dashboard queries rely on
        progress._m["round"].set(1, tags={"run_id": "r2"})


def test_metric_names_and_tags_match_the_docs(ray_session) -> None:
    """The names and tag keys the dashboard shows are the ones dashboard_metrics and docs/serving.md promise."""
    import re
    from pathlib import Path

    from masgrid._private.platform.run import dashboard_metrics

    progress = RunProgress("r3", "sorting", "kv", enabled=True, experiment="pilot")
    progress.round(1, 1)
    progress.finished("ok")
    created = {m._name: set(m._tag_keys) for m in progress._m.values()}
    serving = (Path(__file__).resolve().parents[3] / "docs" / "serving.md").read_text(encoding="utf-8")
    watching = serving.split("## Watching runs", 1)[1].split("\n## ", 1)[0]
    for doc in (dashboard_metrics.__doc__, watching):
        assert set(re.findall(r"`(masgrid_[a-z_]+)`", doc)) == set(created)
    assert all({"task", "protocol", "experiment"} <= tags for tags in created.values())
    assert created["masgrid_runs_finished_total"] == {"task", "protocol", "experiment", "status"}
    assert progress.tags["experiment"] == "pilot"
