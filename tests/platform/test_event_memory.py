"""Issue 12, item 8: a run's event memory is bounded by bytes, not rounds.

Real runs against a loopback OpenAI-compatible server whose replies are large: a text
above `execution.max_recorded_chars` is recorded cut, with the original's length and
sha256, and flagged in the rebuilt transcript; texts below the cap stay byte-exact; pending
events go to the recorder whenever they pass `execution.event_flush_bytes`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq

from masgrid._private.analysis.load import read_table
from masgrid._private.analysis.transcript import calls
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from tests.support.chat_server import ChatServer, Reply, agent_and_turn

CAP = 3000


def big_reply(request: dict) -> Reply:
    """Agent 0 broadcasts a 20 000-character message in its first turn; everyone then reads
    and submits. So one model_call text, one command block and the receivers' replies are
    over the cap, and every other text is small."""
    agent, turn = agent_and_turn(request)
    if turn == 0 and agent == 0:
        return Reply("```\nbroadcast_message " + f"agent {agent} says " + "x" * 20_000 + "\n```")
    if turn <= 1:
        return Reply("```\nreceive_messages\n```")
    return Reply("```\nsubmit_result [1, 2]\n```")


def run(tmp: Path, script, **execution: object) -> tuple[RunConfig, list[dict]]:
    with ChatServer(script) as server:
        cfg = RunConfig.from_mapping({
            "task": "sorting", "agents": 3, "k": 2, "max_rounds": 3, "backend": "openai", "preflight": False,
            "model": {"name": "local_vllm", "base_url": server.base_url, "max_retries": 0},
            "results_dir": str(tmp), "execution": {"executor": "local", **execution}})
        summary = run_one(cfg)
        assert summary.status == "ok", summary.error
        return cfg, list(server.requests)


def test_a_huge_text_is_recorded_capped_with_its_length_and_hash(tmp_path):
    _, requests = run(tmp_path, big_reply, max_recorded_chars=CAP)
    events = read_table(tmp_path, "events")
    sent_texts = {m["content"] for r in requests for m in r["messages"]}
    for column in ("text", "reply"):
        capped = events[events[f"{column}_chars"].notna()]
        assert len(capped) >= 1, column  # the broadcast (text) and its receipt (reply) were over the cap
        assert (capped[column].str.len() == CAP).all()
        assert (capped[f"{column}_chars"] > 20_000).all()
        whole = events[events[f"{column}_chars"].isna()]
        assert whole[f"{column}_sha256"].isna().all()
        assert (whole[column].dropna().str.len() <= CAP).all()
    # the length and hash are those of the text the model really produced and the agents really saw
    call = events[(events["kind"] == "model_call") & events["text_chars"].notna()].iloc[0]
    original = "```\nbroadcast_message agent 0 says " + "x" * 20_000 + "\n```"
    assert call["text_chars"] == len(original)
    assert call["text_sha256"] == hashlib.sha256(original.encode()).hexdigest()
    assert original.startswith(call["text"])
    receipts = events[(events["verb"] == "receive_messages") & events["reply_chars"].notna()]
    assert len(receipts) == 2  # agents 1 and 2 received it
    # each receipt's hash is that of a message the server got as an agent's input
    assert {hashlib.sha256(t.encode()).hexdigest() for t in sent_texts} >= set(receipts["reply_sha256"])

    # below the cap the audit trail stays byte-exact; capped calls are flagged, not passed off as exact
    sent = [json.dumps(r["messages"]) for r in requests]
    rebuilt = calls(events)
    assert len(rebuilt) == len(requests)
    exact = [json.dumps(c.messages) for c in rebuilt if not c.capped]
    flagged = [c for c in rebuilt if c.capped]
    assert exact and flagged
    assert all(e in sent for e in exact)
    assert not any(json.dumps(c.messages) in sent for c in flagged if any(len(m["content"]) == CAP for m in c.messages))


def test_without_a_cap_every_text_is_whole(tmp_path):
    _, requests = run(tmp_path, big_reply, max_recorded_chars=None)
    events = read_table(tmp_path, "events")
    assert events["text_chars"].isna().all() and events["reply_chars"].isna().all()
    rebuilt = calls(events)
    assert not any(c.capped for c in rebuilt)
    assert sorted(json.dumps(c.messages) for c in rebuilt) == sorted(json.dumps(r["messages"]) for r in requests)


def chatty(request: dict) -> Reply:
    """Every agent broadcasts 4 000 characters each turn, then submits in the last round."""
    agent, turn = agent_and_turn(request)
    if turn >= 3:
        return Reply("```\nsubmit_result [1, 2]\n```")
    return Reply(fenced_broadcast(agent, turn))


def fenced_broadcast(agent: int, turn: int) -> str:
    return f"```\nbroadcast_message {agent}/{turn} " + "y" * 4000 + "\n```\n```\nreceive_messages\n```"


def event_files(root: Path) -> list[Path]:
    return sorted((root / "events").rglob("part-*.parquet"))


def test_events_are_flushed_by_size_not_only_by_rounds(tmp_path):
    budget = 20_000
    run(tmp_path / "small", chatty, event_flush_bytes=budget)
    run(tmp_path / "large", chatty, event_flush_bytes=10**9)
    small, large = event_files(tmp_path / "small"), event_files(tmp_path / "large")
    assert len(large) == 1  # 3 rounds, one phase: only the end of the phase flushes
    assert len(small) == 3  # each round's ~48 000 characters pass the 20 000-byte budget: one file a round
    for path in small:  # a file holds at most the budget plus one round's events (3 agents, ~16 500 each)
        table = pq.read_table(path, columns=["text", "reply"]).to_pylist()
        size = sum(len(r["text"] or "") + len(r["reply"] or "") for r in table)
        assert size <= budget + 3 * 16_500, (path.name, size)
    a, b = read_table(tmp_path / "small", "events"), read_table(tmp_path / "large", "events")
    assert sorted(a["seq"]) == list(range(len(a))) == sorted(b["seq"])  # nothing lost or doubled
    cols = ["seq", "kind", "verb", "text", "reply", "source"]
    assert a.sort_values("seq")[cols].equals(b.sort_values("seq")[cols])
