"""Waiting for Ray's resource view to catch up: after an actor or a placement group is gone,
what `available_resources_per_node` reports lags behind for a moment (longer on a saturated
machine), and a plan read from it then sees a node still short of what was released."""

from __future__ import annotations

import time


def wait_resources_free(timeout_s: float = 30.0, keys: tuple[str, ...] = ("CPU", "GPU")) -> float:
    """Seconds until every alive node's available `keys` equal its totals (nothing reserved),
    at most `timeout_s`; the caller's own checks then say what is still held."""
    import ray
    from ray._private import state  # per-node available resources: no public API in Ray 2.60

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        available = state.available_resources_per_node()
        if all(available.get(n["NodeID"], {}).get(key, 0.0) == n["Resources"].get(key, 0.0)
               for n in ray.nodes() if n["Alive"] for key in keys):
            break
        time.sleep(0.2)
    return time.monotonic() - t0
