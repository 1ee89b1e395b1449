"""`masgrid judge` end to end: scripted SIMAS and CoT runs on simas/open, then a judge model
behind a real loopback chat server (tests/support/chat_server.py). Checks both orders, the
position-bias rule (a judge that always says "A" yields only ties), a malformed reply
(retry, then a recorded failure), blinding, idempotent reruns and the CLI."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from masgrid.families.simas.analysis import judge_table, load_judgments
from masgrid.families.simas.datasets import load_questions
from masgrid._private.platform.commands.cli import main
from masgrid._private.platform.run.config import RunConfig
from masgrid.families.simas.judge import judge_command
from masgrid._private.platform.sweeps.ray_runs import run_local
from tests.support.chat_server import ChatServer, Reply

CRITERIA = {q.id: q.criteria for q in load_questions("open", None)}
ANSWERS = re.compile(r"Answer A:\n(.*)\n\nAnswer B:\n(.*)\n\nCriteria", re.DOTALL)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("judge")
    for question in (0, 1):
        for agents, condition in ((1, "base"), (2, "base"), (1, "cot")):
            cfg = RunConfig.from_mapping({
                "results_dir": str(root), "task": "simas/open", "protocol": "groupchat", "agents": agents,
                "condition": condition, "simas": {"question": question, "rounds": 2, "profiles": "pool"},
                "execution": {"executor": "local"}})
            assert run_local(cfg).status == "ok"
    return root


def worth(text: str, criterion: str) -> int:
    """An honest judge's score: a fixed function of the answer text and criterion, 1..10."""
    return 1 + int(hashlib.sha256(f"{criterion}|{text}".encode()).hexdigest(), 16) % 10


def criteria_of(request: dict) -> list[str]:
    user = request["messages"][1]["content"]
    block = user.split("Criteria (score", 1)[1].split("\n\n", 1)[0]
    return [line[2:] for line in block.splitlines()[1:] if line.startswith("- ")]


def honest(request: dict) -> Reply:
    a, b = ANSWERS.search(request["messages"][1]["content"]).groups()
    crit = criteria_of(request)
    sa, sb = ({c: {"score": worth(t, c), "reason": "r"} for c in crit} for t in (a, b))
    ta, tb = (sum(v["score"] for v in s.values()) for s in (sa, sb))
    winner = "A" if ta > tb else "B" if tb > ta else "tie"
    return Reply(text=json.dumps({"A": sa, "B": sb, "winner": winner, "justification": "higher total"}))


def biased(request: dict) -> Reply:
    crit = criteria_of(request)
    side = {c: {"score": 5} for c in crit}
    return Reply(text=json.dumps({"A": side, "B": side, "winner": "A", "justification": "A reads better"}))


def judge(results: Path, server: ChatServer, out: Path) -> int:
    import shutil

    shutil.copytree(results, out)
    return judge_command([str(out), "--set", f"base_url={server.base_url}", "--set", "name=judge-test",
                          "--set", "max_retries=0"])


def test_honest_judge_both_orders_and_blind(results: Path, tmp_path: Path) -> None:
    server = ChatServer(honest)
    with server:
        assert judge(results, server, tmp_path / "r") == 0
    j = load_judgments(tmp_path / "r")
    combined = j[j["order"] == "combined"]
    assert len(combined) == 4 and set(combined["status"]) == {"ok"}  # 2 questions x n in {1, 2}
    assert len(server.requests) == 8  # two orders per pair
    for req in server.requests:  # blind: no method is named
        text = " ".join(m["content"] for m in req["messages"]).lower()
        assert "simas" not in text and "cot" not in text and "chain" not in text
    runs = pd.read_parquet(tmp_path / "r" / "agents")
    answer = {r.run_id: json.loads(r.submission) for r in runs[runs["agent"] == 0].itertuples()}
    for row in combined.itertuples():  # independent: recompute every score from the answer texts
        crit = CRITERIA[row.question_id]
        simas = sum(worth(answer[row.simas_run_id], c) for c in crit)
        cot = sum(worth(answer[row.cot_run_id], c) for c in crit)
        assert (row.simas_score, row.cot_score) == (simas, cot)
        assert row.winner == ("simas" if simas > cot else "cot" if cot > simas else "tie")
    orders = j[j["order"] != "combined"]
    assert set(orders["order"]) == {"simas_first", "cot_first"} and (orders["attempts"] == 1).all()
    assert orders["raw_reply"].notna().all() and (orders["judge_model"] == "judge-test").all()
    from masgrid.families.simas.report import write_report

    paths = write_report(tmp_path / "r", tmp_path / "rep")  # generation runs only: no accuracy rows
    assert tmp_path / "rep" / "judge.png" in paths
    table = pd.read_csv(tmp_path / "rep" / "judge.csv")
    assert sorted(table["agents"]) == [1, 2] and (table["judged"] == 2).all() and (table["judge_failures"] == 0).all()
    wins = combined.groupby("agents")["winner"].apply(lambda w: 100 * (w == "simas").mean())
    assert list(table.sort_values("agents")["simas_win_rate"]) == pytest.approx(list(wins.sort_index()))
    assert "Judged pairs: 4 of 4" in (tmp_path / "rep" / "judge.md").read_text()


