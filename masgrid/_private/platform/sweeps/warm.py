"""Processes a single `masgrid run` leaves running on a cluster it joined, for the next one.

Starting Ray worker processes (driver, recorder, environment and agent hosts: about 1.5 s
each on a busy 2-core machine) is what a small run waits for once Ray itself is up
(benchmarks/bench_first_round.py). On a cluster that outlives the command (`masgrid up`,
`ray start --head`, an explicit address), a run or a sweep therefore executes on detached
actors that stay for the next command: driver workers (`ray_runs.DriverWorker`, each keeping
its last run's hosts; `driver` for single runs and a sweep's first slot, `driver-2`, ... for
its other slots), a host pool and one recorder per results directory.

Warm actors run the code they started with, so their names carry a fingerprint of the
masgrid sources, the configuration tree and MASGRID_CONF: after an edit a run starts new
ones, and the previous version's are killed (a run still executing on them, from another
checkout's command, is then interrupted and run again by its launcher). A driver cancels
the runs of a command that died (`job_alive`), and a warm recorder accepts writes only from
the command that last claimed its results_dir (`Recorder.claim`). `masgrid down`
stops them with the head; `execution.keep_warm=false` opts out.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

#: every warm actor's name starts with this; the fingerprint follows the last '@'
PREFIX = "warm-"
NAMESPACE = "masgrid"


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """12 hex digits over the path, size and mtime of every masgrid source and config file,
    installed families' included (a few hundred stat calls, about a millisecond), so warm
    actors never run stale code."""
    import masgrid
    from masgrid._private.resources import conf_roots
    from masgrid.family import families

    package = Path(masgrid.__file__).parent
    outside = [f.folder for f in families().values() if f.folder is not None and package not in f.folder.parents]
    digest = hashlib.sha1(os.environ.get("MASGRID_CONF", "").encode())
    roots = [(package, "*.py"), *((folder, "*.py") for folder in outside), *((root, "*") for root in conf_roots())]
    for root, pattern in roots:
        for path in sorted(root.rglob(pattern)):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            st = path.stat()
            digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


def warm_name(role: str) -> str:
    return f"{PREFIX}{role}@{fingerprint()}"


def options(role: str) -> dict[str, Any]:
    """Ray actor options of a warm actor: named by role and code version, detached, shared."""
    return {"name": warm_name(role), "namespace": NAMESPACE, "lifetime": "detached", "get_if_exists": True}


def retire_stale() -> list[str]:
    """Kill warm actors of other code versions (their hosts go with their pool); returns their names."""
    import ray

    mine = f"@{fingerprint()}"
    stale = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
             if a.get("namespace") == NAMESPACE and a["name"].startswith(PREFIX) and not a["name"].endswith(mine)]
    for name in stale:
        try:
            ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)
        except ValueError:  # gone meanwhile
            pass
    return stale


def job_alive(job: str) -> bool:
    """Whether the Ray job `job` (hex id; a command's connection to the cluster) still runs,
    per the GCS job table (a private Ray API: unknown or unreadable counts as alive, and the
    recorder's claim still keeps a dead command's runs from writing)."""
    import ray

    try:
        gcs = ray._private.worker.global_worker.gcs_client  # type: ignore[attr-defined]  # private Ray API
        info = gcs.get_all_job_info(job_or_submission_id=job, skip_submission_job_info_field=True,
                                    skip_is_running_tasks_field=True)
    except Exception:  # noqa: BLE001 - an API change must not cancel runs
        return True
    return not info or any(not entry.is_dead for entry in info.values())
