"""Keep CPython's full garbage collections out of the rounds of long-lived actors.

A masgrid actor process holds about 175,000 objects once Ray, pyarrow, pandas, pydantic and
the HTTP stack are imported; a full (generation 2) collection walks all of them, about
0.1 s of CPU. Actors of concurrent runs do the same work, so they reach the collection
threshold together: in 20 concurrent runs on 2 cores, 20 processes collected at the same
moment, 0.3 to 2.7 s each in wall time, and that batch's ideal/actual fell from about 0.9
to 0.8 (docs/serving.md, Concurrency). `gc.freeze()` moves every live object into the
permanent generation, which later collections skip.
"""

from __future__ import annotations

import gc

_frozen_once = False


def settle() -> bool:
    """Freeze what is alive now, inside a Ray actor process; elsewhere (a local run in the
    user's process, the tests) do nothing. Returns whether it froze.

    Called when a component is configured for a run, and when a pooled one finishes a run,
    after the run's state has been dropped. The first call only freezes (what the imports
    left is live, and a full collection would cost the 0.1 s this avoids); later calls
    collect first, so cyclic garbage of earlier runs is freed rather than frozen.
    """
    global _frozen_once
    if not _in_actor():
        return False
    if _frozen_once:
        gc.collect()  # walks only what was made since the last freeze
    gc.freeze()
    _frozen_once = True
    return True


def _in_actor() -> bool:
    import ray

    return ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None
