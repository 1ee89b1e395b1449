"""The unreliable channel (docs/channel.md): every recorded outcome against the draw recomputed
here from the documented formula, on many seeds and every protocol, plus what the recipients
actually got.

Runs use `execution.executor=local` (the same driver, environment and recorder code in one
process, written to real Parquet); the Ray path is covered by tests/platform/test_channel_runs.py.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from masgrid._private.envs.channel import ChannelSettings, draw
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one

RATES = ("loss", "delay", "duplicate", "reorder")


# -- the documented draw, written out again -----------------------------------------------------
def doc_uniforms(seed: int, sender: int, recipient: int, n: int) -> list[float]:
    digest = hashlib.blake2b(f"{seed}:{sender}:{recipient}:{n}".encode(), digest_size=32,
                             person=b"masgrid-channel").digest()
    return [int.from_bytes(digest[8 * k:8 * k + 8], "big") / 2**64 for k in range(4)]


def doc_rates(block: dict, sender: int, recipient: int) -> dict[str, float]:
    """docs/channel.md, "Per-link rates": wildcards, then i-j, then i->j; each as written."""
    out = {r: float(block.get(r, 0.0)) for r in RATES}
    me, you = str(sender), "store" if recipient == -1 else str(recipient)
    links = block.get("links") or {}
    if isinstance(links, list):
        links = {line.split()[0]: {p.split("=")[0]: float(p.split("=")[1]) for p in line.split()[1:]} for line in links}
    ranked: list[tuple[int, int, dict]] = []  # one level's entries never set the same rate (refused)
    for pos, (key, rates) in enumerate(links.items()):
        a, arrow, b = re.match(r"^(\*|\d+|store)(->|-)(\*|\d+|store)$", key).groups()
        pairs = [(a, b)] if arrow == "->" else [(a, b), (b, a)]
        if any(x in ("*", me) and y in ("*", you) for x, y in pairs):
            level = 0 if "*" in (a, b) else (2 if arrow == "->" else 1)
            ranked.append((level, pos, rates))
    for _, _, rates in sorted(ranked, key=lambda t: (t[0], t[1])):
        out.update({k: float(v) for k, v in rates.items()})
    return out


def doc_fate(block: dict, seed: int, sender: int, recipient: int, n: int) -> tuple[str, int]:
    """(outcome label, rounds late) of the n-th message of a link."""
    rates = doc_rates(block, sender, recipient)
    u = doc_uniforms(seed, sender, recipient, n)
    if u[0] < rates["loss"]:
        return "lost", 0
    late = block.get("delay_rounds", 1) if u[1] < rates["delay"] else 0
    parts = [name for name, on in (("delayed", late), ("duplicated", u[2] < rates["duplicate"]),
                                   ("reordered", u[3] < rates["reorder"])) if on]
    return "+".join(parts) or "delivered", late


def test_draw_matches_the_documented_formula_with_links() -> None:
    rng = random.Random(7)
    for case in range(300):
        block = {r: rng.choice([0.0, 0.1, 0.5, 0.9, 1.0]) for r in RATES}
        block["delay_rounds"] = rng.randint(1, 3)
        links = {}
        for _ in range(rng.randint(0, 3)):
            a, b = rng.choice(["*", "0", "1", "2"]), rng.choice(["*", "0", "1", "2", "store"])
            arrow = "->" if b == "store" or rng.random() < 0.5 else "-"
            links[f"{a}{arrow}{b}"] = {r: rng.choice([0.0, 1.0, 0.3]) for r in rng.sample(RATES, rng.randint(1, 2))}
        block["links"] = links
        try:
            settings = ChannelSettings.model_validate(block)
        except ValueError as exc:  # two entries of one level setting the same rate of a link
            assert "more specific" in str(exc)
            continue
        seed = rng.randint(-2**63, 2**63 - 1)
        for sender in range(3):
            for recipient in (-1, 0, 1, 2):
                if recipient == sender:
                    continue
                for n in range(4):
                    fate = draw(settings, seed, sender, recipient, n)
                    assert (fate.outcome, fate.delay) == doc_fate(block, seed, sender, recipient, n), (case, block)


def test_the_line_form_of_links_equals_the_mapping_form() -> None:
    lines = ChannelSettings.model_validate({"links": ["0->1 loss=1 delay=0.5", "*->store loss=0.25"]})
    mapping = ChannelSettings.model_validate({"links": {"0->1": {"loss": 1, "delay": 0.5}, "*->store": {"loss": 0.25}}})
    assert lines == mapping and lines.active
    assert lines.rates(0, 1)["loss"] == 1.0 and lines.rates(1, 0)["loss"] == 0.0 and lines.rates(2, -1)["loss"] == 0.25


# -- recorded runs ---------------------------------------------------------------------------------
def run(tmp_path: Path, channel: dict, **data: object) -> tuple[pd.Series, pd.DataFrame]:
    cfg = RunConfig.from_mapping({"results_dir": str(tmp_path), "execution": {"executor": "local"},
                                  "channel": channel, **data})
    summary = run_one(cfg)
    assert summary.status == "ok", summary.error
    runs = pd.read_parquet(tmp_path / "runs")
    events = pd.read_parquet(tmp_path / "events").sort_values("seq").reset_index(drop=True)
    return runs[runs["run_id"] == cfg.run_id].iloc[0], events[events["run_id"] == cfg.run_id]


def check_against_draw(row: pd.Series, events: pd.DataFrame, block: dict, seed: int,
                       on_time: int | None) -> list[dict]:
    """Every channel entry of every event equals the recomputed draw; `on_time`: rounds after
    the send's round a message is readable when not delayed. Returns the messages."""
    counters: Counter = Counter()
    messages = []
    sends = events[events["channel_to"].notna()]
    assert len(sends) > 0
    for ev in sends.itertuples():
        assert len(ev.channel_to) == len(ev.channel_outcome) == len(ev.channel_round)
        for to, outcome, due in zip(ev.channel_to, ev.channel_outcome, ev.channel_round):
            n = counters[(ev.agent, to)]
            counters[(ev.agent, to)] += 1
            expected, late = doc_fate(block, seed, int(ev.agent), int(to), n)
            assert outcome == expected, (ev.seq, ev.agent, to, n)
            if outcome == "lost" or on_time is None:  # None: the asynchronous schedule records no round
                assert due is None or pd.isna(due)
            else:
                assert due == ev.round + on_time + late
            messages.append({"sender": int(ev.agent), "to": int(to), "outcome": outcome, "due": due,
                             "round": int(ev.round), "seq": int(ev.seq), "text": ev.text})
    outcomes = Counter(m["outcome"] for m in messages)
    assert row["channel_sent"] == len(messages)
    assert row["channel_lost"] == outcomes["lost"]
    assert row["channel_delivered"] == len(messages) - outcomes["lost"]
    for part, column in (("delayed", "channel_late"), ("duplicated", "channel_duplicated"),
                         ("reordered", "channel_reordered")):
        assert row[column] == sum(n for label, n in outcomes.items() if part in label.split("+"))
    return messages


