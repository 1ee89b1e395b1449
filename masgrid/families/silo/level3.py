"""SILO-Bench Level III (global shuffle): tasks III-21 .. III-30 of Table 9.

Every agent must submit the complete global answer, so each task's answer depends on
data held by every other agent. Each generator keeps the per-agent workload constant
(k items per agent) and scales the global input, and graph sizes, with n. Numeric tasks
have integer answers where the mathematics allows; otherwise values are rounded half-up
to a fixed number of decimals and checked with a stated tolerance.

The exact semantics chosen where the paper's one-line description is silent are listed
in docs/tasks/silo-level3.md; the comments next to each class summarise them.

No-communication floor (issue 13): every spec says what an agent answers from its own
shard alone (`isolated_answer`, its best silent guess), the chance that such answers are
right (`chance_sr`, `ceiling`) and the largest mean P they may reach (`pcs_ceiling`). The
generators are built so that this floor is the agent's own share of the answer plus the
chance level of the answer space, never a guessable regularity of the data.
"""

from __future__ import annotations

import ast
import bisect
import collections
import itertools
import json
import random
import re
from fractions import Fraction
from functools import lru_cache
from math import comb
from typing import Any

from masgrid.families.silo.spec import SiloData, SiloSpec, lcs_ratio, silo_spec
from masgrid.sdk.topology import distances, neighbor_lists

# --------------------------------------------------------------------------------------
# Parsing helpers (agent-readable ValueErrors)
# --------------------------------------------------------------------------------------
_FENCE = re.compile(r"^```[^\n]*\n?(.*?)\n?```$", re.DOTALL)
_NUMBER_TOKEN = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")


def _load(raw: str, example: str) -> Any:
    """Read a submitted value: JSON first, then a Python literal, then bare numbers.

    Tolerates a surrounding code fence, `submit_result(...)`-style parentheses and a
    leading `answer:` label, because models add those often.
    """
    if not isinstance(raw, str):
        raise ValueError(f"the answer must be text; write it like {example}")
    text = raw.strip()
    fence = _FENCE.match(text)
    if fence:
        text = fence.group(1).strip()
    text = re.sub(r"^(answer|result)\s*[:=]\s*", "", text, flags=re.IGNORECASE)
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    if not text:
        raise ValueError(f"the answer is empty; write it like {example}")
    for reader, errors in ((json.loads, (ValueError, RecursionError)),
                           (ast.literal_eval, (ValueError, SyntaxError, TypeError, MemoryError, RecursionError))):
        try:
            value = reader(text)
        except errors:
            continue
        if isinstance(value, dict) and len(value) == 1 and str(next(iter(value))).lower() in ("answer", "result"):
            value = next(iter(value.values()))  # {"answer": ...} wrapper
        return value
    tokens = [t for t in re.split(r"[\s,]+", text) if t]
    if tokens and all(_NUMBER_TOKEN.match(t) for t in tokens):
        values = [float(t) if ("." in t) else int(t) for t in tokens]
        return values[0] if len(values) == 1 else values
    raise ValueError(f"could not read the answer {text[:60]!r}; write it like {example}")


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return int(value)
    raise ValueError(f"{what} must be an integer, got {str(value)[:40]!r}")


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{what} must be a finite number")
        return float(value)
    if isinstance(value, str):
        try:
            return _number(float(value), what)
        except ValueError:
            pass
    raise ValueError(f"{what} must be a number, got {str(value)[:40]!r}")


def _list(value: Any, what: str, example: str) -> list[Any]:
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list, like {example}")
    return value


def _int_list(value: Any, what: str, example: str) -> list[int]:
    items = _list(value, what, example)
    if all(type(v) is int for v in items):  # the common case, fast for answers of 10^4 values
        return list(items)
    return [_int(v, f"element {i} of {what}") for i, v in enumerate(items)]


def _indexed(value: Any, length: int, what: str, example: str) -> list[Any]:
    """A per-index vector given as a list of `length` entries or a {index: value} mapping."""
    if isinstance(value, dict):
        out: list[Any] = [None] * length
        for key, v in value.items():
            idx = _int(key, f"key {key!r} of {what}")
            if not 0 <= idx < length:
                raise ValueError(f"{what}: index {idx} is outside 0..{length - 1}")
            out[idx] = v
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            raise ValueError(f"{what}: entries missing for {missing[:10]} (need all of 0..{length - 1})")
        return out
    items = _list(value, what, example)
    if len(items) != length:
        raise ValueError(f"{what} must have exactly {length} entries (one per index 0..{length - 1}), "
                         f"got {len(items)}")
    return items


def _int_vector(raw: str, length: int, what: str, entry: str, example: str,
                lo: int | None = None, hi: int | None = None, bounds: str = "") -> list[int]:
    """A per-index integer vector (list or mapping) with optional inclusive bounds."""
    items = _indexed(_load(raw, example), length, what, example)
    out = [_int(v, f"{what}: entry of {entry} {i}") for i, v in enumerate(items)]
    for i, v in enumerate(out):
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise ValueError(f"{bounds}; {entry} {i} has {v}")
    return out


# --------------------------------------------------------------------------------------
# Quality helpers (section 3.3, Level III)
# --------------------------------------------------------------------------------------
def _lcs_len(answer: list[Any], expected: list[Any]) -> int:
    """Longest common subsequence length; O(L log L) when the truth has distinct items."""
    try:
        position = {e: i for i, e in enumerate(expected)}
        distinct = len(position) == len(expected)
    except TypeError:
        distinct = False
    if distinct:
        tails: list[int] = []  # longest strictly increasing run of truth positions
        for a in answer:
            try:
                p = position.get(a)
            except TypeError:
                p = None
            if p is None:
                continue
            j = bisect.bisect_left(tails, p)
            if j == len(tails):
                tails.append(p)
            else:
                tails[j] = p
        return len(tails)
    return round(lcs_ratio(answer, expected) * len(expected))


