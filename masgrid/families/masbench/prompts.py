"""BUILD_PROMPT of MAS-Bench (appendix D and F.6), from the templates in masgrid/families/masbench/conf/prompts/masbench.

The system message is header + command reference + example reply + behaviour list; between
conditions only the behaviour list changes, and phase 2 of a two-phase condition adds the
rerun lines. Only the agent's id (and the peer its example addresses), its list and its
previous submission differ between agents. With one agent (N = 1) the header, objective,
command descriptions (`solo.yaml`), example, behaviour list and rerun lines use their `solo`
wording, which speaks of no other agent (docs/tasks/masbench.md, "One agent").
"""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import accumulate
from string import Template
from typing import Any

import yaml

from masgrid.sdk.protocols import format_answer
from masgrid.sdk.resources import conf_cached, read_text
from masgrid.sdk.tasks import AgentView

PROMPT_DIR = "prompts/masbench"

#: condition -> (behaviour list variant, two-phase rerun), the table of appendix F.5.
CONDITIONS: dict[str, tuple[str, bool]] = {
    "base": ("short", False),
    "abl_message": ("short", True),
    "abl_submit": ("camoc", False),
    "camoc": ("camoc", True),
}

#: how submit_result's example answer follows from the made-up example list (task yaml `example_answer`)
EXAMPLE_ANSWERS: dict[str, Callable[[list[int]], list[int]]] = {
    "sorted": sorted,
    "largest": lambda values: [max(values)],
    "running_totals": lambda values: list(accumulate(values)),
}


@conf_cached(maxsize=64)
def _yaml(name: str) -> dict[str, Any]:
    """Parsed prompt data (cached: parsing dominated scripted runs; treat as read-only)."""
    return yaml.safe_load(read_text(f"{PROMPT_DIR}/{name}"))


def example_values(k: int) -> list[int]:
    """K distinct made-up integers for the example reply: the same for every agent, instance
    and condition (a function of K only), so the example has the length of a real list."""
    return random.Random(f"masbench-example:{k}").sample(range(max(50, 10 * k)), k)


def camoc_clause_text(clause: dict[str, Any], solo: bool) -> str | None:
    """One CAMOC clause as it appears in the list: title, then its sentences in order."""
    if solo:
        sentences = [s["solo"] for s in clause["sentences"] if "solo" in s]
        title = clause.get("solo_title", clause["title"])
    else:
        sentences = [s["text"] for s in clause["sentences"]]
        title = clause["title"]
    return f"{title}. {' '.join(sentences)}" if sentences else None


@conf_cached(maxsize=8)
def behavior_list(variant: str, solo: bool = False) -> str:
    """The numbered behaviour list of a variant (`short` or `camoc`); `solo` for N = 1."""
    spec = _yaml("behavior.yaml")
    lines = [spec["heading"]]
    number = 0

    def add(text: str) -> None:
        nonlocal number
        number += 1
        lines.append(f"{number}. {text}")

    for rule in spec["rules"]:
        text = rule.get("solo") if solo else rule["text"]
        if text is not None:
            add(text)
            for bullet in rule.get("bullets") or []:
                if not (variant == "camoc" and bullet["id"] == "expectations"):
                    lines.append(f"   - {bullet['text']}")
        if variant == "camoc" and rule["id"] == "no_early_submit":
            for clause in spec["camoc_clauses"]:
                clause_text = camoc_clause_text(clause, solo)
                if clause_text is not None:
                    add(clause_text)
    return "\n".join(lines)


def command_text(name: str, solo: bool) -> str:
    """A command-reference file; for a lone agent with the sentences of `solo.yaml` replaced."""
    text = read_text(f"{PROMPT_DIR}/{name}")
    if solo:
        for swap in _yaml("solo.yaml").get(name, []):
            if swap["group"] not in text:
                raise ValueError(f"{PROMPT_DIR}/solo.yaml: {name} no longer contains {swap['group']!r}")
            text = text.replace(swap["group"], swap["solo"])
    return text


def example_reply(protocol: str, agent: int, peer: int, k: int, solo: bool) -> str:
    """The protocol's example reply, as the reader would write it (neutral: no request)."""
    spec = _yaml("examples.yaml")
    body = Template(spec[protocol]["solo" if solo else "group"]).substitute(
        agent_name=f"Agent-{agent}", me=agent, peer=peer, example_list=format_answer(example_values(k)))
    return f"{spec['intro']}\n{body}"


def build_prompt(view: AgentView, protocol: str, condition: str, task_key: str) -> str:
    variant, two_phase = CONDITIONS[condition]
    n, k = view.n_agents, int(view.params["k"])
    solo = n == 1
    peer = 1 if view.agent == 0 else 0  # the agent the p2p example addresses (exists when N >= 2)
    task = _yaml(f"task_{task_key}.yaml")
    values = {"n": n, "k": k, "last": n - 1, "total": n * k}
    objective = Template(task["objective_solo" if solo else "objective"]).substitute(values)
    answer_shape = Template(task["answer_shape"]).substitute(values)
    example_answer = format_answer(EXAMPLE_ANSWERS[task["example_answer"]](example_values(k)))
    rerun = _yaml("rerun.yaml")
    is_rerun = two_phase and view.phase > 1
    previous = format_answer(view.previous) if view.previous is not None else "nothing (you did not submit)"
    header = Template(read_text(f"{PROMPT_DIR}/header{'_solo' if solo else ''}.txt")).substitute(
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
    commands = Template(command_text(f"commands_{protocol}.txt", solo)).substitute(
        answer_shape=answer_shape, example_answer=example_answer,
        address_example=f"send_message {peer} hello goes to Agent-{peer}")
    parts = [header.rstrip(), command_text("commands_common.txt", solo).strip(), commands.strip(),
             example_reply(protocol, view.agent, peer, k, solo), behavior_list(variant, solo)]
    if is_rerun:
        parts.append(Template(rerun["suffix_solo" if solo else "suffix"]).substitute(previous=previous))
    return "\n\n".join(parts) + "\n"
