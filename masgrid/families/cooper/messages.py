"""CooperBench communication (section 5, Figure 4c, appendices I-J) with rule-based labels.

The paper reports the share of execution steps spent on messages by type (planning,
questioning, updating). Its labeller is not published; ours is a fixed set of regular
expressions (docs/tasks/cooperbench-analysis.md lists them). Each message gets every label
whose rule matches (`is_plan`, ...) and one primary `label` by precedence
update > plan > question > ack > other, so the type shares add up to the message share.

Events read (written by the cooper task): kind `action` (a tool call, tool name in `tool`),
`message` (text in `text`, sender in `agent`), `plan`; ordered by `t`, then `seq`.
- Execution = the run's last `phase` (the asynchronous scheduler's phase 2; planning
  messages are not execution steps); events without a phase: after the run's last `plan` event.
- Steps = the run's `actions_total` (its execution action budget spent) where recorded; else
  execution `action` events, plus its messages when `send_message` calls are not actions.
- The repetition and unanswered-question counts are crude textual proxies for two of appendix
  J's categories, not the paper's LLM judge: near-duplicate = word-set Jaccard >= 0.8 with an
  earlier message of the same sender; unanswered = a question no other agent wrote after.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from masgrid.families.cooper.analysis import cooper_runs
from masgrid.sdk.intervals import wilson_rate

LABELS = ("update", "plan", "question", "ack", "other")
RULES: dict[str, re.Pattern[str]] = {
    "update": re.compile(
        r"\b(i(?:'ve| have)? (?:now )?(?:added|updated|changed|modified|implemented|created|finished|completed|fixed|"
        r"removed|inserted|pushed|applied)|(?:is|are|now) (?:done|complete|completed|finished|in place)|"
        r"status(?: update)?:|final status|summary of (?:my|what)|completed:)|[✅✓]", re.IGNORECASE),
    "plan": re.compile(
        r"\b(i(?:'ll| will| am going to|'m going to| plan to| intend to)|i'm (?:taking|handling|owning|working on)|"
        r"let'?s|plan:|my plan|proposal|i propose|you (?:take|handle|own|can take|could take|should take)|"
        r"i'll take|ownership|(?:my|your) (?:part|side|section|lines))\b", re.IGNORECASE),
    "question": re.compile(
        r"\?|^\s*(?:can|could|would|should|do|does|did|are|is|which|what|where|when|who|how|will)\b",
        re.IGNORECASE | re.MULTILINE),
    "ack": re.compile(
        r"^\s*(?:ok(?:ay)?|sounds good|agreed|agree|confirm(?:ed)?|got it|thanks|thank you|great|perfect|"
        r"acknowledged|understood|noted)\b", re.IGNORECASE),
}
LINE_REF = re.compile(r"\blines?\s*\d+|\bL\d+\b", re.IGNORECASE)
FILE_REF = re.compile(r"[\w./-]+\.(?:py|pyi|js|ts|tsx|go|rs|md|txt|toml|cfg|ini|json|ya?ml)\b")
DUPLICATE_JACCARD = 0.8


def label(text: str) -> dict[str, object]:
    """Every rule's verdict on one message, its primary label, and its line and file references."""
    text = text or ""
    hits = {name: bool(rule.search(text)) for name, rule in RULES.items()}
    primary = next((name for name in LABELS[:-1] if hits[name]), "other")
    return {**{f"is_{n}": v for n, v in hits.items()}, "label": primary,
            "line_refs": len(LINE_REF.findall(text)), "file_refs": len(FILE_REF.findall(text))}


def _ordered(events: pd.DataFrame) -> pd.DataFrame:
    if "t" not in events.columns:
        raise ValueError("CooperBench events lack the wall-clock column `t` (written by the cooper task)")
    keys = [c for c in ("run_id", "t", "seq") if c in events.columns]
    return events.sort_values(keys, kind="stable")


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", (text or "").lower()))


def execution_mask(events: pd.DataFrame) -> pd.Series:
    """True for events of the execution phase: the run's last `phase` where the events carry
    one (the asynchronous scheduler: 1 planning, 2 execution), else after its last `plan` event
    (a run without either is all execution)."""
    if "phase" in events.columns and events["phase"].notna().any():
        return events["phase"] == events.groupby("run_id")["phase"].transform("max")
    cut = events["run_id"].map(events[events["kind"] == "plan"].groupby("run_id")["t"].max())
    return cut.isna() | (events["t"] > cut)


