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

import itertools
import json
import math
import random
import re
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar

from masgrid.families.silo.spec import SiloData, SiloSpec, silo_spec

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


def _mix(alone: int, n: int, chance: float) -> float:
    """Mean score when `alone` of n agents are right by construction and the rest at `chance`."""
    share = min(alone, n) / n
    return share + (1 - share) * chance


class _Level2(SiloSpec):
    """Common Level II plumbing: lists of k values, exact element comparison, floor bounds."""

    level: ClassVar[int] = 2
    #: payload keys a peer's `solve` reads ("data" = the whole shard).
    PEER_KEYS: ClassVar[tuple[str, ...]] = ("data",)
    #: agents that answer exactly with no peer by construction (the first agent of a chain
    #: whose start is public); every other agent needs someone for every element.
    ALONE: ClassVar[int] = 0
    #: per-element chance level of an agent that needs peers: the documented bound on the
    #: isolated baseline's PCS (docs/tasks/silo-level2.md, tests/families/silo/test_level2.py).
    chance_pcs: ClassVar[float] = 0.05

    def ceiling(self, n: int) -> float | None:
        """ALONE agents right, the others at `chance_sr` (whole segments right)."""
        return None if self.chance_sr is None else _mix(self.ALONE, n, self.chance_sr)

    def pcs_ceiling(self, n: int) -> float:
        """ALONE agents fully right, the others' elements at `chance_pcs`."""
        return _mix(self.ALONE, n, self.chance_pcs)

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        return parse_int_list(raw, len(data.expected[agent]))


# -- II-11 Prefix Sum ----------------------------------------------------------------------


@silo_spec
class PrefixSum(_Level2):
    """Inclusive running totals of the global sequence at the agent's own k positions.

    Values are integers in [0, 999]. A peer only needs each predecessor's segment total.
    Agent 0 needs nobody (the paper's own example, appendix B.2, gives it positions [0, k));
    every other agent's k answers all carry the unknown offset of its predecessors.
    """

    task_id = "II-11"
    title = "Prefix Sum"
    PEER_KEYS = ("total",)
    VALUE_MAX: ClassVar[int] = 999
    default_k = 150
    ALONE = 1
    # the offset before agent i >= 1 is a sum of i*k uniform values (sd >= 289*sqrt(k) = 3,540 at
    # k = 150): the best guess, i*k*499.5, hits it with probability < 1/8,000
    chance_sr = 0.01
    chance_pcs = 0.01

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        shards = [[rng.randint(0, self.VALUE_MAX) for _ in range(k)] for _ in range(n)]
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
        return list(itertools.accumulate(payloads[agent]["data"],
                                         initial=sum(payloads[j]["total"] for j in range(agent))))[1:]

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Own running totals on top of the expected offset of the agent's predecessors."""
        offset = round(agent * public["k"] * self.VALUE_MAX / 2)
        return list(itertools.accumulate(shard, initial=offset))[1:]

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return set(range(agent))


# -- II-12 Moving Average ------------------------------------------------------------------


