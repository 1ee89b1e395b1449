"""MAS-Bench failure-mode labels (section 5.3) on hand-built event logs, each label with
positive and negative cases, plus the answer rules against a set-based computation written
here on many random instances, and one log written to and read back from real Parquet.

Every log: N = 3 agents, K = 2, inputs {10, ..., 60}: expected [[10, 20], [30, 40], [50, 60]].
"""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from masgrid._private.analysis.load import load_results
from masgrid.families.masbench.failures import (MODES, failure_frequency, hallucinated, is_shifted_window,
                                                label_runs)
from masgrid._private.platform.results.recorder import Recorder

EXPECTED = [[10, 20], [30, 40], [50, 60]]


class Log:
    """A run's events, written as the driver records them (command events in seq order)."""

    def __init__(self, run_id: str = "r1") -> None:
        self.run_id, self.rows = run_id, []

    def cmd(self, rnd: int, agent: int, verb: str, text: str = "", reply: str = "", peers: list[int] | None = None,
            ok: bool = True, phase: int = 1) -> Log:
        self.rows.append({"run_id": self.run_id, "seq": len(self.rows), "phase": phase, "round": rnd,
                          "agent": agent, "kind": "command", "verb": verb, "ok": ok, "peers": peers or [],
                          "text": text or verb, "reply": reply})
        return self

    def exchange(self, rnd: int = 1, phase: int = 1) -> Log:
        """Everyone broadcasts in `rnd` and receives the other two in `rnd` + 1."""
        for a in range(3):
            self.cmd(rnd, a, "broadcast_message", f"broadcast_message my list {EXPECTED[a]}",
                     peers=[b for b in range(3) if b != a], phase=phase)
        for a in range(3):
            self.cmd(rnd + 1, a, "receive_messages", peers=[b for b in range(3) if b != a], phase=phase)
        return self

    def submit(self, rnd: int, agent: int, answer: list[int], phase: int = 1) -> Log:
        return self.cmd(rnd, agent, "submit_result", f"submit_result {answer}", phase=phase)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)


def _run(answers: list[list[int] | None], log: Log, protocol: str = "broadcast", run_id: str = "r1"):
    runs = pd.DataFrame([{"run_id": run_id, "task": "sorting", "protocol": protocol, "model": "m",
                          "condition": "base", "agents": 3, "k": 2, "status": "ok",
                          "success": all(a == e for a, e in zip(answers, EXPECTED))}])
    agents = pd.DataFrame([{"run_id": run_id, "agent": i, "expected": json.dumps(EXPECTED[i]),
                            "submission": None if a is None else json.dumps(a), "correct": a == EXPECTED[i]}
                           for i, a in enumerate(answers)])
    return runs, agents, log.frame()


def labels_of(answers, log: Log, protocol: str = "broadcast") -> dict:
    row = label_runs(*_run(answers, log, protocol)).iloc[0]
    return {m: bool(row[m]) for m in MODES} | {"wrong": int(row["wrong_agents"]), "unsubmitted": int(row["unsubmitted"])}


def only(labels: dict, *names: str) -> bool:
    return {m for m in MODES if labels[m]} == set(names)


def _informed_log(answers: list[list[int] | None]) -> Log:
    log = Log().exchange()
    for a, ans in enumerate(answers):
        if ans is not None:
            log.submit(3, a, ans)
    return log


# --- boundary mismatch -------------------------------------------------------------------

def test_boundary_mismatch_a_window_of_the_sorted_union_at_the_wrong_offset():
    answers = [[10, 20], [40, 50], [50, 60]]  # agent 1 cut at 3 instead of 2
    assert only(labels_of(answers, _informed_log(answers)), "boundary_mismatch")


def test_no_boundary_mismatch_when_the_wrong_answer_is_not_a_contiguous_window():
    answers = [[10, 20], [30, 50], [50, 60]]  # skips 40: not a window (and agent 1 knew 40: dropped)
    labels = labels_of(answers, _informed_log(answers))
    assert not labels["boundary_mismatch"] and labels["value_hallucination"]


# --- premature submission ----------------------------------------------------------------

def test_premature_submission_before_hearing_from_everyone():
    log = Log().submit(1, 0, [10, 50])  # round 1, before any receive: knows only itself
    log.exchange(rnd=2).submit(4, 1, [30, 40]).submit(4, 2, [50, 60])
    labels = labels_of([[10, 50], [30, 40], [50, 60]], log)
    assert only(labels, "premature_submission")  # skipped 20..40, but it had not been told of them


