"""SILO-Bench Level III (global shuffle): tasks III-21 .. III-30 of Table 9.

Every agent must submit the complete global answer, so each task's answer depends on
data held by every other agent. Each generator keeps the per-agent workload constant
(k items per agent) and scales the global input, and graph sizes, with n. Numeric tasks
have integer answers where the mathematics allows; otherwise values are rounded half-up
to a fixed number of decimals and checked with a stated tolerance.

The exact semantics chosen where the paper's one-line description is silent are listed
in docs/tasks/silo-level3.md; the comments next to each class summarise them.
"""

from __future__ import annotations

import ast
import bisect
import json
import random
import re
from fractions import Fraction
from typing import Any

from masgrid.envs.tasks.silo.spec import SiloData, SiloSpec, lcs_ratio, silo_spec

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


def _distinct_ints(count: int, rng: random.Random, span: int | None = None) -> list[int]:
    """`count` distinct integers from 1..max(100, 10 * span), in random order."""
    return rng.sample(range(1, max(100, 10 * (span or count)) + 1), count)


def _same_for_all(n: int, answer: Any) -> list[Any]:
    return [answer for _ in range(n)]


# --------------------------------------------------------------------------------------
# Shared behaviour of the Level III specs
# --------------------------------------------------------------------------------------
class _Level3(SiloSpec):
    """Level III defaults: the classical baseline shares the raw shard with everyone."""

    level = 3

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return shard


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
    """All n*k distinct integers in ascending order.

    Values are distinct so that "correctly ordered subsequence" is unambiguous and q_i
    is computed in O(L log L) at N = 100.
    """

    task_id = "III-21"
    title = "Distributed Sort"
    _EXAMPLE = "[3, 17, 42, 108]"

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
    """The exact (lower) median of all n*k distinct integers.

    With m values sorted ascending, the answer is the value at 0-based position
    (m - 1) // 2, so it is always one of the data values (m may be even). q_i is rank
    based: 1 - |rank(answer) - rank(median)| / max distance, where rank(x) counts data
    values smaller than x; a near-median answer earns partial credit.
    """

    task_id = "III-22"
    title = "Median of Medians"
    _EXAMPLE = "5731"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 1)
        values = _distinct_ints(n * k, rng)
        ordered = sorted(values)
        return SiloData(shards=_chunks(values, n, k), expected=_same_for_all(n, ordered[(n * k - 1) // 2]),
                        public={"total": n * k}, meta={"sorted": ordered})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> int:
        value = _load(raw, self._EXAMPLE)
        if isinstance(value, list):
            if len(value) != 1:
                raise ValueError(f"submit a single integer (the median), like {self._EXAMPLE}")
            value = value[0]
        return _int(value, "the median")

    def quality(self, answer: Any, expected: Any, data: SiloData) -> float:
        if not isinstance(answer, int) or isinstance(answer, bool):
            return 0.0
        ordered = data.meta["sorted"]
        target = (len(ordered) - 1) // 2
        worst = max(target, len(ordered) - 1 - target) or 1
        rank = bisect.bisect_left(ordered, answer)
        return max(0.0, 1.0 - abs(rank - target) / worst)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sorted(shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        merged = sorted(v for p in payloads.values() for v in p)
        return merged[(len(merged) - 1) // 2]


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
    _EXAMPLE = "[[0, 3, 5], [1], [2, 4]]"

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
        seen: set[int] = set()
        comps: list[list[int]] = []
        for i, comp in enumerate(value):
            nodes = _int_list(comp, f"component {i}", self._EXAMPLE)
            if not nodes:
                raise ValueError(f"component {i} is empty; every component has at least one node")
            for v in nodes:
                if not 0 <= v < n_nodes:
                    raise ValueError(f"node {v} does not exist (nodes are 0..{n_nodes - 1})")
                if v in seen:
                    raise ValueError(f"node {v} appears more than once; each node belongs to exactly one component")
                seen.add(v)
            comps.append(nodes)
        missing = sorted(set(range(n_nodes)) - seen)
        if missing:
            raise ValueError(f"every node 0..{n_nodes - 1} must appear in exactly one component "
                             f"(isolated nodes as [v]); missing {missing[:10]}")
        return _canonical_components(comps)

    def quality(self, answer: Any, expected: Any, data: SiloData) -> float:
        if not isinstance(answer, list):
            return 0.0
        return ordered_quality([tuple(c) for c in answer], [tuple(c) for c in expected])

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
    return sorted((sorted(g) for g in groups), key=lambda c: c[0])


# --------------------------------------------------------------------------------------
# III-24 BFS Distance
# --------------------------------------------------------------------------------------
@silo_spec
class BFSDistance(_IndexedAnswer):
    """Hop distance from node 0 to every node of an undirected graph; -1 if unreachable.

    V = max(4, 3*n*k // 4) nodes and n*k edges. About a tenth of the nodes (when V >= 10)
    form a separate component that node 0 cannot reach; the rest is a random recursive
    tree through node 0 plus extra shortcut edges. q_i: share of nodes whose distance is
    right (LCS over the canonical (node, distance) pairs).
    """

    task_id = "III-24"
    title = "BFS Distance"
    _EXAMPLE = "[0, 1, 2, 1, -1, 3]"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 4)
        n_edges = n * k
        n_nodes = max(4, 3 * n_edges // 4)
        others = list(range(1, n_nodes))
        rng.shuffle(others)
        n_side = n_nodes // 10 if n_nodes >= 10 else 0
        side, main = others[:n_side], [0, *others[n_side:]]
        # node 0 roots the reachable tree; the other labels are shuffled, so a node's id
        # says nothing about its distance
        tree = _random_tree(main, rng) + (_random_tree(side, rng) if side else [])
        groups = [main, side] if side else [main]
        edges = _add_extra_edges(groups, tree, n_edges - len(tree), rng)
        truth = _bfs(n_nodes, edges, 0)
        return SiloData(shards=_deal_edges(edges, n, k, rng), expected=_same_for_all(n, truth),
                        public={"n_nodes": n_nodes, "source": 0})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[int]:
        return _int_vector(raw, data.public["n_nodes"], "the distance list", "node", self._EXAMPLE,
                           lo=-1, bounds="distances are >= 0, or -1 for unreachable nodes")

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return _bfs(public["n_nodes"], _edges_of(payloads), public["source"])


def _bfs(n_nodes: int, edges: list[tuple[int, int]], source: int) -> list[int]:
    adj: list[list[int]] = [[] for _ in range(n_nodes)]
    for u, v in edges:
        adj[u].append(v)
        adj[v].append(u)
    dist = [-1] * n_nodes
    dist[source] = 0
    frontier = [source]
    while frontier:
        nxt = []
        for u in frontier:
            for v in adj[u]:
                if dist[v] < 0:
                    dist[v] = dist[u] + 1
                    nxt.append(v)
        frontier = nxt
    return dist


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

    Values are drawn with replacement from a hidden pool of about n*k/2 integers, so
    duplicates occur within and across shards (roughly 40-45 % of the values are
    distinct). q_i: longest correctly ordered subsequence over the longer length.
    """

    task_id = "III-26"
    title = "Global Distinct"
    _EXAMPLE = "[4, 9, 23, 57]"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 1)
        total = n * k
        pool = _distinct_ints(max(2, total // 2), rng, span=total)
        values = [rng.choice(pool) for _ in range(total)]
        truth = sorted(set(values))
        return SiloData(shards=_chunks(values, n, k), expected=_same_for_all(n, truth),
                        public={"total": total})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> list[int]:
        return _int_list(_load(raw, self._EXAMPLE), "the list of distinct values", self._EXAMPLE)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sorted(set(shard))

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return sorted({v for p in payloads.values() for v in p})


# --------------------------------------------------------------------------------------
# III-27 Collaborative Filtering
# --------------------------------------------------------------------------------------
@silo_spec
class CollaborativeFiltering(_IndexedAnswer):
    """Best-matching item for every user by integer dot product of latent vectors.

    Each agent holds k//2 user vectors and k - k//2 item vectors (dimension 4, integer
    entries in [-5, 5]); users and items are numbered globally, agent i holding the i-th
    consecutive block of each. The answer lists, for users 0..U-1 in order, the id of
    the item with the largest dot product; the generator re-draws any user whose best
    score is tied, so the argmax is unique. q_i: share of users matched right.
    """

    task_id = "III-27"
    title = "Collab. Filtering"
    dim = 4
    _EXAMPLE = "[7, 0, 12, 7, 3]"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 2)
        ku, ki = k // 2, k - k // 2
        items = [[rng.randint(-5, 5) for _ in range(self.dim)] for _ in range(n * ki)]
        users: list[list[int]] = []
        while len(users) < n * ku:
            u = [rng.randint(-5, 5) for _ in range(self.dim)]
            scores = sorted((_dot(u, it) for it in items), reverse=True)
            if len(scores) > 1 and scores[0] == scores[1]:
                continue  # tied best item: re-draw so the match is unique
            users.append(u)
        truth = [_best_item(u, list(enumerate(items))) for u in users]
        shards = [{"users": [[i * ku + j, users[i * ku + j]] for j in range(ku)],
                   "items": [[i * ki + j, items[i * ki + j]] for j in range(ki)]} for i in range(n)]
        return SiloData(shards=shards, expected=_same_for_all(n, truth),
                        public={"n_users": n * ku, "n_items": n * ki, "dim": self.dim})

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


# --------------------------------------------------------------------------------------
# III-28 PageRank Step
# --------------------------------------------------------------------------------------
@silo_spec
class PageRankStep(_IndexedAnswer):
    """One PageRank update with damping 0.85 from rank 1 on every node.

    Directed graph, V = max(2, n*k // 2) nodes, n*k distinct edges without self-loops,
    every node with at least one out-edge (no dangling mass). New rank of v:
    0.15 + 0.85 * sum over edges u->v of 1 / outdeg(u) (V times the usual normalised
    step from the uniform vector, so values stay near 1 at every scale). Values rounded
    half-up to 3 decimals, each right within 0.001. q_i: share of nodes right.
    """

    task_id = "III-28"
    title = "PageRank Step"
    damping = Fraction(85, 100)
    decimals = 3
    tolerance = 0.001
    _EXAMPLE = "[0.858, 1.425, 0.15, 1.567]"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        _need_k(self.task_id, k, 2)
        n_edges = n * k
        n_nodes = max(2, n_edges // 2)
        if n_edges > n_nodes * (n_nodes - 1):
            raise ValueError(f"k: task {self.task_id} cannot place {n_edges} distinct edges on {n_nodes} nodes")
        edges: set[tuple[int, int]] = set()
        for u in range(n_nodes):  # one out-edge per node first: nobody is dangling
            v = rng.randrange(n_nodes - 1)
            edges.add((u, v + (v >= u)))
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
    _EXAMPLE = "[-12, 5, 0, 7]"

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
    meeting every agent's column (the all-to-all pattern). The answer is C as a list of
    n rows. q_i: share of entries right (LCS over the canonical row-major (i, j, value)
    triples; a quadratic LCS on n^2 entries would be too slow at N = 100).
    """

    task_id = "III-30"
    title = "Matrix Multiply"
    _EXAMPLE = "[[3, -12], [40, 7]]"

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
