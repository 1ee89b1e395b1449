"""SIMAS end to end through the real driver: the sequential order and what each speaker sees
(against a loopback chat server that records every request), profile generation with a
malformed reply (one retry, then the pool, flagged), n = 1, the CoT baseline, Ray, and the
scripted simulation's accuracy curve reproduced by seed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from masgrid._private.platform.run.config import ConfigError, RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from masgrid._private.platform.results.recorder import partition_dir
from tests.support.chat_server import ChatServer, Reply

SPEAKER = re.compile(r"You are (Agent_\d+), the")


def cfg_of(tmp_path: Path, **over: object) -> RunConfig:
    data = {"results_dir": str(tmp_path), "task": "simas/mmlu", "protocol": "groupchat", "agents": 3,
            "simas": {"subject": "college_physics", "profiles": "pool", "question": 2},
            "execution": {"executor": "local"}}
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}  # type: ignore[dict-item]
        else:
            data[key] = value
    return RunConfig.from_mapping(data)


def run_row(cfg: RunConfig) -> dict:
    path = partition_dir(Path(cfg.results_dir), "runs", cfg.partition) / f"part-{cfg.run_id}.parquet"
    return pq.read_table(path).to_pylist()[0]


class Recorder:
    """Replies 'I am <name>, turn <k>. My answer: B' and remembers every request."""

    def __init__(self, profile_replies: list[str] | None = None) -> None:
        self.calls: list[tuple[str, list[dict]]] = []
        self.profile_replies = list(profile_replies or [])

    def __call__(self, request: dict) -> Reply:
        messages = request["messages"]
        system = messages[0]["content"]
        if system.startswith("You set up a panel"):
            self.calls.append(("generator", messages))
            return Reply(text=self.profile_replies.pop(0))
        name = SPEAKER.search(system).group(1)
        self.calls.append((name, messages))
        if "The discussion is over" in messages[-1]["content"]:
            return Reply(text="We converged.\nFinal answer: B")
        turn = sum(m["role"] == "assistant" for m in messages)
        return Reply(text=f"I am {name}, turn {turn}. My answer: B")


def openai(server: ChatServer) -> dict:
    return {"backend": "openai", "preflight": False,
            "model": {"name": "test", "base_url": server.base_url, "max_retries": 0}}


def test_sequential_order_and_visibility(tmp_path: Path) -> None:
    n, rounds = 3, 2
    script = Recorder()
    with ChatServer(script) as server:
        cfg = cfg_of(tmp_path, agents=n, simas={"rounds": rounds}, **openai(server))
        summary = run_local(cfg)
    assert summary.status == "ok", summary.error
    order = [name for name, _ in script.calls]
    names = [f"Agent_{i + 1}" for i in range(n)]
    assert order == names * rounds + ["Agent_1"]  # strictly in order, then a_1 answers
    replies = [f"I am {who}, turn {sum(m['role'] == 'assistant' for m in msgs)}. My answer: B"
               for who, msgs in script.calls[:-1]]
    assert len(set(replies)) == len(replies)
    said: list[str] = []  # every reply so far, attributed, in order (built independently)
    for k, (name, messages) in enumerate(script.calls[:-1]):
        visible = "\n".join(m["content"] for m in messages if m["role"] in ("user", "assistant"))
        expected_lines = [s for s in said]
        # agent sees every earlier reply, in order: others' as attributed lines, its own as its turns
        positions = []
        for line in expected_lines:
            speaker, text = line.split(": ", 1)
            if speaker == f"[{name}]":
                assert any(m["role"] == "assistant" and m["content"] == text for m in messages)
            else:
                assert line in visible, (name, k, line)
                positions.append(visible.index(line))
        assert positions == sorted(positions)
        assert "The question:" in messages[1]["content"]  # h_0 = {q} opens the history
        said.append(f"[{name}]: {replies[k]}")
        # nothing not yet said is visible: no reply of this or a later turn
        assert not any(r in visible for r in replies[k:])
    final = script.calls[-1][1]
    whole = "\n".join(m["content"] for m in final)
    for line in said:
        speaker, text = line.split(": ", 1)
        assert (text in whole) if speaker == "[Agent_1]" else (line in whole)
    row = run_row(cfg)
    assert row["accuracy"] == 1.0 and row["success"] is True  # B is the key of question 2
    assert row["model_calls"] == n * rounds + 1 and row["discussion_rounds"] == rounds


def test_token_input_grows_quadratically_with_n(tmp_path: Path) -> None:
    """Prompt tokens of a run: every turn re-reads a history linear in n, so the total is
    quadratic; second differences over n = 2..5 are positive and nearly constant."""
    totals = []
    for n in (2, 3, 4, 5):
        cfg = cfg_of(tmp_path / str(n), agents=n, simas={"rounds": 3})
        run_local(cfg)
        totals.append(run_row(cfg)["tokens_in"])
    first = [b - a for a, b in zip(totals, totals[1:])]
    second = [b - a for a, b in zip(first, first[1:])]
    assert all(d > 0 for d in first) and all(d > 0 for d in second)


def test_profile_generation_retry_then_pool(tmp_path: Path) -> None:
    script = Recorder(profile_replies=["not json at all", '[{"personality": "only one"}]'])
    with ChatServer(script) as server:
        cfg = cfg_of(tmp_path, simas={"profiles": "generate", "rounds": 1}, **openai(server))
        summary = run_local(cfg)
    assert summary.status == "ok", summary.error
    generator_calls = [m for who, m in script.calls if who == "generator"]
    assert len(generator_calls) == 2  # the reply and its one retry
    assert "could not be used" in generator_calls[1][-1]["content"]
    row = run_row(cfg)
    assert row["profiles_source"] == "pool_fallback"
    # the discussion still ran, with the pool's profiles in the system prompts
    system = next(m for who, m in script.calls if who == "Agent_2")[0]["content"]
    assert "Your personality:" in system


def test_profile_generation_used_when_valid(tmp_path: Path) -> None:
    profiles = [{"personality": f"Calm-{i}", "belief": f"Check twice {i}", "expertise": f"Optics {i}"} for i in range(3)]
    script = Recorder(profile_replies=["Sure:\n" + json.dumps(profiles)])
    with ChatServer(script) as server:
        cfg = cfg_of(tmp_path, simas={"profiles": "generate", "rounds": 1}, **openai(server))
        assert run_local(cfg).status == "ok"
    assert run_row(cfg)["profiles_source"] == "generated"
    system = next(m for who, m in script.calls if who == "Agent_3")[0]["content"]
    assert "Calm-2" in system and "Check twice 2" in system and "Optics 2" in system


@pytest.mark.parametrize(("condition", "shown", "hidden"), [("none", [], ["Your personality", "Your core belief",
                                                                         "Your expertise"]),
                                                            ("no_belief", ["Your personality", "Your expertise"],
                                                             ["Your core belief"])])
def test_profile_ablations(tmp_path: Path, condition: str, shown: list[str], hidden: list[str]) -> None:
    from masgrid._private.envs.tasks import get_task

    task = get_task("simas/mmlu")
    inst = task.generate(3, 1, 0, subject="college_physics", profiles="pool", condition=condition)
    prompt = task.build_prompt(task.view(inst, 1), "groupchat", condition)
    assert all(s in prompt for s in shown) and not any(h in prompt for h in hidden)


def test_single_agent_and_cot(tmp_path: Path) -> None:
    one = cfg_of(tmp_path / "one", agents=1, simas={"rounds": 3})
    assert run_local(one).status == "ok"
    assert run_row(one)["model_calls"] == 4  # one agent discussing with itself, then answering
    cot = cfg_of(tmp_path / "cot", agents=1, condition="cot")
    assert run_local(cot).status == "ok"
    row = run_row(cot)
    assert row["model_calls"] == 1 and row["profiles_source"] is None
    with pytest.raises(ConfigError, match="cot"):
        cfg_of(tmp_path, agents=3, condition="cot")


def test_unparsable_final_answer_is_counted(tmp_path: Path) -> None:
    def script(request: dict) -> Reply:
        return Reply(text="I cannot decide.")
    with ChatServer(script) as server:
        cfg = cfg_of(tmp_path, agents=2, simas={"rounds": 1}, **openai(server))
        assert run_local(cfg).status == "ok"
    row = run_row(cfg)
    assert row["answer_unparsable"] is True and row["accuracy"] == 0.0 and row["success"] is False


def test_missing_dataset_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        cfg_of(tmp_path, simas={"data_dir": str(tmp_path / "nowhere"), "subject": "philosophy"})
    lines = [line for line in str(info.value).splitlines() if "simas" in line]
    assert len(lines) == 1 and "philosophy_test.csv" in lines[0] and "nowhere" in lines[0]


def test_runs_on_ray(ray_session, tmp_path: Path) -> None:
    cfg = cfg_of(tmp_path, simas={"profiles": "generate", "rounds": 2}, execution={"executor": "ray"})
    summary = run_local(cfg)
    assert summary.status == "ok", summary.error
    assert run_row(cfg)["profiles_source"] == "generated"


def test_simulated_accuracy_curve_is_reproducible(tmp_path: Path) -> None:
    """Accuracy against n of the scripted simulation over 10 questions x 2 repeats, twice."""
    def curve(where: Path) -> pd.Series:
        configs = [cfg_of(where, agents=n, simas={"question": q, "rounds": 2, "sim_error": 0.45}, seed=s)
                   for n in (1, 3, 5) for q in range(10) for s in range(2)]
        for cfg in configs:
            assert run_local(cfg).status == "ok"
        runs = pd.read_parquet(where / "runs")
        return runs.groupby("agents")["accuracy"].mean()
    a, b = curve(tmp_path / "a"), curve(tmp_path / "b")
    pd.testing.assert_series_equal(a, b)
    assert a.nunique() > 1  # n changes the outcome: the curve is not flat


@pytest.mark.parametrize(("task", "extra", "right", "wrong"), [
    ("simas/mmlu", ["simas.subject=abstract_algebra", "simas.question=1"], "The answer is (D).", "Final answer: A"),
    ("simas/ekar", ["simas.question=3"], "Final answer: B", "C is tempting. Final answer: C"),
    ("simas/aime", ["simas.question=7"], "\\boxed{301}", "Final answer: 300"),
])
def test_cli_instance_and_score(tmp_path: Path, capsys: pytest.CaptureFixture[str], task: str, extra: list[str],
                                right: str, wrong: str) -> None:
    from masgrid._private.platform.commands.cli import main

    assert main(["instance", task, "agents=2", *extra, "--json"]) == 0
    inst = tmp_path / "inst.json"
    inst.write_text(capsys.readouterr().out)
    for answer, ok in ((right, True), (wrong, False), ("I do not know", False)):
        (tmp_path / "ans.json").write_text(json.dumps({"0": answer}))
        assert main(["score", task, "--instance", str(inst), "--answers", str(tmp_path / "ans.json"), "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["success"] is ok and result["correct"] == [ok, ok]
    keep = [e for e in extra if "question" not in e]
    assert main(["instance", task, "agents=2", *keep, "simas.question=99"]) == 2
    assert "simas.question" in capsys.readouterr().err
    if task == "simas/mmlu":  # the subject is required, and said so in one line
        assert main(["instance", task, "agents=2"]) == 2
        assert "simas.subject" in capsys.readouterr().err


def test_events_carry_the_discussion_round(tmp_path: Path) -> None:
    """Every model call is recorded under its discussion round (turn k of n agents: round
    k // n + 1; the final answer: T + 1) and its speaker, in speaking order; the profile
    phase is one call in round 1. The rounds are asked once per phase (`rounds_of`)."""
    n, rounds = 3, 2
    with ChatServer(Recorder([json.dumps([{"personality": f"p{i}", "belief": f"b{i}", "expertise": f"e{i}"}
                                          for i in range(n)])])) as server:
        cfg = cfg_of(tmp_path, agents=n, simas={"rounds": rounds, "profiles": "generate"}, **openai(server))
        assert run_local(cfg).status == "ok"
    events = pd.read_parquet(tmp_path / "events")
    calls = events[events["kind"] == "model_call"].sort_values("seq")
    by_phase = {int(p): list(zip(g["agent"], g["round"])) for p, g in calls.groupby("phase")}
    assert by_phase[1] == [(0, 1)]
    expected = [(k % n, k // n + 1) for k in range(n * rounds)] + [(0, rounds + 1)]
    assert by_phase[2] == expected
