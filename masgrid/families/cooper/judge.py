"""`masgrid cooper judge RESULTS_DIR`: the appendix J communication-error judge over coop runs.

Every usable CooperBench run with setting `coop` has its conversation rebuilt from its
events (families/cooper/comm_judge.py) and sent to a judge model through masgrid's own
backend client (the endpoint settings, retries and timeouts of `masgrid judge`).

Output: RESULTS_DIR/cooper_judgments/part-<id>.parquet, one row per (run, judge model,
prompt version). Status: `ok` (a checked verdict, possibly "no issue"), `invalid` (the judge
answered but the reply failed the checks; never a detection), `failed` (the call failed),
`skipped` (a run without messages: nothing to judge). A rerun keeps ok, invalid and skipped
rows of the same judge and prompt version and asks again only for failed ones; another judge
model or prompt version writes its own rows.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from masgrid.families.cooper import comm_judge as cj
from masgrid.sdk.judging import BackendSettings, ChatBackend, ask_judge, judge_each, judge_parser, judge_settings
from masgrid.sdk.results import write_table_atomic

OUT = "cooper_judgments"
COLUMNS: list[tuple[str, pa.DataType]] = [
    ("judgment_id", pa.string()), ("run_id", pa.string()), ("model", pa.string()), ("task", pa.string()),
    ("cooper_features", pa.string()), ("seed", pa.int64()),
    ("judge_model", pa.string()), ("prompt_version", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("category", pa.string()), ("group", pa.string()), ("description", pa.string()), ("evidence_json", pa.string()),
    ("n_messages", pa.int64()), ("conversation_capped", pa.bool_()), ("conversation_sha256", pa.string()),
    ("raw_reply", pa.string()), ("tokens_in", pa.int64()), ("tokens_out", pa.int64()), ("judged_at", pa.float64()),
]
SCHEMA = pa.schema(COLUMNS)
FINAL = ("ok", "invalid", "skipped")


def judgment_id(run_id: str, judge_model: str, prompt: str) -> str:
    return hashlib.sha256(json.dumps([run_id, judge_model, prompt]).encode()).hexdigest()[:16]


def _done(path: Path) -> bool:
    return path.exists() and pq.read_table(path, columns=["status"]).column("status")[0].as_py() in FINAL


def _write(out_dir: Path, row: dict[str, Any]) -> None:
    """One verdict's file, written as the recorder writes its tables (atomic, model text made storable)."""
    write_table_atomic(out_dir / f"part-{row['judgment_id']}.parquet", [row], SCHEMA)


class JudgeSummary(BaseModel):
    runs: int = 0
    judged: int = 0
    detections: int = 0
    invalid: int = 0
    failed: int = 0
    skipped: int = 0
    already: int = 0


async def judge_all(results_dir: Path, settings: BackendSettings, concurrency: int = 4) -> JudgeSummary:
    from masgrid.families.cooper.analysis import cooper_runs
    from masgrid.sdk.results import load_results

    loaded = load_results(results_dir)
    runs = cooper_runs(loaded.runs)
    if runs.empty:
        raise ValueError(f"no usable CooperBench runs under {results_dir}")
    runs = runs[runs["cooper_setting"] == "coop"]
    summary = JudgeSummary(runs=len(runs))
    out_dir, prompt, judge_model = results_dir / OUT, cj.prompt_version(), settings.request_model
    events = loaded.events
    by_run = dict(tuple(events[events["run_id"].isin(runs["run_id"])].groupby("run_id"))) if not events.empty else {}

    async def one(backend: ChatBackend, run: dict[str, Any]) -> None:
        jid = judgment_id(run["run_id"], judge_model, prompt)
        if _done(out_dir / f"part-{jid}.parquet"):
            summary.already += 1
            return
        messages, capped = cj.conversation(by_run.get(run["run_id"], events.iloc[0:0]))
        row: dict[str, Any] = {
            "judgment_id": jid, "run_id": run["run_id"], "model": str(run["model"]), "task": str(run["task"]),
            "cooper_features": str(run["cooper_features"]), "seed": int(run["seed"]) if "seed" in run else None,
            "judge_model": judge_model, "prompt_version": prompt, "n_messages": len(messages),
            "conversation_capped": capped,
            "conversation_sha256": hashlib.sha256(cj.render(messages).encode()).hexdigest()}
        if not messages:
            summary.skipped += 1
            why = "no messages in this run" if run["run_id"] in by_run else "no events recorded for this run"
            _write(out_dir, {**row, "status": "skipped", "error": why, "judged_at": time.time()})
            return
        # one call, no second try: a reply that fails the checks is recorded as invalid (never a detection)
        answer = await ask_judge(backend, cj.judge_messages(run["run_id"], messages),
                                 parse=lambda text: cj.parse_verdict(text, messages), malformed=cj.InvalidVerdict)
        row.update(tokens_in=answer.tokens_in, tokens_out=answer.tokens_out, raw_reply=answer.raw_reply,
                   judged_at=time.time())
        if answer.call_error is not None:
            summary.failed += 1
            row.update(status="failed", error=f"judge call failed: {answer.call_error}")
        elif answer.value is None:
            summary.invalid += 1
            row.update(status="invalid", error=answer.format_error)
        else:
            verdict = answer.value
            summary.judged += 1
            summary.detections += verdict.category is not None
            row.update(status="ok", category=verdict.category, group=verdict.group,
                       description=verdict.description, evidence_json=json.dumps(verdict.evidence))
        _write(out_dir, row)

    await judge_each(runs.to_dict("records"), settings, one, concurrency)
    return summary


def judge_command(args: list[str]) -> int:
    parser = judge_parser("masgrid cooper judge", "judge the conversations of CooperBench coop runs for "
                          "communication errors (appendix J)")
    parser.add_argument("--base-url", default=None, help="the judge's OpenAI-compatible endpoint (sets base_url)")
    parser.add_argument("--served-name", default=None, help="model id the requests name (sets served_name)")
    parser.add_argument("--concurrency", type=int, default=4, help="conversations judged at once")
    ns = parser.parse_args(args)
    sets = [*ns.set, *([f"base_url={ns.base_url}"] if ns.base_url else []),
            *([f"served_name={ns.served_name}"] if ns.served_name else [])]
    try:
        settings = judge_settings(ns.model, sets)
        s = asyncio.run(judge_all(ns.results_dir, settings, max(1, ns.concurrency)))
    except ValueError as exc:
        print(f"masgrid cooper judge: {exc}", file=sys.stderr)
        return 2
    print(f"cooper judge {settings.request_model} (prompt {cj.prompt_version()}): {s.runs} coop runs, {s.judged} judged "
          f"({s.detections} with an issue), {s.invalid} invalid verdicts, {s.failed} failed calls, {s.skipped} "
          f"without messages, {s.already} already judged -> {ns.results_dir / OUT}")
    return 1 if s.failed else 0
