"""SILO-Bench Level I: aggregation tasks I-01 .. I-10 (Table 9).

Every agent must submit the same global answer, which an associative reduction of
per-shard summaries yields (star or tree topology, O(N) messages). The paper gives one
line per task; the semantics chosen here, and where they deviate from a literal reading,
are documented in docs/tasks/silo.md ("Level I tasks"). Three choices apply throughout:

- Shards are not identically distributed where identical ones would let one shard stand
  for the whole (I-02, I-03, I-05, I-07, I-08, I-10): each agent's data has its own mix or
  level, so a silent agent cannot extrapolate the global answer from its part (section 3.1:
  no single agent has sufficient information). `isolated_answer` is each task's best guess
  from one shard and the known generator; `chance_sr` / `ceiling` bound what it scores.
- S stays exact (eq. 2). q_i (eq. 3, "within tolerance of the truth") adds near-miss
  credit per task: a linear band around numeric truths (`band`), one wrong bit for the XOR,
  a one-vote tally gap for the vote, a later match for the first-match search, and the
  found fraction of the top-K set. q_i = 1 exactly when the answer is correct.
- Default k gives about 300 tokens of shard per agent (Table 6: 45 to 1,856, mean 312),
  the same at every N.
"""

from __future__ import annotations

import math
import random
import string
from collections import Counter
from typing import Any, ClassVar

from masgrid.families.silo.answers import parse_int, parse_int_list, parse_label, parse_number
from masgrid.families.silo.spec import SiloData, SiloSpec, silo_spec


def _split(values: list[Any], n: int, k: int) -> list[list[Any]]:
    return [values[i * k:(i + 1) * k] for i in range(n)]


def _same(n: int, value: Any) -> list[Any]:
    return [value] * n


def _xor(values: Any) -> int:
    acc = 0
    for v in values:
        acc ^= v
    return acc


def band_credit(answer: float, truth: float, band: float) -> float:
    """Linear near-miss credit: 1 at the truth, 0 at distance `band` or more."""
    if band <= 0:
        return 0.0
    return max(0.0, 1.0 - abs(answer - truth) / band)


class _Level1Spec(SiloSpec):
    """A Level I task: one common answer; q_i = 1 if correct, else the task's near-miss credit."""

    level = 1

    def quality(self, answer: Any, expected: Any, data: SiloData) -> float:
        if answer is None:
            return 0.0
        if self.is_correct(answer, expected, data):
            return 1.0
        return self.near_miss(answer, expected, data)

    def near_miss(self, answer: Any, expected: Any, data: SiloData) -> float:
        """Credit in [0, 1) for a wrong answer; default: the linear band around a numeric truth."""
        if isinstance(answer, bool) or not isinstance(answer, (int, float)):
            return 0.0
        return band_credit(answer, expected, self.band(expected))

    def band(self, expected: Any) -> float:
        """Half-width of the near-miss band (0: no partial credit)."""
        return 0.0


class _CountSpec(_Level1Spec):
    """An integer count: near-miss band max(2, 1% of the truth), so off-by-one earns 1/2."""

    def band(self, expected: Any) -> float:
        return max(2.0, 0.01 * abs(expected))

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_int(raw)


