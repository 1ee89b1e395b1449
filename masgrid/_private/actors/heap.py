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
from collections.abc import Iterator
from contextlib import contextmanager

_frozen_once = False
#: runs executing in this process now: a driver worker may execute several at once
#: (execution.runs_per_driver), and freezing then would also freeze the other runs' live
#: objects, whose reference cycles would never be collected once those runs end
_runs_here = 0


@contextmanager
def run_in_process() -> Iterator[None]:
    """Count a run executing in this process while the block runs (see settle)."""
    global _runs_here
    _runs_here += 1
    try:
        yield
    finally:
        _runs_here -= 1


def runs_here() -> int:
    return _runs_here


def settle() -> bool:
    """Freeze what is alive now, inside a Ray actor process executing at most one run;
    elsewhere (a local run in the user's process, the tests, a driver packing several runs)
    do nothing. Returns whether it froze.

    Called when a component is configured for a run, and when a pooled one finishes a run,
    after the run's state has been dropped. The first call only freezes (what the imports
    left is live, and a full collection would cost the 0.1 s this avoids); later calls
    collect first, so cyclic garbage of earlier runs is freed rather than frozen.
    """
    global _frozen_once
    if _runs_here > 1 or not _in_actor():
        return False
    if _frozen_once:
        gc.collect()  # walks only what was made since the last freeze
    gc.freeze()
    _frozen_once = True
    return True


def _in_actor() -> bool:
    import ray

    return ray.is_initialized() and ray.get_runtime_context().get_actor_id() is not None
