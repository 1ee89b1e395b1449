import itertools

import pytest

from masgrid._private.envs.tasks import get_task
from masgrid.families.masbench.generator import MODES, init_sort_task, inversion_rate, inversions

SIZES = [(1, 1), (3, 5), (10, 10), (20, 10), (7, 3)]


def brute_inversions(values):
    return sum(1 for p, q in itertools.combinations(range(len(values)), 2) if values[p] > values[q])


@pytest.mark.parametrize("n,k", SIZES)
@pytest.mark.parametrize("mode", MODES)
def test_instance_shape_distinct_values_and_expected_slices(n, k, mode):
    xs, expected, flat = init_sort_task(n, k, mode, seed=3)
    assert len(xs) == len(expected) == n and all(len(x) == len(e) == k for x, e in zip(xs, expected))
    values = [v for x in xs for v in x]
    assert len(set(values)) == n * k and all(0 <= v < 10 * n * k for v in values)
    assert [v for e in expected for v in e] == sorted(values)
    assert values == flat


@pytest.mark.parametrize("n,k", [(3, 5), (10, 10), (20, 10)])
def test_rho_is_zero_for_asc_and_one_for_desc(n, k):
    assert inversion_rate(init_sort_task(n, k, "asc", 0)[2]) == 0.0
    assert inversion_rate(init_sort_task(n, k, "desc", 0)[2]) == 1.0


@pytest.mark.parametrize("n,k", [(2, 5), (3, 5), (10, 10), (20, 10), (4, 4)])
@pytest.mark.parametrize("mode,reverse", [("near_asc", False), ("near_desc", True)])
def test_near_families_permute_exactly_a_fifth_of_positions(n, k, mode, reverse):
    for seed in range(5):
        _, _, flat = init_sort_task(n, k, mode, seed)
        base = sorted(flat, reverse=reverse)
        moved = sum(a != b for a, b in zip(flat, base))
        assert moved == int(0.2 * n * k)


def test_random_family_is_a_real_shuffle():
    rhos = [inversion_rate(init_sort_task(10, 10, "random", s)[2]) for s in range(5)]
    assert all(0.3 < r < 0.7 for r in rhos)


def test_inversions_match_brute_force():
    for seed in range(4):
        _, _, flat = init_sort_task(5, 6, "random", seed)
        assert inversions(flat) == brute_inversions(flat)


def test_seeds_reproduce_and_differ():
    a = get_task("sorting").generate(10, 10, 1, mode="random")
    b = get_task("sorting").generate(10, 10, 1, mode="random")
    c = get_task("sorting").generate(10, 10, 2, mode="random")
    assert a == b and a.inputs != c.inputs
    assert a.meta["rho"] == pytest.approx(inversion_rate([v for x in a.inputs for v in x]))


def test_invalid_mode_and_sizes():
    with pytest.raises(ValueError, match="mode"):
        init_sort_task(2, 2, "sideways", 0)
    with pytest.raises(ValueError):
        init_sort_task(0, 2, "asc", 0)