def ordered_quality(answer: Any, expected: list[Any]) -> float:
    """Longest correctly ordered subsequence over the longer of answer and truth.

    Dividing by the longer length (not only the truth's) keeps padded or repeated
    answers from scoring 1.
    """
    if not isinstance(answer, list):
        return 0.0
    if not expected:
        return float(answer == expected)
    return _lcs_len(answer, expected) / max(len(answer), len(expected))


def indexed_quality(answer: Any, expected: list[Any], tol: float = 0.0) -> float:
    """Fraction of indices whose value is right: LCS over the canonical (index, value) pairs.

    For a per-index vector the canonical ordered form is the list of (index, value)
    pairs; its longest common subsequence with the truth is the number of matching pairs.
    """
    if not isinstance(answer, list) or len(answer) != len(expected) or not expected:
        return float(answer == expected) if isinstance(answer, list) else 0.0
    return sum(_close(a, e, tol) for a, e in zip(answer, expected)) / len(expected)


def _close(a: Any, e: Any, tol: float) -> bool:
    if tol and isinstance(a, (int, float)) and isinstance(e, (int, float)):
        return abs(a - e) <= tol + 1e-9
    if tol and isinstance(a, list) and isinstance(e, list) and len(a) == len(e):
        return all(_close(x, y, tol) for x, y in zip(a, e))
    return a == e


def round_half_up(value: Fraction, decimals: int) -> float:
    """Exact half-up rounding of a rational, returned as the nearest float."""
    scale = 10**decimals
    scaled = value * scale
    floor = scaled.numerator // scaled.denominator
    if scaled - floor >= Fraction(1, 2):
        floor += 1
    return float(Fraction(floor, scale))


def _need_k(task_id: str, k: int, minimum: int) -> None:
    if k < minimum:
        raise ValueError(f"k: task {task_id} needs k >= {minimum}, got {k}")


def _chunks(items: list[Any], n: int, k: int) -> list[list[Any]]:
    return [items[i * k:(i + 1) * k] for i in range(n)]


#: data values of III-21/22/26 are drawn from 1..VALUE_MAX at every N: the range is wide
#: enough that guessing values one has not seen almost never hits (at N = 100 and the
#: default k, under 1 % of the range is data), and six-digit values keep the per-agent
#: token count of Table 6 at a moderate k.
VALUE_MAX = 999_999


def _distinct_ints(count: int, rng: random.Random) -> list[int]:
    """`count` distinct integers from 1..VALUE_MAX, in random order."""
    if count > VALUE_MAX // 10:
        raise ValueError(f"k: {count} values in total is too many for the value range 1..{VALUE_MAX}")
    return rng.sample(range(1, VALUE_MAX + 1), count)


def _padded_guess(own: set[int], total: int) -> list[int]:
    """A silent agent's best ascending list: its own values plus evenly spaced guesses.

    The guesses fill the answer up to `total` entries; each is a data value only with the
    probability that a random value of the range is one (total / VALUE_MAX).
    """
    need = max(0, total - len(own))
    guesses = {round((i + 1) * VALUE_MAX / (need + 1)) for i in range(need)}
    return sorted(own | guesses)


def _same_for_all(n: int, answer: Any) -> list[Any]:
    return [answer for _ in range(n)]


# --------------------------------------------------------------------------------------
# Shared behaviour of the Level III specs
# --------------------------------------------------------------------------------------
class _Level3(SiloSpec):
    """Level III defaults: the classical baseline shares the raw shard with everyone.

    Every Level III answer is the complete global object, so a silent agent (one that
    answers from its own shard alone, `isolated_answer`) is almost never right: each spec
    states `chance_sr` from the size of its answer space, and `pcs_ceiling(n)`, the largest
    mean P a silent agent may reach (docs/tasks/silo-level3.md argues both per task).
    """

    level = 3
    #: every agent naming the complete global answer without the other shards: below 1e-4
    #: at N >= 2 for every Level III task, and an agent alone is right with a chance below
    #: 1e-4 too except where `ceiling(n)` says otherwise (III-22, III-29); 0.01 is stated.
    chance_sr = 0.01

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return shard

    def pcs_ceiling(self, n: int) -> float:
        """The largest mean P (partial correctness) that silent agents may reach at N = n."""
        raise NotImplementedError(f"{self.task_id} states no silent PCS ceiling")


class _OrderedAnswer(_Level3):
    """Answers that are one ordered sequence: q_i is the ordered-subsequence ratio."""

    def quality(self, answer: Any, expected: Any, data: SiloData) -> float:
        return ordered_quality(answer, expected)


class _IndexedAnswer(_Level3):
    """Answers that are per-index vectors: q_i is the share of right entries (within tolerance)."""

    def is_correct(self, answer: Any, expected: Any, data: SiloData) -> bool:
        return isinstance(answer, list) and self.quality(answer, expected, data) == 1.0

    def quality(self, answer: Any, expected: Any, data: SiloData) -> float:
        return indexed_quality(answer, expected, self.tolerance)


