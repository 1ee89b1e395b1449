"""BUILD_PROMPT of MAS-Bench (appendix D and F.6), from the templates in conf/prompts/masbench.

The system message is header + command reference + behaviour list; the behaviour list
changes with the condition, and phase 2 of a two-phase condition adds the rerun lines.
Only the agent's id, its list and its previous submission differ between agents.
"""

from __future__ import annotations

from string import Template
from typing import Any

import yaml

from masgrid.envs.protocols.base import format_answer
from masgrid.envs.tasks.base import AgentView
from masgrid.resources import conf_cached, read_text

PROMPT_DIR = "prompts/masbench"

#: condition -> (behaviour list variant, two-phase rerun), the table of appendix F.5.
CONDITIONS: dict[str, tuple[str, bool]] = {
    "base": ("short", False),
    "abl_message": ("short", True),
    "abl_submit": ("camoc", False),
    "camoc": ("camoc", True),
}


@conf_cached(maxsize=64)
def _yaml(name: str) -> dict[str, Any]:
    """Parsed prompt data (cached: parsing dominated scripted runs; treat as read-only)."""
    return yaml.safe_load(read_text(f"{PROMPT_DIR}/{name}"))


@conf_cached(maxsize=8)
def behavior_list(variant: str) -> str:
    spec = _yaml("behavior.yaml")
    lines = [spec["heading"]]
    number = 0

    def add(text: str, bullets: list[dict[str, str]] | None = None) -> None:
        nonlocal number
        number += 1
        lines.append(f"{number}. {text}")
        for bullet in bullets or []:
            if variant == "camoc" and bullet["id"] == "expectations":
                continue
            lines.append(f"   - {bullet['text']}")

    for rule in spec["rules"]:
        add(rule["text"], rule.get("bullets"))
        if variant == "camoc" and rule["id"] == "no_early_submit":
            for clause in spec["camoc_clauses"]:
                add(f"{clause['title']}. {clause['text']}")
    return "\n".join(lines)


def build_prompt(view: AgentView, protocol: str, condition: str, task_key: str) -> str:
    variant, two_phase = CONDITIONS[condition]
    n, k = view.n_agents, int(view.params["k"])
    task = _yaml(f"task_{task_key}.yaml")
    values = {"n": n, "k": k, "last": n - 1, "total": n * k}
    objective = Template(task["objective"]).substitute(values)
    answer_shape = Template(task["answer_shape"]).substitute(values)
    rerun = _yaml("rerun.yaml")
    is_rerun = two_phase and view.phase > 1
    previous = format_answer(view.previous) if view.previous is not None else "nothing (you did not submit)"
    header = Template(read_text(f"{PROMPT_DIR}/header.txt")).substitute(
        agent_name=f"Agent-{view.agent}",
        n=n,
        last=n - 1,
        k=k,
        task_title=task["title"],
        rerun_prefix=Template(rerun["prefix"]).substitute(previous=previous) + "\n" if is_rerun else "",
        local_input=format_answer(view.local_input),
        objective=objective,
        check_function=task["check_function"],
    )
    commands = Template(read_text(f"{PROMPT_DIR}/commands_{protocol}.txt")).substitute(answer_shape=answer_shape)
    parts = [header.rstrip(), read_text(f"{PROMPT_DIR}/commands_common.txt").strip(), commands.strip(),
             behavior_list(variant)]
    if is_rerun:
        parts.append(Template(rerun["suffix"]).substitute(previous=previous))
    return "\n\n".join(parts) + "\n"
