"""Run progress in the Ray dashboard: Ray metrics exported by every run driver.

Each running run is the named actor `run:<run_id>` (namespace `masgrid`): its own driver
(`execution.reuse_actors=false`) or, on a warm driver worker, a small `RunStatus` actor
(run_status_actor.py; from one second into the run); either one's `status()` gives phase and
round. These metrics add the time series on the dashboard's Metrics view
(Prometheus/Grafana, where Ray prefixes each name with `ray_`), all tagged with `task`,
`protocol` and `experiment` (the config's `experiment`, empty when unset):

- `masgrid_run_round`           gauge: current round of the run (within its phase); tag run_id
- `masgrid_run_phase`           gauge: current phase; tag run_id
- `masgrid_rounds_total`        counter: rounds completed; tag run_id
- `masgrid_runs_finished_total` counter: finished runs; tag status (ok | failed)
"""

from __future__ import annotations

from typing import Any

_TAGS = ("run_id", "task", "protocol", "experiment")
_FINISHED_TAGS = ("task", "protocol", "experiment", "status")


class RunProgress:
    """No-op outside Ray (executor=local), so the in-process path needs no cluster."""

    def __init__(self, run_id: str, task: str, protocol: str, enabled: bool = True, experiment: str = "",
                 status: Any = None) -> None:
        self.tags = {"run_id": run_id, "task": task, "protocol": protocol, "experiment": experiment}
        self.enabled = enabled
        self.status = status  # warm driver workers: the run's RunName (run_status_actor.py), told each round
        self._last: tuple[int, int] | None = None  # the (phase, round) last reported
        self._m: dict[str, Any] = {}
        if enabled:
            from ray.util.metrics import Counter, Gauge

            self._m = {
                "round": Gauge("masgrid_run_round", "current round of a masgrid run", tag_keys=_TAGS),
                "phase": Gauge("masgrid_run_phase", "current phase of a masgrid run", tag_keys=_TAGS),
                "rounds": Counter("masgrid_rounds_total", "rounds completed by masgrid runs", tag_keys=_TAGS),
                "finished": Counter("masgrid_runs_finished_total", "finished masgrid runs", tag_keys=_FINISHED_TAGS),
            }

    def round(self, phase: int, round_no: int) -> None:
        """Called after each scheduler step; a sequential schedule steps once per turn, so only
        a new (phase, round) is reported: the status and the rounds counter count rounds."""
        if (phase, round_no) == self._last:
            return
        self._last = (phase, round_no)
        if self.status is not None:
            self.status.update(phase, round_no)
        if self.enabled:
            self._m["round"].set(round_no, tags=self.tags)
            self._m["phase"].set(phase, tags=self.tags)
            self._m["rounds"].inc(1, tags=self.tags)

    def finished(self, status: str) -> None:
        if self.enabled:
            tags = {k: v for k, v in self.tags.items() if k != "run_id"}
            self._m["finished"].inc(1, tags={**tags, "status": status})
