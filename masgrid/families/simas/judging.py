"""The pairwise judge of SIMAS generation questions (appendix C.2), as pure functions.

A judge model scores two answers to one question on each of the question's criteria
(integers 1-10) and names the better one. Our protocol, and where it departs from the paper:
- blind: the prompt says "Answer A" and "Answer B", never which method wrote which (the
  paper's prompt names the methods; naming them invites a bias for or against "multi-agent");
- both orders: every pair is judged with SIMAS first and with CoT first; a method wins
  only if both orders name it, anything else is a tie; scores are averaged over the orders;
- a reply must be one JSON object with every criterion scored for both answers; a
  malformed reply gets one retry and then is a recorded failure, never a guessed score;
- an answer's score is the sum of its criterion scores (the paper reports totals, e.g.
  43.6 against 42.3 on coding), recomputed here rather than taken from the judge.
"""

from __future__ import annotations

import hashlib
import json
import re
from string import Template
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from masgrid.families.simas.datasets import Question
from masgrid.sdk.resources import conf_cached, read_text

Method = Literal["simas", "cot", "tie"]
ORDERS = ("simas_first", "cot_first")


class JudgeFormatError(ValueError):
    """A judge reply that is not the JSON asked for; the message goes into the retry prompt."""


class CriterionScore(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score: StrictInt = Field(ge=1, le=10)
    reason: str = ""


class JudgeReply(BaseModel):
    """The judge's reply for one order (A = the answer shown first)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    a: dict[str, CriterionScore] = Field(alias="A")
    b: dict[str, CriterionScore] = Field(alias="B")
    winner: Literal["A", "B", "tie"]
    justification: str = Field(min_length=1)


class OrderVerdict(BaseModel):
    """One order's judgment, mapped back from A/B to the methods."""

    winner: Method
    simas_score: float
    cot_score: float
    simas_criteria: dict[str, int]
    cot_criteria: dict[str, int]
    justification: str


class Combined(BaseModel):
    winner: Method
    simas_score: float
    cot_score: float


@conf_cached(maxsize=1)
def texts() -> dict[str, str]:
    import yaml

    return yaml.safe_load(read_text("prompts/simas/judge.yaml"))


def prompt_hash() -> str:
    """Identifies the judge prompt: a rerun skips pairs judged with the same hash and judge."""
    data = texts()
    blob = json.dumps({k: data[k] for k in sorted(data)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def problem_text(question: Question) -> str:
    lines = [question.text]
    if question.language:
        lines.append(f"Programming language: {question.language}")
    if question.constraints:
        lines.append("Constraints: " + "; ".join(question.constraints))
    return "\n".join(lines)


def _schema(criteria: list[str]) -> str:
    per = {c: {"score": "<1-10>", "reason": "..."} for c in criteria}
    return json.dumps({"A": per, "B": per, "winner": "A | B | tie", "justification": "..."}, indent=1)


def judge_messages(question: Question, answer_a: str, answer_b: str) -> list[dict[str, str]]:
    criteria = list(question.criteria or [])
    user = Template(texts()["user"]).safe_substitute(
        problem=problem_text(question), answer_a=answer_a, answer_b=answer_b,
        criteria="\n".join(f"- {c}" for c in criteria), schema=_schema(criteria))
    return [{"role": "system", "content": texts()["system"].strip()}, {"role": "user", "content": user.strip()}]


def retry_message(problem: str) -> dict[str, str]:
    return {"role": "user", "content": Template(texts()["retry"]).safe_substitute(problem_found=problem).strip()}


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def _json_object(text: str | None) -> dict:
    """The reply's JSON object: the whole reply, or inside one ```json fence (nothing else is guessed)."""
    if not text or not text.strip():
        raise JudgeFormatError("the reply was empty")
    body = _FENCE.sub("", text.strip())
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise JudgeFormatError(f"the reply is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(data, dict):
        raise JudgeFormatError("the reply is JSON but not an object")
    return data


def _scores(side: dict[str, CriterionScore], criteria: list[str], label: str) -> dict[str, int]:
    given = {k.strip().casefold(): v.score for k, v in side.items()}
    missing = [c for c in criteria if c.strip().casefold() not in given]
    extra = sorted(set(given) - {c.strip().casefold() for c in criteria})
    if missing or extra:
        parts = ([f"no score for {', '.join(missing)}"] if missing else []) + \
                ([f"unknown criteria {', '.join(extra)}"] if extra else [])
        raise JudgeFormatError(f"answer {label}: " + "; ".join(parts))
    return {c: given[c.strip().casefold()] for c in criteria}


def parse_reply(text: str | None, criteria: list[str]) -> tuple[dict[str, int], dict[str, int], str, str]:
    """(A's scores, B's scores, winner A|B|tie, justification); JudgeFormatError if unusable."""
    data = _json_object(text)
    try:
        reply = JudgeReply.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        raise JudgeFormatError(f"{where}: {first['msg']}") from None
    return _scores(reply.a, criteria, "A"), _scores(reply.b, criteria, "B"), reply.winner, reply.justification


def verdict(order: str, a: dict[str, int], b: dict[str, int], winner: str, justification: str) -> OrderVerdict:
    """Map A/B of one order back to the methods."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}")
    simas, cot = (a, b) if order == "simas_first" else (b, a)
    first, second = ("simas", "cot") if order == "simas_first" else ("cot", "simas")
    named: Method = "tie" if winner == "tie" else first if winner == "A" else second  # type: ignore[assignment]
    return OrderVerdict(winner=named, simas_score=float(sum(simas.values())), cot_score=float(sum(cot.values())),
                        simas_criteria=simas, cot_criteria=cot, justification=justification)


def combine(first: OrderVerdict, second: OrderVerdict) -> Combined:
    """Position-bias control: a win needs both orders to agree; scores are the orders' mean."""
    winner: Method = first.winner if first.winner == second.winner else "tie"
    return Combined(winner=winner, simas_score=(first.simas_score + second.simas_score) / 2,
                    cot_score=(first.cot_score + second.cot_score) / 2)
