"""SILO-Bench Level II (mesh) tasks II-11 .. II-20 (Table 9).

Every task lays a global sequence of n*k items end to end in agent order: agent i holds
positions [i*k, (i+1)*k) (II-17 and II-18 hold k records instead) and must output the
result for its own segment, as a list of k values. The paper gives each task one line;
the exact semantics chosen here are documented in docs/tasks/silo-level2.md and next to
each class.

Scripted baseline: `solve` receives only payloads (the contract does not pass the agent's
own shard), so every payload carries the agent's own shard under "data" for its own use,
plus the minimal summary its peers need; `PEER_KEYS` names the keys a peer's `solve`
reads. The tests strip every other key from peers' payloads to prove the summaries are
sufficient, and restrict payloads to `required_peers` to prove that set is sufficient.
"""

from __future__ import annotations

import json
import math
import random
import re
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any, ClassVar

from masgrid.envs.tasks.silo.spec import SiloData, SiloSpec, silo_spec

# -- shared helpers ------------------------------------------------------------------------

_SPLIT = re.compile(r"[\s,;]+")
_INT = re.compile(r"^[+-]?\d+(?:\.0*)?$")
_NUM = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$")


def _strip(raw: str) -> str:
    """Remove wrappers models often add: whitespace, code fences/backticks, a final period."""
    text = raw.strip()
    if text.startswith("```"):
        text = text.strip("`")
        first, _, rest = text.partition("\n")
        text = rest if first.strip().isalpha() else text  # drop a ```json language tag
    text = text.strip().strip("`").strip()
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1].rstrip()
    return text


def _tokens(raw: str) -> list[str]:
    """Split `[a, b, c]`, `a, b, c` or `a b c` into tokens; refuse nested or unbalanced brackets."""
    text = _strip(raw)
    if not text:
        raise ValueError("empty answer; write a list such as [1, 2, 3]")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if any(c in text for c in "[]{}()"):
        raise ValueError(f"malformed list {_strip(raw)[:80]!r}; write one flat list such as [1, 2, 3]")
    return [t for t in _SPLIT.split(text) if t]


def _check_length(values: list[Any], length: int) -> None:
    if len(values) != length:
        raise ValueError(f"expected exactly {length} values (one per position of your segment), "
                         f"got {len(values)}")


def parse_int_list(raw: str, length: int) -> list[int]:
    """A flat list of exactly `length` integers (an integral `5.0` is read as 5)."""
    tokens = _tokens(raw)
    bad = [t for t in tokens if not _INT.match(t)]
    if bad:
        raise ValueError(f"expected integers only, got {bad[0][:40]!r}")
    _check_length(tokens, length)
    return [int(Decimal(t)) for t in tokens]


def parse_num_list(raw: str, length: int) -> list[float]:
    """A flat list of exactly `length` finite decimal numbers."""
    tokens = _tokens(raw)
    bad = [t for t in tokens if not _NUM.match(t)]
    if bad:
        raise ValueError(f"expected decimal numbers only, got {bad[0][:40]!r}")
    _check_length(tokens, length)
    return [float(t) for t in tokens]


def _segment(agent: int, k: int) -> range:
    return range(agent * k, (agent + 1) * k)