def test_not_premature_when_information_arrived_transitively():
    # agent 1 hears 2 in round 2 and forwards in round 3 (a reply is written before its own
    # commands' results are seen); agent 0 hears only 1, in round 4, but 1 had 2's data by then
    log = (Log().cmd(1, 2, "send_message", "send_message 1 my list [50, 60]", peers=[1])
           .cmd(2, 1, "receive_messages", peers=[2])
           .cmd(3, 1, "send_message", "send_message 0 lists [30, 40] [50, 60]", peers=[0])
           .cmd(4, 0, "receive_messages", peers=[1])
           .submit(5, 0, [10, 30]).submit(5, 1, [30, 40]).submit(5, 2, [50, 60]))
    labels = labels_of([[10, 30], [30, 40], [50, 60]], log, protocol="p2p")
    assert not labels["premature_submission"] and labels["value_hallucination"]  # informed and skipped 20


def test_premature_agent_that_submitted_right_does_not_label_the_run():
    log = Log().submit(1, 0, [10, 20]).exchange(2).submit(4, 1, [40, 50]).submit(4, 2, [50, 60])
    labels = labels_of([[10, 20], [40, 50], [50, 60]], log)
    assert only(labels, "boundary_mismatch")  # agent 0 was early but right; agent 1 informed


def test_phase2_knowledge_carries_and_only_final_submissions_count():
    log = Log().exchange(1, phase=1).submit(3, 0, [10, 20], phase=1)
    log.submit(1, 0, [10, 30], phase=2)  # resubmits at once in phase 2, informed by phase 1
    labels = labels_of([[10, 30], [30, 40], [50, 60]], log)
    assert not labels["premature_submission"] and labels["value_hallucination"]


# --- stale K-V reads ---------------------------------------------------------------------

def _kv_log(overwrite_round: int, new_value: str = "B", reread: bool = False, writer: int = 2) -> Log:
    log = (Log().cmd(1, 1, "write_file", "write_file plan\nA", reply="wrote plan")
           .cmd(1, 0, "read_file", "read_file plan", reply="content=A", peers=[1])
           .cmd(overwrite_round, writer, "write_file", f"write_file plan\n{new_value}", reply="wrote plan"))
    if reread:
        log.cmd(2, 0, "read_file", "read_file plan", reply=f"content={new_value}", peers=[writer])
    return log.submit(3, 0, [10, 30])


@pytest.mark.parametrize("case, stale", [
    (dict(overwrite_round=2), True),                       # overwritten before it decided, never re-read
    (dict(overwrite_round=2, reread=True), False),         # re-read after the overwrite
    (dict(overwrite_round=2, new_value="A"), False),       # rewritten with the value it had read
    (dict(overwrite_round=3), False),                      # overwritten in its submit round: after the decision
    (dict(overwrite_round=2, writer=0), False),            # its own overwrite
])
def test_stale_kv_read(case, stale):
    labels = labels_of([[10, 30], [30, 40], [50, 60]], _kv_log(**case), protocol="kv")
    assert labels["stale_kv_read"] is stale


def test_capped_texts_compare_by_their_recorded_start():
    log = _kv_log(2, new_value="A" * 10 + "tail")
    log.rows[1]["reply"], log.rows[1]["reply_chars"] = "content=" + "A" * 5, 10 ** 7  # the read, cut
    assert not labels_of([[10, 30], [30, 40], [50, 60]], log, protocol="kv")["stale_kv_read"]
    log.rows[1]["reply"] = "content=B" * 5
    assert labels_of([[10, 30], [30, 40], [50, 60]], log, protocol="kv")["stale_kv_read"]


def test_stale_read_of_a_deleted_key_and_not_outside_kv():
    log = (Log().cmd(1, 1, "write_file", "write_file plan\nA").cmd(1, 0, "read_file", "read_file plan",
                                                                  reply="content=A", peers=[1])
           .cmd(2, 1, "delete_file", "delete_file plan").submit(3, 0, [10, 30]))
    assert labels_of([[10, 30], [30, 40], [50, 60]], log, protocol="kv")["stale_kv_read"]
    assert not labels_of([[10, 30], [30, 40], [50, 60]], log, protocol="broadcast")["stale_kv_read"]


def test_stale_read_by_an_agent_that_answered_right_does_not_label_the_run():
    log = _kv_log(2)
    log.rows[-1]["text"] = "submit_result [10, 20]"
    assert not labels_of([[10, 20], [40, 50], [50, 60]], log, protocol="kv")["stale_kv_read"]


