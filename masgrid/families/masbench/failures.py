"""MAS-Bench failure-mode taxonomy (section 5.3) as rule-based labels over recorded runs.

The paper names five recurring failure modes and gives no operational rule; these are
ours (docs/analysis.md repeats them). They apply to failed sorting runs (a successful run
carries none; max and prefix sum have other answer structures) and look only at the
final phase's submissions (the `agents` table) and the `events` table. U is the sorted
union of all inputs (the concatenation of the agents' expected slices), K its slice size.
A label holds for a run when it holds for at least one agent whose submission is wrong
(convention misalignment: for a pair of agents). Labels are not exclusive.

- boundary mismatch: a wrong agent i submitted K consecutive elements of U, U[a:a+K],
  at an offset a != i*K: the agents sorted the union alike but placed the cut elsewhere;
- premature submission: a wrong agent submitted (final phase) before its information set
  covered every agent. Information sets follow families/silo/failures.py's rule (a
  received message, or a read of another agent's key, adds the sender's set as of the end
  of the previous round; transitive, an upper bound). Knowledge carries into phase 2 of a
  two-phase condition, since the agent's own phase-1 answer is in its rerun prompt;
- stale K-V read (protocol kv): a wrong agent had read a key in the final phase and, when
  it decided to submit (the end of the round before its submit), another agent had since
  overwritten or deleted that key with a different value, and the agent had not read it
  again (a text cut at execution.max_recorded_chars is known by its start only: two
  values differ when neither recorded start extends the other);
- value hallucination: a wrong agent submitted a value more often than U holds it (a
  value absent from every input), or, while its information set covered every agent,
  skipped an element of U lying between the smallest and largest value it submitted
  (dropped an element it had been told of);
- convention misalignment: two agents of the run worded their own outgoing messages
  (sends, broadcasts, K-V writes) in different partition conventions: one only by
  position (index, rank, slot, [a:b]), the other only by value (value ranges, pivots,
  thresholds). This one is a keyword estimate over free text and says so in its name in
  every table (`convention_misalignment` counts runs, `conventions` lists what each
  agent's wording matched).

`unsubmitted` (agents without a final submission, e.g. a deadlock at R_max) and
`wrong_agents` are reported alongside, not as labels.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from masgrid.sdk.information import information_at_submission
from masgrid.sdk.results import usable

MODES = ("boundary_mismatch", "premature_submission", "stale_kv_read", "value_hallucination",
         "convention_misalignment")
MODE_NAMES = {"boundary_mismatch": "Boundary mismatch", "premature_submission": "Premature submission",
              "stale_kv_read": "Stale K-V reads", "value_hallucination": "Value hallucination",
              "convention_misalignment": "Convention misalignment (wording estimate)"}
OUTGOING = {"send_message", "broadcast_message", "write_file"}
INDEX_WORDS = re.compile(
    r"\b(?:ind(?:ex|exes|ices)|positions?|ranks?|slots?|offsets?)\b|\[\s*\d+\s*:\s*\d+\s*\]", re.I)
VALUE_WORDS = re.compile(
    r"\bvalue[- ]?ranges?\b|\bvalues?\s+(?:from|between|below|above|under|over|up to|<=?|>=?)|"
    r"\b(?:pivots?|splitters?|thresholds?|cut-?offs?|buckets?)\b|\bbetween\s+-?\d+\s+and\s+-?\d+", re.I)


def _answer(value: Any) -> list[int] | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    parsed = json.loads(value) if isinstance(value, str) else value
    return [int(v) for v in parsed] if isinstance(parsed, list) else None


def is_shifted_window(answer: list[int], union: list[int], agent: int, k: int) -> bool:
    """The answer is U[a:a+K] for some a other than agent*K."""
    return any(union[a:a + k] == answer for a in range(0, len(union) - k + 1) if a != agent * k)


def hallucinated(answer: list[int], union: list[int], informed: bool) -> bool:
    """A value submitted more often than U holds it, or (when informed) an element of U
    between min and max of the answer that the answer lacks."""
    have, pool = Counter(answer), Counter(union)
    if any(count > pool[v] for v, count in have.items()):
        return True
    if not informed or not answer:
        return False
    low, high = min(answer), max(answer)
    inside = Counter(v for v in union if low <= v <= high)
    return any(have[v] < count for v, count in inside.items())


def _final_commands(events: pd.DataFrame) -> pd.DataFrame:
    commands = events[events["kind"] == "command"]
    if commands.empty:
        return commands
    return commands[commands["phase"] == commands["phase"].max()].sort_values("seq")


def submit_rounds(events: pd.DataFrame) -> dict[int, int]:
    """Agent -> round of its first successful submit_result in the final phase."""
    out: dict[int, int] = {}
    for row in _final_commands(events).itertuples(index=False):
        if row.verb == "submit_result" and row.ok and int(row.agent) not in out:
            out[int(row.agent)] = int(row.round)
    return out


def informed_at_submission(events: pd.DataFrame, n: int) -> dict[int, bool]:
    """Agent -> whether its information set covered all n agents at its final submission."""
    commands = events[events["kind"] == "command"]
    if commands.empty:
        return {}
    last = commands["phase"].max()
    earlier_submits = (commands["verb"] == "submit_result") & (commands["phase"] < last)
    info = information_at_submission(commands[~earlier_submits], n)
    return {agent: len(known) >= n for agent, known in info.items()}


def _key_and_value(text: str) -> tuple[str, str]:
    first, _, body = str(text).strip("\n").partition("\n")
    parts = first.split(None, 1)
    return (parts[1].strip() if len(parts) > 1 else ""), body


def _capped(row: Any, column: str) -> bool:
    value = getattr(row, column, None)
    return value is not None and not pd.isna(value)


def _differ(a: str | None, b: str | None, capped: bool) -> bool:
    """Whether two recorded values differ; a capped one is known only by its start."""
    if a is None or b is None or not capped:
        return a != b
    return not (a.startswith(b) or b.startswith(a))


def stale_reads(events: pd.DataFrame) -> dict[int, list[str]]:
    """Agent -> keys whose value it had read but another agent had changed by the time it
    decided to submit (final phase; see the module docstring)."""
    commands = _final_commands(events)
    decided = submit_rounds(events)
    out: dict[int, list[str]] = {}
    for agent, sub_round in decided.items():
        store: dict[str, tuple[str | None, int, bool]] = {}  # key -> (value or None if deleted, writer, capped)
        seen: dict[str, tuple[str, bool]] = {}
        for row in commands[commands["round"] < sub_round].itertuples(index=False):
            if not row.ok:
                continue
            if row.verb == "write_file":
                key, value = _key_and_value(row.text)
                store[key] = (value, int(row.agent), _capped(row, "text_chars"))
            elif row.verb == "delete_file":
                store[_key_and_value(row.text)[0]] = (None, int(row.agent), False)
            elif row.verb == "read_file" and int(row.agent) == agent:
                seen[_key_and_value(row.text)[0]] = (str(row.reply).removeprefix("content="),
                                                     _capped(row, "reply_chars"))
        stale = [key for key, (value, capped) in seen.items() if key in store and store[key][1] != agent
                 and _differ(store[key][0], value, capped or store[key][2])]
        if stale:
            out[agent] = sorted(stale)
    return out


def conventions(events: pd.DataFrame) -> dict[int, str]:
    """Agent -> 'index', 'value' or 'mixed' from the wording of its outgoing messages
    (agents whose messages match neither are left out)."""
    out: dict[int, str] = {}
    sent = events[(events["kind"] == "command") & events["verb"].isin(OUTGOING) & (events["ok"] == True)]  # noqa: E712
    for agent, rows in sent.groupby("agent"):
        text = "\n".join(str(t) for t in rows["text"] if isinstance(t, str))
        index, value = bool(INDEX_WORDS.search(text)), bool(VALUE_WORDS.search(text))
        if index or value:
            out[int(agent)] = "mixed" if index and value else "index" if index else "value"
    return out


def label_run(run: pd.Series, agents: pd.DataFrame, events: pd.DataFrame) -> dict[str, Any]:
    """The five labels of one run plus what they were decided on."""
    n = int(run["agents"])
    ag = agents.sort_values("agent")
    expected = [_answer(v) or [] for v in ag["expected"]]
    union = sorted(v for e in expected for v in e)
    k = len(expected[0]) if expected else int(run["k"])
    answers = {int(a): _answer(s) for a, s in zip(ag["agent"], ag["submission"])}
    wrong = {a: s for a, s in answers.items() if s is not None and s != expected[a]}  # agent -> its wrong answer
    failed = not bool(run["success"])
    informed = informed_at_submission(events, n) if not events.empty else {}
    stale = stale_reads(events) if run["protocol"] == "kv" and not events.empty else {}
    style = conventions(events) if not events.empty else {}
    return {
        "boundary_mismatch": failed and any(is_shifted_window(s, union, a, k) for a, s in wrong.items()),
        "premature_submission": failed and n > 1 and any(informed.get(a) is False for a in wrong),
        "stale_kv_read": failed and any(a in stale for a in wrong),
        "value_hallucination": failed and any(hallucinated(s, union, informed.get(a) is True)
                                              for a, s in wrong.items()),
        "convention_misalignment": failed and {"index", "value"} <= set(style.values()),
        "wrong_agents": len(wrong),
        "unsubmitted": sum(s is None for s in answers.values()),
        "conventions": json.dumps({str(a): s for a, s in sorted(style.items())}),
        "stale_keys": json.dumps({str(a): keys for a, keys in sorted(stale.items())}),
    }


def label_runs(runs: pd.DataFrame, agents: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """One row per usable sorting run: identifying columns, success, the five labels."""
    ok = usable(runs)
    ok = ok[ok["task"] == "sorting"] if not ok.empty else ok
    by_agents = dict(tuple(agents.groupby("run_id"))) if not agents.empty else {}
    by_events = dict(tuple(events.groupby("run_id"))) if not events.empty else {}
    rows = []
    for _, run in ok.iterrows():
        ag = by_agents.get(run["run_id"])
        if ag is None:
            raise ValueError(f"run {run['run_id']}: no rows in the agents table; cannot label its failures")
        ev = by_events.get(run["run_id"], pd.DataFrame(columns=["kind", "phase", "round", "seq", "agent"]))
        rows.append({"run_id": run["run_id"], "model": run["model"], "condition": run["condition"],
                     "protocol": run["protocol"], "agents": int(run["agents"]), "k": int(run["k"]),
                     "success": bool(run["success"]), **label_run(run, ag, ev)})
    return pd.DataFrame(rows, columns=["run_id", "model", "condition", "protocol", "agents", "k", "success",
                                       *MODES, "wrong_agents", "unsubmitted", "conventions", "stale_keys"])


def failure_frequency(labels: pd.DataFrame, by: Sequence[str] = ("model", "condition", "protocol")) -> pd.DataFrame:
    """Per group: runs, failed runs, and for each mode the failed runs it labels (count and %
    of failed runs), plus failed runs with no label."""
    keys = list(by)
    if labels.empty:
        return pd.DataFrame()
    rows = {}
    for key, group in labels.groupby(keys):
        failed = group[~group["success"]]
        row: dict[str, Any] = {"runs": len(group), "failed": len(failed)}
        for mode in MODES:
            count = int(failed[mode].sum())
            row[MODE_NAMES[mode]] = count
            row[f"{MODE_NAMES[mode]} %"] = 100.0 * count / len(failed) if len(failed) else np.nan
        row["unlabelled"] = int((~failed[list(MODES)].any(axis=1)).sum())
        rows[key] = row
    out = pd.DataFrame.from_dict(rows, orient="index")
    if not out.empty:
        out.index = pd.MultiIndex.from_tuples(out.index, names=keys) if len(keys) > 1 else out.index.rename(keys[0])
    return out