BLOCK = {"loss": 0.3, "delay": 0.25, "delay_rounds": 2, "duplicate": 0.25, "reorder": 0.3}


@pytest.mark.parametrize("protocol", ["broadcast", "p2p"])
def test_mailbox_outcomes_and_what_was_read(tmp_path: Path, protocol: str) -> None:
    for seed in range(4):
        row, events = run(tmp_path / str(seed), BLOCK, task="sorting", protocol=protocol, agents=4, k=2,
                          seed=seed, max_rounds=8)
        messages = check_against_draw(row, events, BLOCK, seed, on_time=0)
        # what each receiver read from each sender never exceeds the copies readable by then,
        # and a link whose messages were all lost is never read from
        receives = events[events["verb"] == "receive_messages"]
        for rec in receives.itertuples():
            got = Counter(rec.peers)
            read_before = receives[(receives["agent"] == rec.agent) & (receives["seq"] <= rec.seq)]
            total = Counter(p for peers in read_before["peers"] for p in peers)
            for sender in got:
                copies = sum((2 if "duplicated" in m["outcome"] else 1) for m in messages
                             if m["sender"] == sender and m["to"] == rec.agent and m["outcome"] != "lost"
                             and m["due"] <= rec.round and m["seq"] < rec.seq)
                notices = 1 if protocol == "broadcast" else 0  # the harness's submission notice
                assert total[sender] <= copies + notices, (seed, rec.seq, sender)


def test_kv_writes(tmp_path: Path) -> None:
    for seed in range(4):
        row, events = run(tmp_path / str(seed), BLOCK, task="sorting", protocol="kv", agents=3, k=2, seed=seed,
                          max_rounds=6)
        messages = check_against_draw(row, events, BLOCK, seed, on_time=0)
        assert {m["to"] for m in messages} == {-1}


def test_kv_per_link_store_rate(tmp_path: Path) -> None:
    block = {"links": ["*->store loss=1", "0->store loss=0"]}
    row, events = run(tmp_path, block, task="sorting", protocol="kv", agents=3, k=2, seed=1, max_rounds=4)
    messages = check_against_draw(row, events, block, 1, on_time=0)
    assert {m["outcome"] for m in messages if m["sender"] == 0} == {"delivered"}
    assert {m["outcome"] for m in messages if m["sender"] != 0} == {"lost"}


def test_local_inboxes(tmp_path: Path) -> None:
    for seed in range(3):
        row, events = run(tmp_path / str(seed), BLOCK, task="agentsnet/coloring", protocol="local", agents=5,
                          graph="ba", seed=seed)
        messages = check_against_draw(row, events, BLOCK, seed, on_time=1)
        deliveries = events[events["kind"] == "delivery"]
        rounds = int(deliveries["round"].max())
        names = {}
        for ev in events[events["channel_to"].notna()].itertuples():
            sent = json.loads(ev.text)
            names.update({(int(ev.agent), int(to)): None for to in ev.channel_to})
            for m in (m for m in messages if m["seq"] == ev.seq):
                m["body"] = list(sent.values())[list(ev.channel_to).index(m["to"])]
        for m in messages:
            if m["outcome"] == "lost" or m["due"] - 1 > rounds:
                continue
            inbox = deliveries[(deliveries["agent"] == m["to"]) & (deliveries["round"] == m["due"] - 1)]
            assert len(inbox) == 1 and m["body"] in inbox.iloc[0]["reply"], (seed, m)