# --- value hallucination -----------------------------------------------------------------

def test_value_absent_from_every_input_is_hallucinated_even_when_uninformed():
    log = Log().submit(1, 2, [50, 65]).exchange(2).submit(4, 0, [10, 20]).submit(4, 1, [30, 40])
    labels = labels_of([[10, 20], [30, 40], [50, 65]], log)
    assert labels["value_hallucination"] and labels["premature_submission"]


def test_repeated_value_is_hallucinated():
    answers = [[10, 20], [30, 30], [50, 60]]
    assert only(labels_of(answers, _informed_log(answers)), "value_hallucination")


# --- convention misalignment -------------------------------------------------------------

def _worded(first: str, second: str) -> Log:
    log = Log().cmd(1, 0, "broadcast_message", f"broadcast_message {first}", peers=[1, 2])
    log.cmd(1, 1, "broadcast_message", f"broadcast_message {second}", peers=[0, 2])
    log.cmd(2, 2, "receive_messages", peers=[0, 1]).cmd(2, 0, "receive_messages", peers=[1])
    log.cmd(2, 1, "receive_messages", peers=[0])
    return log.cmd(3, 2, "broadcast_message", "broadcast_message ok", peers=[0, 1]).submit(4, 0, [10, 20]) \
        .submit(4, 1, [30, 40]).submit(4, 2, [60, 50])


@pytest.mark.parametrize("first, second, expected", [
    ("I take global indices 0-1", "I own the values between 30 and 40", True),
    ("my slots are [0:2]", "pivot 25: everything below goes to me", True),
    ("I take global indices 0-1", "I take positions 2 and 3", False),
    ("I take indices 0-1, values between 10 and 20", "I take positions 2 and 3", False),  # mixed is not a side
    ("here is my list", "I own the values between 30 and 40", False),
])
def test_convention_misalignment(first, second, expected):
    labels = labels_of([[10, 20], [30, 40], [60, 50]], _worded(first, second))
    assert labels["convention_misalignment"] is expected


# --- runs that succeed, unsubmitted agents, frequency table ------------------------------

def test_successful_run_carries_no_label():
    log = Log().submit(1, 0, [10, 20]).cmd(1, 1, "broadcast_message", "broadcast_message indices",
                                            peers=[0, 2]).cmd(1, 2, "broadcast_message",
                                                              "broadcast_message value range", peers=[0, 1])
    log.exchange(2).submit(4, 1, [30, 40]).submit(4, 2, [50, 60])
    labels = labels_of(EXPECTED, log)
    assert not any(labels[m] for m in MODES) and labels["wrong"] == 0


def test_unsubmitted_agents_are_counted_not_labelled():
    answers = [[10, 20], [30, 40], None]
    labels = labels_of(answers, _informed_log(answers))
    assert labels["unsubmitted"] == 1 and labels["wrong"] == 0 and not any(labels[m] for m in MODES)


def test_failure_frequency_counts_failed_runs_by_hand():
    rng = random.Random(3)
    rows = []
    for i in range(200):
        success = rng.random() < 0.3
        rows.append({"run_id": f"r{i}", "model": rng.choice("ab"), "condition": "base",
                     "protocol": rng.choice(["kv", "p2p"]), "success": success,
                     **{m: (not success) and rng.random() < 0.4 for m in MODES}})
    labels = pd.DataFrame(rows)
    table = failure_frequency(labels)
    for (model, cond, proto), row in table.iterrows():
        mine = [r for r in rows if (r["model"], r["condition"], r["protocol"]) == (model, cond, proto)]
        failed = [r for r in mine if not r["success"]]
        assert (row["runs"], row["failed"]) == (len(mine), len(failed))
        assert row["unlabelled"] == sum(not any(r[m] for m in MODES) for r in failed)
        for m, name in zip(MODES, ["Boundary mismatch", "Premature submission", "Stale K-V reads",
                                   "Value hallucination", "Convention misalignment (wording estimate)"]):
            assert row[name] == sum(r[m] for r in failed)
            assert row[f"{name} %"] == pytest.approx(100 * sum(r[m] for r in failed) / len(failed))


# --- the answer rules on random instances, against set arithmetic written here -----------

