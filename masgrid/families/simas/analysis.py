"""SIMAS analysis: accuracy against the number of agents, n*, Definition 4, tokens, Table 4.

Conventions (docs/tasks/simas.md):
- A run answers one question; a *cell* is (model, task, subject, condition, T, setting, n),
  where `setting` names every other recorded choice that can change a run's answer and
  differs between the runs analysed (sampling, backend, the `simas` options but the
  question index, subject and T; `settings_of`), so no table pools runs made under
  different ones. Within a
  cell, each repeat (`seed`) has an accuracy: the mean over its questions. The cell's
  accuracy is the mean of the repeats' accuracies and its spread the population standard
  deviation across repeats (ddof = 0: the paper's reported spreads, e.g. 9.61% and 17.32%,
  are population deviations of three 17-question accuracies). Next to it, `se` is the
  standard error of that mean (sample SD, ddof = 1, over sqrt(repeats); NaN with one
  repeat): the figures' error bars, since the population SD is a spread, not an uncertainty.
- n* is the n of the highest mean accuracy (the smallest such n on a tie).
- Definition 4: a cell family is sufficiently driven when at least two distinct n >= 2
  reach an accuracy at least that of n = 1 (undefined without an n = 1 cell).
  Both compare accuracies as exact fractions (`exact_accuracy`), never as floats: two cells
  with the same accuracy reached differently (e.g. repeats at 1, 1, 1 and at 0, 0, 3 of 17
  correct) must tie, and their float means can differ in the last bit.
- Table 4: accuracy and std of the ALL mode (`base`) minus each ablation, averaged over
  the n both have, with the paper's arrows: up-up / down-down beyond 5 points, a flat
  arrow within 2, a single arrow in between. One row per cell family without the
  condition: runs of different T or settings are never averaged into one difference.
- Judge (section 5, appendix C.2; `masgrid judge`): win rate and mean score of SIMAS
  against CoT per (judge, model, task, n), from RESULTS_DIR/judgments.
Every table uses analysis/usable_runs.py's usable runs and repeats which were left out.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from masgrid.sdk.results import usable

FAMILY = ("model", "task", "subject", "condition", "discussion_rounds", "setting")
ABLATIONS = {"no_belief": "Belief", "no_personality": "Personality", "no_expertise": "Expertise"}
#: run columns outside FAMILY whose value can change a run's answer (sampling as sent, backend)
SETTING_COLUMNS = ("backend", "temperature", "top_p", "max_tokens", "sampling_seed")
#: `simas` options that are no setting: the question index (which question of the cell's sample),
#: and the subject and T, which FAMILY holds already
NOT_SETTINGS = ("question", "subject", "rounds")
#: options that do not apply to the CoT baseline (one agent, no profiles, no discussion)
NOT_COT = ("simas.profiles", "simas.answer_from", "simas.sim_conformity")


def _simas_options(config_json: object) -> dict[str, object]:
    if not isinstance(config_json, str):
        return {}
    try:
        block = json.loads(config_json).get("simas") or {}
    except (ValueError, AttributeError):
        return {}
    return {f"simas.{k}": v for k, v in block.items() if k not in NOT_SETTINGS} if isinstance(block, dict) else {}


def settings_of(runs: pd.DataFrame) -> pd.Series:
    """Per run, the settings outside FAMILY that can change its answer and vary among
    `runs`, as "key=value; ..." ("" where all runs share them): the sampling columns and
    the `simas` options of config_json but those in NOT_SETTINGS (and, for CoT runs, those
    in NOT_COT)."""
    if runs.empty:
        return pd.Series([], index=runs.index, dtype=object)
    values: dict[str, list[object]] = {}
    for column in SETTING_COLUMNS:
        if column in runs:
            values[column] = [None if pd.isna(v) else v for v in runs[column]]
    options = [_simas_options(c) for c in runs["config_json"]] if "config_json" in runs else [{}] * len(runs)
    for key in sorted({k for o in options for k in o}):
        values[key] = [json.dumps(o.get(key), sort_keys=True) if isinstance(o.get(key), (dict, list)) else o.get(key)
                       for o in options]
    cot = (runs["condition"] == "cot").to_list() if "condition" in runs else [False] * len(runs)
    # a CoT run neither varies nor is labelled in an option that does not apply to it
    varying = [k for k, v in values.items()
               if len({repr(x) for x, c in zip(v, cot) if not (c and k in NOT_COT)}) > 1]
    labels = ["; ".join(f"{k}={values[k][i]}" for k in varying if not (cot[i] and k in NOT_COT))
              for i in range(len(runs))]
    return pd.Series(labels, index=runs.index, dtype=object)


def simas_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Usable SIMAS runs (task simas/<dataset>)."""
    if runs.empty or "task" not in runs:
        return runs.iloc[0:0]
    out = runs[runs["task"].astype(str).str.startswith("simas/")]
    out = usable(out) if not out.empty else out
    return out.assign(setting=settings_of(out)) if "setting" not in out else out


