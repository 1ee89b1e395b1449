"""SIMAS analysis: accuracy against the number of agents, n*, Definition 4, tokens, Table 4.

Conventions (docs/tasks/simas.md):
- A run answers one question; a *cell* is (model, task, subject, condition, T, n). Within a
  cell, each repeat (`seed`) has an accuracy: the mean over its questions. The cell's
  accuracy is the mean of the repeats' accuracies and its spread the population standard
  deviation across repeats (ddof = 0: the paper's reported spreads, e.g. 9.61% and 17.32%,
  are population deviations of three 17-question accuracies). Next to it, `se` is the
  standard error of that mean (sample SD, ddof = 1, over sqrt(repeats); NaN with one
  repeat): the figures' error bars, since the population SD is a spread, not an uncertainty.
- n* is the n of the highest mean accuracy (the smallest such n on a tie).
- Definition 4: a cell family is sufficiently driven when at least two distinct n >= 2
  reach an accuracy at least that of n = 1 (undefined without an n = 1 cell).
- Table 4: accuracy and std of the ALL mode (`base`) minus each ablation, averaged over
  the n both have, with the paper's arrows: up-up / down-down beyond 5 points, a flat
  arrow within 2, a single arrow in between.
- Judge (section 5, appendix C.2; `masgrid judge`): win rate and mean score of SIMAS
  against CoT per (judge, model, task, n), from RESULTS_DIR/judgments.
Every table uses analysis/validity.py's usable runs and repeats which were left out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from masgrid.analysis.validity import usable

FAMILY = ("model", "task", "subject", "condition", "discussion_rounds")
ABLATIONS = {"no_belief": "Belief", "no_personality": "Personality", "no_expertise": "Expertise"}


def simas_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Usable SIMAS runs (task simas/<dataset>)."""
    if runs.empty or "task" not in runs:
        return runs.iloc[0:0]
    out = runs[runs["task"].astype(str).str.startswith("simas/")]
    return usable(out) if not out.empty else out


