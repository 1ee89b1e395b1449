"""Figure 5's rates from the appendix J judge: per judge model, prompt version and agent
model, the share of judged conversations whose verdict falls in each group
(unresponsiveness, hallucination, repetition; `any` = some category), with n and 95% Wilson.

Denominator: conversations with a valid verdict (status ok) of the report's usable coop runs.
Invalid verdicts (the judge's reply failed the checks), failed calls and runs without messages
are not in n; they are counted in their own columns so a reader sees what was left out.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from masgrid.families.cooper.analysis import cooper_runs
from masgrid.families.cooper.comm_judge import GROUPS
from masgrid.sdk.intervals import wilson_rate

DIR = "cooper_judgments"
COLUMNS = ["judge_model", "prompt_version", "model", "group", "n", "detected", "rate", "ci_low", "ci_high",
           "invalid", "failed", "no_messages"]


def load_judgments(results_dir: str | Path) -> pd.DataFrame:
    """Every judgment row under RESULTS_DIR/cooper_judgments (empty: the judge was not run)."""
    path = Path(results_dir) / DIR
    if not path.is_dir() or not any(path.glob("part-*.parquet")):
        return pd.DataFrame()
    return pd.read_parquet(path)


def judged_rates(runs: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per (judge model, prompt version, model, group); empty when nothing was judged."""
    if judgments.empty:
        return pd.DataFrame(columns=COLUMNS)
    used = cooper_runs(runs)
    if used.empty:
        return pd.DataFrame(columns=COLUMNS)
    j = judgments[judgments["run_id"].isin(used.loc[used["cooper_setting"] == "coop", "run_id"])]
    rows = []
    for (judge, prompt, model), part in j.groupby(["judge_model", "prompt_version", "model"], sort=True):
        ok = part[part["status"] == "ok"]
        left = {"invalid": int((part["status"] == "invalid").sum()), "failed": int((part["status"] == "failed").sum()),
                "no_messages": int((part["status"] == "skipped").sum())}
        for group in (*GROUPS, "any"):
            hits = ok["category"].notna() if group == "any" else ok["group"] == group
            k, n = int(hits.sum()), len(ok)
            rate, low, high = wilson_rate(k, n)
            rows.append({"judge_model": judge, "prompt_version": prompt, "model": model, "group": group, "n": n,
                         "detected": k, "rate": rate, "ci_low": low, "ci_high": high, **left})
    return pd.DataFrame(rows, columns=COLUMNS)


def judge_note(judgments: pd.DataFrame) -> str:
    """The sentence the report puts under the judged table (or instead of it)."""
    if judgments.empty:
        return ("LLM-judged communication errors (appendix J): not run for the coop runs of these results "
                "(`masgrid cooper judge RESULTS_DIR --base-url URL --served-name MODEL`); no rates are shown.")
    judges = ", ".join(f"{m} (prompt {p})" for m, p in
                       judgments[["judge_model", "prompt_version"]].drop_duplicates().itertuples(index=False))
    return (f"Judged by {judges}: share of coop conversations with a valid verdict in each group (one category at "
            "most per conversation; 95% Wilson). Invalid verdicts (unparseable, unknown category, fewer than two "
            "quotes, quotes not in the conversation), failed calls and runs without messages are outside n and "
            "counted in their columns. Compare with the rule-based proxies of the communication table.")