def execution_messages(events: pd.DataFrame) -> pd.DataFrame:
    """Message events with their labels, `execution` (see `execution_mask`), `near_duplicate`
    and `unanswered` (the appendix J proxies)."""
    cols = ["run_id", "agent", "t", "text", "execution", "near_duplicate", "unanswered", *[f"is_{n}" for n in RULES],
            "label", "line_refs", "file_refs"]
    if events.empty or "kind" not in events.columns:
        return pd.DataFrame(columns=cols)
    events = _ordered(events)
    events = events.assign(execution=execution_mask(events))
    msgs = events[events["kind"] == "message"].copy()
    if msgs.empty:
        return pd.DataFrame(columns=cols)
    labelled = pd.DataFrame([label(t) for t in msgs["text"].fillna("")], index=msgs.index)
    msgs = pd.concat([msgs, labelled], axis=1)
    dup, unanswered = [], []
    for _, run in msgs.groupby("run_id", sort=False):
        seen: dict[object, list[frozenset[str]]] = {}
        senders = run["agent"].tolist()
        for i, (sender, text, is_q) in enumerate(zip(senders, run["text"].fillna(""), run["is_question"])):
            words = _words(text)
            earlier = seen.setdefault(sender, [])
            dup.append(any(words and len(words & w) / len(words | w) >= DUPLICATE_JACCARD for w in earlier))
            earlier.append(words)
            unanswered.append(bool(is_q) and not any(s != sender for s in senders[i + 1:]))
    msgs["near_duplicate"], msgs["unanswered"] = dup, unanswered
    return msgs[cols]


def _event_steps(run: pd.DataFrame) -> int:
    """Execution steps of one run from its events: tool calls, plus its messages when the run
    does not record `send_message` calls as actions."""
    exe = run[run["execution"]]
    actions = exe[exe["kind"] == "action"]
    sends = "tool" in actions.columns and (actions["tool"] == "send_message").any()
    return len(actions) + (0 if sends else int((exe["kind"] == "message").sum()))


def communication(runs: pd.DataFrame, events: pd.DataFrame, settings: tuple[str, ...] = ("coop",),
                  features: int | None = 2) -> pd.DataFrame:
    """Figure 4c: per model, execution steps, messages, the message share of steps (sum over runs
    of messages / sum of steps) and each primary label's share of steps; line and file references
    per message; runs with a near-duplicate message or an unanswered question (proxies).
    Steps are the run's `actions_total` (the action budget spent in execution: tool calls,
    messages, replies without a tool call) where recorded, else counted from its events
    (`steps_from_events` runs). `message_mismatch`: runs whose execution message events differ
    from their `messages_total`. `features`: features per task (2: the paper's pairs; None: all)."""
    cols = ["model", "runs", "steps", "messages", "message_share", *[f"{n}_share" for n in LABELS],
            "line_refs_per_message", "file_refs_per_message", "runs_with_repetition", "runs_with_unanswered",
            "runs_without_events", "steps_from_events", "message_mismatch"]
    df = cooper_runs(runs)
    if df.empty:
        return pd.DataFrame(columns=cols)
    df = df[df["cooper_setting"].isin(settings) & ((df["n_features"] == features) if features else True)]
    if df.empty:
        return pd.DataFrame(columns=cols)
    events = events[events["run_id"].isin(df["run_id"])] if not events.empty else events
    if not events.empty:
        events = _ordered(events)
        events = events.assign(execution=execution_mask(events))
    msgs = execution_messages(events)
    msgs = msgs[msgs["execution"].astype(bool)] if not msgs.empty else msgs
    per_run_msgs = msgs.groupby("run_id").size() if not msgs.empty else pd.Series(dtype=int)
    recorded = df.set_index("run_id")
    rows = []
    for model, group in df.groupby(df["model"].astype(str), sort=True):
        ids = list(dict.fromkeys(group["run_id"]))
        ev = events[events["run_id"].isin(ids)] if not events.empty else events
        by_run = dict(tuple(ev.groupby("run_id"))) if not ev.empty else {}
        steps = from_events = mismatch = 0
        for run_id in ids:
            budget = recorded.at[run_id, "actions_total"] if "actions_total" in recorded.columns else None
            if budget is not None and not pd.isna(budget):
                steps += int(budget)
            elif run_id in by_run:
                steps += _event_steps(by_run[run_id])
                from_events += 1
            sent = recorded.at[run_id, "messages_total"] if "messages_total" in recorded.columns else None
            if sent is not None and not pd.isna(sent) and int(sent) != int(per_run_msgs.get(run_id, 0)):
                mismatch += 1
        mine = msgs[msgs["run_id"].isin(ids)] if not msgs.empty else msgs
        n_msgs = len(mine)
        share = (lambda count: count / steps) if steps else (lambda count: np.nan)  # noqa: B023 - used in this iteration
        rows.append({"model": model, "runs": len(ids), "steps": steps, "messages": n_msgs,
                     "message_share": share(n_msgs),
                     **{f"{n}_share": share(int((mine["label"] == n).sum()) if n_msgs else 0) for n in LABELS},
                     "line_refs_per_message": float(mine["line_refs"].mean()) if n_msgs else np.nan,
                     "file_refs_per_message": float(mine["file_refs"].mean()) if n_msgs else np.nan,
                     "runs_with_repetition": int(mine.loc[mine["near_duplicate"].astype(bool), "run_id"].nunique())
                     if n_msgs else 0,
                     "runs_with_unanswered": int(mine.loc[mine["unanswered"].astype(bool), "run_id"].nunique())
                     if n_msgs else 0,
                     "runs_without_events": len(set(ids) - set(by_run)),
                     "steps_from_events": from_events, "message_mismatch": mismatch})
    return pd.DataFrame(rows, columns=cols)