@silo_spec
class MovingAverage(_Level2):
    """Centred moving average over the radius r = k around each own position.

    The window of position p is positions p-r .. p+r (2k+1 values), cut at both ends of the
    global sequence. With r = k every own window reaches into a neighbour's segment (also
    agent 0's and the last agent's, whose windows are cut on one side only) and stays within
    the neighbours, so every agent needs a neighbour for every element. Values are integers in [0, 99]; averages are rounded half-up to 2 decimals and
    compared with an absolute tolerance of 0.01, which absorbs a different rounding of an
    exact .xx5. Peers need only the neighbours' r edge values.
    """

    task_id = "II-12"
    title = "Moving Average"
    tolerance = 0.01
    PEER_KEYS = ("head", "tail")
    default_k = 150
    # every element's window holds >= 1 unknown value uniform on 0..99 (k+1 of them for an
    # interior agent); the 0.01 tolerance on a mean of <= 2k+1 = 301 values (k = 150) admits at
    # most 7 values of the unknown sum: <= 7/100 for the one or two elements per segment with a
    # single unknown value, far less with more, ~0 for a whole segment
    chance_sr = 0.01
    chance_pcs = 0.04

    @staticmethod
    def radius(k: int) -> int:
        return k

    @staticmethod
    def averages(seq: list[Any], lo: int, hi: int, r: int) -> list[float]:
        """Centred means at seq[lo:hi] (ints or Fractions), the window cut at the ends of `seq`."""
        prefix = list(itertools.accumulate(seq, initial=0))
        out = []
        for idx in range(lo, hi):
            a, b = max(0, idx - r), min(len(seq), idx + r + 1)
            out.append(_round2(Fraction(prefix[b] - prefix[a]) / (b - a)))
        return out

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        r = self.radius(k)
        shards = [[rng.randint(0, 99) for _ in range(k)] for _ in range(n)]
        flat = [v for shard in shards for v in shard]
        means = self.averages(flat, 0, len(flat), r)
        expected = [means[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k, radius=r))

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
        r = public["radius"]
        return {"data": shard, "head": shard[:r], "tail": shard[len(shard) - r:]}

    def _around(self, agent: int, n: int, own: list[Any], left: list[Any], right: list[Any],
                public: dict[str, Any]) -> list[float]:
        before = left if agent > 0 else []
        after = right if agent < n - 1 else []
        return self.averages(list(before) + list(own) + list(after), len(before), len(before) + len(own),
                             public["radius"])

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        left = payloads[agent - 1]["tail"] if agent > 0 else []
        right = payloads[agent + 1]["head"] if agent < n - 1 else []
        return self._around(agent, n, payloads[agent]["data"], left, right, public)

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Neighbours' values replaced by their expectation 49.5; the global ends are known."""
        guess = [Fraction(99, 2)] * public["radius"]
        return self._around(agent, n, shard, guess, guess, public)

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return {j for j in (agent - 1, agent + 1) if 0 <= j < n}


# -- II-13 Longest Palindrome --------------------------------------------------------------


def _letters(text: str) -> str:
    """How a shard shows a piece of text: letters separated by single spaces (one token each)."""
    return " ".join(text)


def _unletters(shard: str) -> str:
    return shard.replace(" ", "")


@lru_cache(maxsize=8)
def _palindromes(text: str) -> tuple[tuple[int, int], ...]:
    """Every maximal palindrome of `text` as (start, end), inclusive: one per odd centre and
    one per even centre with a non-empty palindrome."""
    out, size = [], len(text)
    for c in range(size):
        r = 0
        while c - r - 1 >= 0 and c + r + 1 < size and text[c - r - 1] == text[c + r + 1]:
            r += 1
        out.append((c - r, c + r))
    for c in range(1, size):
        r = 0
        while c - r - 1 >= 0 and c + r < size and text[c - r - 1] == text[c + r]:
            r += 1
        if r:
            out.append((c - r, c + r - 1))
    return tuple(out)


def _longest_containing(text: str) -> list[int]:
    """For every position, the length of the longest palindromic substring containing it."""
    best = [1] * len(text)
    for start, end in _palindromes(text):
        length = end - start + 1
        for p in range(start, end + 1):
            if best[p] < length:
                best[p] = length
    return best