def test_groupchat_histories(tmp_path: Path) -> None:
    for seed in range(3):
        row, events = run(tmp_path / str(seed), BLOCK, task="simas/mmlu", agents=3, seed=seed,
                          simas={"subject": "college_physics", "question": 2, "rounds": 3})
        messages = check_against_draw(row, events, BLOCK, seed, on_time=0)
        assert len(messages) == 3 * 3 * 2


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                    reason="git is needed to build the synthetic CooperBench pool")
def test_asynchronous_messages(tmp_path: Path, cooper_cache: Path) -> None:
    from masgrid.families.cooper.sandbox import sandbox_problem
    from masgrid.families.cooper.synthetic import write_synthetic_pool

    written = write_synthetic_pool(tmp_path / "pool")
    pair = [int(x) for x in next(k for k, v in sorted(written.expected.items()) if v == "clean").split(",")]
    block = {"loss": 0.3, "delay": 0.3, "duplicate": 0.5, "reorder": 0.5}
    for seed in (2,):  # one run (about 7 s): some of its sends are lost, others not
        row, events = run(tmp_path / str(seed), block, task=f"cooper/{written.pool}/{written.task_id}",
                          protocol="workspace", seed=seed,
                          cooper={"features": pair, "data_dir": str(written.data_dir),
                                  "repos_dir": str(written.repos_dir), "cache_dir": str(cooper_cache),
                                  "sandbox": "bwrap" if sandbox_problem() is None else "none"})
        messages = check_against_draw(row, events[events["kind"] == "message"], block, seed, on_time=None)
        outcomes = {m["outcome"] for m in messages}
        assert "lost" in outcomes and len(outcomes) > 1
        # a teammate reads at most the copies the channel let through, never a lost one
        for (sender, to), got in Counter((int(ev.peers[0]), int(ev.agent))
                                         for ev in events[events["kind"] == "delivery"].itertuples()).items():
            assert got <= sum(2 if "duplicated" in m["outcome"] else 1 for m in messages
                              if (m["sender"], m["to"]) == (sender, to) and m["outcome"] != "lost")


def test_every_protocol_refuses_no_rate_and_bad_blocks_are_one_line() -> None:
    from masgrid._private.platform.run.config import ConfigError

    for bad, where in (({"loss": 1.5}, "channel.loss"), ({"delay_rounds": 0}, "channel.delay_rounds"),
                       ({"loss": True}, "channel.loss"), ({"jitter": 0.1}, "channel.jitter"),
                       ({"links": {"0=>1": {"loss": 1}}}, "channel.links"),
                       ({"links": ["0->1 drop=1"]}, "channel.links"),
                       ({"links": {"0->1": {"loss": 2}}}, "channel.links"),
                       ({"links": ["0->9 loss=1"]}, "no agent 9"),
                       ({"links": ["*->1 loss=1", "0->* loss=0"]}, "make one of them more specific"),
                       ({"links": ["0-1 delay=1", "1-0 delay=0"]}, "make one of them more specific"),
                       ({"links": ["0->1 loss=1", "0->1 delay=1"]}, "given twice")):
        with pytest.raises(ConfigError) as err:
            RunConfig.from_mapping({"agents": 4, "channel": bad})
        assert where in str(err.value) and len(str(err.value).splitlines()) == 2, str(err.value)


def test_a_protocol_without_channel_support_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from masgrid._private.envs.protocols.kv import KVProtocol
    from masgrid._private.platform.run.config import ConfigError

    monkeypatch.setattr(KVProtocol, "channel_support", False)
    RunConfig.from_mapping({"protocol": "kv"})  # no rate: fine
    with pytest.raises(ConfigError, match="protocol kv does not route its messages through the channel"):
        RunConfig.from_mapping({"protocol": "kv", "channel": {"loss": 0.1}})


@pytest.mark.parametrize("protocol", ["p2p", "broadcast"])
def test_the_channel_on_a_restricted_graph_carries_only_neighbour_messages(tmp_path: Path, protocol: str) -> None:
    """channel x topology: every channel message goes to a neighbour on the recorded ring, and
    its outcome is still the documented draw (the draw names no graph)."""
    block = {"loss": 0.2, "delay": 0.3, "duplicate": 0.2}
    row, events = run(tmp_path, block, task="sorting", protocol=protocol, agents=6, k=2, seed=11, max_rounds=40,
                      topology={"kind": "ring"})
    edges = {tuple(e) for e in json.loads(row["topology_edges"])}
    assert row["topology"] == "ring" and len(edges) == 6
    messages = check_against_draw(row, events, block, 11, on_time=0)
    assert messages and all(tuple(sorted((m["sender"], m["to"]))) in edges for m in messages)