def patterns(runs: pd.DataFrame, events: pd.DataFrame, features: int | None = 2) -> pd.DataFrame:
    """Appendix I: coop runs split by whether their naive merge conflicted, per model (and `all`):
    plan and question messages (non-exclusive labels) and their ratio, line and file references
    per run, and the share of runs whose first message (planning included) is a plan; then the
    conflict rate with and without such a first-turn plan (95% Wilson)."""
    cols = ["model", "group", "runs", "plan", "question", "plan_question_ratio", "line_refs_per_run",
            "file_refs_per_run", "first_message_plan_share", "conflict_rate", "ci_low", "ci_high"]
    df = cooper_runs(runs)
    if df.empty or "conflicts_naive" not in df.columns or events.empty:
        return pd.DataFrame(columns=cols)
    df = df[(df["cooper_setting"] == "coop") & ((df["n_features"] == features) if features else True)]
    df = df[pd.to_numeric(df["conflicts_naive"], errors="coerce").notna()]
    msgs = execution_messages(events[events["run_id"].isin(df["run_id"])])
    per_run = msgs.groupby("run_id").agg(plan=("is_plan", "sum"), question=("is_question", "sum"),
                                         line_refs=("line_refs", "sum"), file_refs=("file_refs", "sum"),
                                         first_plan=("is_plan", "first")) if not msgs.empty else pd.DataFrame()
    per_run = per_run.reindex(df["run_id"]).fillna({"plan": 0, "question": 0, "line_refs": 0, "file_refs": 0,
                                                    "first_plan": False})
    per_run["conflict"] = pd.to_numeric(df.set_index("run_id")["conflicts_naive"]).gt(0).to_numpy()
    per_run["model"] = df["model"].astype(str).to_numpy()
    rows = []
    for model in [*sorted(per_run["model"].unique()), "all"]:
        mine = per_run if model == "all" else per_run[per_run["model"] == model]
        split = [("conflict", mine[mine["conflict"]]), ("no conflict", mine[~mine["conflict"]]),
                 ("first message a plan", mine[mine["first_plan"].astype(bool)]),
                 ("first message not a plan", mine[~mine["first_plan"].astype(bool)])]
        for group, part in split:
            n = len(part)
            rate, low, high = wilson_rate(int(part["conflict"].sum()), n)
            plans, questions = int(part["plan"].sum()), int(part["question"].sum())
            rows.append({"model": model, "group": group, "runs": n, "plan": plans, "question": questions,
                         "plan_question_ratio": plans / questions if questions else np.nan,
                         "line_refs_per_run": part["line_refs"].mean() if n else np.nan,
                         "file_refs_per_run": part["file_refs"].mean() if n else np.nan,
                         "first_message_plan_share": part["first_plan"].astype(bool).mean() if n else np.nan,
                         "conflict_rate": rate, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=cols)
