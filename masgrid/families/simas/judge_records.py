"""The judgments table: RESULTS_DIR/judgments/part-<pair>.parquet, rows `simas_first`,
`cot_first` and `combined` per pair (one file per pair: a rerun skips or replaces it whole)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from masgrid.families.simas import judging
from masgrid.families.simas.judge_pairs import Pair
from masgrid.sdk.results import write_table_atomic

JUDGMENT_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("pair_id", pa.string()), ("order", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("model", pa.string()), ("task", pa.string()), ("question_id", pa.string()), ("seed", pa.int64()),
    ("agents", pa.int64()), ("discussion_rounds", pa.int64()),
    ("simas_run_id", pa.string()), ("cot_run_id", pa.string()),
    ("judge_model", pa.string()), ("prompt_hash", pa.string()),
    ("winner", pa.string()), ("simas_score", pa.float64()), ("cot_score", pa.float64()),
    ("n_criteria", pa.int64()), ("criteria_json", pa.string()), ("justification", pa.string()),
    ("attempts", pa.int64()), ("raw_reply", pa.string()), ("raw_first_reply", pa.string()),
    ("tokens_in", pa.int64()), ("tokens_out", pa.int64()), ("judged_at", pa.float64()),
]
SCHEMA = pa.schema(JUDGMENT_COLUMNS)



class OrderResult(BaseModel):
    verdict: judging.OrderVerdict | None = None
    error: str | None = None
    attempts: int = 0
    raw_reply: str | None = None
    raw_first_reply: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0


def rows_for(pair: Pair, pid: str, judge_model: str, prompt: str, results: dict[str, OrderResult] | None,
             skipped: str | None, n_criteria: int) -> list[dict[str, Any]]:
    base = {"pair_id": pid, "model": pair.model, "task": pair.task, "question_id": pair.question_id,
            "seed": pair.seed, "agents": pair.agents, "discussion_rounds": pair.discussion_rounds,
            "simas_run_id": pair.simas_run_id, "cot_run_id": pair.cot_run_id, "judge_model": judge_model,
            "prompt_hash": prompt, "n_criteria": n_criteria, "judged_at": time.time()}
    if results is None:
        return [{**base, "order": "combined", "status": "skipped", "error": skipped}]
    rows = []
    for order, r in results.items():
        v = r.verdict
        rows.append({**base, "order": order, "status": "ok" if v else "failed", "error": r.error,
                     "winner": v.winner if v else None, "simas_score": v.simas_score if v else None,
                     "cot_score": v.cot_score if v else None, "justification": v.justification if v else None,
                     "criteria_json": json.dumps({"simas": v.simas_criteria, "cot": v.cot_criteria}) if v else None,
                     "attempts": r.attempts, "raw_reply": r.raw_reply, "raw_first_reply": r.raw_first_reply,
                     "tokens_in": r.tokens_in, "tokens_out": r.tokens_out})
    verdicts = {o: r.verdict for o, r in results.items() if r.verdict}
    if len(verdicts) == len(results):  # every order gave a verdict
        both = judging.combine(*verdicts.values())
        rows.append({**base, "order": "combined", "status": "ok", "winner": both.winner,
                     "simas_score": both.simas_score, "cot_score": both.cot_score,
                     "justification": " | ".join(f"{o}: {v.justification}" for o, v in verdicts.items())})
    else:
        failed = [f"{o}: {r.error}" for o, r in results.items() if not r.verdict]
        rows.append({**base, "order": "combined", "status": "failed", "error": "; ".join(failed)})
    return rows


def write_part(out_dir: Path, pid: str, rows: list[dict[str, Any]]) -> None:
    """One pair's file, written as the recorder writes its tables (atomic, model text made storable)."""
    write_table_atomic(out_dir / f"part-{pid}.parquet", rows, SCHEMA)


def is_done(path: Path) -> bool:
    if not path.exists():
        return False
    rows = pq.read_table(path, columns=["order", "status"]).to_pylist()
    return any(r["order"] == "combined" and r["status"] in ("ok", "skipped") for r in rows)
