"""Shared set-up for the SILO task tests."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from masgrid.families.silo.isolated import FloorCell, floor_cell

#: seeds per (task, N) for the isolated floor in tests; the documented table uses 20
#: (benchmarks/bench_silo_isolated.py)
FLOOR_TEST_SEEDS = 8


@pytest.fixture(scope="session")
def silent_floor() -> Callable[[str, int], FloorCell]:
    """floor_cell(task, N) on the test seeds, computed once per session.

    The S side (test_isolated_floor.py) and the P side (test_level1/2/3.py) check the same
    cells; computing each once saves about a minute of the suite (III-23 at N=100 alone
    takes ~20 s). floor_cell is deterministic in (task, N, seeds), so sharing loses nothing."""
    return functools.cache(lambda task_id, n: floor_cell(task_id, n, seeds=FLOOR_TEST_SEEDS))
