"""SILO-Bench failure analysis (section 5.2, appendix G) from the events table.

Rule-based labels per failed run (a successful run carries none; every failed run
carries at least one):
- Premature Submission: some agent submitted before what it knew determined its answer
  (`SiloSpec.knows_answer`: by default its information set covers `spec.required_peers`,
  the task's minimum set of peers whose data it needs);
- Consensus Failure: more than one distinct submitted answer, two answers being the same
  when the task's scorer accepts one for the other (within the task's tolerance) and
  every correct answer being the truth (Levels I and III, where all agents must give the
  same answer; not applicable to Level II, whose agents answer for different segments);
- Computation Error: some agent whose information did determine its answer submitted a
  wrong one;
- No Submission (masgrid's addition, not a mode of the paper's Table 4): some agent never
  submitted a valid answer before R_max (its null answer is scored wrong, appendix C.2).

Information sets are replayed from the recorded transfers (event column `peers`) by
`masgrid.sdk.information` (what a message or a file carries, transitively or not).

Also: the sender x receiver communication matrix (Figure 7) and its PNG, leader
emergence (an agent receiving more than 1.5x the mean, Table 17), the co-occurrence
table (Table 15) and the behaviour comparison of successful and failed runs (Table 16).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from masgrid.families.silo.common import level_of, silo_runs
from masgrid.families.silo.spec import SiloData, SiloSpec
from masgrid.sdk.information import SEND_VERBS, information_at_submission, peers_of

MODES = ("premature", "consensus", "computation", "unsubmitted")
MODE_NAMES = {"premature": "Premature Submission", "consensus": "Consensus Failure",
              "computation": "Computation Error", "unsubmitted": "No Submission (not in the paper)"}
RECEIVE_VERBS = {"receive_messages", "read_file"}
LEADER_FACTOR = 1.5
VERIFY = re.compile(r"\b(verif\w*|double[- ]?check\w*|cross[- ]?check\w*|confirm\w*|sanity[- ]check\w*)", re.I)
STRATEGY = re.compile(r"\b(plan|plans|planning|strategy|strateg\w*|coordinat\w*|propose\w*|leader|aggregator|"
                      r"collector)\b", re.I)


def comm_matrix(events: pd.DataFrame, n: int) -> np.ndarray:
    """M[s, r] = messages from s that reached r (P2P/BP sends; SFS: r read a file s wrote)."""
    m = np.zeros((n, n), dtype=np.int64)
    cmds = events[(events["kind"] == "command") & (events["ok"] == True)]  # noqa: E712
    for row in cmds.itertuples(index=False):
        if row.verb in SEND_VERBS:
            for r in peers_of(row.peers):
                m[int(row.agent), r] += 1
        elif row.verb == "read_file":
            for s in peers_of(row.peers):
                m[s, int(row.agent)] += 1
    return m


def leaders(matrix: np.ndarray, factor: float = LEADER_FACTOR) -> list[int]:
    """Agents receiving more than `factor` x the mean number of messages received."""
    received = matrix.sum(axis=0)
    mean = received.mean() if len(received) else 0.0
    return [int(i) for i in np.flatnonzero(received > factor * mean)] if mean > 0 else []


def _instance(run: pd.Series) -> tuple[SiloSpec, SiloData]:
    """(spec, SiloData) of the run's regenerated instance."""
    from masgrid.families.silo.adapter import SiloTask
    from masgrid.sdk.tasks import get_task

    task = get_task(run["task"])
    if not isinstance(task, SiloTask):
        raise TypeError(f"run {run['run_id']}: task {run['task']} is not a SILO task ({type(task).__name__})")
    inst = task.generate(int(run["agents"]), int(run["k"]), int(run["seed"]), condition=run["condition"])
    return task.spec, task.data_of(inst)


def distinct_answers(answers: list[tuple[Any, bool]], same: Any) -> int:
    """How many different answers (value, correct) there are, up to the task's tolerance.

    Every correct answer is the truth (one class). A wrong answer joins the first class
    whose representative `same(rep, answer)` accepts it, else it opens a class; numbers
    are taken in ascending order, so this is the fewest tolerance-wide groups."""
    reps: list[Any] = []
    truth = any(ok for _, ok in answers)
    wrong = [a for a, ok in answers if not ok]
    numeric = all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in wrong)
    for answer in sorted(wrong) if numeric else sorted(wrong, key=lambda a: json.dumps(a, sort_keys=True)):
        if not any(_accepts(same, rep, answer) for rep in reps):
            reps.append(answer)
    return len(reps) + truth


def _accepts(same: Any, rep: Any, answer: Any) -> bool:
    try:
        return bool(same(answer, rep))
    except (TypeError, ValueError):
        return answer == rep


