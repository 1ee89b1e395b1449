"""`masgrid judge RESULTS_DIR`: the pairwise LLM judge of SIMAS generation questions (appendix C.2).

For every usable SIMAS run of `simas/open` or `simas/coding` under condition `base` (each n),
the CoT run (condition `cot`) of the same model, task, question, seed and data directory is
its partner; a judge model (any OpenAI-compatible endpoint, through masgrid's own backend
client with its retry and timeout policy) scores both final answers against the question's
criteria in both orders (families/simas/judging.py says how a verdict is reached).

Output: RESULTS_DIR/judgments/part-<pair>.parquet, one file per (SIMAS run, CoT run, judge
model, judge prompt hash), rows `simas_first`, `cot_first` and `combined`. A rerun skips
pairs whose file holds a successful combined verdict; failed ones are judged again and the
file replaced. Pairs without a usable answer on either side are recorded as `skipped`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from pydantic import BaseModel

from masgrid.families.simas import judging
from masgrid.families.simas.datasets import Question
from masgrid.families.simas.judge_pairs import Pair, find_pairs, pair_id, question_of
from masgrid.families.simas.judge_records import OrderResult, is_done, rows_for, write_part
from masgrid.sdk.judging import BackendSettings, ChatBackend, ask_judge, judge_each, judge_parser, judge_settings


async def judge_order(backend: ChatBackend, question: Question, order: str, simas: str, cot: str) -> OrderResult:
    """One order: a call, one retry on a malformed reply, then a recorded failure."""
    a, b = (simas, cot) if order == "simas_first" else (cot, simas)
    criteria = list(question.criteria or [])
    answer = await ask_judge(backend, judging.judge_messages(question, a, b),
                             parse=lambda text: judging.parse_reply(text, criteria), malformed=judging.JudgeFormatError,
                             attempts=2, retry_message=judging.retry_message)
    out = OrderResult(attempts=answer.attempts, tokens_in=answer.tokens_in, tokens_out=answer.tokens_out,
                      raw_reply=answer.raw_reply, raw_first_reply=answer.raw_first_reply)
    if answer.call_error is not None:
        out.error = f"judge call failed: {answer.call_error}"
    elif answer.value is None:
        out.error = f"malformed judge reply: {answer.format_error}"
    else:
        out.verdict = judging.verdict(order, *answer.value)
    return out


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

    async def one(backend: ChatBackend, pair: Pair) -> None:
        pid = pair_id(pair, judge_model, prompt)
        if is_done(out_dir / f"part-{pid}.parquet"):
            summary.already += 1
            return
        question = question_of(pair)
        missing = [m for m, a in (("simas", pair.simas_answer), ("cot", pair.cot_answer)) if a is None]
        if missing:
            summary.skipped += 1
            write_part(out_dir, pid, rows_for(pair, pid, judge_model, prompt, None,
                                          f"no usable final answer from {' and '.join(missing)}", len(question.criteria or [])))
            return
        orders = await asyncio.gather(*(judge_order(backend, question, o, str(pair.simas_answer), str(pair.cot_answer))
                                        for o in judging.ORDERS))
        rows = rows_for(pair, pid, judge_model, prompt, dict(zip(judging.ORDERS, orders)), None,
                        len(question.criteria or []))
        if rows[-1]["status"] == "ok":
            summary.judged += 1
        else:
            summary.failed += 1
        write_part(out_dir, pid, rows)

    await judge_each(pairs, settings, one, concurrency)
    return summary


def judge_command(args: list[str]) -> int:
    parser = judge_parser("masgrid judge", "judge SIMAS against CoT answers on the open-ended and coding questions "
                          "(appendix C.2)")
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
