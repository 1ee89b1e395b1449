"""Failure labels, leader emergence, heatmap and behaviour table on hand-built event logs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from masgrid.analysis import silo_failures as sf


class Log:
    """Builds the events/agents/runs rows of one hand-written run."""

    def __init__(self, run_id: str, n: int, success: bool, task: str = "silo/I-01") -> None:
        self.run_id, self.n, self.success, self.task = run_id, n, success, task
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

    def submit(self, a: int, answer: str, correct: bool) -> None:
        self.ev(a, "submit_result")
        self.answers[a] = (answer, correct)

    def next(self) -> None:
        self.round += 1

    def run_row(self) -> dict:
        sr = sum(c for _, c in self.answers.values()) / self.n
        return {"run_id": self.run_id, "task": self.task, "protocol": "p2p", "agents": self.n, "k": 4,
                "mode": "random", "condition": "base", "seed": 0, "model": "m", "status": "ok",
                "success": self.success, "sr": sr, "rounds": self.round}

    def agent_rows(self) -> list[dict]:
        return [{"run_id": self.run_id, "agent": i, "submission": self.answers.get(i, (None, False))[0],
                 "correct": self.answers.get(i, (None, False))[1]} for i in range(self.n)]


def frames(*logs: Log) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    runs = pd.DataFrame([log.run_row() for log in logs])
    agents = pd.DataFrame([r for log in logs for r in log.agent_rows()])
    events = pd.DataFrame([e for log in logs for e in log.events])
    return runs, agents, events


def premature_run() -> Log:
    log = Log("P", 3, success=False)
    log.send(0, 1), log.send(1, 0), log.submit(2, "5", False)
    log.next()
    log.recv(0, 1), log.recv(1, 0), log.submit(0, "7", True), log.submit(1, "7", True)
    return log


def computation_run() -> Log:
    log = Log("C", 3, success=False)
    for a in range(3):
        log.send(a, *[b for b in range(3) if b != a])
    log.next()
    for a in range(3):
        log.recv(a, *[b for b in range(3) if b != a])
    log.submit(0, "7", True), log.submit(1, "7", True), log.submit(2, "8", False)
    return log


def star_run(success: bool) -> Log:
    """Agents 1-3 report to agent 0, which tells them the result; agent 3 then errs (if failed)."""
    log = Log("S" if success else "T", 4, success=success)
    for a in (1, 2, 3):
        log.send(a, 0)
    log.next()
    log.recv(0, 1, 2, 3), log.send(0, 1), log.send(0, 2), log.send(0, 3), log.submit(0, "7", True)
    log.next()
    for a in (1, 2, 3):
        log.recv(a, 0)
        log.submit(a, "7" if success or a != 3 else "9", success or a != 3)
    return log


def test_labels_on_hand_built_runs() -> None:
    runs, agents, events = frames(premature_run(), computation_run(), star_run(False), star_run(True))
    labels = sf.label_runs(runs, agents, events).set_index("run_id")
    assert labels.loc["P", ["premature", "consensus", "computation"]].tolist() == [True, True, False]
    assert labels.loc["P", "premature_agents"] == 3
    assert labels.loc["C", ["premature", "consensus", "computation"]].tolist() == [False, True, True]
    # transitively, agent 3 heard everyone through agent 0: a computation error, not premature
    assert labels.loc["T", ["premature", "consensus", "computation"]].tolist() == [False, True, True]
    assert labels.loc["S", ["premature", "consensus", "computation"]].tolist() == [False, False, False]
    direct = sf.label_runs(runs, agents, events, transitive=False).set_index("run_id")
    assert direct.loc["T", ["premature", "computation"]].tolist() == [True, False]
    assert labels.loc["T", "leaders"] == [0] and labels.loc["C", "leaders"] == []


def test_level_of_task_names() -> None:
    from masgrid.analysis.silo_common import level_of

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
    assert table.loc["rounds_to_completion", "Success"] == 3


def test_consensus_not_applied_to_level2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Level II agents answer for different segments: distinct answers are not a consensus failure."""
    log = computation_run()
    log.task = "silo/II-11"
    runs, agents, events = frames(log)
    monkeypatch.setattr(sf, "_required", lambda run: [set(range(3)) - {i} for i in range(3)])
    labels = sf.label_runs(runs, agents, events).iloc[0]
    assert labels["level"] == 2 and not labels["consensus"] and labels["computation"]
