"""The named face of a run on a warm driver: a tiny actor `run:<run_id>` (namespace `masgrid`).

A run with its own driver process (`execution.reuse_actors=false`) is that driver, named
`run:<run_id>`. A run on a long-lived `DriverWorker` cannot rename the worker's process, so
the worker gives the run a `RunStatus` actor of that name: the dashboard lists it, and
`ray.get_actor("run:<run_id>", namespace="masgrid").status.remote()` answers with phase and
round, as the driver actor does. The worker owns it (it dies with the worker) and kills it
when the run ends.

The actor is a process start, about 0.5 s of CPU: 8 warm scripted runs took 6.5 s instead
of 0.3 s when every run started one. So it starts `NAME_AFTER_S` into the run; a run over
before then has nothing to watch, and a sweep of short runs starts no processes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)
NAMESPACE = "masgrid"
#: 30 s, not 1 s: a SIMAS sweep (100 runs of 1-12 s at 4 in flight, 2 cores) spent 0.85 CPU s
#: per run on this process, the largest per-run cost (benchmarks/results/simas_sweep.md); a
#: run shorter than this is over before anyone looks it up, and a longer one pays for its
#: name at most 3% of a core
NAME_AFTER_S = 30.0


class RunStatus:
    """Phase and round of one run, pushed by its driver (fire and forget)."""

    def __init__(self, phase: int = 0, round_no: int = 0) -> None:
        self.progress = {"phase": phase, "round": round_no}

    def update(self, phase: int, round_no: int) -> None:
        self.progress = {"phase": phase, "round": round_no}

    def status(self) -> dict[str, int]:
        return dict(self.progress)


class RunName:
    """Gives a run on a warm driver its `run:<run_id>` actor for as long as it executes.

    Made inside the worker's event loop; `update` is what the driver calls each round."""

    def __init__(self, run_id: str, after_s: float = NAME_AFTER_S) -> None:
        self.run_id = run_id
        self.progress = (0, 0)
        self.actor: Any = None
        self._timer = asyncio.get_running_loop().call_later(after_s, self._start)

    def _start(self) -> None:
        import ray

        try:
            self.actor = ray.remote(num_cpus=0)(RunStatus).options(
                name=f"run:{self.run_id}", namespace=NAMESPACE).remote(*self.progress)
        except ValueError as exc:  # name taken: the same run id executing for another results_dir
            log.warning("run %s: no status actor (%s)", self.run_id, exc)

    def update(self, phase: int, round_no: int) -> None:
        self.progress = (phase, round_no)
        if self.actor is not None:
            self.actor.update.remote(phase, round_no)  # calls from one caller run in order

    def close(self) -> None:
        self._timer.cancel()
        if self.actor is not None:
            import ray

            ray.kill(self.actor, no_restart=True)
            self.actor = None