@silo_spec
class GlobalMax(_Level1Spec):
    """k distinct integers from [0, 10^9) per agent. Exactly one agent holds the maximum, so a
    silent agent answering its local maximum is right with probability 1/n; guessing a value
    above it hits with probability about N*k/10^9."""

    task_id = "I-01"
    title = "Global Maximum"
    default_k = 75
    high: ClassVar[int] = 10**9
    chance_sr = 0.02

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        values = rng.sample(range(self.high), n * k)
        return SiloData(shards=_split(values, n, k), expected=_same(n, max(values)))

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_int(raw)

    def band(self, expected: Any) -> float:
        return max(1.0, 0.001 * expected)  # 0.1% of the maximum

    def ceiling(self, n: int) -> float:
        return self.chance_sr + 1 / n

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return max(shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return max(payloads.values())


VOCABULARY = ["apple", "river", "stone", "cloud", "maple", "tiger", "lemon", "orbit"]
#: each agent's share of the target word is drawn from U(TARGET_SHARE_MIN, TARGET_SHARE_MAX)
#: (bounded away from 0, so that no count, such as 0, is much likelier than its neighbours)
TARGET_SHARE_MIN, TARGET_SHARE_MAX = 0.05, 0.5


@silo_spec
class WordFrequency(_CountSpec):
    """Each agent's list has its own share p_j ~ U(0.05, 0.5) of the target word (the other
    words uniform), so one agent's count says little about another's."""

    task_id = "I-02"
    title = "Word Frequency"
    default_k = 75
    chance_sr = 0.1

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        target = rng.choice(VOCABULARY)
        others = [w for w in VOCABULARY if w != target]
        shards = []
        for _ in range(n):
            share = rng.uniform(TARGET_SHARE_MIN, TARGET_SHARE_MAX)
            shards.append([target if rng.random() < share else rng.choice(others) for _ in range(k)])
        total = sum(shard.count(target) for shard in shards)
        return SiloData(shards=shards, expected=_same(n, total), public={"target": target})

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return shard.count(public["target"])

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return sum(payloads.values())

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        # own count plus every other agent's expected count (the mean share)
        mean_share = (TARGET_SHARE_MIN + TARGET_SHARE_MAX) / 2
        return shard.count(public["target"]) + round((n - 1) * len(shard) * mean_share)


CANDIDATES = ["A", "B", "C", "D", "E"]
#: each agent's votes favour the candidates in a random order of its own with these weights
VOTE_PROFILE = (0.30, 0.25, 0.20, 0.15, 0.10)


@silo_spec
class DistributedVote(_Level1Spec):
    """The winner is the candidate with the most votes overall (the plurality; unique by
    construction). Each agent's votes follow VOTE_PROFILE over its own random ranking of the
    candidates, so the local leader is the global one little more often than chance (1/5);
    the winner leads by 1 to max(2, N*k/50) votes.
    Deviation: not a strict majority (LC-169), which every shard would show (docs)."""

    task_id = "I-03"
    title = "Distributed Vote"
    default_k = 75
    chance_sr = 0.25
    #: near-miss: a candidate this many votes (or fewer) behind the winner earns partial credit
    tally_band: ClassVar[int] = 2

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        shards = []
        for _ in range(n):
            ranking = rng.sample(CANDIDATES, len(CANDIDATES))
            shards.append(rng.choices(ranking, weights=VOTE_PROFILE, k=k))
        # The winner is drawn independently of the shards, then given a lead of 1 to 2% of the
        # votes over its strongest rival by turning single rival votes into votes for it at
        # random places all over the input (a few per shard), so local leaders stay uninformative.
        winner = rng.choice(CANDIDATES)
        lead = rng.randint(1, max(2, n * k // 50))
        totals = Counter(v for shard in shards for v in shard)
        while totals[rival := self.rival(totals, winner)] > totals[winner] - lead:
            j, at = rng.choice([(j, at) for j, shard in enumerate(shards) for at, v in enumerate(shard) if v == rival])
            shards[j][at] = winner
            totals[rival] -= 1
            totals[winner] += 1
        return SiloData(shards=shards, expected=_same(n, winner), public={"candidates": CANDIDATES})

    @staticmethod
    def rival(totals: Counter[str], winner: str) -> str:
        return max(sorted(c for c in CANDIDATES if c != winner), key=lambda c: totals[c])

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_label(raw, CANDIDATES)

    def near_miss(self, answer: Any, expected: Any, data: SiloData) -> float:
        totals = Counter(v for shard in data.shards for v in shard)
        return band_credit(totals[answer], totals[expected], self.tally_band)

    def ceiling(self, n: int) -> float:
        # chance (1/5) plus the weight of the agent's own votes in the total (1/n), margin 0.05
        return min(0.95, self.chance_sr + 1 / n)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return dict(Counter(shard))

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        totals: Counter[str] = Counter()
        for counts in payloads.values():
            totals.update(counts)
        return max(sorted(totals), key=lambda c: totals[c])

    def knows_answer(self, agent: int, known: set[int], data: SiloData) -> bool:
        """The plurality is settled once no rival can overtake the leader among the known votes
        even if every unseen vote went to it: the leader's known votes are at least each
        rival's known votes plus all unseen votes (a tie is no instance: the winner is unique
        by construction). Section 5.2: such an early answer is not premature."""
        total = sum(len(shard) for shard in data.shards)
        seen: Counter[str] = Counter(v for j in known for v in data.shards[j])
        unseen = total - sum(seen.values())
        leader = max(sorted(CANDIDATES), key=lambda c: seen[c])
        return all(seen[leader] >= seen[c] + unseen for c in CANDIDATES if c != leader)


@silo_spec
class AnyMatch(_Level1Spec):
    """Strings in global order (agent 0's first); the answer is the 0-based global position of
    the first string containing the public pattern, -1 if none (LC-28's index form). The
    pattern is planted in 1 to 3 random strings. Deviation: not a bare true/false, whose
    no-communication chance is 1/2 (docs). Near miss: a later matching position earns 1/2."""

    task_id = "I-04"
    title = "Any Match"
    default_k = 75
    length: ClassVar[int] = 8
    chance_sr = 0.02
    max_planted: ClassVar[int] = 3

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        letters = string.ascii_lowercase
        pattern = "".join(rng.choice(letters) for _ in range(4))
        strings: list[str] = []
        while len(strings) < n * k:
            s = "".join(rng.choice(letters) for _ in range(self.length))
            if pattern not in s:
                strings.append(s)
        for idx in rng.sample(range(n * k), min(n * k, rng.randint(1, self.max_planted))):
            at = rng.randrange(self.length - len(pattern) + 1)
            strings[idx] = strings[idx][:at] + pattern + strings[idx][at + len(pattern):]
        first = next((i for i, s in enumerate(strings) if pattern in s), -1)
        return SiloData(shards=_split(strings, n, k), expected=_same(n, first), public={"pattern": pattern})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        value = parse_int(raw)
        if value < -1:
            raise ValueError(f"expected a position >= 0, or -1 for no match; got {value}")
        return value

    def near_miss(self, answer: Any, expected: Any, data: SiloData) -> float:
        strings = [s for shard in data.shards for s in shard]
        found = 0 <= answer < len(strings) and data.public["pattern"] in strings[answer]
        return 0.5 if found else 0.0

    def ceiling(self, n: int) -> float:
        return self.chance_sr + 1 / n  # only the lowest-numbered holder of a match is right

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        """The parts up to the one holding the first match: they settle the answer (every agent
        must hear that no lower part has a match); higher parts cannot change it."""
        k = len(data.shards[0]) if data.shards else 1
        holder = data.expected[0] // k if data.expected[0] >= 0 else n - 1
        return set(range(holder + 1)) - {agent}

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        local = next((j for j, s in enumerate(shard) if public["pattern"] in s), None)
        return -1 if local is None else agent * len(shard) + local

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return min((p for p in payloads.values() if p >= 0), default=-1)


#: I-05: each value of agent j lies in [lo, hi] with probability p_j ~ U(IN_RANGE_MIN, IN_RANGE_MAX)
#: (uniform inside, else uniform over the rest of [0, RANGE_HIGH]); bounded away from 0 and 1,
#: so that no count (such as 0 or k) is much likelier than its neighbours
IN_RANGE_MIN, IN_RANGE_MAX = 0.1, 0.9
RANGE_HIGH = 999


@silo_spec
class RangeCount(_CountSpec):
    """Each agent has its own share of values inside [lo, hi], so one agent's count says
    little about another's."""

    task_id = "I-05"
    title = "Range Count"
    default_k = 150
    chance_sr = 0.1

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        lo = rng.randint(100, 400)
        hi = lo + rng.randint(200, 400)
        outside = [*range(0, lo), *range(hi + 1, RANGE_HIGH + 1)]
        shards = []
        for _ in range(n):
            share = rng.uniform(IN_RANGE_MIN, IN_RANGE_MAX)
            shards.append([rng.randint(lo, hi) if rng.random() < share else rng.choice(outside) for _ in range(k)])
        count = sum(lo <= v <= hi for shard in shards for v in shard)
        return SiloData(shards=shards, expected=_same(n, count), public={"lo": lo, "hi": hi})

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sum(public["lo"] <= v <= public["hi"] for v in shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return sum(payloads.values())

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        mean_share = (IN_RANGE_MIN + IN_RANGE_MAX) / 2  # another agent's expected in-range share
        return self.payload(agent, shard, public) + round((n - 1) * len(shard) * mean_share)


@silo_spec
class XorChecksum(_Level1Spec):
    """k uniform integers in [0, 255]; a silent agent's XOR is a uniform guess (chance 1/256).
    Near miss: an answer one bit away from the checksum earns 1/2."""

    task_id = "I-06"
    title = "Checksum (XOR)"
    default_k = 150
    chance_sr = 0.07

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        values = [rng.randint(0, 255) for _ in range(n * k)]
        return SiloData(shards=_split(values, n, k), expected=_same(n, _xor(values)))

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_int(raw)

    def near_miss(self, answer: Any, expected: Any, data: SiloData) -> float:
        return band_credit(bin(answer ^ expected).count("1"), 0, 2) if 0 <= answer <= 255 else 0.0

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return _xor(shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return _xor(payloads.values())


#: I-07 / I-10: each agent's values are its own level c ~ U{15..85} plus U{-15..15}
LEVEL_LOW, LEVEL_HIGH, SPREAD = 15, 85, 15


class _StatSpec(_Level1Spec):
    """Numeric answers within 0.01 (S); near-miss band 0.1 for q. Shards sit at own levels."""

    tolerance = 0.01
    default_k = 150
    chance_sr = 0.07
    #: moments of one value drawn by `draw_shard` (mean, mean square), for silent guesses
    value_mean: ClassVar[float] = (LEVEL_LOW + LEVEL_HIGH) / 2
    value_square: ClassVar[float] = (value_mean ** 2 + ((LEVEL_HIGH - LEVEL_LOW + 1) ** 2 - 1) / 12
                                     + ((2 * SPREAD + 1) ** 2 - 1) / 12)

    def draw_shards(self, n: int, k: int, rng: random.Random) -> list[list[int]]:
        shards = []
        for _ in range(n):
            level = rng.randint(LEVEL_LOW, LEVEL_HIGH)
            shards.append([level + rng.randint(-SPREAD, SPREAD) for _ in range(k)])
        return shards

    def band(self, expected: Any) -> float:
        return 0.1

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_number(raw)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return [len(shard), sum(shard), sum(v * v for v in shard)]

    def silent_moments(self, n: int, shard: list[int]) -> tuple[float, float, float]:
        """Own count, sum and sum of squares plus the expected ones of the n - 1 others."""
        others = (n - 1) * len(shard)
        return (n * len(shard), sum(shard) + others * self.value_mean,
                sum(v * v for v in shard) + others * self.value_square)

    def format_answer(self, answer: Any) -> str:
        return f"{answer:.2f}"


@silo_spec
class AverageValue(_StatSpec):
    task_id = "I-07"
    title = "Average Value"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        shards = self.draw_shards(n, k, rng)
        values = [v for shard in shards for v in shard]
        return SiloData(shards=shards, expected=_same(n, sum(values) / len(values)))

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        count = sum(p[0] for p in payloads.values())
        return sum(p[1] for p in payloads.values()) / count

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        count, total, _ = self.silent_moments(n, shard)
        return total / count


#: I-08: values are drawn from [1, UNION_HIGH]. Every agent after the first (in a random order)
#: reuses each of its k values with probability mu from the values drawn before it, mu ~
#: U(0, OVERLAP_MAX) per instance; reused values are distinct, so one shard shows nothing of mu
UNION_HIGH = 999_999
OVERLAP_MAX = 0.9


@silo_spec
class SetUnionSize(_CountSpec):
    """How much the shards overlap is a hidden instance parameter that no single shard reveals,
    so the union size (between about k + (N-1)k/10 and N*k) cannot be extrapolated."""

    task_id = "I-08"
    title = "Set Union Size"
    default_k = 100
    chance_sr = 0.1

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        overlap = rng.uniform(0, OVERLAP_MAX)
        shards: list[list[int]] = [[] for _ in range(n)]
        pool: list[int] = []
        for agent in rng.sample(range(n), n):
            reused = sum(rng.random() < overlap for _ in range(k)) if pool else 0
            fresh = [rng.randint(1, UNION_HIGH) for _ in range(k - reused)]
            values = rng.sample(pool, reused) + fresh
            rng.shuffle(values)
            shards[agent] = values
            pool.extend(fresh)  # the pool holds each drawn value once
        union = len({v for shard in shards for v in shard})
        return SiloData(shards=shards, expected=_same(n, union))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sorted(set(shard))

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return len({v for values in payloads.values() for v in values})

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        # own distinct values plus the others' expected fresh share, 1 - OVERLAP_MAX / 2 of k each
        return len(set(shard)) + round((n - 1) * len(shard) * (1 - OVERLAP_MAX / 2))


@silo_spec
class TopK(_Level1Spec):
    """k distinct integers (distinct across agents) from [0, 10*N*k); top_k = min(5, N*k).
    Near miss: q = the fraction of the true top_k values the answer contains."""

    task_id = "I-09"
    title = "Top-K Selection"
    default_k = 100
    chance_sr = 0.1

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        values = rng.sample(range(10 * n * k), n * k)
        top_k = min(5, n * k)
        top = sorted(values, reverse=True)[:top_k]
        return SiloData(shards=_split(values, n, k), expected=_same(n, top), public={"top_k": top_k})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        # The answer is a set of values: order is normalised to descending.
        return sorted(parse_int_list(raw, int(data.public["top_k"])), reverse=True)

    def near_miss(self, answer: Any, expected: Any, data: SiloData) -> float:
        return len(set(answer) & set(expected)) / len(expected)

    def ceiling(self, n: int) -> float:
        return self.chance_sr + n ** -5  # an agent holds all five top values with probability n^-5

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sorted(shard, reverse=True)[:public["top_k"]]

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return sorted((v for values in payloads.values() for v in values), reverse=True)[:public["top_k"]]

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """The own largest values; with fewer than top_k of them (k < 5) the answer still needs
        top_k distinct values, so it is padded with guesses just above the own maximum."""
        own = sorted(shard, reverse=True)[:public["top_k"]]
        pad = (max(shard) + i for i in range(1, public["top_k"] + 1))
        return sorted([*own, *[v for v in pad if v not in own][:public["top_k"] - len(own)]], reverse=True)


@silo_spec
class StandardDeviation(_StatSpec):
    task_id = "I-10"
    title = "Standard Deviation"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        shards = self.draw_shards(n, k, rng)
        values = [v for shard in shards for v in shard]
        return SiloData(shards=shards, expected=_same(n, _pstdev(len(values), sum(values),
                                                                 sum(v * v for v in values))))

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        c, s, q = (sum(p[i] for p in payloads.values()) for i in range(3))
        return _pstdev(c, s, q)

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        count, total, squares = self.silent_moments(n, shard)
        return math.sqrt(max(0.0, squares / count - (total / count) ** 2))


def _pstdev(count: int, total: int, squares: int) -> float:
    """Population standard deviation from integer moments (exact variance, one sqrt)."""
    return math.sqrt((count * squares - total * total) / (count * count))