def repeat_accuracy(runs: pd.DataFrame) -> pd.DataFrame:
    """Per (cell, repeat): accuracy over the questions (a float, and `accuracy_exact`, the
    same mean as a Fraction of the runs' exact values), questions answered, tokens per question."""
    df = simas_runs(runs)
    if "accuracy" in df:  # generation questions (simas/open, simas/coding) have no accuracy: judge_table
        df = df[df["accuracy"].notna()]
    keys = [*FAMILY, "agents", "seed"]
    grouped = df.groupby(keys, dropna=False)
    out = grouped.agg(accuracy=("accuracy", "mean"), questions=("question_id", "nunique"),
                      tokens_per_question=("tokens_total", "mean"),
                      unparsable=("answer_unparsable", "sum")).reset_index()
    exact = grouped["accuracy"].agg(_exact_mean).reset_index(drop=True) if len(df) else pd.Series([], dtype=object)
    return out.assign(accuracy_exact=exact.to_numpy() if len(out) else [])


def _exact_mean(values: pd.Series) -> Fraction:
    """The mean as a Fraction: every float is a binary fraction, so this is exact."""
    return sum((Fraction(float(v)) for v in values), Fraction(0)) / len(values)


def exact_accuracy(runs: pd.DataFrame) -> pd.Series:
    """Per cell (FAMILY + agents): the mean over repeats of each repeat's accuracy, as an
    exact Fraction in [0, 1] (accuracy_table's `accuracy` is the same number x 100, rounded)."""
    per = repeat_accuracy(runs)
    if per.empty:
        return pd.Series([], dtype=object)
    return per.groupby([*FAMILY, "agents"], dropna=False)["accuracy_exact"].agg(
        lambda s: sum(s, Fraction(0)) / len(s))


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
    """Per cell family: n*, its accuracy, A(1), and Definition 4 (sufficiently driven),
    decided on exact fractions (`exact_accuracy`); the accuracies are reported in %."""
    exact = exact_accuracy(runs)
    columns = [*FAMILY, "n_star", "accuracy_at_n_star", "accuracy_n1", "sufficiently_driven", "ns"]
    if exact.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for family, group in exact.groupby(level=list(FAMILY), dropna=False):
        acc: dict[int, Fraction] = {int(n): a for n, a in group.droplevel(list(FAMILY)).items()}
        best = max(acc.values())
        n_star = min(n for n, a in acc.items() if a == best)
        single = acc.get(1)
        driven: object = None if single is None else sum(1 for n, a in acc.items() if n >= 2 and a >= single) >= 2
        rows.append({**dict(zip(FAMILY, family)), "n_star": n_star, "accuracy_at_n_star": float(100 * best),
                     "accuracy_n1": float(100 * single) if single is not None else np.nan,
                     "sufficiently_driven": driven, "ns": ",".join(map(str, sorted(acc)))})
    return pd.DataFrame(rows, columns=columns)


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
    """Table 4: per cell family without its condition (subject, model, task, T and setting),
    ALL minus each ablation in accuracy and std (points), averaged over the n in `ns` that
    both conditions recorded, with arrows. Runs of different T or settings are separate rows."""
    table = accuracy_table(runs).reset_index()
    table = table[table["agents"].isin(ns)]
    keys = [k for k in FAMILY if k != "condition"]
    rows = []
    for family, group in table.groupby(keys, dropna=False):
        base = group[group["condition"] == "base"].set_index("agents")
        row: dict[str, object] = dict(zip(keys, family))
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
    """Section 5 / Figure 6: CoT accuracy next to each n's SIMAS accuracy, one row per model,
    task, subject, T and setting (never pooled). A row's CoT is the CoT cell of its model,
    task and subject: the only one, or the one of the same setting label; else empty."""
    table = accuracy_table(runs).reset_index()
    if table.empty:
        return table
    keys = ["model", "task", "subject"]
    cot: dict[tuple, list[tuple[str, float]]] = {}
    for r in table[table["condition"] == "cot"].itertuples(index=False):
        cot.setdefault((r.model, r.task, r.subject), []).append((r.setting, r.accuracy))
    simas = table[table["condition"] == "base"]
    out = simas.pivot_table(index=[*keys, "discussion_rounds", "setting"], columns="agents", values="accuracy")
    out.columns = [f"SIMAS n={int(c)}" for c in out.columns]

    def partner(index: tuple) -> float:
        cells = cot.get(tuple(index[:3]), [])
        same = [a for s, a in cells if s == index[4]]
        return cells[0][1] if len(cells) == 1 else same[0] if len(same) == 1 else np.nan

    out.insert(0, "CoT", [partner(i) for i in out.index])
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
        rate = (lambda k: 100.0 * k / judged) if judged else (lambda k: np.nan)  # noqa: B023 - used in this iteration
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
