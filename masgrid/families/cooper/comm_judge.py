"""CooperBench communication errors (section 5, Figure 5, appendix J) judged by an LLM.

The judge reads one coop run's conversation (every message the agents sent each other,
planning included, in time order) and returns at most one category with at least two exact
quotes. Precision first: a verdict we cannot verify is never a detection.

Category ids. Appendix J's list names C4a twice and never C3a, while its prose speaks of
C3a/C3b (hallucination) and C4a/C4b (repetition). We use the consistent set
C1a, C1b, C2 (unresponsiveness), C3a, C3b (hallucination), C4a, C4b (repetition).

Validity (`parse_verdict`): the reply must be one JSON object (a ```json fence is tolerated)
matching `JudgeReply`; an `issue` needs a known category and at least two distinct quotes,
each found verbatim in some message (whitespace runs compared as one space, nothing else
forgiven). Anything else raises `InvalidVerdict` with the reason; the caller records it as
`invalid`. A reply without `issue` is a valid "no issue" verdict; its quotes are kept but not
required.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

CATEGORIES: dict[str, tuple[str, str]] = {
    "C1a": ("unresponsiveness", "unanswered direct question: no reply at all"),
    "C1b": ("unresponsiveness", "unanswered direct question: the partner replied but ignored it"),
    "C2": ("unresponsiveness", "non-answer or vague answer to a direct question"),
    "C3a": ("hallucination", "incorrect claim about code state or progress, never corrected"),
    "C3b": ("hallucination", "incorrect claim about code state or progress, corrected later"),
    "C4a": ("repetition", "repeats the same information without adding anything"),
    "C4b": ("repetition", "near-duplicate status blocks"),
}
GROUPS = ("unresponsiveness", "hallucination", "repetition")
MIN_QUOTES = 2

SYSTEM = """You audit the messages two or more coding agents exchanged while each implemented a \
different feature of the same repository on its own git branch. Your job is to spot one clear \
communication failure, and only when the messages themselves prove it. When in doubt, report \
nothing: a missed problem costs less than an invented one.

Do not count as a failure that an agent cannot see a teammate's edits: the branches are \
separate by design. How the agents talk about that situation may still be a failure.

Categories (choose at most one, the clearest):
{categories}

Proof you must give, as exact copies of text from the messages (copy characters verbatim, \
no paraphrase, no ellipsis, each quote inside a single message):
- C1a/C1b/C2: the question, and the message(s) showing it got no reply, an unrelated reply \
or an evasive one.
- C3a/C3b: the false claim, and the text that shows it is false (for C3b, the correction).
- C4a/C4b: two passages that repeat each other.
At least two quotes are required for any category.

Reply with one JSON object and nothing else:
{{"evidence": ["<quote>", "<quote>"], "issue": {{"category": "<id>", "description": "<one sentence>"}}}}
Leave out "issue" (or set it to null) when no failure is proven."""

USER = """Conversation of run {run_id} ({n} messages, oldest first):

{conversation}"""


def prompt_version() -> str:
    """Identifies prompt and taxonomy: a rerun judges again only when this or the judge changes."""
    blob = json.dumps({"system": SYSTEM, "user": USER, "categories": CATEGORIES, "min_quotes": MIN_QUOTES},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


class Message(BaseModel):
    """One message of a conversation, as the judge sees it."""

    sender: int
    to: str
    text: str


def conversation(events: pd.DataFrame) -> tuple[list[Message], bool]:
    """The messages of one run in send order (`t`, then `seq`) and whether any was recorded
    capped (execution.max_recorded_chars: the judge then saw only their start)."""
    if events.empty or "kind" not in events.columns:
        return [], False
    msgs = events[events["kind"] == "message"]
    if msgs.empty:
        return [], False
    msgs = msgs.sort_values([c for c in ("t", "seq") if c in msgs.columns], kind="stable")
    capped = bool(msgs["text_chars"].notna().any()) if "text_chars" in msgs.columns else False
    out = []
    for row in msgs.itertuples(index=False):
        peers = getattr(row, "peers", None)
        if isinstance(peers, (list, tuple, np.ndarray)) and len(peers) > 0:
            to = ", ".join(f"agent {int(p)}" for p in peers)
        else:
            to = "team"
        out.append(Message(sender=int(row.agent), to=to, text="" if pd.isna(row.text) else str(row.text)))
    return out, capped


def render(messages: list[Message]) -> str:
    return "\n\n".join(f"[{i}] agent {m.sender} -> {m.to}:\n{m.text}" for i, m in enumerate(messages, 1))


def judge_messages(run_id: str, messages: list[Message]) -> list[dict[str, str]]:
    categories = "\n".join(f"- {cid} ({group}): {text}" for cid, (group, text) in CATEGORIES.items())
    return [{"role": "system", "content": SYSTEM.format(categories=categories)},
            {"role": "user", "content": USER.format(run_id=run_id, n=len(messages), conversation=render(messages))}]


class Issue(BaseModel):
    model_config = ConfigDict(extra="ignore")

    category: str
    description: str = ""


class JudgeReply(BaseModel):
    """The judge's JSON reply."""

    model_config = ConfigDict(extra="ignore")

    evidence: list[str] = Field(default_factory=list)
    issue: Issue | None = None


class Verdict(BaseModel):
    """A checked verdict: `category` None means no issue found."""

    category: str | None
    group: str | None
    description: str | None
    evidence: list[str]


class InvalidVerdict(ValueError):
    """The reply cannot count as a verdict (the message says why)."""


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def parse_verdict(text: str | None, messages: list[Message]) -> Verdict:
    """The reply as a `Verdict`; `InvalidVerdict` for anything we cannot verify (module doc)."""
    if not text or not text.strip():
        raise InvalidVerdict("empty reply")
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise InvalidVerdict(f"not JSON: {exc.msg} at char {exc.pos}") from None
    try:
        reply = JudgeReply.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InvalidVerdict(f"bad reply shape at {'.'.join(map(str, first['loc'])) or 'top'}: {first['msg']}") from None
    quotes = [q for q in reply.evidence if q.strip()]
    if reply.issue is None:
        return Verdict(category=None, group=None, description=None, evidence=quotes)
    category = reply.issue.category.strip()
    if category not in CATEGORIES:
        raise InvalidVerdict(f"unknown category {category[:40]!r} (known: {', '.join(CATEGORIES)})")
    distinct = list(dict.fromkeys(_norm(q) for q in quotes))
    if len(distinct) < MIN_QUOTES:
        raise InvalidVerdict(f"{category} with {len(distinct)} distinct quote(s); at least {MIN_QUOTES} required")
    texts = [_norm(m.text) for m in messages]
    for quote in distinct:
        if not any(quote in t for t in texts):
            raise InvalidVerdict(f"quote not found verbatim in the conversation: {quote[:80]!r}")
    return Verdict(category=category, group=CATEGORIES[category][0], description=reply.issue.description.strip(),
                   evidence=quotes)


Status = Literal["ok", "invalid", "failed", "skipped"]
