"""SILO-Bench Level I: aggregation tasks I-01 .. I-10 (Table 9).

Every agent must submit the same global answer, which an associative reduction of
per-shard summaries yields (star or tree topology, O(N) messages). Semantics chosen where
the paper gives one line per task (documented in docs/tasks/silo.md):

- I-01 global maximum: k integers in [0, 99999] per agent; answer the largest one.
- I-02 word frequency: k words from an 8-word vocabulary; public `target`; answer how
  often the target occurs in all shards together.
- I-03 distributed vote: k votes for candidates A-E; one candidate holds a strict
  majority (> half of all N*k votes); answer its label.
- I-04 any match: k lowercase strings of length 8; public `pattern` (4 letters); answer
  true iff some string anywhere contains it (planted in one string with probability 1/2).
- I-05 range count: k integers in [0, 999]; public `lo`, `hi`; answer how many values
  lie in [lo, hi] (inclusive).
- I-06 XOR checksum: k integers in [0, 255]; answer the XOR of all of them.
- I-07 average: k integers in [0, 100]; answer the mean of all N*k values, tolerance 0.01
  (two decimals suffice).
- I-08 set union size: k integers in [1, N*k]; answer how many distinct values exist.
- I-09 top-K: k distinct integers (distinct across all agents) in [0, 10*N*k); public
  `top_k` = min(5, N*k); answer the top_k largest values (order-free, written in
  descending order).
- I-10 standard deviation: k integers in [0, 100]; answer the population standard
  deviation of all N*k values, tolerance 0.01.
"""

from __future__ import annotations

import math
import random
import string
from collections import Counter
from typing import Any

from masgrid.envs.tasks.silo.answers import parse_bool, parse_int, parse_int_list, parse_label, parse_number
from masgrid.envs.tasks.silo.spec import SiloData, SiloSpec, silo_spec


def _split(values: list[Any], n: int, k: int) -> list[list[Any]]:
    return [values[i * k:(i + 1) * k] for i in range(n)]


def _same(n: int, value: Any) -> list[Any]:
    return [value] * n


def _xor(values: Any) -> int:
    acc = 0
    for v in values:
        acc ^= v
    return acc


class _IntArraySpec(SiloSpec):
    """k uniform integers in [low, high] per agent; an integer answer."""

    level = 1
    default_k = 10
    low: int = 0
    high: int = 99_999

    def draw(self, n: int, k: int, rng: random.Random) -> list[int]:
        return [rng.randint(self.low, self.high) for _ in range(n * k)]

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_int(raw)


