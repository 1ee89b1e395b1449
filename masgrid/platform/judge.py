"""`masgrid judge RESULTS_DIR`: the pairwise LLM judge of SIMAS generation questions (appendix C.2).

For every usable SIMAS run of `simas/open` or `simas/coding` under condition `base` (each n),
the CoT run (condition `cot`) of the same model, task, question, seed and data directory is
its partner; a judge model (any OpenAI-compatible endpoint, through masgrid's own backend
client with its retry and timeout policy) scores both final answers against the question's
criteria in both orders (envs/tasks/simas/judging.py says how a verdict is reached).

Output: RESULTS_DIR/judgments/part-<pair>.parquet, one file per (SIMAS run, CoT run, judge
model, judge prompt hash), rows `simas_first`, `cot_first` and `combined`. A rerun skips
pairs whose file holds a successful combined verdict; failed ones are judged again and the
file replaced. Pairs without a usable answer on either side are recorded as `skipped`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from pydantic import BaseModel, ValidationError

from masgrid.actors.backends.base import BackendSettings, ChatBackend, Completion
from masgrid.actors.backends.clients import ClientCache
from masgrid.actors.backends.openai_chat import http_backend
from masgrid.envs.tasks.simas import judging
from masgrid.envs.tasks.simas.datasets import GENERATION, Question, load_questions
from masgrid.envs.tokens import get_counter
from masgrid.resources import conf_dir

JUDGED_TASKS = tuple(f"simas/{d}" for d in GENERATION)
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


class Pair(BaseModel):
    model: str
    task: str
    question_id: str
    seed: int
    agents: int
    discussion_rounds: int | None
    simas_run_id: str
    cot_run_id: str
    data_dir: str | None
    simas_answer: str | None
    cot_answer: str | None


def judge_settings(preset: str | None, overrides: list[str]) -> BackendSettings:
    """The judge's endpoint: a conf/model preset, then `key=value` overrides (any BackendSettings field)."""
    data: dict[str, Any] = {}
    if preset:
        path = conf_dir() / "model" / f"{preset}.yaml"
        if not path.is_file():
            raise ValueError(f"judge: no model preset {preset!r} (expected {path})")
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"judge: --set takes key=value, got {item!r}")
        data[key.strip()] = yaml.safe_load(value)
    try:
        settings = BackendSettings(**data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"judge: model.{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if not settings.base_url:
        raise ValueError("judge: the judge needs an OpenAI-compatible endpoint: --model PRESET or --set base_url=URL")
    return settings


def _answer(raw: Any) -> str | None:
    """Agent 0's recorded submission as text; None when it gave none or it was unusable."""
    if raw is None or (isinstance(raw, float) and pd.isna(raw)):
        return None
    value = json.loads(raw)
    return value if isinstance(value, str) and value.strip() else None


def find_pairs(results_dir: Path, where: dict[str, str]) -> tuple[list[Pair], int]:
    """(pairs of SIMAS and CoT runs, SIMAS runs that have no CoT partner)."""
    from masgrid.analysis.load import load_results
    from masgrid.analysis.validity import usable

    res = load_results(results_dir)
    runs = res.runs
    if runs.empty:
        raise ValueError(f"judge: no runs recorded under {results_dir}")
    runs = usable(runs[runs["task"].isin(JUDGED_TASKS)])
    if runs.empty:
        return [], 0
    runs = runs.assign(data_dir=[json.loads(c).get("simas", {}).get("data_dir") for c in runs["config_json"]])
    simas = runs[runs["condition"] == "base"]
    for key, value in where.items():  # selects SIMAS runs; each one's CoT partner follows
        if key not in runs.columns:
            raise ValueError(f"judge: --where {key}: no such runs column")
        simas = simas[simas[key].astype(str) == value]
    first = res.agents[res.agents["agent"] == 0].set_index("run_id")["submission"]
    keys = ["model", "task", "question_id", "seed", "data_dir"]
    cot = {tuple(r[k] for k in keys): r for _, r in runs[runs["condition"] == "cot"].iterrows()}
    pairs, unpaired = [], 0
    for _, r in simas.sort_values(["task", "question_id", "seed", "agents"]).iterrows():
        partner = cot.get(tuple(r[k] for k in keys))
        if partner is None:
            unpaired += 1
            continue
        pairs.append(Pair(model=r["model"], task=r["task"], question_id=r["question_id"], seed=int(r["seed"]),
                          agents=int(r["agents"]), discussion_rounds=_int(r.get("discussion_rounds")),
                          simas_run_id=r["run_id"], cot_run_id=partner["run_id"], data_dir=r["data_dir"],
                          simas_answer=_answer(first.get(r["run_id"])), cot_answer=_answer(first.get(partner["run_id"]))))
    return pairs, unpaired


def _int(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def pair_id(pair: Pair, judge_model: str, prompt: str) -> str:
    blob = json.dumps([pair.simas_run_id, pair.cot_run_id, judge_model, prompt])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def question_of(pair: Pair) -> Question:
    dataset = pair.task.split("/", 1)[1]
    for q in load_questions(dataset, pair.data_dir):
        if q.id == pair.question_id:
            return q
    raise ValueError(f"judge: question {pair.question_id} is not in the {dataset} data of {pair.data_dir or 'conf/'}")


class OrderResult(BaseModel):
    verdict: judging.OrderVerdict | None = None
    error: str | None = None
    attempts: int = 0
    raw_reply: str | None = None
    raw_first_reply: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0


async def judge_order(backend: ChatBackend, question: Question, order: str, simas: str, cot: str) -> OrderResult:
    """One order: a call, one retry on a malformed reply, then a recorded failure."""
    a, b = (simas, cot) if order == "simas_first" else (cot, simas)
    messages = judging.judge_messages(question, a, b)
    out = OrderResult()
    for attempt in (1, 2):
        done: Completion = await backend.complete(messages)
        out.attempts, out.tokens_in, out.tokens_out = attempt, out.tokens_in + done.tokens_in, out.tokens_out + done.tokens_out
        if done.error is not None:
            out.error = f"judge call failed: {done.error}"
            return out
        out.raw_first_reply, out.raw_reply = (out.raw_reply, done.text) if attempt == 2 else (None, done.text)
        try:
            a_scores, b_scores, winner, why = judging.parse_reply(done.text, list(question.criteria or []))
        except judging.JudgeFormatError as exc:
            out.error = f"malformed judge reply: {exc}"
            messages = [*messages, {"role": "assistant", "content": done.text or ""}, judging.retry_message(str(exc))]
            continue
        out.error = None
        out.verdict = judging.verdict(order, a_scores, b_scores, winner, why)
        return out
    return out


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
    verdicts = [r.verdict for r in results.values()]
    if all(verdicts):
        both = judging.combine(*verdicts)  # type: ignore[arg-type]
        rows.append({**base, "order": "combined", "status": "ok", "winner": both.winner,
                     "simas_score": both.simas_score, "cot_score": both.cot_score,
                     "justification": " | ".join(f"{o}: {r.verdict.justification}" for o, r in results.items())})
    else:
        failed = [f"{o}: {r.error}" for o, r in results.items() if not r.verdict]
        rows.append({**base, "order": "combined", "status": "failed", "error": "; ".join(failed)})
    return rows


def _write(out_dir: Path, pid: str, rows: list[dict[str, Any]]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([{name: row.get(name) for name, _ in JUDGMENT_COLUMNS} for row in rows], schema=SCHEMA)
    tmp = out_dir / f".part-{pid}.parquet.tmp"
    pq.write_table(table, tmp)
    tmp.replace(out_dir / f"part-{pid}.parquet")


def _done(path: Path) -> bool:
    if not path.exists():
        return False
    rows = pq.read_table(path, columns=["order", "status"]).to_pylist()
    return any(r["order"] == "combined" and r["status"] in ("ok", "skipped") for r in rows)


class JudgeSummary(BaseModel):
    pairs: int = 0
    judged: int = 0
    failed: int = 0
    skipped: int = 0
    already: int = 0
    unpaired: int = 0


async def judge_all(results_dir: Path, settings: BackendSettings, where: dict[str, str], concurrency: int = 4
                    ) -> JudgeSummary:
    pairs, unpaired = find_pairs(results_dir, where)
    summary = JudgeSummary(pairs=len(pairs), unpaired=unpaired)
    out_dir = results_dir / "judgments"
    prompt, judge_model = judging.prompt_hash(), settings.request_model
    clients = ClientCache()
    backend = http_backend(settings, get_counter(), clients)
    gate = asyncio.Semaphore(concurrency)

    async def one(pair: Pair) -> None:
        pid = pair_id(pair, judge_model, prompt)
        if _done(out_dir / f"part-{pid}.parquet"):
            summary.already += 1
            return
        question = question_of(pair)
        missing = [m for m, a in (("simas", pair.simas_answer), ("cot", pair.cot_answer)) if a is None]
        if missing:
            summary.skipped += 1
            _write(out_dir, pid, rows_for(pair, pid, judge_model, prompt, None,
                                          f"no usable final answer from {' and '.join(missing)}", len(question.criteria or [])))
            return
        async with gate:
            orders = await asyncio.gather(*(judge_order(backend, question, o, pair.simas_answer, pair.cot_answer)
                                            for o in judging.ORDERS))  # type: ignore[arg-type]
        results = dict(zip(judging.ORDERS, orders))
        rows = rows_for(pair, pid, judge_model, prompt, results, None, len(question.criteria or []))
        if rows[-1]["status"] == "ok":
            summary.judged += 1
        else:
            summary.failed += 1
        _write(out_dir, pid, rows)

    try:
        await asyncio.gather(*(one(p) for p in pairs))
    finally:
        await backend.close()
        await clients.aclose()
    return summary


def judge_command(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="masgrid judge", description="judge SIMAS against CoT answers on the "
                                     "open-ended and coding questions (appendix C.2)")
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--model", default=None, help="judge model preset under conf/model (may differ from the agents')")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="judge model setting, e.g. base_url=http://127.0.0.1:8000/v1 served_name=... temperature=0")
    parser.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                        help="only SIMAS runs whose runs column equals VALUE (their CoT partners follow), "
                        "e.g. model=qwen task=simas/coding agents=4")
    parser.add_argument("--concurrency", type=int, default=4, help="pairs judged at once")
    ns = parser.parse_args(args)
    try:
        settings = judge_settings(ns.model, ns.set)
        where = dict(item.partition("=")[::2] for item in ns.where)
        summary = asyncio.run(judge_all(ns.results_dir, settings, where, max(1, ns.concurrency)))
    except ValueError as exc:
        print(f"masgrid judge: {exc}", file=sys.stderr)
        return 2
    print(f"judge {settings.request_model}: {summary.pairs} pairs, {summary.judged} judged, {summary.failed} judge "
          f"failures, {summary.skipped} skipped (no usable answer), {summary.already} already judged; "
          f"{summary.unpaired} SIMAS runs without a CoT partner -> {ns.results_dir / 'judgments'}")
    return 1 if summary.failed else 0