def test_answer_rules_against_set_arithmetic():
    rng = random.Random(11)
    for _ in range(600):
        n, k = rng.randint(1, 6), rng.randint(1, 5)
        union = sorted(rng.sample(range(10 * n * k + 10), n * k))
        agent = rng.randrange(n)
        start = rng.randrange(len(union) - k + 1)
        answer = union[start:start + k]
        if rng.random() < 0.5:  # perturb: replace one value by another (possibly foreign) one
            answer[rng.randrange(k)] = rng.randrange(-5, 10 * n * k + 15)
            answer.sort()
        windows = {tuple(union[a:a + k]) for a in range(0, n * k - k + 1, 1) if a != agent * k}
        assert is_shifted_window(answer, union, agent, k) == (tuple(answer) in windows)
        members = set(union)
        invented = any(v not in members for v in answer) or len(set(answer)) < len(answer)
        skipped = bool({v for v in union if min(answer) <= v <= max(answer)} - set(answer))
        assert hallucinated(answer, union, informed=False) == invented
        assert hallucinated(answer, union, informed=True) == (invented or skipped)


# --- through real Parquet ----------------------------------------------------------------

def test_labels_read_back_from_parquet_match_the_in_memory_log(tmp_path):
    answers = [[10, 30], [30, 40], [50, 60]]
    runs, agents, events = _run(answers, _kv_log(2), protocol="kv")
    rec, part = Recorder(tmp_path), {"task": "sorting", "protocol": "kv"}
    rec.write_events("r1", part, 1, [{k: v for k, v in r.items() if k not in part} for r in events.to_dict("records")])
    rec.finish_run({k: v for k, v in runs.iloc[0].to_dict().items() if k not in part},
                   [{k: v for k, v in r.items() if k not in part} for r in agents.to_dict("records")], part)
    loaded = load_results(tmp_path)
    from_disk = label_runs(loaded.runs, loaded.agents, loaded.events)
    in_memory = label_runs(runs, agents, events)
    assert from_disk[list(MODES)].equals(in_memory[list(MODES)])
    assert from_disk.iloc[0]["stale_kv_read"] and json.loads(from_disk.iloc[0]["stale_keys"]) == {"0": ["plan"]}


def test_runs_without_agent_rows_are_a_clear_error():
    runs, agents, events = _run([[10, 20], [30, 40], [50, 60]], Log())
    with pytest.raises(ValueError, match="no rows in the agents table"):
        label_runs(runs, agents.iloc[0:0], events)


# --- a real run: scripted model on loopback HTTP, the driver, Parquet -------------------

def stale_script(request: dict):
    """Agent 1 writes a plan by position; agent 0 reads it; agent 2 overwrites it by value
    in the same round, after agent 0's read; everyone then submits numbers from no input."""
    from tests.platform.test_audit_trail import fenced
    from tests.support.chat_server import Reply, agent_and_turn

    agent, turn = agent_and_turn(request)
    plans = {
        0: ["wait", "read_file plan", "submit_result [-2, -1]"],
        1: ["write_file plan\nAgent-1 takes global indices 2-3", "wait", "submit_result [-4, -3]"],
        2: ["wait", "write_file plan\nvalues between 0 and 30 go to Agent-0", "submit_result [-6, -5]"],
    }[agent]
    return Reply(fenced(plans[min(turn, len(plans) - 1)]))


def test_labels_of_a_real_recorded_kv_run(tmp_path):
    from tests.platform.test_audit_trail import run

    run(tmp_path, stale_script, task="sorting", protocol="kv", agents=3, k=2, seed=9, max_rounds=5)
    loaded = load_results(tmp_path)
    row = label_runs(loaded.runs, loaded.agents, loaded.events).iloc[0]
    assert not row["success"] and row["wrong_agents"] == 3
    assert json.loads(row["stale_keys"]) == {"0": ["plan"]}  # read in round 2 before agent 2's write
    assert json.loads(row["conventions"]) == {"1": "index", "2": "value"}
    assert {m for m in MODES if row[m]} == {"stale_kv_read", "premature_submission", "value_hallucination",
                                            "convention_misalignment"}
    from masgrid._private.analysis.report import build_report

    build_report(tmp_path, tmp_path / "report")
    freq = pd.read_csv(tmp_path / "report" / "masbench" / "failure_modes.csv")
    assert freq.loc[0, "failed"] == 1 and freq.loc[0, "Stale K-V reads"] == 1 and freq.loc[0, "Boundary mismatch"] == 0
    assert freq.loc[0, "Premature submission %"] == 100.0 and freq.loc[0, "unlabelled"] == 0
    assert "Failure modes (section 5.3)" in (tmp_path / "report" / "masbench" / "failure_modes.md").read_text()