# --------------------------------------------------------------------------------------
# III-21 Distributed Sort
# --------------------------------------------------------------------------------------
@silo_spec
class DistributedSort(_OrderedAnswer):
    """All n*k distinct integers (from 1..VALUE_MAX) in ascending order.

    Values are distinct so that "correctly ordered subsequence" is unambiguous and q_i
    is computed in O(L log L) at N = 100. A silent agent's own values, sorted, are a
    correctly ordered subsequence: its P floor is its share 1/n of the data.
    """

    task_id = "III-21"
    title = "Distributed Sort"
    default_k = 80
    _EXAMPLE = "[3, 17, 42, 108]"

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Own values (a correct subsequence of length k) padded with evenly spaced guesses."""
        return _padded_guess(set(shard), public["total"])

    def pcs_ceiling(self, n: int) -> float:
        """Own share 1/n of the sorted list, plus guesses that hit (< 1 % of the range is data)."""
        return 1 / n + 0.02

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 1)
        values = _distinct_ints(n * k, rng)
        return SiloData(shards=_chunks(values, n, k), expected=_same_for_all(n, sorted(values)),
                        public={"total": n * k})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[int]:
        return _int_list(_load(raw, self._EXAMPLE), "the sorted list", self._EXAMPLE)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sorted(shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return sorted(v for p in payloads.values() for v in p)


# --------------------------------------------------------------------------------------
# III-22 Median of Medians
# --------------------------------------------------------------------------------------
@silo_spec
class MedianOfMedians(_Level3):
    """The exact (lower) median of all n*k distinct integers (from 1..VALUE_MAX).

    With m values sorted ascending, the answer is the value at 0-based position
    (m - 1) // 2, so it is always one of the data values (m may be even). q_i follows
    section 3.3 literally: the longest correctly ordered subsequence of a one-element
    answer is 1 when it is the median and 0 otherwise, so P = S here. (An earlier
    rank-distance credit gave a silent agent about 72 % for its local median: sampling, not
    coordination.)
    """

    task_id = "III-22"
    title = "Median of Medians"
    default_k = 120
    _EXAMPLE = "5731"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 1)
        values = _distinct_ints(n * k, rng)
        ordered = sorted(values)
        return SiloData(shards=_chunks(values, n, k), expected=_same_for_all(n, ordered[(n * k - 1) // 2]),
                        public={"total": n * k})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> int:
        value = _load(raw, self._EXAMPLE)
        if isinstance(value, list):
            if len(value) != 1:
                raise ValueError(f"submit a single integer (the median), like {self._EXAMPLE}")
            value = value[0]
        return _int(value, "the median")

    def quality(self, answer: Any, expected: Any, data: SiloData) -> float:
        return float(self.is_correct(answer, expected, data))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sorted(shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        merged = sorted(v for p in payloads.values() for v in p)
        return merged[(len(merged) - 1) // 2]

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """The own value most likely to be the global median (the hypergeometric mode)."""
        j, _ = _median_pick(public["total"], len(shard))
        return sorted(shard)[j]

    def ceiling(self, n: int) -> float:
        """Only the holder of the median can name it (an unseen value is a 1-in-10^6 guess),
        and its best pick is right with probability p(m, k): mean S <= p / n. We allow
        (p + 0.25) / n, the margin covering the noise of few-seed estimates."""
        _, p = _median_pick(n * self.default_k, self.default_k)
        return min(1.0, p + 0.25) / n

    def pcs_ceiling(self, n: int) -> float:
        return self.ceiling(n)


def _median_pick(m: int, k: int) -> tuple[int, float]:
    """(j, p): the local rank j at which an agent holding k of m distinct values most likely
    holds the global lower median, and the probability p that this pick is the median given
    that the agent holds it. Given it does, the number of its other k - 1 values below the
    median is hypergeometric (k - 1 draws from m - 1 values, t = (m - 1) // 2 of them below)."""
    t = (m - 1) // 2
    weights = [comb(t, j) * comb(m - 1 - t, k - 1 - j) for j in range(k)]
    j = max(range(k), key=weights.__getitem__)
    return j, weights[j] / comb(m - 1, k - 1)


# --------------------------------------------------------------------------------------
# Graph generation shared by III-23 and III-24
# --------------------------------------------------------------------------------------
def _random_tree(nodes: list[int], rng: random.Random) -> list[tuple[int, int]]:
    """Random recursive tree: each node attaches to a uniformly chosen earlier node."""
    return [(nodes[rng.randrange(i)], nodes[i]) for i in range(1, len(nodes))]


def _add_extra_edges(groups: list[list[int]], edges: list[tuple[int, int]], extra: int,
                     rng: random.Random) -> list[tuple[int, int]]:
    """Add `extra` distinct undirected edges inside the given node groups."""
    present = {frozenset(e) for e in edges}
    capacity = sum(len(g) * (len(g) - 1) // 2 for g in groups) - len(present)
    if extra > capacity:
        raise ValueError(f"cannot place {extra} more distinct edges (capacity {capacity})")
    weights = [len(g) * (len(g) - 1) // 2 for g in groups]
    eligible = [g for g, w in zip(groups, weights) if w]
    eligible_w = [w for w in weights if w]
    out = list(edges)
    while extra:
        group = rng.choices(eligible, weights=eligible_w)[0]
        u, v = rng.sample(group, 2)
        if frozenset((u, v)) in present:
            continue
        present.add(frozenset((u, v)))
        out.append((u, v))
        extra -= 1
    return out


def _deal_edges(edges: list[tuple[int, int]], n: int, k: int, rng: random.Random) -> list[list[list[int]]]:
    """Shuffle edges and their orientation, then deal k to each agent."""
    edges = [(v, u) if rng.random() < 0.5 else (u, v) for u, v in edges]
    rng.shuffle(edges)
    return _chunks([[u, v] for u, v in edges], n, k)


def _edges_of(payloads: dict[int, Any]) -> list[tuple[int, int]]:
    return [(int(u), int(v)) for p in payloads.values() for u, v in p]


# --------------------------------------------------------------------------------------
# III-23 Graph Components
# --------------------------------------------------------------------------------------
@silo_spec
class GraphComponents(_OrderedAnswer):
    """Connected components of an undirected graph with V = n*k nodes and n*k edges.

    Components are planted: nodes are split into about V/6 groups (singletons possible),
    each group gets a random spanning tree, and the few remaining edges are extra edges
    inside groups, so almost every edge is needed. The answer lists every component
    (isolated nodes included) as a sorted list, components ordered by smallest node.
    q_i: LCS over that canonical list of components, i.e. the share of exactly right
    components (over the larger of the two component counts).
    """

    task_id = "III-23"
    title = "Graph Components"
    default_k = 40
    _EXAMPLE = "[[0, 3, 5], [1], [2, 4]]"

    def pcs_ceiling(self, n: int) -> float:
        """True singletons (about 1/6 of the components) are right in a silent answer that
        lists every unseen node alone, but that answer is about 6 times too long: ~1/36.
        Components all of whose edges the agent holds (mostly two-node ones, held with
        probability 1/n) add up to about 0.1/n."""
        return 0.04 + 0.15 / n

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 3)
        n_edges = n * k
        n_nodes = n_edges
        n_groups = min(n_nodes, max(2, round(n_nodes / 6)))
        while True:
            order = list(range(n_nodes))
            rng.shuffle(order)
            cuts = sorted(rng.sample(range(1, n_nodes), n_groups - 1))
            bounds = [0, *cuts, n_nodes]
            groups = [order[a:b] for a, b in zip(bounds, bounds[1:])]
            tree = [e for g in groups for e in _random_tree(g, rng)]
            extra = n_edges - len(tree)
            capacity = sum(len(g) * (len(g) - 1) // 2 for g in groups) - len(tree)
            if extra <= capacity:
                break
            # too many tiny groups to hold the remaining edges: redraw with one group fewer
            n_groups = max(1, n_groups - 1)
        edges = _add_extra_edges(groups, tree, extra, rng)
        truth = _canonical_components(groups)
        return SiloData(shards=_deal_edges(edges, n, k, rng), expected=_same_for_all(n, truth),
                        public={"n_nodes": n_nodes})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[list[int]]:
        n_nodes = data.public["n_nodes"]
        value = _list(_load(raw, self._EXAMPLE), "the list of components", self._EXAMPLE)
        if all(type(c) is list for c in value) and all(type(v) is int for c in value for v in c):
            comps = value  # the common case, checked in one pass (answers reach 10^4 nodes)
        else:
            comps = [_int_list(comp, f"component {i}", self._EXAMPLE) for i, comp in enumerate(value)]
        empty = next((i for i, c in enumerate(comps) if not c), None)
        if empty is not None:
            raise ValueError(f"component {empty} is empty; every component has at least one node")
        nodes = [v for c in comps for v in c]
        seen = set(nodes)
        wrong = [v for v in (min(seen), max(seen)) if not 0 <= v < n_nodes] if seen else []
        if wrong:
            raise ValueError(f"node {wrong[0]} does not exist (nodes are 0..{n_nodes - 1})")
        if len(seen) < len(nodes):
            again = next(v for v, c in collections.Counter(nodes).items() if c > 1)
            raise ValueError(f"node {again} appears more than once; each node belongs to exactly one component")
        if len(seen) < n_nodes:
            missing = sorted(set(range(n_nodes)) - seen)
            raise ValueError(f"every node 0..{n_nodes - 1} must appear in exactly one component "
                             f"(isolated nodes as [v]); missing {missing[:10]}")
        return _canonical_components(comps)

    def quality(self, answer: Any, expected: Any, data: SiloData) -> float:
        if not isinstance(answer, list):
            return 0.0
        return ordered_quality([tuple(c) for c in answer], [tuple(c) for c in expected])

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Components of the own edges; every node the agent sees no edge at stands alone.

        (The classical solve on the own edges gives the same answer; this builds it in one
        pass over the nodes, since the floor runs it for every agent of every instance.)"""
        touched = sorted({int(v) for e in shard for v in e})
        index = {v: i for i, v in enumerate(touched)}
        relabelled = [[index[int(u)], index[int(v)]] for u, v in shard]
        local = {touched[c[0]]: [touched[i] for i in c]
                 for c in self.solve(agent, 1, {agent: relabelled}, {"n_nodes": len(touched)})}
        return [local[v] if v in local else [v] for v in range(public["n_nodes"]) if v in local or v not in index]

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        parent = list(range(public["n_nodes"]))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for u, v in _edges_of(payloads):
            ru, rv = find(u), find(v)
            if ru != rv:
                parent[max(ru, rv)] = min(ru, rv)
        groups: dict[int, list[int]] = {}
        for v in range(public["n_nodes"]):
            groups.setdefault(find(v), []).append(v)
        return _canonical_components(list(groups.values()))


def _canonical_components(groups: list[list[int]]) -> list[list[int]]:
    return sorted((sorted(g) if len(g) > 1 else list(g) for g in groups), key=lambda c: c[0])


# --------------------------------------------------------------------------------------
# III-24 BFS Distance
# --------------------------------------------------------------------------------------
@silo_spec
class BFSDistance(_IndexedAnswer):
    """Hop distance from node 0 to every node of an undirected graph; -1 if unreachable.

    V = max(4, n*k - n*k // 8) nodes and n*k edges. The reachable part is layered: its
    nodes get levels 1..D (D = min(30, about half of them), every level used, the rest
    uniform), each node is joined to a random node one level up, and the few remaining
    edges join nodes of equal or adjacent levels, so a node's distance is exactly its
    level and the distances spread evenly over D values (a silent guess of one distance
    is right for about 1/D of the nodes). max(2, V // 50) nodes (when V >= 10) form a
    separate tree that node 0 cannot reach. q_i: share of nodes whose distance is right
    (LCS over the canonical (node, distance) pairs).
    """

    task_id = "III-24"
    title = "BFS Distance"
    default_k = 50
    levels = 30
    _EXAMPLE = "[0, 1, 2, 1, -1, 3]"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 4)
        n_edges = n * k
        n_nodes = max(4, n_edges - n_edges // 8)
        others = list(range(1, n_nodes))
        rng.shuffle(others)  # labels say nothing about distance
        n_side = max(2, n_nodes // 50) if n_nodes >= 10 else 0
        side, reach = others[:n_side], others[n_side:]
        depth = self._depth(len(reach))
        layer = [*range(1, depth + 1), *(rng.randint(1, depth) for _ in range(len(reach) - depth))]
        by_level: list[list[int]] = [[0]] + [[] for _ in range(depth)]
        for v, lv in zip(reach, layer):
            by_level[lv].append(v)
        tree = [(rng.choice(by_level[lv - 1]), v) for lv in range(1, depth + 1) for v in by_level[lv]]
        if side:
            tree += _random_tree(side, rng)
        edges = _add_layer_edges(by_level, tree, n_edges - len(tree), rng)
        truth = _bfs(n_nodes, edges, 0)
        return SiloData(shards=_deal_edges(edges, n, k, rng), expected=_same_for_all(n, truth),
                        public={"n_nodes": n_nodes, "source": 0})

    def _depth(self, reachable: int) -> int:
        return max(1, min(self.levels, reachable // 2))

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[int]:
        return _int_vector(raw, data.public["n_nodes"], "the distance list", "node", self._EXAMPLE,
                           lo=-1, bounds="distances are >= 0, or -1 for unreachable nodes")

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return _bfs(public["n_nodes"], _edges_of(payloads), public["source"])

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Distances along own edges from the source; every other node gets the middle level."""
        dist = _bfs(public["n_nodes"], _edges_of({agent: shard}), public["source"])
        guess = (self._depth(public["n_nodes"]) + 1) // 2
        return [d if d >= 0 else guess for d in dist]

    def pcs_ceiling(self, n: int) -> float:
        """A constant guess hits one level, about 1/30 of the nodes; a silent agent knows a
        distance only where the whole path to the source is in its shard (level 1 with
        probability 1/n, level 2 with 1/n^2, ...: 1/(30(n-1)) of the nodes)."""
        return 0.06 + 0.1 / n


def _add_layer_edges(by_level: list[list[int]], edges: list[tuple[int, int]], extra: int,
                     rng: random.Random) -> list[tuple[int, int]]:
    """Add `extra` distinct edges between reachable nodes of equal or adjacent levels
    (such edges never shorten a path, so every distance stays the node's level)."""
    present = {frozenset(e) for e in edges}
    out = list(edges)
    if sum(map(len, by_level)) <= 60:  # small graphs: draw from the enumerated free pairs
        level = {v: lv for lv, nodes in enumerate(by_level) for v in nodes}
        free = [(u, v) for u in level for v in level
                if u < v and abs(level[u] - level[v]) <= 1 and frozenset((u, v)) not in present]
        if extra > len(free):
            raise ValueError(f"cannot place {extra} more distinct edges between adjacent levels")
        return out + rng.sample(free, extra)
    while extra:
        lv = rng.randrange(1, len(by_level))
        v, u = rng.choice(by_level[lv]), rng.choice(by_level[lv] + by_level[lv - 1])
        if u == v or frozenset((u, v)) in present:
            continue
        present.add(frozenset((u, v)))
        out.append((u, v))
        extra -= 1
    return out


def _bfs(n_nodes: int, edges: list[tuple[int, int]], source: int) -> list[int]:
    return distances(neighbor_lists(n_nodes, edges), source)


# --------------------------------------------------------------------------------------
# III-25 K-Means Iteration
# --------------------------------------------------------------------------------------
@silo_spec
class KMeansIteration(_IndexedAnswer):
    """One Lloyd step from public initial centroids over n*k distributed 2-D points.

    K = 3 public starting centroids, chosen as K distinct data points (Forgy start);
    points have integer coordinates in [0, 100], drawn around 3 hidden centres. Assign every point to the centroid at the smallest squared Euclidean
    distance (the generator re-draws points with a tie, so no tie-break is needed), then
    move each centroid to the mean of its points; a centroid with no points stays where
    it is. The answer is the K new centroids in index order, coordinates rounded half-up
    to 2 decimals; a coordinate is right within 0.01 of the reference. q_i: share of
    centroids with both coordinates right.
    """

    task_id = "III-25"
    title = "K-Means Iteration"
    default_k = 50

    def pcs_ceiling(self, n: int) -> float:
        """A centroid is right only when the agent's own points give the global mean within
        0.01 in both coordinates: with about k/3 own points per cluster (spread +-20) that
        happens with probability far below 1e-3; 0.02 is the stated bound."""
        return 0.02
    n_clusters = 3
    decimals = 2
    tolerance = 0.01
    _EXAMPLE = "[[12.5, 40.0], [63.33, 8.67], [80.0, 75.25]]"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 1)
        hidden = [[rng.randint(10, 90), rng.randint(10, 90)] for _ in range(self.n_clusters)]

        def draw() -> list[int]:
            h = rng.choice(hidden)
            return [min(100, max(0, h[0] + rng.randint(-20, 20))), min(100, max(0, h[1] + rng.randint(-20, 20)))]

        points = [draw() for _ in range(n * k)]
        # Forgy start: K distinct data points, so every cluster keeps at least its seed
        cents: list[list[int]] = []
        for i in rng.sample(range(len(points)), len(points)):
            if len(cents) < self.n_clusters and points[i] not in cents:
                cents.append(list(points[i]))
        while len(cents) < self.n_clusters:  # tiny instances with fewer distinct points
            c = [rng.randint(0, 100), rng.randint(0, 100)]
            if c not in cents:
                cents.append(c)
        for i, p in enumerate(points):
            while _tied(p, cents):  # equidistant from two centroids: re-draw, the step stays unambiguous
                p = draw()
            points[i] = p
        truth = self._step(points, cents)
        return SiloData(shards=_chunks(points, n, k), expected=_same_for_all(n, truth),
                        public={"centroids": cents, "n_points": n * k, "decimals": self.decimals})

    def _step(self, points: list[list[int]], cents: list[list[int]]) -> list[list[float]]:
        sums = [[0, 0, 0] for _ in cents]
        for p in points:
            j = min(range(len(cents)), key=lambda i: (_sq(p, cents[i]), i))
            sums[j][0] += p[0]
            sums[j][1] += p[1]
            sums[j][2] += 1
        return self._means(sums, cents)

    def _means(self, sums: list[list[int]], cents: list[list[int]]) -> list[list[float]]:
        out = []
        for (sx, sy, cnt), c in zip(sums, cents):
            if cnt == 0:
                out.append([float(c[0]), float(c[1])])
            else:
                out.append([round_half_up(Fraction(sx, cnt), self.decimals),
                            round_half_up(Fraction(sy, cnt), self.decimals)])
        return out

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[list[float]]:
        value = _list(_load(raw, self._EXAMPLE), "the list of centroids", self._EXAMPLE)
        if len(value) != self.n_clusters:
            raise ValueError(f"submit exactly {self.n_clusters} centroids [x, y] in index order, got {len(value)}")
        out = []
        for i, c in enumerate(value):
            if isinstance(c, dict) and {"x", "y"} <= set(c):
                c = [c["x"], c["y"]]
            pair = _list(c, f"centroid {i}", "[12.5, 40.0]")
            if len(pair) != 2:
                raise ValueError(f"centroid {i} must be a pair [x, y]")
            out.append([_number(pair[0], f"x of centroid {i}"), _number(pair[1], f"y of centroid {i}")])
        return out

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        """Per-centroid partial sums [sum_x, sum_y, count] of the agent's own points."""
        cents = public["centroids"]
        sums = [[0, 0, 0] for _ in cents]
        for p in shard:
            j = min(range(len(cents)), key=lambda i: (_sq(p, cents[i]), i))
            sums[j] = [sums[j][0] + p[0], sums[j][1] + p[1], sums[j][2] + 1]
        return sums

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        cents = public["centroids"]
        total = [[0, 0, 0] for _ in cents]
        for p in payloads.values():
            for j, (sx, sy, cnt) in enumerate(p):
                total[j] = [total[j][0] + sx, total[j][1] + sy, total[j][2] + cnt]
        return self._means(total, cents)


def _tied(p: list[int], cents: list[list[int]]) -> bool:
    d = sorted(_sq(p, c) for c in cents)
    return len(d) > 1 and d[0] == d[1]


def _sq(p: list[int], c: list[int]) -> int:
    return (p[0] - c[0]) ** 2 + (p[1] - c[1]) ** 2


# --------------------------------------------------------------------------------------
# III-26 Global Distinct
# --------------------------------------------------------------------------------------
@silo_spec
class GlobalDistinct(_OrderedAnswer):
    """The distinct values of all n*k integers, ascending, each exactly once.

    Every agent has about 0.6 k "home" values, distinct across the whole group (from
    1..VALUE_MAX); the rest of its shard repeats values: about 0.3 k copies of its own
    home values and 0.1 k copies of other agents' home values. So duplicates occur inside
    and across shards (60 % of all values are distinct), while an agent's own distinct
    values stay about 1.17/n of the answer: a pool shared by all agents (the earlier
    design) let a silent agent list 76 % of the answer at N = 2. q_i: longest correctly
    ordered subsequence over the longer length.
    """

    task_id = "III-26"
    title = "Global Distinct"
    default_k = 80
    home_share, cross_share = 0.6, 0.1
    _EXAMPLE = "[4, 9, 23, 57]"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 1)
        n_home = max(1, round(self.home_share * k))
        n_cross = min(k - n_home, round(self.cross_share * k))
        homes = _chunks(_distinct_ints(n * n_home, rng), n, n_home)
        shards = []
        for i, home in enumerate(homes):
            others = [v for j, h in enumerate(homes) if j != i or n == 1 for v in h]
            shard = home + [rng.choice(others) for _ in range(n_cross)]
            shard += [rng.choice(home) for _ in range(k - len(shard))]
            rng.shuffle(shard)
            shards.append(shard)
        truth = sorted({v for h in homes for v in h})
        return SiloData(shards=shards, expected=_same_for_all(n, truth), public={"total": n * k})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[int]:
        return _int_list(_load(raw, self._EXAMPLE), "the list of distinct values", self._EXAMPLE)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sorted(set(shard))

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return sorted({v for p in payloads.values() for v in p})

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Own distinct values padded with guesses to the expected count, 0.6 of the total."""
        return _padded_guess(set(shard), round(self.home_share * public["total"]))

    def pcs_ceiling(self, n: int) -> float:
        """Own distinct values are (0.6 + 0.1) k of the 0.6 n k in the answer: 1.17/n; guesses
        of unseen values hit with probability < 1 %."""
        return (self.home_share + self.cross_share) / (self.home_share * n) + 0.02


# --------------------------------------------------------------------------------------
# III-27 Collaborative Filtering
# --------------------------------------------------------------------------------------
@silo_spec
class CollaborativeFiltering(_IndexedAnswer):
    """Best-matching item for every user by integer dot product of latent vectors.

    Each agent holds k//2 user vectors and k - k//2 item vectors (dimension 4); users and
    items are numbered globally, agent i holding the i-th consecutive block of each. User
    entries are integers in [-5, 5]; items are distinct integer vectors of one common
    squared length (90), so no item is a priori a better match than another (with free
    lengths the longest items win most users and a silent guess of one scores well).
    The answer lists, for users 0..U-1 in order, the id of the item with the largest dot
    product; the generator re-draws any user whose best score is tied, so the argmax is
    unique. q_i: share of users matched right.
    """

    task_id = "III-27"
    title = "Collab. Filtering"
    dim = 4
    item_norm2 = 90
    default_k = 16
    _EXAMPLE = "[7, 0, 12, 7, 3]"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 2)
        ku, ki = k // 2, k - k // 2
        pool = _item_pool(self.dim, self.item_norm2)
        if n * ki > len(pool):
            raise ValueError(f"k: task {self.task_id} has {len(pool)} distinct items; n * (k - k//2) = {n * ki}")
        items = [list(v) for v in rng.sample(pool, n * ki)]
        users: list[list[int]] = []
        truth: list[int] = []
        while len(users) < n * ku:
            u = [rng.randint(-5, 5) for _ in range(self.dim)]
            u0, u1, u2, u3 = u  # dim 4 unrolled: this loop scores every user against every item
            scores = [u0 * a + u1 * b + u2 * c + u3 * d for a, b, c, d in items]
            best = max(scores)
            if scores.count(best) > 1:
                continue  # tied best item: re-draw so the match is unique
            users.append(u)
            truth.append(scores.index(best))
        shards = [{"users": [[i * ku + j, users[i * ku + j]] for j in range(ku)],
                   "items": [[i * ki + j, items[i * ki + j]] for j in range(ki)]} for i in range(n)]
        return SiloData(shards=shards, expected=_same_for_all(n, truth),
                        public={"n_users": n * ku, "n_items": n * ki, "dim": self.dim})

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Own users get their best own item (globally best with probability 1/n); users it
        cannot see get its first item (right with probability 1/n_items)."""
        own_items = [(int(i), v) for i, v in shard["items"]]
        answer = [own_items[0][0]] * public["n_users"]
        for i, u in shard["users"]:
            answer[int(i)] = _best_item(u, own_items)
        return answer

    def pcs_ceiling(self, n: int) -> float:
        """Own users are 1/n of all, each matched right with probability 1/n: 1/n^2; every
        other guess is right with probability 1/n_items = 1/(n (k - k//2))."""
        return 1 / n**2 + 1 / (n * (self.default_k - self.default_k // 2)) + 0.03

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[int]:
        n_items = data.public["n_items"]
        return _int_vector(raw, data.public["n_users"], "the list of best items", "user", self._EXAMPLE,
                           lo=0, hi=n_items - 1, bounds=f"item ids are 0..{n_items - 1}")

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        users = sorted((int(i), v) for p in payloads.values() for i, v in p["users"])
        items = sorted((int(i), v) for p in payloads.values() for i, v in p["items"])
        return [_best_item(u, items) for _, u in users]


def _dot(a: list[int], b: list[int]) -> int:
    return sum(x * y for x, y in zip(a, b))


def _best_item(user: list[int], items: list[tuple[int, list[int]]]) -> int:
    return max(items, key=lambda it: (_dot(user, it[1]), -it[0]))[0]


@lru_cache(maxsize=4)
def _item_pool(dim: int, norm2: int) -> list[tuple[int, ...]]:
    """All integer vectors of the given dimension and squared length, in a fixed order."""
    bound = int(norm2**0.5)
    return [v for v in itertools.product(range(-bound, bound + 1), repeat=dim) if sum(x * x for x in v) == norm2]


# --------------------------------------------------------------------------------------
# III-28 PageRank Step
# --------------------------------------------------------------------------------------
@silo_spec
class PageRankStep(_IndexedAnswer):
    """One PageRank update with damping 0.85 from rank 1 on every node.

    Directed graph, V = max(2, n*k // 4) nodes (mean degree 4, more for tiny n*k), n*k
    distinct edges without self-loops: a random cycle through all nodes plus random edges,
    so every node has an out-edge (no dangling mass) and an in-edge (no node sits at the
    guessable 0.15), and ranks spread over many values. New rank of v:
    0.15 + 0.85 * sum over edges u->v of 1 / outdeg(u) (V times the usual normalised
    step from the uniform vector, so values stay near 1 at every scale). Values rounded
    half-up to 3 decimals, each right within 0.001. q_i: share of nodes right.
    """

    task_id = "III-28"
    title = "PageRank Step"
    default_k = 50
    mean_degree = 4
    damping = Fraction(85, 100)
    decimals = 3
    tolerance = 0.001
    _EXAMPLE = "[0.858, 1.425, 0.15, 1.567]"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 2)
        n_edges = n * k
        n_nodes = max(2, n_edges // self.mean_degree)
        while n_edges > n_nodes * (n_nodes - 1):  # tiny instances: enough room for distinct edges
            n_nodes += 1
        # a random cycle through all nodes first: nobody is dangling and everybody has an
        # in-edge (a node without one would have the guessable rank 0.15)
        cycle = list(range(n_nodes))
        rng.shuffle(cycle)
        edges: set[tuple[int, int]] = {(u, v) for u, v in zip(cycle, cycle[1:] + cycle[:1])}
        while len(edges) < n_edges:
            u, v = rng.sample(range(n_nodes), 2)
            edges.add((u, v))
        ordered = sorted(edges)
        rng.shuffle(ordered)
        truth = self._step(n_nodes, ordered)
        return SiloData(shards=_chunks([[u, v] for u, v in ordered], n, k), expected=_same_for_all(n, truth),
                        public={"n_nodes": n_nodes, "damping": float(self.damping), "initial_rank": 1,
                                "decimals": self.decimals})

    def _step(self, n_nodes: int, edges: list[tuple[int, int]]) -> list[float]:
        outdeg = [0] * n_nodes
        for u, _ in edges:
            outdeg[u] += 1
        incoming = [Fraction(0)] * n_nodes
        for u, v in edges:
            incoming[v] += Fraction(1, outdeg[u])
        return [round_half_up(1 - self.damping + self.damping * s, self.decimals) for s in incoming]

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[float]:
        n_nodes = data.public["n_nodes"]
        items = _indexed(_load(raw, self._EXAMPLE), n_nodes, "the list of ranks", self._EXAMPLE)
        return [_number(v, f"the rank of node {i}") for i, v in enumerate(items)]

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return self._step(public["n_nodes"], _edges_of(payloads))

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Every node gets the mean rank 1.0 (the ranks sum to V), the likeliest single value."""
        return [1.0] * public["n_nodes"]

    def pcs_ceiling(self, n: int) -> float:
        """No single rank value holds more than about 5 % of the nodes at mean degree 4 (the
        most frequent is measured by tests/families/silo/test_level3.py on many instances)."""
        return 0.08


# --------------------------------------------------------------------------------------
# III-29 Load Balance
# --------------------------------------------------------------------------------------
@silo_spec
class LoadBalance(_IndexedAnswer):
    """Net change of every agent's load for the minimum-variance integer balance.

    Agent i holds k tasks with integer costs in [1, 20]; its load L_i is their sum and
    T = sum of all loads. Work moves in whole units. The integer load vector with the
    smallest variance gives every agent T // n and one extra unit to each of the
    T % n lowest-numbered agents (this tie-break makes it unique). The answer is the
    list, for agents 0..n-1, of target_j - L_j (positive = receives work). q_i: share
    of agents whose entry is right.
    """

    task_id = "III-29"
    title = "Load Balance"
    default_k = 150
    _EXAMPLE = "[-12, 5, 0, 7]"
    _COST_MEAN = 10.5  # costs are uniform in 1..20

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """The mean load is estimated from the own load and the cost distribution; every other
        agent's entry is guessed 0 (its load is as likely above the mean as below)."""
        own = sum(shard)
        target = round((own + (n - 1) * self._COST_MEAN * len(shard)) / n)
        answer = [0] * n
        answer[agent] = target - own
        return answer

    def ceiling(self, n: int) -> float:
        """A silent agent must guess every other load exactly: each is a sum of k uniform costs,
        right with probability <= 1/(sigma sqrt(2 pi k)) ~ 0.006 at k = 150 (sigma = 5.77). At
        N = 2 that is one guess; 0.07 allows one lucky agent in the 16 of an 8-seed test."""
        return 0.07 if n == 2 else self.chance_sr

    def pcs_ceiling(self, n: int) -> float:
        """Each entry target_j - L_j is spread with sd >= 5.77 sqrt(k / 2): right by chance
        with probability about 1 %; 0.04 + 0.1/n leaves room for few-seed noise (an answer at
        N = 2 has only two entries)."""
        return 0.04 + 0.1 / n

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 1)
        costs = [rng.randint(1, 20) for _ in range(n * k)]
        shards = _chunks(costs, n, k)
        truth = _balance([sum(s) for s in shards])
        return SiloData(shards=shards, expected=_same_for_all(n, truth), public={"n_agents": n})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[int]:
        n = data.public["n_agents"]
        value = _load(raw, self._EXAMPLE)
        if n == 1 and not isinstance(value, (list, tuple, dict)):
            value = [value]
        items = _indexed(value, n, "the list of load changes", self._EXAMPLE)
        return [_int(v, f"the change of agent {i}") for i, v in enumerate(items)]

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sum(shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return _balance([payloads[j] for j in range(n)])


def _balance(loads: list[int]) -> list[int]:
    n, total = len(loads), sum(loads)
    base, extra = divmod(total, n)
    return [base + (1 if j < extra else 0) - load for j, load in enumerate(loads)]


# --------------------------------------------------------------------------------------
# III-30 Matrix Multiply
# --------------------------------------------------------------------------------------
@silo_spec
class MatrixMultiply(_IndexedAnswer):
    """C = A B with A (n x d) split by rows and B (d x n) split by columns.

    Agent i holds row i of A and column i of B, d = k // 2 integers each in [-9, 9], so
    its workload stays k numbers while C has n x n integer entries, every agent's row
    meeting every agent's column (the all-to-all pattern). A silent agent knows only its
    own diagonal entry C[i][i]: 1/n^2 of the answer. The answer is C as a list of
    n rows. q_i: share of entries right (LCS over the canonical row-major (i, j, value)
    triples; a quadratic LCS on n^2 entries would be too slow at N = 100).
    """

    task_id = "III-30"
    title = "Matrix Multiply"
    default_k = 100
    _EXAMPLE = "[[3, -12], [40, 7]]"

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """The own diagonal entry; every other entry 0, the likeliest value of a sum of d
        products of uniform entries."""
        answer = [[0] * n for _ in range(n)]
        answer[shard["row_index"]][shard["col_index"]] = _dot(shard["a_row"], shard["b_column"])
        return answer

    def pcs_ceiling(self, n: int) -> float:
        """The own entry is 1/n^2 of C; an entry is a sum of d = k/2 products of uniform
        [-9, 9] integers (sd about 30 sqrt(d)), so a constant guess is right for about 1 % of
        the others at d = 50."""
        return 1 / n**2 + 0.03

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 2)
        d = k // 2
        a = [[rng.randint(-9, 9) for _ in range(d)] for _ in range(n)]
        b_cols = [[rng.randint(-9, 9) for _ in range(d)] for _ in range(n)]
        truth = [[_dot(a[i], b_cols[j]) for j in range(n)] for i in range(n)]
        shards = [{"row_index": i, "a_row": a[i], "col_index": i, "b_column": b_cols[i]} for i in range(n)]
        return SiloData(shards=shards, expected=_same_for_all(n, truth), public={"size": n, "inner_dim": d})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[list[int]]:
        size = data.public["size"]
        rows = _list(_load(raw, self._EXAMPLE), "the matrix", self._EXAMPLE)
        if size == 1 and len(rows) == 1 and not isinstance(rows[0], (list, tuple)):
            rows = [rows]
        if len(rows) != size:
            raise ValueError(f"the matrix must have {size} rows, got {len(rows)}")
        out = []
        for i, row in enumerate(rows):
            vals = _int_list(row, f"row {i}", self._EXAMPLE)
            if len(vals) != size:
                raise ValueError(f"row {i} must have {size} entries, got {len(vals)}")
            out.append(vals)
        return out

    def quality(self, answer: Any, expected: Any, data: SiloData) -> float:
        if not isinstance(answer, list) or len(answer) != len(expected):
            return 0.0
        flat_a = [v for row in answer for v in (row if isinstance(row, list) else [])]
        flat_e = [v for row in expected for v in row]
        return indexed_quality(flat_a, flat_e)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        rows = {p["row_index"]: p["a_row"] for p in payloads.values()}
        cols = {p["col_index"]: p["b_column"] for p in payloads.values()}
        return [[_dot(rows[i], cols[j]) for j in range(n)] for i in range(n)]
