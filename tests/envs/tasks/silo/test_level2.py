"""SILO-Bench Level II specs (II-11 .. II-20): generators, truth, parsers, scorers, baseline.

Ground truth is re-derived here by brute force from the shards alone (never through the
spec's own code), and checked again on hand-built instances whose answers were worked out
by hand.
"""

from __future__ import annotations

import itertools
import random
import string
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from masgrid.envs.tasks.silo import level2  # noqa: F401  (registers the specs)
from masgrid.envs.tasks.silo import prompts as silo_prompts
from masgrid.envs.tasks.silo.spec import SILO_SPECS, SiloData, SiloSpec

IDS = [f"II-{i}" for i in range(11, 21)]
TITLES = {
    "II-11": "Prefix Sum", "II-12": "Moving Average", "II-13": "Longest Palindrome",
    "II-14": "1D Life Game", "II-15": "Pattern Search", "II-16": "Trapping Rain",
    "II-17": "Diff Array", "II-18": "List Ranking", "II-19": "Merge Neighbors",
    "II-20": "Pipeline Hash",
}
PROMPTS = Path(__file__).resolve().parents[4] / "conf" / "prompts" / "silo" / "tasks"


def spec(task_id: str) -> SiloSpec:
    return SILO_SPECS[task_id]()


# -- independent brute-force truths ---------------------------------------------------------


def _flat(d: SiloData) -> list[Any]:
    return [x for shard in d.shards for x in shard]


def _per_agent(d: SiloData, values: list[Any]) -> list[list[Any]]:
    k = d.public["k"]
    return [values[i * k:(i + 1) * k] for i in range(len(d.shards))]


def truth_prefix(d: SiloData) -> list[list[Any]]:
    xs = _flat(d)
    return _per_agent(d, [sum(xs[:p + 1]) for p in range(len(xs))])