@silo_spec
class GlobalMax(_IntArraySpec):
    task_id = "I-01"
    title = "Global Maximum"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        values = self.draw(n, k, rng)
        return SiloData(shards=_split(values, n, k), expected=_same(n, max(values)))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return max(shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return max(payloads.values())


VOCABULARY = ["apple", "river", "stone", "cloud", "maple", "tiger", "lemon", "orbit"]


@silo_spec
class WordFrequency(SiloSpec):
    task_id = "I-02"
    level = 1
    title = "Word Frequency"
    default_k = 10

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        target = rng.choice(VOCABULARY)
        words = [rng.choice(VOCABULARY) for _ in range(n * k)]
        return SiloData(shards=_split(words, n, k), expected=_same(n, words.count(target)),
                        public={"target": target})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_int(raw)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return shard.count(public["target"])

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return sum(payloads.values())


CANDIDATES = ["A", "B", "C", "D", "E"]


@silo_spec
class DistributedVote(SiloSpec):
    task_id = "I-03"
    level = 1
    title = "Distributed Vote"
    default_k = 10

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        total = n * k
        winner = rng.choice(CANDIDATES)
        majority = min(total, total // 2 + 1 + rng.randint(0, total // 10))
        others = [c for c in CANDIDATES if c != winner]
        votes = [winner] * majority + [rng.choice(others) for _ in range(total - majority)]
        rng.shuffle(votes)
        return SiloData(shards=_split(votes, n, k), expected=_same(n, winner),
                        public={"candidates": CANDIDATES})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_label(raw, CANDIDATES)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return dict(Counter(shard))

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        totals: Counter[str] = Counter()
        for counts in payloads.values():
            totals.update(counts)
        return max(sorted(totals), key=lambda c: totals[c])

    def knows_answer(self, agent: int, known: set[int], data: SiloData) -> bool:
        """The prompt says one candidate holds more than half of all votes, so the answer is
        settled once every other candidate is ruled out: its known votes plus every vote not
        yet seen is at most half (e.g. the winner's known votes already exceed half)."""
        total = sum(len(shard) for shard in data.shards)
        seen: Counter[str] = Counter(v for j in known for v in data.shards[j])
        unseen = total - sum(seen.values())
        possible = [c for c in CANDIDATES if 2 * (seen[c] + unseen) > total]
        return len(possible) == 1


@silo_spec
class AnyMatch(SiloSpec):
    task_id = "I-04"
    level = 1
    title = "Any Match"
    default_k = 10
    length = 8

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        letters = string.ascii_lowercase
        pattern = "".join(rng.choice(letters) for _ in range(4))
        strings: list[str] = []
        while len(strings) < n * k:
            s = "".join(rng.choice(letters) for _ in range(self.length))
            if pattern not in s:
                strings.append(s)
        present = rng.random() < 0.5
        if present:
            idx, at = rng.randrange(n * k), rng.randrange(self.length - len(pattern) + 1)
            s = strings[idx]
            strings[idx] = s[:at] + pattern + s[at + len(pattern):]
        return SiloData(shards=_split(strings, n, k), expected=_same(n, present), public={"pattern": pattern})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_bool(raw)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return any(public["pattern"] in s for s in shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return any(payloads.values())

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        """A match settles "true": the holder of the (first) matching string is the minimum
        set (empty for the holder itself); "false" needs every other part."""
        holders = self._holders(range(n), data)
        return set(holders[:1]) - {agent} if holders else set(range(n)) - {agent}

    def knows_answer(self, agent: int, known: set[int], data: SiloData) -> bool:
        """Any known match settles it (whichever holder it came from); otherwise all parts."""
        return bool(self._holders(known, data)) or len(known) == len(data.shards)

    @staticmethod
    def _holders(agents: Any, data: SiloData) -> list[int]:
        pattern = data.public["pattern"]
        return [j for j in sorted(agents) if any(pattern in s for s in data.shards[j])]


@silo_spec
class RangeCount(_IntArraySpec):
    task_id = "I-05"
    title = "Range Count"
    high = 999

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        values = self.draw(n, k, rng)
        lo = rng.randint(100, 400)
        hi = lo + rng.randint(200, 400)
        count = sum(lo <= v <= hi for v in values)
        return SiloData(shards=_split(values, n, k), expected=_same(n, count), public={"lo": lo, "hi": hi})

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sum(public["lo"] <= v <= public["hi"] for v in shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return sum(payloads.values())


@silo_spec
class XorChecksum(_IntArraySpec):
    task_id = "I-06"
    title = "Checksum (XOR)"
    high = 255

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        values = self.draw(n, k, rng)
        return SiloData(shards=_split(values, n, k), expected=_same(n, _xor(values)))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return _xor(shard)

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return _xor(payloads.values())


class _StatSpec(_IntArraySpec):
    """Numeric answers within an absolute tolerance of 0.01 (two decimals suffice)."""

    high = 100
    tolerance = 0.01

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_number(raw)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return [len(shard), sum(shard), sum(v * v for v in shard)]

    def format_answer(self, answer: Any) -> str:
        return f"{answer:.2f}"


@silo_spec
class AverageValue(_StatSpec):
    task_id = "I-07"
    title = "Average Value"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        values = self.draw(n, k, rng)
        return SiloData(shards=_split(values, n, k), expected=_same(n, sum(values) / len(values)))

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        count = sum(p[0] for p in payloads.values())
        return sum(p[1] for p in payloads.values()) / count


@silo_spec
class SetUnionSize(_IntArraySpec):
    task_id = "I-08"
    title = "Set Union Size"
    low = 1

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        values = [rng.randint(1, n * k) for _ in range(n * k)]
        return SiloData(shards=_split(values, n, k), expected=_same(n, len(set(values))))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sorted(set(shard))

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return len({v for values in payloads.values() for v in values})


@silo_spec
class TopK(SiloSpec):
    task_id = "I-09"
    level = 1
    title = "Top-K Selection"
    default_k = 10

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        values = rng.sample(range(10 * n * k), n * k)
        top_k = min(5, n * k)
        top = sorted(values, reverse=True)[:top_k]
        return SiloData(shards=_split(values, n, k), expected=_same(n, top), public={"top_k": top_k})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        # The answer is a set of values: order is normalised to descending.
        return sorted(parse_int_list(raw, int(data.public["top_k"])), reverse=True)

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return sorted(shard, reverse=True)[:public["top_k"]]

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        return sorted((v for values in payloads.values() for v in values), reverse=True)[:public["top_k"]]


@silo_spec
class StandardDeviation(_StatSpec):
    task_id = "I-10"
    title = "Standard Deviation"

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        values = self.draw(n, k, rng)
        return SiloData(shards=_split(values, n, k), expected=_same(n, _pstdev(len(values), sum(values),
                                                                              sum(v * v for v in values))))

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        c, s, q = (sum(p[i] for p in payloads.values()) for i in range(3))
        return _pstdev(c, s, q)


def _pstdev(count: int, total: int, squares: int) -> float:
    """Population standard deviation from integer moments (exact variance, one sqrt)."""
    return math.sqrt((count * squares - total * total) / (count * count))