def test_position_biased_judge_gives_only_ties(results: Path, tmp_path: Path) -> None:
    with ChatServer(biased) as server:
        assert judge(results, server, tmp_path / "r") == 0
    j = load_judgments(tmp_path / "r")
    assert set(j.loc[j["order"] == "combined", "winner"]) == {"tie"}
    assert set(j.loc[j["order"] == "simas_first", "winner"]) == {"simas"}  # each order alone was "won"
    table = judge_table(j)
    assert table["ties"].sum() == 4 and table["order_disagreements"].sum() == 4
    assert (table["simas_win_rate"] == 0).all() and (table["cot_win_rate"] == 0).all()


def test_malformed_reply_retried_then_failure_recorded(results: Path, tmp_path: Path) -> None:
    def flaky(request: dict) -> Reply:
        key = request["messages"][1]["content"]
        if "vaccination" in key or len(request["messages"]) == 2:  # question open/2: malformed twice
            return Reply(text="Answer A is better, scores 7 and 6.")  # prose, not the JSON asked for
        return honest(request)

    with ChatServer(flaky) as server:
        assert judge(results, server, tmp_path / "r") == 1  # some pairs failed
        retries = [r for r in server.requests if len(r["messages"]) == 4]
    assert retries and all("could not be used" in r["messages"][3]["content"] for r in retries)
    j = load_judgments(tmp_path / "r")
    orders = j[j["order"] != "combined"]
    assert (orders["attempts"] == 2).all()  # every order needed its retry
    ok, failed = orders[orders["status"] == "ok"], orders[orders["status"] == "failed"]
    assert set(ok["question_id"]) == {"open/1"} and set(failed["question_id"]) == {"open/2"}
    assert ok["raw_first_reply"].str.startswith("Answer A is better").all()
    assert failed["simas_score"].isna().all() and failed["winner"].isna().all()  # never a guessed score
    assert failed["error"].str.startswith("malformed judge reply").all()
    combined = j[j["order"] == "combined"]
    table = judge_table(j)
    assert table["judge_failures"].sum() == (combined["status"] == "failed").sum() > 0
    assert table["judged"].sum() == (combined["status"] == "ok").sum()


def test_rerun_skips_judged_pairs(results: Path, tmp_path: Path) -> None:
    with ChatServer(honest) as server:
        assert judge(results, server, tmp_path / "r") == 0
        first = len(server.requests)
        assert judge_command([str(tmp_path / "r"), "--set", f"base_url={server.base_url}", "--set",
                              "name=judge-test"]) == 0
        assert len(server.requests) == first  # nothing judged twice
        assert judge_command([str(tmp_path / "r"), "--set", f"base_url={server.base_url}", "--set",
                              "name=other-judge", "--where", "agents=2"]) == 0
        assert len(server.requests) == first + 4  # a new judge judges again (2 pairs x 2 orders)
    j = load_judgments(tmp_path / "r")
    assert sorted(j.groupby("judge_model")["pair_id"].nunique().items()) == [("judge-test", 4), ("other-judge", 2)]


def test_cli_errors_are_one_line(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", str(results)]) == 2
    assert "needs an OpenAI-compatible endpoint" in capsys.readouterr().err
    assert main(["judge", str(results), "--model", "no_such_preset"]) == 2
    assert "no model preset" in capsys.readouterr().err
    assert main(["judge", str(tmp_path), "--set", "base_url=http://127.0.0.1:9/v1"]) == 2
    assert "no runs recorded" in capsys.readouterr().err


def test_failed_judge_call_is_recorded_not_scored(results: Path, tmp_path: Path) -> None:
    with ChatServer(lambda request: Reply(status=500)) as server:
        assert judge(results, server, tmp_path / "r") == 1
        assert len(server.requests) == 8  # a failed call is not retried as a malformed reply
    j = load_judgments(tmp_path / "r")
    orders = j[j["order"] != "combined"]
    assert orders["error"].str.startswith("judge call failed: http_5xx").all() and orders["winner"].isna().all()
    assert judge_table(j)["judge_failures"].sum() == 4


def test_unusable_answers_are_skipped() -> None:
    from masgrid.families.simas.judge_pairs import answer_text as _answer

    assert _answer('"a full answer"') == "a full answer"
    assert _answer(None) is None and _answer(float("nan")) is None
    assert _answer('{"unparsable": true}') is None and _answer('"   "') is None


def test_generation_run_through_a_model_records_the_full_final_text(tmp_path: Path) -> None:
    final = "def two_sum(nums, target):\n    seen = {}\n    ...\nThis is the group's complete solution."

    def model(request: dict) -> Reply:
        last = request["messages"][-1]["content"]
        if "write the group's complete final answer" in last:
            return Reply(text=f"  {final}\n")
        return Reply(text="I would use a hash map.")

    with ChatServer(model) as server:
        cfg = RunConfig.from_mapping({
            "results_dir": str(tmp_path), "task": "simas/coding", "protocol": "groupchat", "agents": 2,
            "simas": {"question": 0, "rounds": 1, "profiles": "pool"}, "execution": {"executor": "local"},
            "backend": "openai", "preflight": False,
            "model": {"name": "test", "base_url": server.base_url, "max_retries": 0}})
        assert run_local(cfg).status == "ok"
        first_turn = server.requests[0]["messages"][-1]["content"]
    assert "Programming language: Python" in first_turn and "O(n) time" in first_turn
    runs, agents = pd.read_parquet(tmp_path / "runs"), pd.read_parquet(tmp_path / "agents")
    assert runs["accuracy"].isna().all() and runs["success"].isna().all() and runs["sr"].isna().all()
    assert json.loads(agents.loc[agents["agent"] == 0, "submission"].iloc[0]) == final.strip()
    assert agents["correct"].isna().all()
