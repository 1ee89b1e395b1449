"""Communication analysis (families/cooper/messages.py): the documented label rules on written
examples, and the execution-step accounting of Figure 4c against a loop written here over
random event streams (planning messages, runs with and without send_message actions)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from masgrid.families.cooper import messages as cm

EXAMPLES = {
    "I'll take lines 40-60 of src/jinja2/filters.py; you take the signature.": ("plan", {"plan"}),
    "Which file are you editing?": ("question", {"question"}),
    "Could you leave the imports to me": ("question", {"question"}),
    "I have added `reverse` at lines 1170-1175 in filters.py. Final status: done.": ("update", {"update"}),
    "Status update: tests pass on my branch": ("update", {"update"}),
    "I've implemented the cache; I will now write the docstring. Does that clash with yours?":
        ("update", {"update", "plan", "question"}),
    "Sounds good, thanks": ("ack", {"ack"}),
    "ok": ("ack", {"ack"}),
    "Here is the diff for reference": ("other", set()),
    "": ("other", set()),
}


@pytest.mark.parametrize("text", list(EXAMPLES))
def test_rule_based_labels_on_written_examples(text):
    primary, hits = EXAMPLES[text]
    got = cm.label(text)
    assert got["label"] == primary
    assert {n for n in cm.RULES if got[f"is_{n}"]} == hits


def test_line_and_file_references_are_counted():
    got = cm.label("Editing lines 10-20 and line 31 of src/a.py and tests/test_b.py, see L40")
    assert got["line_refs"] == 3 and got["file_refs"] == 2


def _random_run(rng: np.random.Generator, run_id: str, texts: list[str]) -> tuple[list[dict], int, int]:
    """Events of one run and, by hand, its execution steps and execution messages."""
    events, t = [], 0.0
    plan_at = None if rng.random() < 0.2 else float(rng.integers(2, 6))
    sends = rng.random() < 0.5  # the task records send_message calls as actions too
    steps = messages = 0
    for seq in range(int(rng.integers(6, 25))):  # long enough to reach plan_at
        t += 1.0
        if plan_at is not None and t == plan_at:
            events.append({"run_id": run_id, "seq": seq, "t": t, "agent": 0, "kind": "plan", "tool": None,
                           "text": "plan"})
            continue
        execution = plan_at is None or t > plan_at
        agent = int(rng.integers(0, 2))
        if rng.random() < 0.35:
            if sends:
                events.append({"run_id": run_id, "seq": seq, "t": t, "agent": agent, "kind": "action",
                               "tool": "send_message", "text": "{}"})
                steps += execution
            events.append({"run_id": run_id, "seq": seq, "t": t, "agent": agent, "kind": "message", "tool": None,
                           "text": texts[int(rng.integers(0, len(texts)))]})
            messages += execution
            steps += execution and not sends
        else:
            events.append({"run_id": run_id, "seq": seq, "t": t, "agent": agent, "kind": "action",
                           "tool": str(rng.choice(["view", "bash", "str_replace"])), "text": "{}"})
            events.append({"run_id": run_id, "seq": seq, "t": t, "agent": agent, "kind": "tool_result",
                           "tool": None, "text": "ok"})
            steps += execution
    return events, steps, messages


@pytest.mark.parametrize("seed", range(15))
def test_message_share_counts_execution_steps_as_documented(seed):
    rng = np.random.default_rng(seed)
    texts = list(EXAMPLES)
    runs, events, expect = [], [], {}
    with_phase = seed % 2 == 0
    for m in range(2):
        for i in range(int(rng.integers(1, 6))):
            run_id = f"m{m}-{i}"
            runs.append({"run_id": run_id, "task": "cooper/p_task/1", "model": f"m{m}", "status": "ok",
                         "cooper_setting": "coop", "cooper_features": "1,2", "success": True})
            ev, steps, msgs = _random_run(rng, run_id, texts)
            if with_phase:  # the scheduler's phases: 1 up to the plan event, 2 after
                plan_t = next((e["t"] for e in ev if e["kind"] == "plan"), 0.0)
                ev = [{**e, "phase": 1 if e["t"] <= plan_t else 2} for e in ev]
            if rng.random() < 0.5:  # the recorded action budget replaces the event count
                steps = int(rng.integers(0, 100))
                runs[-1]["actions_total"] = steps
                from_events = 0
            else:
                from_events = 1
            runs[-1]["messages_total"] = msgs + (1 if rng.random() < 0.3 else 0)
            events += ev
            s, n, f, x = expect.get(f"m{m}", (0, 0, 0, 0))
            expect[f"m{m}"] = (s + steps, n + msgs, f + from_events, x + (runs[-1]["messages_total"] != msgs))
    frame = pd.DataFrame(events).sample(frac=1, random_state=seed)  # order comes from t and seq
    table = cm.communication(pd.DataFrame(runs), frame).set_index("model")
    for model, (steps, msgs, from_events, mismatch) in expect.items():
        assert (table.loc[model, "steps"], table.loc[model, "messages"]) == (steps, msgs)
        assert (table.loc[model, "steps_from_events"], table.loc[model, "message_mismatch"]) == (from_events, mismatch)
        if steps:
            assert table.loc[model, "message_share"] == pytest.approx(msgs / steps)
            shares = sum(table.loc[model, f"{n}_share"] for n in cm.LABELS)
            assert shares == pytest.approx(msgs / steps)
        else:
            assert math.isnan(table.loc[model, "message_share"])


def test_repetition_and_unanswered_question_proxies():
    rows = [("a", "I have added the url type to types/__init__.py at lines 72-77"),
            ("b", "Which lines will you touch in prompts.py?"),
            ("a", "I have added the url type to types/__init__.py at lines 72 - 77"),
            ("a", "Which approach would you prefer?")]
    events = pd.DataFrame([{"run_id": "r", "seq": i, "t": float(i), "agent": a, "kind": "message", "text": x}
                           for i, (a, x) in enumerate(rows)])
    got = cm.execution_messages(events)
    assert got["near_duplicate"].tolist() == [False, False, True, False]
    assert got["unanswered"].tolist() == [False, False, False, True]


def test_events_without_a_clock_are_a_clear_error():
    runs = pd.DataFrame([{"run_id": "r", "task": "cooper/p_task/1", "model": "m", "status": "ok",
                          "cooper_setting": "coop", "cooper_features": "1,2", "success": True}])
    with pytest.raises(ValueError, match="lack the wall-clock column `t`"):
        cm.communication(runs, pd.DataFrame([{"run_id": "r", "kind": "message", "agent": 0, "text": "hi"}]))


@pytest.mark.parametrize("seed", range(8))
def test_appendix_i_patterns_match_a_loop_over_the_conversations(seed):
    rng = np.random.default_rng(50 + seed)
    texts = list(EXAMPLES)
    runs, events, per_run = [], [], {}
    for i in range(int(rng.integers(4, 15))):
        run_id, conflicts = f"r{i}", int(rng.integers(0, 3))
        runs.append({"run_id": run_id, "task": "cooper/p_task/1", "model": "m", "status": "ok",
                     "cooper_setting": "coop", "cooper_features": "1,2", "success": True,
                     "conflicts_naive": conflicts})
        chosen = [texts[int(j)] for j in rng.integers(0, len(texts), size=int(rng.integers(0, 6)))]
        events += [{"run_id": run_id, "seq": j, "t": float(j), "agent": j % 2, "kind": "message", "text": x}
                   for j, x in enumerate(chosen)]
        plans = sum("plan" in EXAMPLES[x][1] for x in chosen)
        questions = sum("question" in EXAMPLES[x][1] for x in chosen)
        first = bool(chosen) and "plan" in EXAMPLES[chosen[0]][1]
        per_run[run_id] = (conflicts > 0, plans, questions, first)
    table = cm.patterns(pd.DataFrame(runs), pd.DataFrame(events)).set_index(["model", "group"])
    groups = {"conflict": lambda r: r[0], "no conflict": lambda r: not r[0],
              "first message a plan": lambda r: r[3], "first message not a plan": lambda r: not r[3]}
    for group, keep in groups.items():
        part = [r for r in per_run.values() if keep(r)]
        row = table.loc[("all", group)]
        assert row["runs"] == len(part)
        assert (row["plan"], row["question"]) == (sum(r[1] for r in part), sum(r[2] for r in part))
        if part:
            assert row["conflict_rate"] == pytest.approx(sum(r[0] for r in part) / len(part))
            assert row["first_message_plan_share"] == pytest.approx(sum(r[3] for r in part) / len(part))
