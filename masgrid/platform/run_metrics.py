"""Run progress in the Ray dashboard: Ray metrics exported by every run driver.

The dashboard already lists each driver as the named actor `run:<run_id>` (namespace
`masgrid`, method `status()` gives phase and round). These metrics add the time series,
tagged by run id, task and protocol, on the dashboard's Metrics view (Prometheus/Grafana):

- `masgrid_run_round`         gauge: current round of the run (within its phase)
- `masgrid_run_phase`         gauge: current phase
- `masgrid_rounds_total`      counter: rounds completed
- `masgrid_runs_finished_total` counter: finished runs, tagged with `status` (ok | failed)
"""

from __future__ import annotations

from typing import Any

_TAGS = ("run_id", "task", "protocol")


class RunProgress:
    """No-op outside Ray (executor=local), so the in-process path needs no cluster."""

    def __init__(self, run_id: str, task: str, protocol: str, enabled: bool = True) -> None:
        self.tags = {"run_id": run_id, "task": task, "protocol": protocol}
        self.enabled = enabled
        self._m: dict[str, Any] = {}
        if enabled:
            from ray.util.metrics import Counter, Gauge

            self._m = {
                "round": Gauge("masgrid_run_round", "current round of a masgrid run", tag_keys=_TAGS),
                "phase": Gauge("masgrid_run_phase", "current phase of a masgrid run", tag_keys=_TAGS),
                "rounds": Counter("masgrid_rounds_total", "rounds completed by masgrid runs", tag_keys=_TAGS),
                "finished": Counter("masgrid_runs_finished_total", "finished masgrid runs",
                                    tag_keys=("task", "protocol", "status")),
            }

    def round(self, phase: int, round_no: int) -> None:
        if self.enabled:
            self._m["round"].set(round_no, tags=self.tags)
            self._m["phase"].set(phase, tags=self.tags)
            self._m["rounds"].inc(1, tags=self.tags)

    def finished(self, status: str) -> None:
        if self.enabled:
            self._m["finished"].inc(1, tags={"task": self.tags["task"], "protocol": self.tags["protocol"],
                                             "status": status})
