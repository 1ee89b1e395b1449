"""SIMAS prompt texts (masgrid/families/simas/conf/prompts/simas/prompts.yaml), rendered with string.Template.

System prompt of a discussant: its description ("the i-th assistant in the group chat",
section 3.3), then the profile attributes the condition keeps (Table 4's ablations:
`base` = ALL, `no_personality`, `no_belief`, `no_expertise`, `none`). The question is the first
entry of the shared history h_0 (Algorithm 1), so it opens each agent's first turn.
"""

from __future__ import annotations

from string import Template
from typing import Any

import yaml

from masgrid.sdk.resources import conf_cached, read_text

#: condition -> profile attributes shown. `base` is the paper's ALL mode (every attribute;
#: the platform's name for a family's baseline condition); `cot` is the single-agent
#: chain-of-thought baseline (section 5), without a profile.
CONDITIONS: dict[str, tuple[str, ...]] = {
    "base": ("personality", "belief", "expertise"),
    "no_personality": ("belief", "expertise"),
    "no_belief": ("personality", "expertise"),
    "no_expertise": ("personality", "belief"),
    "none": (),
    "cot": (),
}
ORDINALS = {1: "first", 2: "second", 3: "third"}


@conf_cached(maxsize=1)
def texts() -> dict[str, Any]:
    return yaml.safe_load(read_text("prompts/simas/prompts.yaml"))


def render(key: str, **values: Any) -> str:
    template = texts()[key]
    return Template(template).safe_substitute(**values).strip()


def ordinal(i: int) -> str:
    """'first', 'second', ... for 1-based i ('4-th' style beyond three)."""
    return ORDINALS.get(i, f"{i}-th")


def discipline(params: dict[str, Any]) -> str:
    return str(params.get("discipline", "general knowledge"))


def is_text(params: dict[str, Any]) -> bool:
    """A generation question (simas/open, simas/coding): the answer is free text, judged later."""
    return params.get("criteria") is not None


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {x}" for x in items) or "- (none)"


def answer_format(params: dict[str, Any]) -> str:
    if params.get("dataset") == "coding":
        return render("answer_format_coding", language=params.get("language") or "any",
                      constraints=_bullets(list(params.get("constraints") or [])))
    if is_text(params):
        return render("answer_format_open", criteria=_bullets(list(params["criteria"])))
    if params.get("dataset") == "ekar" and params.get("choices"):
        return render("answer_format_ekar", query=str(params["question"]).strip())
    return texts()["answer_format_choice" if params.get("choices") else "answer_format_integer"]


def question_block(params: dict[str, Any]) -> str:
    lines = [params["question"]]
    choices = params.get("choices")
    if choices:
        lines += [f"{'ABCDEFGHIJ'[i]}. {c}" for i, c in enumerate(choices)]
    return render("question", question="\n".join(lines), answer_format=answer_format(params))


def answer_hint(params: dict[str, Any]) -> str:
    return texts()["answer_hint_choice" if params.get("choices") else "answer_hint_integer"]


def answer_from(params: dict[str, Any]) -> str:
    """Who gives the group's final answer: `first` (Algorithm 1) or `last` (appendix A.4)."""
    return str(params.get("answer_from") or "first")


def answerer_index(params: dict[str, Any], n_agents: int) -> int:
    """The agent (0-based) whose final answer is the system output o."""
    return n_agents - 1 if answer_from(params) == "last" else 0


def answerer_text(which: str) -> str:
    return str(texts()["answerer"][which])


def final_request(params: dict[str, Any], history_text: str) -> str:
    """The answering agent's last call: a stated answer (key questions) or the full answer (generation)."""
    who = answerer_text(answer_from(params))
    if is_text(params):
        return render("final_text", history=history_text, answerer=who)
    return render("final", history=history_text, answer_hint=answer_hint(params), answerer=who)


def history(names: list[str], entries: list[tuple[int, str]], nobody_yet: bool) -> str:
    if not entries:
        return texts()["history_empty"] + "\n" if nobody_yet else ""
    lines = [texts()["history_header"]]
    lines += [Template(texts()["history_line"]).safe_substitute(speaker=names[i], text=t) for i, t in entries]
    return "\n".join(lines) + "\n"


def cot_user(params: dict[str, Any]) -> str:
    """Appendix C.1's three baselines: coding, open-ended, and the simple one for key questions."""
    if params.get("dataset") == "coding":
        return render("cot_coding", question_block=question_block(params))
    if is_text(params):
        return render("cot_open", question_block=question_block(params))
    return render("cot_user", question_block=question_block(params), answer_hint=answer_hint(params))


def system_prompt(agent: int, n: int, rounds: int, name: str, condition: str, profile: dict[str, Any],
                  answer_from: str = "first") -> str:
    if condition == "cot":
        return render("cot_system")
    lines = texts()["profile_lines"]
    shown = [Template(lines[f]).substitute(value=str(profile[f]).strip().rstrip(".")) for f in CONDITIONS[condition]]
    block = "\n" + "\n".join(shown) + "\n" if shown else ""
    return render("system", name=name, ordinal=ordinal(agent + 1), n=n, rounds=rounds, profile_block=block,
                  answerer=answerer_text(answer_from))


def profile_system(n: int, params: dict[str, Any]) -> str:
    return render("profile_system", n=n, discipline=discipline(params))


def fixed_texts() -> tuple[str, ...]:
    """Every template, for the run's prompt fingerprint."""
    data = texts()
    return tuple(f"{k}={data[k]}" for k in sorted(data))