@silo_spec
class LongestPalindrome(_Level2):
    """Length of the longest palindromic substring (odd or even) containing each own position.

    The global string is a chain of palindromic blocks of k+1 .. 2k+1 letters over an
    8-letter alphabet, so no block fits inside one segment: every position lies in a
    palindrome that crosses a boundary, and every agent needs a neighbour for every element.
    The chain starts and ends with 1 .. k/5 random filler letters: a block that began at the
    very start of the string would be pinned there, and whoever saw its centre could infer
    its length alone (the same at the end); the filler leaves a few local positions instead.
    A shard shows its letters separated by spaces. Peers share their whole segment; the
    minimum peer set is the owners of every character of the palindromes containing an own
    position, and of the mismatching characters that end them.
    """

    task_id = "II-13"
    title = "Longest Palindrome"
    ALPHABET: ClassVar[str] = "abcdefgh"
    default_k = 250
    # a block crossing the boundary extends beyond the segment by an amount the agent cannot
    # see, spread over about k/2 values: a guess hits a run of equal answers w.p. ~ 2/k. An end
    # agent that sees the centre of the first (last) block still has to guess the filler's
    # length: 1 in k/5 = 50, so an end agent is right w.p. ~ 0.02
    chance_sr = 0.05
    chance_pcs = 0.05

    def pcs_ceiling(self, n: int) -> float:
        """The filler at each end (1 .. k/5 letters, k/10 on average) is computed alone by the
        two end agents: ~ 0.1 of an end agent's positions, 0.25/n with margin."""
        return self.chance_pcs + 0.25 / n

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        length = n * k
        pad = max(1, k // 5)
        head, tail = rng.randint(1, pad), rng.randint(1, pad)
        if length - head - tail < k + 1:  # N = 1 or a tiny k: one palindrome, no filler
            head = tail = 0
        chars = [rng.choice(self.ALPHABET) for _ in range(head)]
        while len(chars) < length - tail:
            remaining = length - tail - len(chars)
            size = remaining if remaining <= 2 * k + 1 else rng.randint(k + 1, min(2 * k + 1, remaining - k - 1))
            half = [rng.choice(self.ALPHABET) for _ in range(size // 2)]
            chars += half + [rng.choice(self.ALPHABET)] * (size % 2) + half[::-1]
        chars += [rng.choice(self.ALPHABET) for _ in range(tail)]
        text = "".join(chars)
        best = _longest_containing(text)
        expected = [best[i * k:(i + 1) * k] for i in range(n)]
        shards = [_letters(text[i * k:(i + 1) * k]) for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return {"data": shard}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        """Longest palindromes over the contiguous run of segments known around `agent`."""
        k = public["k"]
        lo, hi = agent, agent
        while lo - 1 in payloads:
            lo -= 1
        while hi + 1 in payloads:
            hi += 1
        text = "".join(_unletters(payloads[j]["data"]) for j in range(lo, hi + 1))
        offset = (agent - lo) * k
        return _longest_containing(text)[offset:offset + k]

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Palindromes of the own segment; an end agent that sees the centre of the block next
        to its filler also guesses that block's length, taking the filler at its mean."""
        text = _unletters(shard)
        if n == 1 or agent not in (0, n - 1):
            return _longest_containing(text)
        guess = self._end_guess(text if agent == 0 else text[::-1], (max(1, public["k"] // 5) + 1) // 2)
        return guess if agent == 0 else guess[::-1]

    @staticmethod
    def _end_guess(text: str, filler: int) -> list[int]:
        """Agent 0's view: a long palindrome touching the right edge is the first block, whose
        left end (pinned after the filler) gives its full length."""
        best = _longest_containing(text)
        edge = [(s, e) for s, e in _palindromes(text) if e == len(text) - 1 and e - s + 1 >= len(text) // 4]
        if not edge:
            return best
        start, end = max(edge, key=lambda span: span[1] - span[0])
        length = start + end - 2 * filler + 1  # mirror of the block's start around its centre
        return [max(b, length) if p >= filler else b for p, b in enumerate(best)]

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        k = data.public["k"]
        text = "".join(_unletters(s) for s in data.shards)
        first, last = agent * k, (agent + 1) * k - 1
        spans = [(s, e) for s, e in _palindromes(text) if s <= last and e >= first]
        lo = min(s for s, _ in spans) - 1
        hi = max(e for _, e in spans) + 1
        return _owners(set(range(lo, hi + 1)), k, n, agent)


# -- II-14 1D Life Game --------------------------------------------------------------------


@silo_spec
class LifeGame1D(_Level2):
    """One generation of a 1D parity automaton with a neighbourhood of radius k.

    A cell is alive in the next generation iff the number of live cells within distance
    k of it (itself included) is odd; cells beyond either end of the global row are dead.
    Cells start alive with probability 1/2. With radius k every cell's neighbourhood
    reaches into a neighbouring segment (k cells on each side cover the neighbours exactly),
    so every agent needs its neighbours for every cell; peers share their whole segment.
    """

    task_id = "II-14"
    title = "1D Life Game"
    default_k = 150
    # each cell is the parity of >= 1 unknown fair bit: any guess is right w.p. exactly 1/2
    # (a whole segment w.p. 2^-k); PCS at chance is therefore 1/2, flagged in the docs
    chance_sr = 0.01
    chance_pcs = 0.55

    @staticmethod
    def step(row: list[int], lo: int, hi: int, radius: int) -> list[int]:
        """Next states of row[lo:hi], cells beyond the ends of `row` dead."""
        prefix = list(itertools.accumulate(row, initial=0))
        return [(prefix[min(len(row), p + radius + 1)] - prefix[max(0, p - radius)]) % 2 for p in range(lo, hi)]

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        shards = [[int(rng.random() < 0.5) for _ in range(k)] for _ in range(n)]
        flat = [c for shard in shards for c in shard]
        nxt = self.step(flat, 0, len(flat), k)
        expected = [nxt[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k, radius=k))

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
        return {"data": shard}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        left = payloads[agent - 1]["data"] if agent > 0 else []
        right = payloads[agent + 1]["data"] if agent < n - 1 else []
        own = payloads[agent]["data"]
        return self.step(list(left) + list(own) + list(right), len(left), len(left) + len(own), public["radius"])

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
    including that position. Each agent's piece comes from its own random letter mix, so
    how far a piece advances the scan varies widely from piece to piece. The state entering
    a segment depends on every predecessor; a segment acts on it as a transfer table (start
    phase -> characters matched), which is all a peer needs to share. Agent 0 needs nobody.
    """

    task_id = "II-15"
    title = "Pattern Search"
    ALPHABET: ClassVar[str] = "abc"
    PATTERN_LEN: ClassVar[int] = 4
    PEER_KEYS = ("gain",)
    default_k = 250
    ALONE = 1
    # the count entering agent i >= 1 has sd ~ 30*sqrt(i) at k = 250 (each piece's match rate
    # varies with its letter mix): a guess is exact w.p. ~ 0.013 (two pieces' gains coincide
    # w.p. 0.011), or ~ 0.02 counting a merge at the first letter. A guess within 3 of the
    # truth lets the guessed scan merge with the true one w.p. ~ 1/2 (equal counts scan alike
    # from then on), which puts ~ 0.05 of agent 1's elements right. Bounds of 0.1 leave room
    # for one lucky instance among the 8-20 a table or test averages
    chance_sr = 0.1
    chance_pcs = 0.1

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
        pieces = []
        for _ in range(n):
            weights = [rng.random() for _ in self.ALPHABET]
            pieces.append("".join(rng.choices(self.ALPHABET, weights=weights, k=k)))
        counts = self.scan("".join(pieces), pattern, 0)
        expected = [counts[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=[_letters(p) for p in pieces], expected=expected,
                        public=_public(n, k, pattern=pattern))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        pattern, text = public["pattern"], _unletters(shard)
        gain = [self.scan(text, pattern, phase)[-1] - phase for phase in range(len(pattern))]
        return {"data": shard, "gain": gain}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        pattern = public["pattern"]
        matched = 0
        for j in range(agent):
            matched += payloads[j]["gain"][matched % len(pattern)]
        return self.scan(_unletters(payloads[agent]["data"]), pattern, matched)

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Own scan from the expected count entering it: `agent` times a piece's mean gain."""
        pattern = public["pattern"]
        return self.scan(_unletters(shard), pattern, round(agent * self.mean_gain(pattern, public["k"])))

    @classmethod
    @lru_cache(maxsize=128)
    def mean_gain(cls, pattern: str, k: int) -> float:
        """Pattern characters a piece of k letters matches on average (from phase 0), over the
        generator's letter mixes: a fixed-seed simulation of 200 pieces, what an agent that
        knows how pieces are made could estimate without seeing any."""
        rng = random.Random(f"{pattern}/{k}")
        total = 0
        for _ in range(200):
            weights = [rng.random() for _ in cls.ALPHABET]
            total += cls.scan("".join(rng.choices(cls.ALPHABET, weights=weights, k=k)), pattern, 0)[-1]
        return total / 200

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return set(range(agent))


# -- II-16 Trapping Rain -------------------------------------------------------------------


@silo_spec
class TrappingRain(_Level2):
    """Units of rain water held above each own position of a global elevation profile.

    Heights are integers drawn from an exponential distribution of mean 100 (mostly below
    500, rarely above 1,000), so the tallest bar beyond a segment cannot be read off a value
    range; water at p is min(max of heights[0..p], max of heights[p..end]) - heights[p], and
    the ends of the global profile spill. A peer needs only every other segment's maximum,
    from both sides.
    """

    task_id = "II-16"
    title = "Trapping Rain"
    PEER_KEYS = ("max",)
    MEAN: ClassVar[int] = 100
    default_k = 150
    # an interior agent needs the exact lower of the two outer walls (maxima of many bars,
    # spread sd ~ 128): a guess hits w.p. < 0.01. An edge agent that assumes the far side is
    # taller is right w.p. (n-1)/n (ceiling below); ties add a little
    chance_sr = 0.05
    chance_pcs = 0.1

    def ceiling(self, n: int) -> float:
        """Each of the two edge agents is right w.p. (n-1)/n: mean S 2(n-1)/n^2, plus a margin
        of 0.1 for the sampling spread of 8 to 20 instances and the interior chance."""
        return 2 * (n - 1) / n ** 2 + 0.1

    def pcs_ceiling(self, n: int) -> float:
        """Each edge agent fully right w.p. (n-1)/n, else right on about half its bars (those
        before its own tallest bar): 2/n * (1 - 1/(2n)), plus `chance_pcs` as margin."""
        return 2 / n * (1 - 1 / (2 * n)) + self.chance_pcs

    @staticmethod
    def water(heights: list[int], left: float, right: float) -> list[int]:
        """Water above `heights` with walls of the given heights just outside them."""
        lo, his = [], []
        for h in heights:
            left = max(left, h)
            lo.append(left)
        for h in reversed(heights):
            right = max(right, h)
            his.append(right)
        his.reverse()
        return [int(min(a, b) - h) for a, b, h in zip(lo, his, heights)]

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        shards = [[int(rng.expovariate(1 / self.MEAN)) for _ in range(k)] for _ in range(n)]
        flat = [h for shard in shards for h in shard]
        water = self.water(flat, 0, 0)
        expected = [water[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k))

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return {"data": shard, "max": max(shard)}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        left = max((payloads[j]["max"] for j in range(agent)), default=0)
        right = max((payloads[j]["max"] for j in range(agent + 1, n)), default=0)
        return self.water(payloads[agent]["data"], left, right)

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Edge agents assume the far side is taller; interior agents assume both outer walls
        stand at the typical maximum of the smaller side (mean * (ln m + Euler's gamma))."""
        k = public["k"]
        if n == 1:
            return self.water(shard, 0, 0)
        if agent in (0, n - 1):
            tall = math.inf
            return self.water(shard, 0 if agent == 0 else tall, tall if agent == 0 else 0)
        m = min(agent, n - 1 - agent) * k
        wall = round(self.MEAN * (math.log(m) + 0.5772))
        return self.water(shard, wall, wall)

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        return set(range(n)) - {agent}


# -- II-17 Diff Array ----------------------------------------------------------------------


@lru_cache(maxsize=64)
def _cover_chance(k: int, back: int) -> tuple[float, ...]:
    """For each own offset o, the chance that one trip of the agent `back` segments earlier
    (boarding uniform in its segment, riding k..2k stops) is still in the car at o."""
    out = []
    for o in range(k):
        hits = sum(1 for b in range(k) for ride in range(k, 2 * k + 1) if b + ride > back * k + o)
        out.append(hits / (k * (k + 1)))
    return tuple(out)


@silo_spec
class DiffArray(_Level2):
    """Car-pooling occupancy (LC-1094) at the agent's own k stops.

    There are n*k stops; agent i owns stops [i*k, (i+1)*k) and holds k trips
    [passengers, board, leave] with 1..9 passengers boarding at one of its own stops and
    leaving k..2k stops later (at most at stop n*k); a trip occupies stops board..leave-1.
    Each agent outputs the number of passengers in the car at each own stop, counting
    every agent's trips. Since every trip rides at least k stops, the car at each own stop
    carries trips of the two preceding agents; each shares what it spills into the next two
    segments as 2k numbers. Agent 0 needs nobody.
    """

    task_id = "II-17"
    title = "Diff Array"
    PEER_KEYS = ("spill",)
    default_k = 40
    ALONE = 1
    # the spill at an own stop sums the passengers (1..9) of ~k/4 or more earlier trips
    # (sd >= 5 at k = 40): the best guess hits w.p. < 0.1 per stop, ~0 for a segment
    chance_sr = 0.01
    chance_pcs = 0.1

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        total = n * k
        shards = []
        for i in range(n):
            trips = []
            for _ in range(k):
                board = rng.randint(i * k, (i + 1) * k - 1)
                leave = min(board + rng.randint(k, 2 * k), total)
                trips.append([rng.randint(1, 9), board, leave])
            shards.append(trips)
        diff = [0] * (total + 1)
        for trips in shards:
            for v, board, leave in trips:
                diff[board] += v
                diff[leave] -= v
        load = list(itertools.accumulate(diff[:total]))
        expected = [load[i * k:(i + 1) * k] for i in range(n)]
        return SiloData(shards=shards, expected=expected, public=_public(n, k, stops=total))

    @staticmethod
    def _load(trips: list[Any], stops: range) -> list[int]:
        return [sum(v for v, board, leave in trips if board <= q < leave) for q in stops]

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        k = public["k"]
        return {"data": shard, "spill": self._load(shard, range((agent + 1) * k, (agent + 3) * k))}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        k = public["k"]
        out = self._load(payloads[agent]["data"], _segment(agent, k))
        for back in (1, 2):
            if agent - back in payloads:
                spill = payloads[agent - back]["spill"][(back - 1) * k:back * k]
                out = [a + b for a, b in zip(out, spill)]
        return out

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """Own load plus the expected spill of the two predecessors (5 passengers a trip)."""
        k = public["k"]
        out = [float(x) for x in self._load(shard, _segment(agent, k))]
        for back in (1, 2):
            if agent - back >= 0:
                out = [a + 5 * k * c for a, c in zip(out, _cover_chance(k, back))]
        return [round(x) for x in out]

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        k = data.public["k"]
        first, last = agent * k, (agent + 1) * k - 1
        return {j for j, trips in enumerate(data.shards) if j != agent
                and any(board <= last and leave - 1 >= first for _, board, leave in trips)}


# -- II-18 List Ranking --------------------------------------------------------------------


@silo_spec
class ListRanking(_Level2):
    """Rank (0-based distance from the head) of every node an agent holds in a linked list.

    The list has n*k nodes with distinct random 5-digit ids. Each agent's k nodes form
    RUNS (3) runs of consecutive list nodes of random sizes, and all the runs are laid
    along the list in a random order (re-dealt where one agent would hold the whole front
    of the list), so an agent holds a few contiguous pieces but does not know where they
    sit, and every agent needs someone. A shard lists its k nodes as [id, next id] pairs in shuffled
    order (next is null for the tail); the head's id is public. The answer lists the ranks
    in the order of the shard (a JSON object {id: rank} is also accepted). The minimum peer
    set is the holders of the runs that precede the agent's last run.
    """

    task_id = "II-18"
    title = "List Ranking"
    PEER_KEYS = ("chains",)
    RUNS: ClassVar[int] = 3
    ID_LO: ClassVar[int] = 10000
    ID_HI: ClassVar[int] = 99999
    default_k = 36
    # a run's offset is a sum of random run sizes spread over ~n*k ranks: a guess hits w.p.
    # ~ 1/(n*k); only the run at the head is free, and its holder also holds other runs
    chance_sr = 0.05
    chance_pcs = 0.05

    def pcs_ceiling(self, n: int) -> float:
        """The head holder knows the ranks of its head run: a third of its nodes on average,
        more when its next runs happen to follow it (about 0.56 at N = 2); bounded by 2/3."""
        return (2 / 3) / n + self.chance_pcs

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        total = n * k
        ids = rng.sample(range(self.ID_LO, max(self.ID_HI, self.ID_LO + 10 * total) + 1), total)
        runs: list[tuple[int, int]] = []  # (agent, size)
        for agent in range(n):
            cuts = sorted(rng.sample(range(1, k), min(self.RUNS, k) - 1))
            runs += [(agent, b - a) for a, b in zip([0] + cuts, cuts + [k])]
        rng.shuffle(runs)
        m = len(runs) // n
        if n > 1 and len({agent for agent, _ in runs[:m]}) == 1:
            # one agent holds the whole front of the list and would need nobody: move its last
            # front run behind a run of another agent, so that every agent needs someone
            other = rng.randrange(m, len(runs))
            runs[m - 1], runs[other] = runs[other], runs[m - 1]
        nodes: list[list[tuple[int, Any, int]]] = [[] for _ in range(n)]
        p = 0
        for agent, size in runs:
            for _ in range(size):
                nodes[agent].append((ids[p], ids[p + 1] if p + 1 < total else None, p))
                p += 1
        for own in nodes:
            rng.shuffle(own)
        return SiloData(shards=[[[node, nxt] for node, nxt, _ in own] for own in nodes],
                        expected=[[rank for _, _, rank in own] for own in nodes],
                        public=_public(n, k, head=ids[0]), meta={"run_order": [a for a, _ in runs]})

    def parse_answer(self, raw: str, agent: int, data: SiloData) -> Any:
        text = _strip(raw)
        if not text.startswith("{"):
            return parse_int_list(raw, len(data.expected[agent]))
        try:
            mapping = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"malformed JSON object: {exc.msg}; write e.g. {{\"17\": 0, \"42\": 1}}") from None
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

    @staticmethod
    def chains(shard: list[Any]) -> list[list[Any]]:
        """The shard's maximal chains as [first id, id its last node points to, node count]."""
        nxt_of = {node: nxt for node, nxt in shard}
        pointed = {nxt for _, nxt in shard}
        out = []
        for node, _ in shard:
            if node in pointed:
                continue
            cur, count = node, 1
            while nxt_of[cur] in nxt_of:
                cur, count = nxt_of[cur], count + 1
            out.append([node, nxt_of[cur], count])
        return out

    @staticmethod
    def _ranks(shard: list[Any], base: dict[int, int]) -> list[int]:
        """Ranks of the shard's nodes given each own chain's first rank."""
        nxt_of = {node: nxt for node, nxt in shard}
        rank_of: dict[int, int] = {}
        for first, r in base.items():
            cur = first
            while cur in nxt_of:
                rank_of[cur] = r
                cur, r = nxt_of[cur], r + 1
        return [rank_of[node] for node, _ in shard]

    def payload(self, agent: int, shard: Any, public: dict[str, Any]) -> Any:
        return {"data": shard, "chains": self.chains(shard)}

    def solve(self, agent: int, n: int, payloads: dict[int, Any], public: dict[str, Any]) -> Any:
        by_first = {first: (exit_, count) for p in payloads.values() for first, exit_, count in p["chains"]}
        own = {first for first, _, _ in payloads[agent]["chains"]}
        base: dict[int, int] = {}
        cur, rank = public["head"], 0
        while len(base) < len(own):
            exit_, count = by_first[cur]
            if cur in own:
                base[cur] = rank
            cur, rank = exit_, rank + count
        return self._ranks(payloads[agent]["data"], base)

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """The chain starting at the public head from rank 0; any other chain at the middle
        of the ranks it could take."""
        middle = (n * public["k"]) // 2
        return self._ranks(shard, {first: 0 if first == public["head"] else middle
                                   for first, _, _ in self.chains(shard)})

    def required_peers(self, agent: int, n: int, data: SiloData) -> set[int]:
        order = data.meta["run_order"]
        last = max(idx for idx, holder in enumerate(order) if holder == agent)
        return set(order[:last]) - {agent}


# -- II-19 Merge Neighbors -----------------------------------------------------------------


@silo_spec
class MergeNeighbors(_Level2):
    """Length of the merged run containing each own position.

    Adjacent equal values merge into one run (a maximal block of equal neighbours). Values
    are integers in [0, 9] generated run by run, each run k+1 .. 2k long (the last one takes
    what is left), so no run fits inside one segment: every position's run crosses a
    boundary and every agent needs a neighbour for every element. At N = 2 (where no two
    runs longer than k fit) the sequence is a window at a random offset into such runs, so
    a run cut by either end of the sequence can lie inside one segment (see pcs_ceiling). A peer needs only the
    value and length of its leading and trailing runs; the minimum peer set is the owners of
    every position of the agent's runs plus the first differing position on each side.
    """

    task_id = "II-19"
    title = "Merge Neighbors"
    PEER_KEYS = ("first", "lead", "last", "trail")
    default_k = 150
    # the part of a crossing run beyond the segment is spread over ~k/2 lengths: a guess
    # hits w.p. ~ 2/k per run (a segment inside one run: ~1/k), and a segment holds one or two
    chance_sr = 0.05
    chance_pcs = 0.05

    def pcs_ceiling(self, n: int) -> float:
        """At N = 2 a run cut by an end of the sequence lies inside one segment about half the
        time, visible whole to its holder: about a quarter of each agent's positions, plus
        open runs guessed right (0.34 measured over 300 instances; 0.4 added, leaving room for
        the spread of 8-20 instances); at N >= 3 every run crosses a boundary."""
        return self.chance_pcs + (0.4 if n == 2 else 0.0)

    def generate(self, n: int, k: int, rng: random.Random) -> SiloData:
        total = n * k
        # 2k positions cannot hold two runs longer than k, and one run would tell a silent agent
        # everything; at N = 2 the sequence is a window at a random offset into runs k+1..2k long
        offset = rng.randint(1, 2 * k) if n == 2 else 0
        flat: list[int] = []
        prev = None
        while len(flat) < offset + total:
            remaining = offset + total - len(flat)
            size = (rng.randint(k + 1, 2 * k) if offset else
                    remaining if remaining <= 2 * k + 1 else rng.randint(k + 1, min(2 * k, remaining - k - 1)))
            value = rng.choice([v for v in range(10) if v != prev])
            flat.extend([value] * size)
            prev = value
        flat = flat[offset:offset + total]
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

    def isolated_answer(self, agent: int, n: int, shard: Any, public: dict[str, Any]) -> Any:
        """A run open towards a neighbour is guessed at the mean run length 3k/2 (at least
        one more than what is visible)."""
        k = len(shard)
        start, end = self._run_bounds(shard)
        typical = (3 * public["k"] + 1) // 2
        out = []
        for p in range(k):
            seen = end[p] - start[p] + 1
            open_sides = int(start[p] == 0 and agent > 0) + int(end[p] == k - 1 and agent < n - 1)
            out.append(max(seen + open_sides, typical) if open_sides else seen)
        return out

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
    h -> (mult * h + add) mod modulus, so a peer shares just (mult, add). Agent 0 needs
    nobody; for every other agent the incoming state is one of 1,009 values and a wrong
    state makes every one of its k states wrong (31 is invertible mod 1009).
    """

    task_id = "II-20"
    title = "Pipeline Hash"
    BASE: ClassVar[int] = 31
    MODULUS: ClassVar[int] = 1009
    PEER_KEYS = ("mult", "add")
    default_k = 150
    ALONE = 1
    # the incoming state is near-uniform on 1,009 values: a guess hits w.p. ~ 0.001
    chance_sr = 0.01
    chance_pcs = 0.01

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
