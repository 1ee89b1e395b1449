"""Who gives SIMAS's final answer (`simas.answer_from`: Algorithm 1's a_1 or appendix A.4's
last agent), the confidence stated with it (A.4's auxiliary metric), and the number of model
calls docs/tasks/simas.md gives, against real runs (issue 25, item 6 b-d)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from masgrid.families.simas.confidence import parse_confidence
from masgrid._private.platform.run.config import ConfigError
from masgrid._private.platform.sweeps.ray_runs import run_local
from tests.families.simas.test_simas_runs import SPEAKER, cfg_of, openai, run_row
from tests.support.chat_server import ChatServer, Reply

ROOT = Path(__file__).resolve().parents[3]


class Script:
    """Discussion turns name the speaker; whoever is asked for the final answer states a
    confidence and an answer that depend on who it is (B, the key, only from `right`)."""

    def __init__(self, right: str, confidence: str | None = "65") -> None:
        self.right, self.confidence = right, confidence
        self.calls: list[tuple[str, list[dict]]] = []

    def __call__(self, request: dict) -> Reply:
        messages = request["messages"]
        name = SPEAKER.search(messages[0]["content"]).group(1)
        self.calls.append((name, messages))
        if "The discussion is over" in messages[-1]["content"]:
            lines = [] if self.confidence is None else [f"Confidence: {self.confidence}"]
            return Reply(text="\n".join(["We discussed it.", *lines, f"Final answer: {'B' if name == self.right else 'A'}"]))
        return Reply(text=f"I am {name}. My answer: B")


@pytest.mark.parametrize(("answer_from", "answerer"), [("first", "Agent_1"), ("last", "Agent_3")])
def test_answer_from_picks_the_answering_agent(tmp_path: Path, answer_from: str, answerer: str) -> None:
    n, rounds = 3, 2
    script = Script(right=answerer)
    with ChatServer(script) as server:
        cfg = cfg_of(tmp_path, agents=n, simas={"rounds": rounds, "answer_from": answer_from}, **openai(server))
        assert run_local(cfg).status == "ok"
    names = [f"Agent_{i + 1}" for i in range(n)]
    assert [who for who, _ in script.calls] == names * rounds + [answerer]
    final = script.calls[-1][1]
    word = "first" if answer_from == "first" else "last"
    assert f"As the {word} assistant" in final[-1]["content"]
    assert f"the {word} assistant gives the" in final[0]["content"].replace("\n", " ")
    row = run_row(cfg)
    # scored from the answerer's reply only: the other agents would have said A
    assert row["answer_from"] == answer_from and row["accuracy"] == 1.0 and row["answer_confidence"] == 65.0
    events = pd.read_parquet(tmp_path / "events")
    last_call = events[events["kind"] == "model_call"].sort_values("seq").iloc[-1]
    assert (last_call["agent"], last_call["round"]) == (names.index(answerer), rounds + 1)


def test_answer_from_is_part_of_the_run_identity(tmp_path: Path) -> None:
    default, first, last = (cfg_of(tmp_path, simas=s) for s in ({}, {"answer_from": "first"}, {"answer_from": "last"}))
    assert default.run_id == first.run_id != last.run_id
    assert default.identity()["simas"]["answer_from"] == "first"
    assert first.prompt_hash != last.prompt_hash  # the prompts name the answering agent
    with pytest.raises(ConfigError, match="answer_from"):
        cfg_of(tmp_path, simas={"answer_from": "middle"})


def test_answer_from_last_with_scripted_agents(tmp_path: Path) -> None:
    """The simulation's answerer is whoever gets the final request; n = 1: first is last."""
    cfg = cfg_of(tmp_path / "a", agents=4, simas={"answer_from": "last", "rounds": 1})
    assert run_local(cfg).status == "ok"
    events = pd.read_parquet(tmp_path / "a" / "events")
    final = events[(events["kind"] == "model_call") & (events["round"] == 2)]
    assert list(final["agent"]) == [3]
    one = [cfg_of(tmp_path / w, agents=1, simas={"answer_from": w}) for w in ("first", "last")]
    assert [run_local(c).status for c in one] == ["ok", "ok"]
    assert run_row(one[0])["accuracy"] == run_row(one[1])["accuracy"]