def repeat_accuracy(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (cell, repeat): accuracy over the questions, questions answered, tokens per question."""
    df = simas_runs(runs)
    if "accuracy" in df:  # generation questions (simas/open, simas/coding) have no accuracy: judge_table
        df = df[df["accuracy"].notna()]
    keys = [*FAMILY, "agents", "seed"]
    grouped = df.groupby(keys, dropna=False)
    return grouped.agg(accuracy=("accuracy", "mean"), questions=("question_id", "nunique"),
                       tokens_per_question=("tokens_total", "mean"),
                       unparsable=("answer_unparsable", "sum")).reset_index()


def accuracy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell: mean accuracy (%) over repeats, its population std (%) and standard error
    (%), repeats, questions per repeat, tokens per question and unparsable final answers."""
    per = repeat_accuracy(runs)
    if per.empty:  # keyed like a full table, so the tables built on it come out empty too
        cols = ["accuracy", "std", "se", "repeats", "questions", "tokens_per_question", "unparsable"]
        return pd.DataFrame(columns=[*FAMILY, "agents", *cols]).set_index([*FAMILY, "agents"])
    out = per.groupby([*FAMILY, "agents"], dropna=False).agg(
        accuracy=("accuracy", lambda s: 100.0 * s.mean()), std=("accuracy", lambda s: 100.0 * float(np.std(s))),
        se=("accuracy", lambda s: 100.0 * float(np.std(s, ddof=1)) / np.sqrt(len(s)) if len(s) > 1 else np.nan),
        repeats=("seed", "nunique"), questions=("questions", "min"),
        tokens_per_question=("tokens_per_question", "mean"), unparsable=("unparsable", "sum"))
    return out


def optimum(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell family: n*, its accuracy, A(1), and Definition 4 (sufficiently driven)."""
    table = accuracy_table(runs)
    rows = []
    for family, group in table.groupby(list(FAMILY), dropna=False):
        acc = group.droplevel(list(FAMILY))["accuracy"]
        best = acc.max()
        n_star = int(min(n for n, a in acc.items() if a == best))
        single = acc.get(1, np.nan)
        if np.isnan(single):
            driven: object = None
        else:
            driven = sum(1 for n, a in acc.items() if n >= 2 and a >= single) >= 2
        rows.append({**dict(zip(FAMILY, family)), "n_star": n_star, "accuracy_at_n_star": best,
                     "accuracy_n1": single, "sufficiently_driven": driven, "ns": ",".join(map(str, acc.index))})
    return pd.DataFrame(rows)


def arrow(diff: float) -> str:
    """The paper's Table 4 symbols: beyond 5 points a double arrow, within 2 a flat one."""
    if np.isnan(diff):
        return ""
    if abs(diff) < 2:
        return "→"
    if diff > 5:
        return "↑↑"
    if diff < -5:
        return "↓↓"
    return "↑" if diff > 0 else "↓"


def ablation_table(runs: pd.DataFrame, ns: tuple[int, ...] = (2, 4, 6, 8)) -> pd.DataFrame:
    """Table 4: per (subject, model), ALL minus each ablation in accuracy and std (points),
    averaged over the n in `ns` that both conditions recorded, with arrows."""
    table = accuracy_table(runs).reset_index()
    table = table[table["agents"].isin(ns)]
    rows = []
    for (subject, model, task), group in table.groupby(["subject", "model", "task"], dropna=False):
        base = group[group["condition"] == "base"].set_index("agents")
        row: dict[str, object] = {"subject": subject, "model": model, "task": task}
        for condition, label in ABLATIONS.items():
            other = group[group["condition"] == condition].set_index("agents")
            common = base.index.intersection(other.index)
            d_acc = float((base.loc[common, "accuracy"] - other.loc[common, "accuracy"]).mean()) if len(common) else np.nan
            d_std = float((base.loc[common, "std"] - other.loc[common, "std"]).mean()) if len(common) else np.nan
            row[f"acc {label}"] = f"{d_acc:+.2f} {arrow(d_acc)}" if not np.isnan(d_acc) else ""
            row[f"std {label}"] = f"{d_std:+.2f} {arrow(d_std)}" if not np.isnan(d_std) else ""
            row[f"n {label}"] = len(common)
        rows.append(row)
    return pd.DataFrame(rows)


def cot_comparison(runs: pd.DataFrame) -> pd.DataFrame:
    """Section 5 / Figure 6: CoT accuracy next to each n's SIMAS accuracy, per model and task."""
    table = accuracy_table(runs).reset_index()
    if table.empty:
        return table
    cot = table[table["condition"] == "cot"].set_index(["model", "task", "subject"])["accuracy"]
    simas = table[table["condition"] == "base"]
    out = simas.pivot_table(index=["model", "task", "subject"], columns="agents", values="accuracy")
    out.columns = [f"SIMAS n={int(c)}" for c in out.columns]
    out.insert(0, "CoT", cot.reindex(out.index))
    return out


#: the judge's table keys (Figure 7, 13c-d): one row per judge, model, task, T and n
JUDGE_KEYS = ["judge_model", "prompt_hash", "model", "task", "discussion_rounds", "agents"]


def load_judgments(results_dir: str | Path) -> pd.DataFrame:
    """RESULTS_DIR/judgments/*.parquet (written by `masgrid judge`); empty when none."""
    files = sorted((Path(results_dir) / "judgments").glob("part-*.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True) if files else pd.DataFrame()


def judge_table(judgments: pd.DataFrame) -> pd.DataFrame:
    """Win rate and average score of SIMAS against CoT per (judge, model, task, T, n).

    Win rates are percentages of the pairs judged (both orders usable); a win needs both
    orders to agree, so `ties` include the order disagreements, counted on their own as
    well. Scores are the mean criterion-score totals over the judged pairs, with their standard
    error (sample SD / sqrt(judged); NaN below two pairs) in `*_score_se`. Judge failures
    and skipped pairs (no usable answer) are counted, never scored."""
    cols = ["pairs", "judged", "judge_failures", "skipped", "simas_wins", "cot_wins", "ties", "order_disagreements",
            "simas_win_rate", "cot_win_rate", "simas_score", "cot_score", "simas_score_se", "cot_score_se"]
    if judgments.empty:
        return pd.DataFrame(columns=cols)
    orders = judgments[judgments["order"] != "combined"]
    named = orders.pivot_table(index="pair_id", columns="order", values="winner", aggfunc="first")
    split = named.apply(lambda r: r.notna().all() and r.nunique() > 1, axis=1) if not named.empty else pd.Series(dtype=bool)
    combined = judgments[judgments["order"] == "combined"].copy()
    combined["disagree"] = combined["pair_id"].map(split).eq(True)  # unmatched pairs: no disagreement
    rows = []
    for key, g in combined.groupby(JUDGE_KEYS, dropna=False):
        ok = g[g["status"] == "ok"]
        judged = len(ok)
        wins = {m: int((ok["winner"] == m).sum()) for m in ("simas", "cot", "tie")}
        rate = (lambda k: 100.0 * k / judged) if judged else (lambda k: np.nan)
        rows.append({**dict(zip(JUDGE_KEYS, key)), "pairs": len(g), "judged": judged,
                     "judge_failures": int((g["status"] == "failed").sum()),
                     "skipped": int((g["status"] == "skipped").sum()), "simas_wins": wins["simas"],
                     "cot_wins": wins["cot"], "ties": wins["tie"], "order_disagreements": int(ok["disagree"].sum()),
                     "simas_win_rate": rate(wins["simas"]), "cot_win_rate": rate(wins["cot"]),
                     "simas_score": ok["simas_score"].mean() if judged else np.nan,
                     "cot_score": ok["cot_score"].mean() if judged else np.nan,
                     "simas_score_se": ok["simas_score"].sem(ddof=1) if judged > 1 else np.nan,
                     "cot_score_se": ok["cot_score"].sem(ddof=1) if judged > 1 else np.nan})
    return pd.DataFrame(rows).set_index(JUDGE_KEYS)


def judge_note(judgments: pd.DataFrame) -> str:
    """One sentence: pairs judged, judge failures and skipped pairs (never scored)."""
    if judgments.empty:
        return "No judgments (run `masgrid judge RESULTS_DIR` on simas/open and simas/coding runs)."
    combined = judgments[judgments["order"] == "combined"]
    counts = combined["status"].value_counts()
    return (f"Judged pairs: {int(counts.get('ok', 0))} of {len(combined)}; {int(counts.get('failed', 0))} judge "
            f"failures and {int(counts.get('skipped', 0))} without a usable answer are not scored.")