def label_runs(runs: pd.DataFrame, agents: pd.DataFrame, events: pd.DataFrame,
               transitive: bool = True) -> pd.DataFrame:
    """One row per multi-agent SILO run: success, the failure labels, leaders."""
    runs = silo_runs(runs)
    runs = runs[runs["oracle_n"].isna()]
    by_run_events = dict(tuple(events.groupby("run_id"))) if not events.empty else {}
    by_run_agents = dict(tuple(agents.groupby("run_id"))) if not agents.empty else {}
    rows = []
    for _, run in runs.iterrows():
        n = int(run["agents"])
        ev = by_run_events.get(run["run_id"], events.iloc[0:0])
        ag = by_run_agents.get(run["run_id"], agents.iloc[0:0]).sort_values("agent")
        info = information_at_submission(ev, n, transitive) if not ev.empty else {}
        spec, data = _instance(run)
        complete = {i: spec.knows_answer(i, s | {i}, data) for i, s in info.items()}
        given = [a for a in ag.itertuples() if isinstance(a.submission, str)]  # null (None/NaN): none submitted
        submitted = [(json.loads(a.submission), bool(a.correct)) for a in given]
        distinct = distinct_answers(submitted, lambda a, b: spec.is_correct(a, b, data))  # noqa: B023 - used at once
        wrong = {int(a.agent) for a in given if not a.correct}
        failed = not bool(run["success"])
        matrix = comm_matrix(ev, n) if not ev.empty else np.zeros((n, n), dtype=np.int64)
        lead = leaders(matrix)
        rows.append({
            "run_id": run["run_id"], "task": run["task"], "level": int(run["level"]), "protocol": run["protocol"],
            "agents": n, "model": run.get("model"), "condition": run["condition"], "success": not failed,
            "sr": float(run["sr"]), "rounds": run["rounds"],
            "premature": failed and any(not ok for ok in complete.values()),
            "consensus": failed and int(run["level"]) != 2 and distinct > 1,
            "computation": failed and any(complete.get(i, False) for i in wrong),
            "unsubmitted": failed and len(submitted) < n,
            "premature_agents": sum(not ok for ok in complete.values()),
            "unsubmitted_agents": n - len(submitted),
            "distinct_answers": distinct,
            "leader": bool(lead), "leaders": lead,
            "messages_per_agent": float(matrix.sum()) / n,
        })
    return pd.DataFrame(rows)


def failure_distribution(labels: pd.DataFrame) -> pd.DataFrame:
    """Table 4: runs that succeeded and runs with each (non-exclusive) failure mode."""
    total = len(labels)
    counts = {"Success": int(labels["success"].sum())} | {MODE_NAMES[m]: int(labels[m].sum()) for m in MODES}
    return pd.DataFrame({"count": counts, "percent": {k: 100.0 * v / total if total else np.nan
                                                      for k, v in counts.items()}})


def cooccurrence(labels: pd.DataFrame) -> pd.DataFrame:
    """Table 15: diagonal = runs with the mode, off-diagonal = runs with both (upper triangle)."""
    names = [MODE_NAMES[m] for m in MODES]
    table = pd.DataFrame(index=names, columns=names, dtype="Int64")
    for a_pos, a in enumerate(MODES):
        for b_pos, b in enumerate(MODES):
            if b_pos >= a_pos:
                table.iloc[a_pos, b_pos] = int((labels[a] & labels[b]).sum())
    return table


def leader_table(labels: pd.DataFrame) -> pd.DataFrame:
    """Table 17: per level, the share of runs with an emergent leader and the SR (%) with/without."""
    rows = {}
    for level, group in labels.groupby("level"):
        with_leader, without = group[group["leader"]], group[~group["leader"]]
        rows[_roman(int(level))] = {
            "leader_rate": 100.0 * len(with_leader) / len(group),
            "sr_with_leader": 100.0 * with_leader["sr"].mean() if len(with_leader) else np.nan,
            "sr_without_leader": 100.0 * without["sr"].mean() if len(without) else np.nan,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def behaviour_table(labels: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """Table 16: successful vs failed runs. Verification and strategy discussion are keyword
    rules over the agents' model outputs (a run counts if any output matches)."""
    texts = events[events["kind"] == "model_call"].groupby("run_id")["text"].apply(
        lambda s: "\n".join(t for t in s if isinstance(t, str)))
    table = {}
    for name, group in (("Success", labels[labels["success"]]), ("Failed", labels[~labels["success"]])):
        run_text = texts.reindex(group["run_id"]).fillna("")
        table[name] = {
            "verification_rate": 100.0 * run_text.map(lambda t: bool(VERIFY.search(t))).mean() if len(group) else np.nan,
            "strategy_discussion_rate": 100.0 * run_text.map(lambda t: bool(STRATEGY.search(t))).mean()
            if len(group) else np.nan,
            "messages_per_agent": group["messages_per_agent"].mean(),
            "rounds_to_completion": group["rounds"].mean(),
            "runs": len(group),
        }
    return pd.DataFrame(table)


def heatmap_png(events: pd.DataFrame, run_id: str, n: int, path: str | Path, title: str | None = None) -> Path:
    """Figure 7: the sender x receiver message counts of one run as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from masgrid.sdk.figures import save_figure

    matrix = comm_matrix(events[events["run_id"] == run_id], n)
    fig, ax = plt.subplots(figsize=(4.5, 4))
    image = ax.imshow(matrix, cmap="viridis", origin="upper")
    ax.set_xlabel("receiver (agent index)")
    ax.set_ylabel("sender (agent index)")
    ax.set_title(title or f"run {run_id}")
    fig.colorbar(image, ax=ax, label="messages")
    caption = (f"Cell: messages from the sender that reached the receiver (SFS: reads of a file the sender wrote). "
               f"One run ({run_id}, N = {n} agents, n = 1 run), not an average.")
    return save_figure(fig, path, caption)


def _roman(level: int) -> str:
    return {1: "I", 2: "II", 3: "III"}[level]


__all__ = ["behaviour_table", "comm_matrix", "cooccurrence", "distinct_answers", "failure_distribution", "heatmap_png",
           "information_at_submission", "label_runs", "leader_table", "leaders", "level_of"]
