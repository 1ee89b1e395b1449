"""Failure labels, leader emergence, heatmap and behaviour table on hand-built event logs."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pandas as pd
import pytest

from masgrid.families.silo import failures as sf


class Log:
    """Builds the events/agents/runs rows of one hand-written run (one reply per agent and round)."""

    def __init__(self, run_id: str, n: int, success: bool, task: str = "silo/I-01", seed: int = 0) -> None:
        self.run_id, self.n, self.success, self.task, self.seed = run_id, n, success, task, seed
        self.events: list[dict] = []
        self.answers: dict[int, tuple[str, bool]] = {}
        self.round = 1

    def ev(self, agent: int, verb: str, peers: list[int] | None = None, text: str = "", kind: str = "command") -> None:
        self.events.append({"run_id": self.run_id, "phase": 1, "round": self.round, "seq": len(self.events),
                            "agent": agent, "kind": kind, "verb": verb, "ok": True, "peers": peers, "text": text})

    def send(self, a: int, *to: int) -> None:
        self.ev(a, "send_message", list(to))

    def recv(self, a: int, *frm: int) -> None:
        self.ev(a, "receive_messages", list(frm))

    def write(self, a: int, path: str) -> None:
        self.ev(a, "write_file", [], text=f"write_file {path}\ncontent")

    def read(self, a: int, path: str, writer: int) -> None:
        self.ev(a, "read_file", [writer] if writer != a else [], text=f"read_file {path}")

    def submit(self, a: int, answer: str, correct: bool) -> None:
        self.ev(a, "submit_result")
        self.answers[a] = (answer, correct)

    def next(self) -> None:
        self.round += 1

    def run_row(self) -> dict:
        sr = sum(c for _, c in self.answers.values()) / self.n
        return {"run_id": self.run_id, "task": self.task, "protocol": "p2p", "agents": self.n, "k": 4,
                "mode": "random", "condition": "base", "seed": self.seed, "model": "m", "status": "ok",
                "success": self.success, "sr": sr, "rounds": self.round}

    def agent_rows(self) -> list[dict]:
        return [{"run_id": self.run_id, "agent": i, "submission": self.answers.get(i, (None, False))[0],
                 "correct": self.answers.get(i, (None, False))[1]} for i in range(self.n)]


def frames(*logs: Log) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    runs = pd.DataFrame([log.run_row() for log in logs])
    agents = pd.DataFrame([r for log in logs for r in log.agent_rows()])
    events = pd.DataFrame([e for log in logs for e in log.events])
    return runs, agents, events


def labels_of(*logs: Log, transitive: bool = True) -> pd.DataFrame:
    return sf.label_runs(*frames(*logs), transitive=transitive).set_index("run_id")


LABELS = ["premature", "consensus", "computation", "unsubmitted"]


def premature_run() -> Log:
    log = Log("P", 3, success=False)
    log.send(0, 1), log.send(1, 0), log.submit(2, "5", False)
    log.next()
    log.recv(0, 1), log.recv(1, 0)
    log.next()
    log.submit(0, "7", True), log.submit(1, "7", True)
    return log


def all_to_all(log: Log) -> None:
    """Round r: everyone sends to everyone; round r+1: everyone receives; then the next round."""
    for a in range(log.n):
        log.send(a, *[b for b in range(log.n) if b != a])
    log.next()
    for a in range(log.n):
        log.recv(a, *[b for b in range(log.n) if b != a])
    log.next()


def computation_run() -> Log:
    log = Log("C", 3, success=False)
    all_to_all(log)
    log.submit(0, "7", True), log.submit(1, "7", True), log.submit(2, "8", False)
    return log


def star_run(success: bool, hasty: bool = False) -> Log:
    """Agents 1-3 report to agent 0, which tells them the result; agent 3 then errs (if failed).
    `hasty`: agent 0 sends the result in the round it receives the reports, before its model
    has seen them, so what it sends carries only its own data."""
    log = Log("S" if success else ("H" if hasty else "T"), 4, success=success)
    for a in (1, 2, 3):
        log.send(a, 0)
    log.next()
    log.recv(0, 1, 2, 3)
    if not hasty:
        log.next()
    log.send(0, 1, 2, 3), log.submit(0, "7", True)
    log.next()
    for a in (1, 2, 3):
        log.recv(a, 0)
    log.next()
    for a in (1, 2, 3):
        log.submit(a, "7" if success or a != 3 else "9", success or a != 3)
    return log


def test_labels_on_hand_built_runs() -> None:
    labels = labels_of(premature_run(), computation_run(), star_run(False), star_run(True))
    assert labels.loc["P", LABELS].tolist() == [True, True, False, False]
    assert labels.loc["P", "premature_agents"] == 3
    assert labels.loc["C", LABELS].tolist() == [False, True, True, False]
    # transitively, agent 3 heard everyone through agent 0: a computation error, not premature
    assert labels.loc["T", LABELS].tolist() == [False, True, True, False]
    assert labels.loc["S", LABELS].tolist() == [False, False, False, False]
    direct = sf.label_runs(*frames(premature_run(), computation_run(), star_run(False), star_run(True)),
                           transitive=False).set_index("run_id")
    assert direct.loc["T", ["premature", "computation"]].tolist() == [True, False]
    assert labels.loc["T", "leaders"] == [0] and labels.loc["C", "leaders"] == []


def test_knowledge_is_what_the_sender_knew_when_it_sent() -> None:
    """Agent 0 forwards the result in the round its reports arrive, before its model saw them:
    the forward carries only agent 0's data, so the others' submissions are premature."""
    labels = labels_of(star_run(False, hasty=True))
    assert labels.loc["H", LABELS].tolist() == [True, True, False, False]
    assert labels.loc["H", "premature_agents"] == 4  # agent 0 too: it submitted in that round


def test_a_message_read_late_carries_its_sending_round() -> None:
    """Agent 0 writes to agent 2 in round 1 and learns agent 1's data in round 2; agent 2 reads
    the round-1 message in round 4: it knows agents 0 and 2 only (the end-of-previous-round
    rule would have credited agent 1 too)."""
    log = Log("L", 3, success=False)
    log.send(0, 2), log.send(1, 0)
    log.next()
    log.recv(0, 1)
    log.next()
    log.next()
    log.recv(2, 0)
    log.next()
    log.submit(2, "9", False), log.submit(0, "7", True), log.submit(1, "7", True)
    info = sf.information_at_submission(frames(log)[2], 3)
    assert info == {2: {0, 2}, 0: {0, 1}, 1: {1}}


def test_receiving_and_submitting_in_one_reply_is_premature() -> None:
    """The model wrote `submit_result` before it saw what `receive_messages` returned."""
    log = Log("R", 3, success=False)
    for a in range(3):
        log.send(a, *[b for b in range(3) if b != a])
    log.next()
    for a in range(3):
        log.recv(a, *[b for b in range(3) if b != a])
        log.submit(a, "8" if a == 2 else "7", a != 2)
    assert labels_of(log).loc["R", LABELS].tolist() == [True, True, False, False]


def test_sfs_reads_carry_the_version_the_reader_saw() -> None:
    log = Log("K", 3, success=False)
    log.write(0, "notes/0"), log.send(1, 0)
    log.next()
    log.read(2, "notes/0", 0), log.recv(0, 1)  # the round-1 version: agent 0's data only
    log.next()
    log.write(0, "notes/0"), log.read(2, "notes/0", 0)  # still the round-1 version this round
    log.next()
    log.submit(2, "1", False)
    log.next()
    info = sf.information_at_submission(frames(log)[2], 3)
    assert info == {2: {0, 2}}
    log.read(1, "notes/0", 0)  # the round-3 version, written once agent 0 had seen agent 1's message
    log.next()
    log.submit(1, "1", False)
    assert sf.information_at_submission(frames(log)[2], 3)[1] == {0, 1}


def test_unsubmitted_agents_get_their_own_label() -> None:
    partial = Log("U", 3, success=False)
    all_to_all(partial)
    partial.submit(0, "7", True), partial.submit(1, "7", True)
    silent = Log("Z", 3, success=False)
    all_to_all(silent)
    labels = labels_of(partial, silent)
    assert labels.loc["U", LABELS].tolist() == [False, False, False, True]
    assert labels.loc["Z", LABELS].tolist() == [False, False, False, True]
    assert labels.loc["Z", "unsubmitted_agents"] == 3 and labels.loc["Z", "distinct_answers"] == 0
    assert sf.failure_distribution(labels.reset_index()).loc["No Submission (not in the paper)", "count"] == 2


def _truth(task: str, n: int, seed: int) -> object:
    from masgrid._private.envs.tasks import get_task

    t = get_task(task)
    return t.data_of(t.generate(n, 4, seed))


def test_consensus_compares_answers_within_the_tolerance() -> None:
    """I-07 (tolerance 0.01): two right answers 0.015 apart agree; wrong answers 0.005 apart
    agree; 0.03 apart they differ."""
    mean = _truth("silo/I-07", 3, 0).expected[0]
    close = Log("A", 3, success=False, task="silo/I-07")
    all_to_all(close)
    close.submit(0, json.dumps(round(mean - 0.007, 4)), True), close.submit(1, json.dumps(round(mean + 0.008, 4)), True)
    wrong = Log("W", 3, success=False, task="silo/I-07")
    all_to_all(wrong)
    for a, delta in enumerate((0.5, 0.505, 0.53)):
        wrong.submit(a, json.dumps(mean + delta), False)
    labels = labels_of(close, wrong)
    assert labels.loc["A", "distinct_answers"] == 1 and not labels.loc["A", "consensus"]
    assert labels.loc["A", LABELS].tolist() == [False, False, False, True]
    assert labels.loc["W", "distinct_answers"] == 2 and labels.loc["W", "consensus"]


def _fewest_groups(values: list[float], tol: float) -> int:
    """Independent reference: the smallest partition into groups of spread <= tol, by brute force."""
    best = len(values)

    def place(i: int, groups: list[list[float]]) -> None:
        nonlocal best
        if len(groups) >= best:
            return
        if i == len(values):
            best = len(groups)
            return
        for g in groups:
            if max(g + [values[i]]) - min(g + [values[i]]) <= tol:
                g.append(values[i])
                place(i + 1, groups)
                g.pop()
        place(i + 1, groups + [[values[i]]])

    place(0, [])
    return best


def test_distinct_answers_against_a_brute_force_partition() -> None:
    rng = random.Random(13)
    tol = 0.01
    for _ in range(300):
        wrong = [round(rng.choice([1.0, 2.0]) + rng.randrange(0, 6) * 0.004, 3) for _ in range(rng.randint(0, 7))]
        right = rng.random() < 0.5
        answers = [(v, False) for v in wrong] + ([(5.0, True)] if right else [])
        same = lambda a, b: abs(a - b) <= tol + 1e-9  # noqa: E731
        expected = (_fewest_groups(wrong, tol + 1e-9) if wrong else 0) + right
        assert sf.distinct_answers(answers, same) == expected, answers


def test_any_match_a_justified_early_answer_is_not_premature() -> None:
    """I-04 (first matching position): the parts up to the one holding the first match settle
    the answer; later parts cannot change it. Hearing them is enough; hearing less is premature."""
    from masgrid._private.envs.tasks import get_task

    spec = get_task("silo/I-04").spec
    seed, data, holder = next((s, d, h) for s in range(400) for d in [_truth("silo/I-04", 3, s)]
                              for h in [d.expected[0] // 4 if d.expected[0] >= 0 else -1] if h == 1)
    assert spec.required_peers(2, 3, data) == {0, 1} and spec.required_peers(1, 3, data) == {0}
    assert spec.required_peers(0, 3, data) == {1}
    early = Log("E", 3, success=False, task="silo/I-04", seed=seed)
    early.send(0, 1, 2), early.send(1, 0, 2)
    early.next()
    early.recv(1, 0), early.recv(0, 1), early.recv(2, 0, 1)
    early.next()
    for a in range(3):  # agent 2 never heard from nobody beyond the holder: still justified
        early.submit(a, str(data.expected[0]), a != 2)
    rash = Log("R", 3, success=False, task="silo/I-04", seed=seed)
    rash.submit(2, str(data.expected[0]), True), rash.submit(0, "-1", False), rash.submit(1, "-1", False)
    labels = labels_of(early, rash)
    assert not labels.loc["E", "premature"]
    assert labels.loc["R", "premature"] and labels.loc["R", "premature_agents"] == 3


def test_vote_knows_answer_against_enumerated_completions() -> None:
    """I-03 (plurality, unique by construction): the answer is settled by `known` iff every
    completion of the unseen votes that has a unique most-voted candidate has the same one
    (enumerated independently)."""
    from masgrid._private.envs.tasks import get_task
    from masgrid.families.silo.spec import SiloData

    spec = get_task("silo/I-03").spec
    rng = random.Random(3)
    cands = ["A", "B", "C", "D", "E"]

    def unique_top(votes: list[str]) -> str | None:
        counts = {c: votes.count(c) for c in cands}
        best = max(counts.values())
        tops = [c for c in cands if counts[c] == best]
        return tops[0] if len(tops) == 1 else None

    checked = settled = 0
    while checked < 150:
        n, k = rng.choice([(2, 2), (3, 2), (2, 3)])
        votes = [rng.choice(cands[:3]) for _ in range(n * k)]
        winner = unique_top(votes)
        if winner is None:
            continue
        data = SiloData(shards=[votes[i * k:(i + 1) * k] for i in range(n)], expected=[winner] * n)
        agent = rng.randrange(n)
        known = {agent} | {j for j in range(n) if rng.random() < 0.4}
        seen = [v for j in known for v in data.shards[j]]
        winners = {unique_top(seen + list(rest)) for rest in itertools.product(cands, repeat=n * k - len(seen))}
        winners.discard(None)
        assert spec.knows_answer(agent, known, data) == (len(winners) == 1), (data.shards, known)
        checked += 1
        settled += len(winners) == 1 and len(known) < n
    assert settled > 5


def test_every_failed_run_gets_a_label() -> None:
    rng = random.Random(5)
    logs = []
    for r in range(40):
        n = rng.randint(2, 4)
        log = Log(f"X{r}", n, success=False)
        for _ in range(rng.randint(1, 4)):
            pending = []
            for a in range(n):
                if rng.random() < 0.5:
                    to = [b for b in range(n) if b != a and rng.random() < 0.5]
                    log.send(a, *to) if to else None
                    pending += [(a, b) for b in to]
            log.next()
            for b in range(n):
                frm = [a for a, bb in pending if bb == b]
                log.recv(b, *frm) if frm else None
            log.next()
        for a in range(n):
            if rng.random() < 0.8:
                ok = rng.random() < 0.5
                log.submit(a, "7" if ok else str(rng.randint(8, 9)), ok)
        if all(ok for _, ok in log.answers.values()) and len(log.answers) == n:
            log.answers[0] = ("8", False)
        logs.append(log)
    labels = labels_of(*logs)
    assert labels[LABELS].any(axis=1).all()


def test_level_of_task_names() -> None:
    from masgrid.families.silo.common import level_of

    assert [level_of(t) for t in ("silo/I-01", "silo/II-11", "silo/III-30", "sorting")] == [1, 2, 3, None]


def test_cooccurrence_and_distribution() -> None:
    runs, agents, events = frames(premature_run(), computation_run(), star_run(False), star_run(True))
    labels = sf.label_runs(runs, agents, events)
    table = sf.cooccurrence(labels)
    assert table.loc["Premature Submission", "Premature Submission"] == 1
    assert table.loc["Consensus Failure", "Consensus Failure"] == 3
    assert table.loc["Premature Submission", "Consensus Failure"] == 1
    assert table.loc["Consensus Failure", "Computation Error"] == 2
    assert pd.isna(table.loc["Computation Error", "Premature Submission"])
    dist = sf.failure_distribution(labels)
    assert dist.loc["Success", "count"] == 1 and dist.loc["Success", "percent"] == pytest.approx(25.0)


def test_matrix_leaders_and_heatmap(tmp_path: Path) -> None:
    runs, agents, events = frames(star_run(True))
    m = sf.comm_matrix(events, 4)
    assert m[:, 0].sum() == 3 and m[0].tolist() == [0, 1, 1, 1]
    assert sf.leaders(m) == [0]
    kv = pd.DataFrame([{"run_id": "K", "phase": 1, "round": 2, "seq": 0, "agent": 1, "kind": "command",
                        "verb": "read_file", "ok": True, "peers": [0], "text": ""}])
    assert sf.comm_matrix(kv, 2).tolist() == [[0, 1], [0, 0]]
    png = sf.heatmap_png(events, "S", 4, tmp_path / "fig7.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = sf.leader_table(sf.label_runs(*frames(star_run(True), computation_run())))
    assert table.loc["I", "leader_rate"] == pytest.approx(50.0)
    assert table.loc["I", "sr_with_leader"] == pytest.approx(100.0)


def test_behaviour_table() -> None:
    ok, bad = star_run(True), computation_run()
    ok.ev(0, None, kind="model_call", text="Let me verify the totals before submitting.")
    bad.ev(1, None, kind="model_call", text="Proposal: a strategy where agent 0 collects.")
    runs, agents, events = frames(ok, bad)
    table = sf.behaviour_table(sf.label_runs(runs, agents, events), events)
    assert table.loc["verification_rate"].tolist() == [100.0, 0.0]
    assert table.loc["strategy_discussion_rate"].tolist() == [0.0, 100.0]
    assert table.loc["rounds_to_completion", "Success"] == 5


def test_consensus_not_applied_to_level2() -> None:
    """Level II agents answer for different segments: distinct answers are not a consensus failure."""
    log = computation_run()
    log.task = "silo/II-11"
    runs, agents, events = frames(log)
    labels = sf.label_runs(runs, agents, events).iloc[0]
    assert labels["level"] == 2 and not labels["consensus"] and labels["computation"]
