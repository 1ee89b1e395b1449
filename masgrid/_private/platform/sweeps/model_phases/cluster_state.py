"""What a Ray cluster remembers about model phases, in Ray's own key-value store (GCS), so
it outlives any one command: which sweep is managing models now (one at a time: two sweeps
swapping models on one cluster would deploy over each other), and which Serve apps a phased
sweep deployed (the next one may release them; apps deployed any other way are left alone).
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import contextmanager
from typing import Any
from collections.abc import Iterator

log = logging.getLogger(__name__)
_LOCK_KEY = b"masgrid:model-phases:owner"
_APPS_KEY = b"masgrid:model-phases:apps"
_NAMESPACE = "masgrid"


class PhasesBusy(RuntimeError):
    """Another live sweep is deploying models on this cluster."""


def _kv() -> Any:
    from ray.experimental import internal_kv

    return internal_kv


def _job() -> str:
    import ray

    return ray.get_runtime_context().get_job_id()


@contextmanager
def phase_lock() -> Iterator[None]:
    """Hold the cluster's model-phase lock for this command's Ray job. A holder whose job has
    ended (killed, Ctrl-C) is taken over; a live one refuses this sweep in one line."""
    from masgrid._private.platform.sweeps.warm import job_alive

    kv, job = _kv(), _job()
    entry = json.dumps({"job": job, "since": time.time()}).encode()
    for _ in range(3):
        if not kv._internal_kv_put(_LOCK_KEY, entry, overwrite=False, namespace=_NAMESPACE):
            break  # not there before: ours now
        held = kv._internal_kv_get(_LOCK_KEY, namespace=_NAMESPACE)
        owner = json.loads(held) if held else None
        if owner is None:
            continue
        if owner["job"] == job:
            break
        if job_alive(owner["job"]):
            since = time.strftime("%H:%M:%S", time.localtime(owner.get("since", 0)))
            raise PhasesBusy(f"another sweep (Ray job {owner['job']}, since {since}) is deploying models on this "
                             "cluster; two sweeps swapping models would deploy over each other. Wait for it to end, "
                             "or run this sweep on another cluster")
        log.warning("masgrid: taking over the model phases of ended job %s", owner["job"])
        kv._internal_kv_put(_LOCK_KEY, entry, overwrite=True, namespace=_NAMESPACE)
        break
    else:
        raise PhasesBusy("could not take the cluster's model-phase lock")
    try:
        yield
    finally:
        held = kv._internal_kv_get(_LOCK_KEY, namespace=_NAMESPACE)
        if held and json.loads(held).get("job") == job:
            kv._internal_kv_del(_LOCK_KEY, namespace=_NAMESPACE)


def managed_apps() -> dict[str, dict[str, Any]]:
    """app -> {fingerprint, state (running | asleep), model} of the apps phased sweeps deployed."""
    raw = _kv()._internal_kv_get(_APPS_KEY, namespace=_NAMESPACE)
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def remember_app(app: str, fingerprint: str, model: str, state: str = "running",
                 bundles: list[dict[str, float]] | None = None, ingress: dict[str, float] | None = None) -> None:
    """Note an app a phased sweep deploys, with what one replica and its ingress reserve (a later
    sweep counts those as free when it may release the app)."""
    data = managed_apps()
    data[app] = {"fingerprint": fingerprint, "model": model, "state": state, "bundles": bundles or [],
                 "ingress": ingress or {}}
    _kv()._internal_kv_put(_APPS_KEY, json.dumps(data).encode(), overwrite=True, namespace=_NAMESPACE)


def forget_app(app: str) -> None:
    data = managed_apps()
    if data.pop(app, None) is not None:
        _kv()._internal_kv_put(_APPS_KEY, json.dumps(data).encode(), overwrite=True, namespace=_NAMESPACE)
