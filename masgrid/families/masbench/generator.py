"""INITSORTTASK (MAS-Bench Algorithm 1) and the inversion rate of eq. (2)-(3)."""

from __future__ import annotations

import random
from math import comb

MODES = ("asc", "near_asc", "random", "near_desc", "desc")
NEAR_FRACTION = 0.2


def disorder_fraction(mode: str) -> float:
    if mode == "random":
        return 1.0
    if mode.startswith("near"):
        return NEAR_FRACTION
    return 0.0


def partial_shuffle(values: list[int], fraction: float, rng: random.Random) -> list[int]:
    """Permute floor(fraction * len) randomly chosen positions.

    With fraction 1 the whole list is shuffled. Otherwise the chosen positions are
    rotated along one random cycle (Sattolo), so every chosen position receives a
    different value: exactly floor(fraction * len) positions change whenever that count
    is at least 2 (a single chosen position cannot be permuted and stays put).
    """
    out = list(values)
    if fraction >= 1.0:
        rng.shuffle(out)
        return out
    m = int(fraction * len(out))
    if m < 2:
        return out
    positions = rng.sample(range(len(out)), m)
    perm = list(range(m))
    for i in range(m - 1, 0, -1):  # Sattolo's algorithm: a uniformly random m-cycle
        j = rng.randrange(i)
        perm[i], perm[j] = perm[j], perm[i]
    values = [out[p] for p in positions]
    for i, p in enumerate(positions):
        out[p] = values[perm[i]]
    return out


def inversions(values: list[int]) -> int:
    """Inv(l) by merge sort, O(n log n)."""

    def sort_count(seq: list[int]) -> tuple[list[int], int]:
        if len(seq) <= 1:
            return seq, 0
        mid = len(seq) // 2
        left, a = sort_count(seq[:mid])
        right, b = sort_count(seq[mid:])
        merged, count, i, j = [], a + b, 0, 0
        while i < len(left) and j < len(right):
            if left[i] <= right[j]:
                merged.append(left[i])
                i += 1
            else:
                merged.append(right[j])
                count += len(left) - i
                j += 1
        merged += left[i:] + right[j:]
        return merged, count

    return sort_count(list(values))[1]


def inversion_rate(values: list[int]) -> float:
    """rho(l) = Inv(l) / C(|l|, 2); 0 for lists shorter than two."""
    pairs = comb(len(values), 2)
    return inversions(values) / pairs if pairs else 0.0


def init_sort_task(n: int, k: int, mode: str, seed: int) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """(xs, expected, global input B') for N agents holding K distinct integers each."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if n < 1 or k < 1:
        raise ValueError("agents and k must be positive")
    rng = random.Random(f"masbench:{n}:{k}:{mode}:{seed}")
    total = n * k
    pool = rng.sample(range(10 * total), total)
    ans = sorted(pool)
    base = sorted(pool, reverse=mode in ("desc", "near_desc"))
    shuffled = partial_shuffle(base, disorder_fraction(mode), rng)
    xs = [shuffled[i * k:(i + 1) * k] for i in range(n)]
    expected = [ans[i * k:(i + 1) * k] for i in range(n)]
    return xs, expected, shuffled
