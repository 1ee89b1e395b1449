"""Run progress metrics: tagged consistently (Ray rejects unknown or missing tag keys)."""

from __future__ import annotations

import pytest

from masgrid.platform.run_metrics import RunProgress


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
