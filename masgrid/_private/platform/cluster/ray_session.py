"""This process's connection to Ray: join the cluster a command names or a running local head,
else start a local Ray; and the namespace masgrid's named actors live in."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: the namespace of masgrid's named actors (recorders, the host pool, run drivers)
NAMESPACE = "masgrid"
#: how this process connected to Ray (ensure_ray)
_SESSION: dict[str, Any] = {}


def ensure_ray(address: str | None = None, **init_kwargs: Any) -> None:
    """Join the cluster `address` names (execution.ray_address), else RAY_ADDRESS, else a
    running local head (`masgrid up`, `ray start --head`); start a local Ray only when there
    is none (platform/cluster/head.py)."""
    import ray

    from masgrid._private.platform.cluster.head import resolve_address

    if ray.is_initialized():
        return
    address, joined = resolve_address(address)
    kwargs: dict[str, Any] = {"namespace": NAMESPACE, "log_to_driver": True}
    if os.environ.get("MASGRID_CONF"):  # drivers must render the prompts the run ids were computed from
        kwargs["runtime_env"] = {"env_vars": {"MASGRID_CONF": os.environ["MASGRID_CONF"]}}
    if joined:
        _pin_code(kwargs)
    kwargs.update(init_kwargs)
    ray.init(address=address, **kwargs)
    _SESSION["joined"] = joined


def _pin_code(kwargs: dict[str, Any]) -> None:
    """Workers of a cluster this process joins start with the head's environment, whose
    PYTHONPATH may name another checkout (a head started elsewhere, an older tree): put this
    process's masgrid first on theirs, so they run the code this command validated and the
    warm actors' fingerprint describes. An installed masgrid (site-packages) is left alone."""
    import masgrid

    root = Path(masgrid.__file__).resolve().parent.parent
    if root.name in ("site-packages", "dist-packages"):
        return
    env_vars = kwargs.setdefault("runtime_env", {}).setdefault("env_vars", {})
    env_vars["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))


def joined_cluster() -> bool:
    """Whether this process joined a Ray cluster that outlives it (ensure_ray)."""
    return bool(_SESSION.get("joined"))