def truth_moving(d: SiloData) -> list[list[Any]]:
    xs, w = _flat(d), d.public["window"]
    out = []
    for p in range(len(xs)):
        vals = xs[max(0, p - w + 1):p + 1]
        s, m = sum(vals), len(vals)
        out.append(((200 * s + m) // (2 * m)) / 100)  # half-up to 2 decimals, integer maths
    return _per_agent(d, out)


def truth_palindrome(d: SiloData) -> list[list[Any]]:
    text = "".join(d.shards)
    out = []
    for p in range(len(text)):
        best = 1
        for r in range(1, len(text)):
            if p - r < 0 or p + r >= len(text):
                break
            piece = text[p - r:p + r + 1]
            if piece == piece[::-1]:
                best = 2 * r + 1
        out.append(best)
    return _per_agent(d, out)


LIFE = {(0, 0, 0): 0, (0, 0, 1): 0, (1, 0, 0): 0, (1, 0, 1): 1,
        (0, 1, 0): 0, (0, 1, 1): 1, (1, 1, 0): 1, (1, 1, 1): 0}


def truth_life(d: SiloData) -> list[list[Any]]:
    cells = _flat(d)
    get = lambda p: cells[p] if 0 <= p < len(cells) else 0  # noqa: E731
    return _per_agent(d, [LIFE[(get(p - 1), get(p), get(p + 1))] for p in range(len(cells))])


def truth_pattern(d: SiloData) -> list[list[Any]]:
    text, pat = "".join(d.shards), d.public["pattern"]
    out = []
    for p in range(len(text)):
        matched = 0
        for ch in text[:p + 1]:
            matched += ch == pat[matched % len(pat)]
        out.append(matched)
    return _per_agent(d, out)


def truth_rain(d: SiloData) -> list[list[Any]]:
    h = _flat(d)
    return _per_agent(d, [min(max(h[:p + 1]), max(h[p:])) - h[p] for p in range(len(h))])


def truth_carpool(d: SiloData) -> list[list[Any]]:
    trips = _flat(d)
    stops = d.public["n"] * d.public["k"]
    return _per_agent(d, [sum(v for v, b, e in trips if b <= p < e) for p in range(stops)])


def truth_ranking(d: SiloData) -> list[list[Any]]:
    nxt = dict((node, after) for node, after in _flat(d))
    rank, cur = {}, d.public["head"]
    while cur is not None:
        rank[cur] = len(rank)
        cur = nxt[cur]
    assert len(rank) == len(nxt)
    return [[rank[node] for node, _ in shard] for shard in d.shards]


def truth_runs(d: SiloData) -> list[list[Any]]:
    out = []
    for _, group in itertools.groupby(_flat(d)):
        size = len(list(group))
        out += [size] * size
    return _per_agent(d, out)


def truth_hash(d: SiloData) -> list[list[Any]]:
    h, out = d.public["h0"], []
    for x in _flat(d):
        h = (h * d.public["base"] + x) % d.public["modulus"]
        out.append(h)
    return _per_agent(d, out)


TRUTH: dict[str, Callable[[SiloData], list[list[Any]]]] = {
    "II-11": truth_prefix, "II-12": truth_moving, "II-13": truth_palindrome,
    "II-14": truth_life, "II-15": truth_pattern, "II-16": truth_rain,
    "II-17": truth_carpool, "II-18": truth_ranking, "II-19": truth_runs, "II-20": truth_hash,
}


# -- hand-built instances (answers worked out by hand) --------------------------------------


def _hand(task_id: str) -> tuple[SiloData, set[int] | None]:
    """A tiny instance with hand-computed truth, and agent 0's required peers."""
    pub = lambda n, k, **kw: {"n": n, "k": k, "length": n * k, **kw}  # noqa: E731
    cases: dict[str, tuple[SiloData, set[int]]] = {
        "II-11": (SiloData(shards=[[3, 1, 2], [4, 0, 5]], expected=[[3, 4, 6], [10, 10, 15]],
                           public=pub(2, 3)), set()),
        "II-12": (SiloData(shards=[[3, 1, 2], [4, 0, 5]],
                           expected=[[3.0, 2.0, 2.0], [2.33, 2.0, 3.0]],
                           public=pub(2, 3, window=3)), set()),
        "II-13": (SiloData(shards=["aba", "bab"], expected=[[1, 3, 5], [5, 3, 1]],
                           public=pub(2, 3), meta={"radii": [0, 1, 2, 2, 1, 0]}), {1}),
        "II-14": (SiloData(shards=[[1, 1, 0], [1, 0, 1]], expected=[[1, 1, 1], [0, 1, 0]],
                           public=pub(2, 3)), {1}),
        "II-15": (SiloData(shards=["aab", "bba"], expected=[[1, 1, 2], [2, 2, 3]],
                           public=pub(2, 3, pattern="ab")), set()),
        "II-16": (SiloData(shards=[[3, 0, 1], [0, 2, 1]], expected=[[0, 2, 1], [2, 0, 0]],
                           public=pub(2, 3)), {1}),
        "II-17": (SiloData(shards=[[[2, 0, 2], [3, 2, 5], [1, 1, 2]], [[4, 3, 4], [1, 5, 6], [2, 4, 6]]],
                           expected=[[2, 3, 3], [7, 5, 3]], public=pub(2, 3, stops=6)), set()),
        "II-18": (SiloData(shards=[[[40, None], [30, 40]], [[20, 30], [10, 20]]],
                           expected=[[3, 2], [1, 0]], public=pub(2, 2, head=10),
                           meta={"run_order": [1, 0]}), {1}),
        "II-19": (SiloData(shards=[[1, 1, 2], [2, 2, 2], [2, 3, 3]],
                           expected=[[2, 2, 5], [5, 5, 5], [5, 2, 2]], public=pub(3, 3),
                           meta={"run_start": [0, 0, 2, 2, 2, 2, 2, 7, 7],
                                 "run_end": [1, 1, 6, 6, 6, 6, 6, 8, 8]}), {1, 2}),
        "II-20": (SiloData(shards=[[1, 2], [3, 0]], expected=[[156, 802], [649, 948]],
                           public=pub(2, 2, h0=5, base=31, modulus=1009)), set()),
    }
    return cases[task_id]


def _payloads(s: SiloSpec, d: SiloData) -> dict[int, Any]:
    return {j: s.payload(j, d.shards[j], d.public) for j in range(len(d.shards))}


# -- registration and prompts ---------------------------------------------------------------


def test_all_level2_specs_registered_with_table9_titles() -> None:
    for task_id in IDS:
        cls = SILO_SPECS[task_id]
        assert cls.level == 2 and cls.task_id == task_id and cls.title == TITLES[task_id]


@pytest.mark.parametrize("task_id", IDS)
def test_prompt_file_has_keys_and_only_public_placeholders(task_id: str) -> None:
    doc = yaml.safe_load((PROMPTS / f"{task_id}.yaml").read_text())
    assert set(doc) >= {"title", "description", "answer_format"}
    assert doc["title"] == TITLES[task_id]
    public = spec(task_id).generate(3, 4, random.Random(0)).public
    values = silo_prompts.placeholders(3, 4, public)  # the instance's public keys plus the adapter's sizes
    for key in ("description", "answer_format", "oracle_answer_format"):
        template = string.Template(doc[key])
        assert template.is_valid(), (task_id, key)
        assert set(template.get_identifiers()) <= set(values), (task_id, key)
        template.substitute(values)
    assert "submit_result" in doc["answer_format"]


# -- generator ------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", IDS)
def test_generator_is_deterministic_and_seed_sensitive(task_id: str) -> None:
    s = spec(task_id)
    random.seed(123)
    a = s.generate(5, 8, random.Random(7))
    random.seed(456)  # the global generator must not matter
    b = s.generate(5, 8, random.Random(7))
    c = s.generate(5, 8, random.Random(8))
    assert a.model_dump() == b.model_dump()
    assert a.shards != c.shards


@pytest.mark.parametrize("task_id", IDS)
@pytest.mark.parametrize("n,k", [(1, 1), (1, 8), (2, 3), (5, 8), (7, 2)])
def test_generator_truth_matches_independent_computation(task_id: str, n: int, k: int) -> None:
    s = spec(task_id)
    for seed in range(4):
        d = s.generate(n, k, random.Random(seed))
        assert len(d.shards) == n and len(d.expected) == n
        assert all(len(shard) == k for shard in d.shards)  # constant per-agent workload
        assert all(len(e) == k for e in d.expected)
        assert d.public["n"] == n and d.public["k"] == k
        assert d.expected == TRUTH[task_id](d)


def test_generator_value_domains() -> None:
    rng = random.Random(3)
    d = spec("II-17").generate(6, 5, rng)
    for i, trips in enumerate(d.shards):
        for v, board, leave in trips:
            assert 1 <= v <= 9 and i * 5 <= board < (i + 1) * 5 and board < leave <= min(board + 5, 30)
    d = spec("II-18").generate(6, 5, rng)
    ids = [node for shard in d.shards for node, _ in shard]
    assert len(set(ids)) == 30 and sorted(d.meta["run_order"]) == list(range(6))
    d = spec("II-12").generate(4, 1, rng)
    assert d.public["window"] == 2
    d = spec("II-15").generate(4, 8, rng)
    assert len(d.public["pattern"]) == 4 and set("".join(d.shards)) <= set("abc")


def test_palindrome_generator_plants_boundary_crossing_palindromes() -> None:
    s = spec("II-13")
    crossing = 0
    for seed in range(30):
        d = s.generate(10, 8, random.Random(seed))
        radii = d.meta["radii"]
        crossing += sum(1 for p, r in enumerate(radii) if (p - r) // 8 != (p + r) // 8 and r >= 2)
    assert crossing > 30


# -- hand-made instances: truth, scorer, required peers -------------------------------------


@pytest.mark.parametrize("task_id", IDS)
def test_hand_instance_solve_and_required_peers(task_id: str) -> None:
    s = spec(task_id)
    d, peers0 = _hand(task_id)
    assert TRUTH[task_id](d) == d.expected
    payloads = _payloads(s, d)
    n = len(d.shards)
    for i in range(n):
        assert s.solve(i, n, payloads, d.public) == d.expected[i]
    assert s.required_peers(0, n, d) == peers0


def _perturb(task_id: str, value: Any, delta: int) -> Any:
    """A wrong value of the right type (cells of II-14 can only flip)."""
    return 1 - value if task_id == "II-14" else value + delta


@pytest.mark.parametrize("task_id", IDS)
def test_scorer_right_partial_wrong(task_id: str) -> None:
    s = spec(task_id)
    d, _ = _hand(task_id)
    agent = 1
    exp = d.expected[agent]
    right = s.parse_answer(" " + ", ".join(str(v) for v in exp) + " ", agent, d)
    assert s.is_correct(right, exp, d) and s.quality(right, exp, d) == 1.0

    partial = list(exp)
    partial[0] = _perturb(task_id, exp[0], 1)
    parsed = s.parse_answer(str(partial), agent, d)
    assert not s.is_correct(parsed, exp, d)
    assert s.quality(parsed, exp, d) == pytest.approx((len(exp) - 1) / len(exp))

    wrong = s.parse_answer(str([_perturb(task_id, e, 7) for e in exp]), agent, d)
    assert not s.is_correct(wrong, exp, d) and s.quality(wrong, exp, d) == 0.0
    assert not s.is_correct(None, exp, d) and s.quality(None, exp, d) == 0.0


def test_moving_average_tolerance() -> None:
    s = spec("II-12")
    d, _ = _hand("II-12")
    exp = d.expected[1]  # [2.33, 2.0, 3.0]
    near = s.parse_answer("[2.333, 2, 3.00]", 1, d)
    assert s.is_correct(near, exp, d) and s.quality(near, exp, d) == 1.0
    assert s.is_correct(s.parse_answer("2.34 2 3", 1, d), exp, d)  # one rounding step off
    off = s.parse_answer("2.35 2 3", 1, d)
    assert not s.is_correct(off, exp, d) and s.quality(off, exp, d) == pytest.approx(2 / 3)


def test_life_accepts_bit_string_and_list_ranking_accepts_object() -> None:
    d, _ = _hand("II-14")
    assert spec("II-14").parse_answer("010", 1, d) == [0, 1, 0]
    d, _ = _hand("II-18")
    s = spec("II-18")
    assert s.parse_answer('{"30": 2, "40": 3}', 0, d) == [3, 2]  # reordered to shard order
    assert s.is_correct(s.parse_answer('{"40": 3, "30": 2}', 0, d), d.expected[0], d)


# -- parser ---------------------------------------------------------------------------------

GOOD_FORMS = ["[{a}, {b}, {c}]", "{a}, {b}, {c}", "{a} {b} {c}", "```json\n[{a},{b},{c}]\n```",
              "`[{a}, {b}, {c}]`", "[{a}, {b}, {c}]."]
BAD = ["", "   ", "[1, 2", "[[1, 2], [3]]", "1, two, 3", "(1, 2, 3)", "1.5, 2, 3", "answer: 1 2 3",
       "nan, 1, 2", "1 2 3 {}"]


@pytest.mark.parametrize("task_id", [t for t in IDS if t not in ("II-18",)])
def test_parser_accepts_common_forms_and_rejects_malformed(task_id: str) -> None:
    s = spec(task_id)
    d, _ = _hand(task_id)
    agent = 1
    exp = d.expected[agent]
    if len(exp) == 3:
        for form in GOOD_FORMS:
            raw = form.format(a=exp[0], b=exp[1], c=exp[2])
            assert s.is_correct(s.parse_answer(raw, agent, d), exp, d), raw
    wrong_lengths = [str([0] * (len(exp) - 1)), str([0] * (len(exp) + 1))]
    for raw in BAD + wrong_lengths:
        if task_id == "II-12" and raw == "1.5, 2, 3":
            continue  # decimals are legal averages
        with pytest.raises(ValueError) as err:
            s.parse_answer(raw, agent, d)
        assert str(err.value)  # agent-readable message


def test_task_specific_malformed_answers() -> None:
    d, _ = _hand("II-14")
    with pytest.raises(ValueError, match="0 .*or 1"):
        spec("II-14").parse_answer("[0, 2, 1]", 1, d)
    d, _ = _hand("II-18")
    s = spec("II-18")
    for raw in ['{"30": 2}', '{"30": 2, "41": 3}', '{"30": 2, "40": "x"}', "{30: 2}", "[3]", "[3, x]"]:
        with pytest.raises(ValueError):
            s.parse_answer(raw, 0, d)
    with pytest.raises(ValueError, match="exactly 3"):
        spec("II-11").parse_answer("[1, 2]", 0, _hand("II-11")[0])


# -- scripted all-gather baseline -----------------------------------------------------------


@pytest.mark.parametrize("task_id", IDS)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_all_gather_solution_round_trips_to_truth(task_id: str, n: int) -> None:
    s = spec(task_id)
    for seed, k in itertools.product(range(5), (1, 3, s.default_k)):
        d = s.generate(n, k, random.Random(seed))
        payloads = _payloads(s, d)
        for agent in range(n):
            text = s.format_answer(s.solve(agent, n, payloads, d.public))
            answer = s.parse_answer(text, agent, d)
            assert answer == d.expected[agent], (seed, k, agent)
            assert s.is_correct(answer, d.expected[agent], d)


@pytest.mark.parametrize("task_id", IDS)
def test_required_peers_and_peer_summaries_suffice(task_id: str) -> None:
    """Solving from only the required peers' summaries (PEER_KEYS) still gives the truth."""
    s = spec(task_id)
    for seed in range(6):
        d = s.generate(6, 4, random.Random(seed))
        payloads = _payloads(s, d)
        for agent in range(6):
            needed = s.required_peers(agent, 6, d)
            assert agent not in needed and needed <= set(range(6))
            view = {j: {key: payloads[j][key] for key in s.PEER_KEYS} for j in needed}
            view[agent] = payloads[agent]
            assert s.solve(agent, 6, view, d.public) == d.expected[agent]


def test_required_peer_shapes() -> None:
    d = spec("II-11").generate(5, 3, random.Random(0))
    assert spec("II-11").required_peers(3, 5, d) == {0, 1, 2}
    assert spec("II-14").required_peers(0, 5, d) == {1}
    assert spec("II-14").required_peers(2, 5, d) == {1, 3}
    assert spec("II-12").required_peers(0, 5, d) == set()
    assert spec("II-16").required_peers(2, 5, d) == {0, 1, 3, 4}
