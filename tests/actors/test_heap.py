import gc
import weakref

import ray

from masgrid._private.actors import heap


class Cycle:
    def __init__(self) -> None:
        self.me = self


@ray.remote(num_cpus=0)
class Worker:
    def settle(self) -> tuple[bool, int]:
        return heap.settle(), gc.get_freeze_count()

    def garbage_after_settle(self) -> tuple[bool, bool]:
        """A cycle dropped before a later settle() is collected, not frozen; a live object is frozen."""
        dropped, kept = Cycle(), Cycle()
        ref = weakref.ref(dropped)
        self.kept = kept
        del dropped
        heap.settle()
        return ref() is None, not any(o is kept for o in gc.get_objects())  # permanent generation


def test_settle_freezes_inside_an_actor_and_collects_before_refreezing(ray_session) -> None:
    worker = Worker.remote()
    froze, frozen = ray.get(worker.settle.remote())
    assert froze and frozen > 10_000  # the imports' objects
    collected, kept_frozen = ray.get(worker.garbage_after_settle.remote())
    assert collected and kept_frozen
    ray.kill(worker)


def test_settle_leaves_a_process_that_is_not_an_actor_alone() -> None:
    before = gc.get_freeze_count()
    assert heap.settle() is False and gc.get_freeze_count() == before


def test_runs_in_one_process_are_counted_and_nothing_is_frozen_beside_another():
    from masgrid._private.actors import heap

    assert heap.runs_here() == 0
    with heap.run_in_process():
        with heap.run_in_process():
            assert heap.runs_here() == 2
            assert heap.settle() is False  # a second run executes here: freezing would keep its cycles
        assert heap.runs_here() == 1
    assert heap.runs_here() == 0