@pytest.mark.parametrize(("text", "expected"), [
    ("Confidence: 80\nFinal answer: B", 80.0),
    ("**Confidence:** 72.5%\nFinal answer: C", 72.5),
    ("confidence = 0\nFinal answer: 3", 0.0),
    ("Confidence: 40\nOn reflection...\nConfidence: 90\nFinal answer: A", 90.0),  # the last one counts
    ("I am fairly confident.\nFinal answer: B", None),
    ("Confidence: 150\nFinal answer: B", None),  # outside 0..100: not a percentage
    ("My confidence: high. Final answer: B", None),
    ("", None),
    (None, None),
])
def test_parse_confidence(text: str | None, expected: float | None) -> None:
    assert parse_confidence(text) == expected


@pytest.mark.parametrize("confidence", ["65", None])
def test_confidence_is_recorded(tmp_path: Path, confidence: str | None) -> None:
    script = Script(right="Agent_1", confidence=confidence)
    with ChatServer(script) as server:
        cfg = cfg_of(tmp_path, agents=2, simas={"rounds": 1}, **openai(server))
        assert run_local(cfg).status == "ok"
    assert "Confidence: <0-100>" in script.calls[-1][1][-1]["content"]  # the final request asks for it
    row = run_row(cfg)
    assert row["answer_confidence"] == (None if confidence is None else float(confidence))
    assert row["accuracy"] == 1.0  # the confidence line does not disturb the answer


def test_scripted_confidence_matches_the_final_reply(tmp_path: Path) -> None:
    cfg = cfg_of(tmp_path, agents=5, simas={"rounds": 2, "sim_error": 0.5})
    assert run_local(cfg).status == "ok"
    events = pd.read_parquet(tmp_path / "events")
    final = events[events["kind"] == "model_call"].sort_values("seq").iloc[-1]["text"]
    stated = float(re.search(r"^Confidence: (\d+)$", final, re.M).group(1))
    votes = re.search(r"answers were \{(.*)\}", final).group(1)
    counts = [int(c) for c in re.findall(r": (\d+)", votes)]
    answer = re.search(r"Final answer: (\w)", final).group(1)
    assert stated == round(100 * int(re.search(rf"'{answer}': (\d+)", votes).group(1)) / sum(counts))
    assert run_row(cfg)["answer_confidence"] == stated


def doc_table() -> dict[int, tuple[int, int, int]]:
    """The model calls and tokens docs/tasks/simas.md states per n (the scripted runs)."""
    text = (ROOT / "docs" / "tasks" / "simas.md").read_text()
    block = text.split("| n | model calls | prompt tokens | total tokens |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in block.splitlines()[2:]:
        cells = [c.strip().replace(",", "") for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            rows[int(cells[0])] = (int(cells[1]), int(cells[2]), int(cells[3]))
    return rows


def test_docs_call_count_matches_real_runs(tmp_path: Path) -> None:
    """Default runs generate the profiles first: n*T + 1 discussion calls plus one profile
    call (plus its retry when the first reply is unusable); with profiles=pool, n*T + 1."""
    table = doc_table()
    assert sorted(table) == [1, 2, 4, 8]
    rounds = 3
    for n, (calls, tokens_in, tokens_total) in table.items():
        cfg = cfg_of(tmp_path / str(n), agents=n, simas={"profiles": "generate", "question": 0, "rounds": rounds})
        assert run_local(cfg).status == "ok"
        row = run_row(cfg)
        events = pd.read_parquet(tmp_path / str(n) / "events")
        assert calls == n * rounds + 2 == row["model_calls"] == int((events["kind"] == "model_call").sum()), n
        assert (tokens_in, tokens_total) == (row["tokens_in"], row["tokens_total"]), n
    pool = cfg_of(tmp_path / "pool", agents=2, simas={"profiles": "pool", "rounds": rounds})
    assert run_local(pool).status == "ok" and run_row(pool)["model_calls"] == 2 * rounds + 1
    text = (ROOT / "docs" / "tasks" / "simas.md").read_text()
    assert "n·T + 2" in text and "n·T + 1" in text