def _owners(positions: set[int], k: int, n: int, agent: int) -> set[int]:
    """Agents (other than `agent`) holding any of the given global positions."""
    return {p // k for p in positions if 0 <= p < n * k} - {agent}


def _round2(value: Fraction) -> float:
    """Round half away from zero to 2 decimals (values are non-negative here)."""
    exact = Decimal(value.numerator) / Decimal(value.denominator)
    return float(exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _public(n: int, k: int, **extra: Any) -> dict[str, Any]:
    return {"n": n, "k": k, "length": n * k, **extra}


class _Level2(SiloSpec):
    """Common Level II plumbing: lists of k values, exact element comparison."""

    level: ClassVar[int] = 2
    #: payload keys a peer's `solve` reads ("data" = the whole shard).
    PEER_KEYS: ClassVar[tuple[str, ...]] = ("data",)

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_int_list(raw, len(data.expected[agent]))


# -- II-11 Prefix Sum ----------------------------------------------------------------------


@silo_spec
class PrefixSum(_Level2):
    """Inclusive running totals of the global sequence at the agent's own k positions.

    Values are integers in [0, 99]. A peer only needs each predecessor's segment total.
    """

    task_id = "II-11"
    title = "Prefix Sum"
    PEER_KEYS = ("total",)

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        shards = [[rng.randint(0, 99) for _ in range(k)] for _ in range(n)]
        expected, running = [], 0
        for shard in shards:
            block = []
            for v in shard:
                running += v
                block.append(running)
            expected.append(block)
        return SiloData(shards=shards, expected=expected, public=_public(n, k))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return {"data": shard, "total": sum(shard)}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        running = sum(payloads[j]["total"] for j in range(agent))
        out = []
        for v in payloads[agent]["data"]:
            running += v
            out.append(running)
        return out

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return set(range(agent))


# -- II-12 Moving Average ------------------------------------------------------------------


@silo_spec
class MovingAverage(_Level2):
    """Trailing moving average over a window of w = min(3, k+1) at each own position.

    Like a data stream (LC-346), the first positions of the global sequence average the
    values seen so far (a partial window). Values are integers in [0, 99]; averages are
    rounded half-up to 2 decimals and compared with an absolute tolerance of 0.01, which
    absorbs a different rounding of an exact .xx5. Since w-1 <= k, only the predecessor's
    last w-1 values are needed.
    """

    task_id = "II-12"
    title = "Moving Average"
    tolerance = 0.01
    PEER_KEYS = ("tail",)

    @staticmethod
    def window(k: int) -> int:
        return min(3, k + 1)

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        w = self.window(k)
        shards = [[rng.randint(0, 99) for _ in range(k)] for _ in range(n)]
        flat = [v for shard in shards for v in shard]
        expected = []
        for i in range(n):
            block = []
            for p in _segment(i, k):
                vals = flat[max(0, p - w + 1):p + 1]
                block.append(_round2(Fraction(sum(vals), len(vals))))
            expected.append(block)
        return SiloData(shards=shards, expected=expected, public=_public(n, k, window=w))

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_num_list(raw, len(data.expected[agent]))

    def _close(self, a: Any, e: float) -> bool:
        return isinstance(a, (int, float)) and math.isfinite(a) and abs(a - e) <= self.tolerance + 1e-9

    def is_correct(self, answer: Any, expected: Any, data: SiloData) -> bool:
        return (isinstance(answer, list) and len(answer) == len(expected)
                and all(self._close(a, e) for a, e in zip(answer, expected)))

    def quality(self, answer: Any, expected: Any, data: SiloData) -> float:
        if not isinstance(answer, list) or not expected:
            return 0.0
        return sum(self._close(a, e) for a, e in zip(answer, expected)) / len(expected)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        w = public["window"]
        return {"data": shard, "tail": shard[len(shard) - (w - 1):]}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        w = public["window"]
        before = payloads[agent - 1]["tail"] if agent > 0 else []
        seq = list(before) + list(payloads[agent]["data"])
        out = []
        for idx in range(len(before), len(seq)):
            vals = seq[max(0, idx - w + 1):idx + 1]
            out.append(_round2(Fraction(sum(vals), len(vals))))
        return out

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return {agent - 1} if agent > 0 else set()


# -- II-13 Longest Palindrome --------------------------------------------------------------


@silo_spec
class LongestPalindrome(_Level2):
    """Length of the longest odd-length palindromic substring centred on each own position.

    The global string is random over {a, b, c}; at every agent boundary, with probability
    1/2, a palindrome of radius 1..k is planted so that it straddles the boundary. A
    palindrome's reach is data-dependent, so peers share their whole segment and the
    minimum peer set is the owners of every character the expansions examine (including
    the mismatching character that stops each expansion).
    """

    task_id = "II-13"
    title = "Longest Palindrome"
    ALPHABET: ClassVar[str] = "abc"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        length = n * k
        chars = [rng.choice(self.ALPHABET) for _ in range(length)]
        for b in range(1, n):
            boundary = b * k
            if rng.random() < 0.5:
                r = rng.randint(1, k)
                c = boundary + rng.randint(-r, r - 1)
                if c - r >= 0 and c + r < length:
                    for t in range(1, r + 1):
                        chars[c + t] = chars[c - t]
        text = "".join(chars)
        radii = [self._radius(text.__getitem__, length, p) for p in range(length)]
        expected = [[2 * radii[p] + 1 for p in _segment(i, k)] for i in range(n)]
        shards = [text[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k),
                        meta={"radii": radii})

    @staticmethod
    def _radius(char_at: Any, length: int, p: int) -> int:
        r = 0
        while p - r - 1 >= 0 and p + r + 1 < length and char_at(p - r - 1) == char_at(p + r + 1):
            r += 1
        return r

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return {"data": shard}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        k = public["k"]

        def char_at(p: int) -> str:
            return payloads[p // k]["data"][p % k]

        return [2 * self._radius(char_at, n * k, p) + 1 for p in _segment(agent, k)]

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        k = data.public["k"]
        touched: set[int] = set()
        for p in _segment(agent, k):
            r = data.meta["radii"][p]
            touched.update(range(p - r - 1, p + r + 2))
        return _owners(touched, k, n, agent)


# -- II-14 1D Life Game --------------------------------------------------------------------


@silo_spec
class LifeGame1D(_Level2):
    """One generation of a 1D life-like automaton on a row of n*k cells (1 alive, 0 dead).

    Each cell's neighbours are the cells directly left and right (cells beyond either end
    of the global row count as dead). A live cell stays alive iff exactly one neighbour is
    alive; a dead cell comes alive iff both neighbours are alive. Cells start alive with
    probability 1/2. Peers need only the neighbours' edge cells.
    """

    task_id = "II-14"
    title = "1D Life Game"
    PEER_KEYS = ("first", "last")

    @staticmethod
    def rule(left: int, cell: int, right: int) -> int:
        alive = left + right
        return int(alive == 1) if cell else int(alive == 2)

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        shards = [[int(rng.random() < 0.5) for _ in range(k)] for _ in range(n)]
        flat = [0] + [c for shard in shards for c in shard] + [0]
        nxt = [self.rule(flat[p - 1], flat[p], flat[p + 1]) for p in range(1, len(flat) - 1)]
        expected = [nxt[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k))

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        length = len(data.expected[agent])
        text = _strip(raw)
        if re.fullmatch(r"[01]+", text) and len(text) == length and length > 1:
            values = [int(c) for c in text]  # a bare bit string such as 0110
        else:
            values = parse_int_list(raw, length)
        if any(v not in (0, 1) for v in values):
            raise ValueError("every cell must be 0 (dead) or 1 (alive)")
        return values

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return {"data": shard, "first": shard[0], "last": shard[-1]}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        left = payloads[agent - 1]["last"] if agent > 0 else 0
        right = payloads[agent + 1]["first"] if agent < n - 1 else 0
        row = [left] + list(payloads[agent]["data"]) + [right]
        return [self.rule(row[p - 1], row[p], row[p + 1]) for p in range(1, len(row) - 1)]

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return {j for j in (agent - 1, agent + 1) if 0 <= j < n}


# -- II-15 Pattern Search ------------------------------------------------------------------


@silo_spec
class PatternSearch(_Level2):
    """Greedy subsequence matching of a repeated public pattern along the global text.

    A scan walks the text left to right with a pointer into the endless repetition
    P P P ... of a public pattern P (4 letters of {a, b, c}); a text character equal to
    the pattern character under the pointer is matched and advances the pointer. Each agent
    outputs, for each own position, how many pattern characters have been matched up to and
    including that position (so the count is m * complete copies + progress in the
    current copy). The state entering a segment depends on every predecessor; a segment
    acts on it as a transfer table (start phase -> characters matched), which is all a
    peer needs to share.
    """

    task_id = "II-15"
    title = "Pattern Search"
    ALPHABET: ClassVar[str] = "abc"
    PATTERN_LEN: ClassVar[int] = 4
    PEER_KEYS = ("gain",)

    @staticmethod
    def scan(text: str, pattern: str, matched: int) -> list[int]:
        out = []
        for ch in text:
            if ch == pattern[matched % len(pattern)]:
                matched += 1
            out.append(matched)
        return out

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        pattern = "".join(rng.choice(self.ALPHABET) for _ in range(self.PATTERN_LEN))
        shards = ["".join(rng.choice(self.ALPHABET) for _ in range(k)) for _ in range(n)]
        counts = self.scan("".join(shards), pattern, 0)
        expected = [counts[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k, pattern=pattern))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        pattern = public["pattern"]
        gain = [self.scan(shard, pattern, phase)[-1] - phase for phase in range(len(pattern))]
        return {"data": shard, "gain": gain}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        pattern = public["pattern"]
        matched = 0
        for j in range(agent):
            matched += payloads[j]["gain"][matched % len(pattern)]
        return self.scan(payloads[agent]["data"], pattern, matched)

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return set(range(agent))


# -- II-16 Trapping Rain -------------------------------------------------------------------


@silo_spec
class TrappingRain(_Level2):
    """Units of rain water held above each own position of a global elevation profile.

    Heights are integers in [0, 12]; water at p is min(max of heights[0..p],
    max of heights[p..end]) - heights[p]. The ends of the global profile spill. A peer
    needs only every other segment's maximum, from both sides.
    """

    task_id = "II-16"
    title = "Trapping Rain"
    PEER_KEYS = ("max",)

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        shards = [[rng.randint(0, 12) for _ in range(k)] for _ in range(n)]
        flat = [h for shard in shards for h in shard]
        left, right = [], [0] * len(flat)
        best = 0
        for h in flat:
            best = max(best, h)
            left.append(best)
        best = 0
        for p in range(len(flat) - 1, -1, -1):
            best = max(best, flat[p])
            right[p] = best
        water = [min(lo, hi) - h for lo, hi, h in zip(left, right, flat)]
        expected = [water[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return {"data": shard, "max": max(shard)}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        heights = payloads[agent]["data"]
        left = max((payloads[j]["max"] for j in range(agent)), default=0)
        right = max((payloads[j]["max"] for j in range(agent + 1, n)), default=0)
        lo, his = [], []
        for h in heights:
            left = max(left, h)
            lo.append(left)
        for h in reversed(heights):
            right = max(right, h)
            his.append(right)
        his.reverse()
        return [min(a, b) - h for a, b, h in zip(lo, his, heights)]

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return set(range(n)) - {agent}


# -- II-17 Diff Array ----------------------------------------------------------------------


@silo_spec
class DiffArray(_Level2):
    """Car-pooling occupancy (LC-1094) at the agent's own k stops.

    There are n*k stops; agent i owns stops [i*k, (i+1)*k) and holds k trips
    [passengers, board, leave] with 1..9 passengers boarding at one of its own stops and
    leaving 1..k stops later (at most at stop n*k); a trip occupies stops board..leave-1.
    Each agent outputs the number of passengers in the car at each own stop, counting
    every agent's trips. Since a trip is at most k stops long, only the predecessor's
    trips can spill into a segment; the predecessor shares that spill as k numbers.
    """

    task_id = "II-17"
    title = "Diff Array"
    PEER_KEYS = ("spill",)

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        total = n * k
        shards = []
        for i in range(n):
            trips = []
            for _ in range(k):
                board = rng.randint(i * k, (i + 1) * k - 1)
                leave = min(board + rng.randint(1, k), total)
                trips.append([rng.randint(1, 9), board, leave])
            shards.append(trips)
        diff = [0] * (total + 1)
        for trips in shards:
            for v, board, leave in trips:
                diff[board] += v
                diff[leave] -= v
        load, running = [], 0
        for d in diff[:total]:
            running += d
            load.append(running)
        expected = [load[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k, stops=total))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        k = public["k"]
        nxt = _segment(agent + 1, k)
        spill = [sum(v for v, board, leave in shard if board <= q < leave) for q in nxt]
        return {"data": shard, "spill": spill}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        k = public["k"]
        base = payloads[agent - 1]["spill"] if agent > 0 else [0] * k
        trips = payloads[agent]["data"]
        return [base[idx] + sum(v for v, board, leave in trips if board <= q < leave)
                for idx, q in enumerate(_segment(agent, k))]

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return {agent - 1} if agent > 0 else set()


# -- II-18 List Ranking --------------------------------------------------------------------


@silo_spec
class ListRanking(_Level2):
    """Rank (0-based distance from the head) of every node an agent holds in a linked list.

    The list has n*k nodes with distinct random integer ids. It is cut into n runs of k
    consecutive nodes and the runs are dealt to the agents in a random order, so an agent
    holds a contiguous piece of the list but does not know where it sits. A shard lists
    its k nodes as [id, next id] pairs in shuffled order (next is null for the tail); the
    head's id is public. The answer lists the ranks in the order of the shard (a JSON
    object {id: rank} is also accepted). The minimum peer set is the agents whose runs
    precede the agent's run: the predecessor chain.
    """

    task_id = "II-18"
    title = "List Ranking"
    PEER_KEYS = ("first", "exit", "count")

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        total = n * k
        ids = rng.sample(range(1, 10 * total + 10), total)  # list order = this order
        order = rng.sample(range(n), n)  # order[c] = agent holding the c-th run
        shards: list[Any] = [None] * n
        expected: list[Any] = [None] * n
        for c, agent in enumerate(order):
            nodes = [(ids[p], ids[p + 1] if p + 1 < total else None, p)
                     for p in range(c * k, (c + 1) * k)]
            rng.shuffle(nodes)
            shards[agent] = [[node, nxt] for node, nxt, _ in nodes]
            expected[agent] = [rank for _, _, rank in nodes]
        return SiloData(shards=shards, expected=expected, public=_public(n, k, head=ids[0]),
                        meta={"run_order": order})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        text = _strip(raw)
        if not text.startswith("{"):
            return parse_int_list(raw, len(data.expected[agent]))
        try:
            mapping = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"malformed JSON object: {exc.msg}; write e.g. {{\"17\": 0, \"42\": 1}}")
        own = [node for node, _ in data.shards[agent]]
        try:
            ranks = {int(key): value for key, value in mapping.items()}
        except ValueError:
            raise ValueError("object keys must be your node ids") from None
        if set(ranks) != set(own):
            missing = sorted(set(own) - set(ranks))
            extra = sorted(set(ranks) - set(own))
            raise ValueError(f"give a rank for exactly your {len(own)} nodes "
                             f"(missing {missing[:5]}, not yours {extra[:5]})")
        if any(not isinstance(v, int) or isinstance(v, bool) for v in ranks.values()):
            raise ValueError("every rank must be an integer")
        return [ranks[node] for node in own]

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        pointed = {nxt for _, nxt in shard}
        first = next(node for node, _ in shard if node not in pointed)
        nxt_of = {node: nxt for node, nxt in shard}
        cur = first
        while nxt_of.get(cur) in nxt_of:
            cur = nxt_of[cur]
        return {"data": shard, "first": first, "exit": nxt_of[cur], "count": len(shard)}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        mine = payloads[agent]
        feeder = {p["exit"]: j for j, p in payloads.items() if j != agent and p["exit"] is not None}
        base, cur = 0, mine["first"]
        while cur != public["head"]:
            j = feeder[cur]
            base += payloads[j]["count"]
            cur = payloads[j]["first"]
        nxt_of = {node: nxt for node, nxt in mine["data"]}
        rank_of, cur, r = {}, mine["first"], base
        while cur in nxt_of:
            rank_of[cur] = r
            cur, r = nxt_of[cur], r + 1
        return [rank_of[node] for node, _ in mine["data"]]

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        order = data.meta["run_order"]
        return set(order[:order.index(agent)])


# -- II-19 Merge Neighbors -----------------------------------------------------------------


@silo_spec
class MergeNeighbors(_Level2):
    """Length of the merged run containing each own position.

    Adjacent equal values merge into one run (a maximal block of equal neighbours, which
    may cross agent boundaries and even span whole segments). Values are integers in
    [0, 9] generated run by run: mostly runs of 1..4, with probability 0.05 a long run of
    k..2k. A peer needs only the value and length of its leading and trailing runs; the
    minimum peer set is the owners of every position of the agent's runs plus the first
    differing position on each side.
    """

    task_id = "II-19"
    title = "Merge Neighbors"
    PEER_KEYS = ("first", "lead", "last", "trail")

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        total = n * k
        flat: list[int] = []
        prev = None
        while len(flat) < total:
            size = rng.randint(k, 2 * k) if rng.random() < 0.05 else rng.randint(1, 4)
            value = rng.choice([v for v in range(10) if v != prev])
            flat.extend([value] * size)
            prev = value
        flat = flat[:total]
        start, end = self._run_bounds(flat)
        lengths = [end[p] - start[p] + 1 for p in range(total)]
        shards = [flat[i * k:(i + 1) * k] for i in range(n)]
        expected = [lengths[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k),
                        meta={"run_start": start, "run_end": end})

    @staticmethod
    def _run_bounds(values: list[int]) -> tuple[list[int], list[int]]:
        start = list(range(len(values)))
        end = list(range(len(values)))
        for p in range(1, len(values)):
            if values[p] == values[p - 1]:
                start[p] = start[p - 1]
        for p in range(len(values) - 2, -1, -1):
            if values[p] == values[p + 1]:
                end[p] = end[p + 1]
        return start, end

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        start, end = self._run_bounds(shard)
        return {"data": shard, "first": shard[0], "lead": end[0] + 1,
                "last": shard[-1], "trail": len(shard) - start[-1]}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        values = payloads[agent]["data"]
        k = len(values)
        start, end = self._run_bounds(values)
        extra_left, j = 0, agent - 1
        while j >= 0 and payloads[j]["last"] == values[0]:
            extra_left += payloads[j]["trail"]
            if payloads[j]["trail"] < k:
                break
            j -= 1
        extra_right, j = 0, agent + 1
        while j < n and payloads[j]["first"] == values[-1]:
            extra_right += payloads[j]["lead"]
            if payloads[j]["lead"] < k:
                break
            j += 1
        return [end[p] - start[p] + 1 + (extra_left if start[p] == 0 else 0)
                + (extra_right if end[p] == k - 1 else 0) for p in range(k)]

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        k = data.public["k"]
        touched: set[int] = set()
        for p in _segment(agent, k):
            touched.update((data.meta["run_start"][p] - 1, data.meta["run_end"][p] + 1))
            touched.update(range(data.meta["run_start"][p], data.meta["run_end"][p] + 1))
        return _owners(touched, k, n, agent)


# -- II-20 Pipeline Hash -------------------------------------------------------------------


@silo_spec
class PipelineHash(_Level2):
    """Chained hash h <- (h * base + value) mod modulus over the global sequence.

    The chain starts from a public value h0 in [1, modulus-1]; base = 31, modulus = 1009
    (prime), values are integers in [0, 99]. Each agent outputs the hash state right after
    each of its own positions. A segment acts on the incoming state as an affine map
    h -> (mult * h + add) mod modulus, so a peer shares just (mult, add).
    """

    task_id = "II-20"
    title = "Pipeline Hash"
    BASE: ClassVar[int] = 31
    MODULUS: ClassVar[int] = 1009
    PEER_KEYS = ("mult", "add")

    def chain(self, values: list[int], h: int) -> list[int]:
        out = []
        for v in values:
            h = (h * self.BASE + v) % self.MODULUS
            out.append(h)
        return out

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        h0 = rng.randint(1, self.MODULUS - 1)
        shards = [[rng.randint(0, 99) for _ in range(k)] for _ in range(n)]
        states = self.chain([v for shard in shards for v in shard], h0)
        expected = [states[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected,
                        public=_public(n, k, h0=h0, base=self.BASE, modulus=self.MODULUS))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        mult = pow(self.BASE, len(shard), self.MODULUS)
        return {"data": shard, "mult": mult, "add": self.chain(shard, 0)[-1]}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        h = public["h0"]
        for j in range(agent):
            h = (payloads[j]["mult"] * h + payloads[j]["add"]) % self.MODULUS
        return self.chain(payloads[agent]["data"], h)

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return set(range(agent))
