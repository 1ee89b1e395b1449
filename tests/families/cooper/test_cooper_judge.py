"""`masgrid cooper judge` end to end: scripted coop runs on the synthetic pool through the real
driver, then a scripted judge behind a real loopback chat server (tests/support/chat_server.py).
Checks a well-formed verdict (quotes copied from the conversation the server received), a
"no issue" verdict, every hostile reply (not JSON, unknown category, one quote, a quote not
in the conversation) recorded invalid and never counted, failed calls, and resume (nothing
judged twice; a new judge model judges again)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from collections.abc import Callable

import pandas as pd
import pytest

from masgrid.families.cooper.comm_rates import judged_rates, load_judgments
from masgrid._private.analysis.load import load_results
from masgrid.families.cooper.sandbox import sandbox_problem
from masgrid.families.cooper.synthetic import write_synthetic_pool
from masgrid._private.platform.commands.cli import main
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from tests.support.chat_server import ChatServer, Reply

SANDBOX = "bwrap" if sandbox_problem() is None else "none"
HEADER = re.compile(r"^\[\d+\] agent \d+ -> [^\n]*:\n", re.MULTILINE)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, cooper_cache: Path) -> Path:
    """Two coop runs (conversations to judge) and one nocomm run (not judged)."""
    root = tmp_path_factory.mktemp("cooperjudge")
    pool = write_synthetic_pool(root / "pool")
    results = root / "results"
    pairs = sorted(pool.expected)[:2]
    for features, setting in ((pairs[0], "coop"), (pairs[1], "coop"), (pairs[0], "nocomm")):
        cfg = RunConfig.from_mapping({
            "task": f"cooper/{pool.pool}/{pool.task_id}", "protocol": "workspace", "results_dir": str(results),
            "cooper": {"features": [int(x) for x in features.split(",")], "data_dir": str(pool.data_dir),
                       "repos_dir": str(pool.repos_dir), "cache_dir": str(cooper_cache), "sandbox": SANDBOX,
                       "setting": setting},
            "execution": {"executor": "local"}})
        assert run_local(cfg).status == "ok"
    return results


def conversation_of(request: dict) -> tuple[str, list[str]]:
    """(run id, message texts) parsed from the judge request the server received."""
    user = request["messages"][-1]["content"]
    run_id = re.search(r"Conversation of run (\S+) ", user).group(1)
    body = user.split("oldest first):\n\n", 1)[1]
    texts = [t.rstrip("\n") for t in HEADER.split(body)[1:]]
    return run_id, texts


def verdict(category: str | None, quotes: list[str]) -> Reply:
    issue = {"category": category, "description": "scripted"} if category else None
    return Reply(text=json.dumps({"evidence": quotes, "issue": issue}))


def repetition(request: dict) -> Reply:
    _, texts = conversation_of(request)
    return verdict("C4a", [texts[0][:25], texts[-1][-20:]])


def judge(results: Path, server: ChatServer, out: Path, name: str = "judge-a") -> int:
    if not out.exists():
        shutil.copytree(results, out)
    return main(["cooper", "judge", str(out), "--base-url", server.base_url, "--served-name", name,
                 "--set", "max_retries=0", "--set", "timeout_s=10"])


def coop_ids(results: Path) -> set[str]:
    runs = load_results(results).runs
    return set(runs.loc[runs["cooper_setting"] == "coop", "run_id"])


def test_well_formed_verdicts(results: Path, tmp_path: Path) -> None:
    server = ChatServer(repetition)
    with server:
        assert judge(results, server, tmp_path / "r") == 0
    assert len(server.requests) == 2
    sent = {conversation_of(r)[0]: conversation_of(r)[1] for r in server.requests}
    assert set(sent) == coop_ids(results)
    events = load_results(tmp_path / "r").events
    for run_id, texts in sent.items():  # the judge saw every message of the run, in send order
        msgs = events[(events["run_id"] == run_id) & (events["kind"] == "message")].sort_values(["t", "seq"])
        assert texts == list(msgs["text"]) and len(texts) >= 2
    j = load_judgments(tmp_path / "r")
    assert len(j) == 2 and set(j["status"]) == {"ok"} and set(j["category"]) == {"C4a"}
    assert set(j["group"]) == {"repetition"} and set(j["judge_model"]) == {"judge-a"}
    assert j["prompt_version"].str.fullmatch(r"[0-9a-f]{12}").all()
    for row in j.itertuples():
        quotes = json.loads(row.evidence_json)
        assert quotes == [sent[row.run_id][0][:25], sent[row.run_id][-1][-20:]]
    rates = judged_rates(load_results(tmp_path / "r").runs, j).set_index("group")
    assert rates.loc["repetition", ["n", "detected"]].tolist() == [2, 2]
    assert rates.loc["hallucination", ["n", "detected"]].tolist() == [2, 0]


def test_no_issue_is_a_valid_verdict_without_a_detection(results: Path, tmp_path: Path) -> None:
    with ChatServer(lambda r: verdict(None, [])) as server:
        assert judge(results, server, tmp_path / "r") == 0
    j = load_judgments(tmp_path / "r")
    assert set(j["status"]) == {"ok"} and j["category"].isna().all()
    rates = judged_rates(load_results(tmp_path / "r").runs, j)
    assert (rates["n"] == 2).all() and (rates["detected"] == 0).all()


def _not_json(request: dict) -> Reply:
    return Reply(text="There is clear repetition here: C4a.")


def _unknown(request: dict) -> Reply:
    _, texts = conversation_of(request)
    return verdict("C5", [texts[0][:25], texts[-1][-20:]])


def _one_quote(request: dict) -> Reply:
    _, texts = conversation_of(request)
    return verdict("C4b", [texts[0][:25], texts[0][:25]])  # the same quote twice is one quote


def _invented(request: dict) -> Reply:
    _, texts = conversation_of(request)
    return verdict("C3a", [texts[0][:25], "I already deleted the whole module"])


def _lone_surrogate(request: dict) -> Reply:
    return Reply(text="Repetition \ud800 everywhere: C4a.")  # sent as the JSON escape, read back unpaired


HOSTILE: dict[str, tuple[Callable[[dict], Reply], str]] = {
    "not_json": (_not_json, "not JSON"), "unknown_category": (_unknown, "unknown category 'C5'"),
    "one_quote": (_one_quote, "1 distinct quote(s)"), "invented_quote": (_invented, "quote not found verbatim"),
    "lone_surrogate": (_lone_surrogate, "not JSON"),  # text Arrow cannot store as it is: kept, escaped
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_replies_are_invalid_and_never_counted(results: Path, tmp_path: Path, case: str) -> None:
    script, reason = HOSTILE[case]
    with ChatServer(script) as server:
        assert judge(results, server, tmp_path / "r") == 0
    j = load_judgments(tmp_path / "r")
    assert len(j) == 2 and set(j["status"]) == {"invalid"} and j["category"].isna().all()
    assert all(reason in e for e in j["error"]), list(j["error"])
    assert j["raw_reply"].notna().all()
    rates = judged_rates(load_results(tmp_path / "r").runs, j)
    assert (rates["n"] == 0).all() and (rates["invalid"] == 2).all() and rates["rate"].isna().all()


def test_resume_judges_only_what_is_missing(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    failing = sorted(coop_ids(results))[0]

    def flaky(request: dict) -> Reply:
        return Reply(status=500, text="boom") if conversation_of(request)[0] == failing else repetition(request)

    with ChatServer(flaky) as server:
        assert judge(results, server, out) == 1  # a failed call: exit 1, recorded as failed
    j = load_judgments(out).set_index("run_id")
    assert j.loc[failing, "status"] == "failed" and "judge call failed" in j.loc[failing, "error"]
    with ChatServer(repetition) as server:
        assert judge(results, server, out) == 0
        assert [conversation_of(r)[0] for r in server.requests] == [failing]
        assert judge(results, server, out) == 0
        assert len(server.requests) == 1  # everything final: nothing asked again
        assert judge(results, server, out, name="judge-b") == 0
        assert len(server.requests) == 3  # another judge model judges both again
    j = load_judgments(out)
    assert sorted(j.groupby("judge_model").size().tolist()) == [2, 2] and set(j["status"]) == {"ok"}


def test_cli_errors_are_one_line(results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cooper", "judge", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("masgrid cooper judge:") and "\n" not in err
    assert main(["cooper", "judge", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "no usable CooperBench runs" in capsys.readouterr().err


def test_judgments_frame_is_empty_without_a_judge(results: Path) -> None:
    assert load_judgments(results).empty
    assert judged_rates(load_results(results).runs, pd.DataFrame()).empty


def test_runs_without_events_are_skipped_not_judged(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    shutil.copytree(results, out)
    shutil.rmtree(out / "events")
    with ChatServer(repetition) as server:
        assert judge(results, server, out) == 0
        assert server.requests == []
    j = load_judgments(out)
    assert set(j["status"]) == {"skipped"} and set(j["error"]) == {"no events recorded for this run"}
    rates = judged_rates(load_results(out).runs, j)
    assert (rates["n"] == 0).all() and (rates["no_messages"] == 2).all()
