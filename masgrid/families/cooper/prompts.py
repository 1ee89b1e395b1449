"""CooperBench prompt texts (masgrid/families/cooper/conf/prompts/cooper/prompts.yaml), rendered with string.Template.

Two phases (section 3): planning (agents talk, then each writes its plan as the summary of
`finish`), then execution with that plan in the system prompt. The execution prompt keeps
appendix G's order: identity, scenario, feature, plan, task, coordination requirements,
conflict prevention; nocomm drops the messaging parts, solo the teammates.
"""

from __future__ import annotations

from string import Template
from typing import Any

import yaml

from masgrid.sdk.resources import conf_cached, read_text

PLAN_PHASE, EXECUTE_PHASE = 1, 2


@conf_cached(maxsize=1)
def texts() -> dict[str, Any]:
    return yaml.safe_load(read_text("prompts/cooper/prompts.yaml"))


def render(key: str, **values: Any) -> str:
    return Template(texts()[key]).safe_substitute(**values).strip()


def agent_name(agent: int) -> str:
    """Agents are addressed by these names in prompts and in send_message's `to`."""
    return f"agent_{agent + 1}"


def feature_block(features: list[dict[str, Any]]) -> str:
    """Each feature's description (feature.md), headed by its id."""
    return "\n\n".join(render("feature", fid=f["id"], description=f["description"].strip()) for f in features)


def system_prompt(phase: int, setting: str, agent: int, n_agents: int, features: list[dict[str, Any]],
                  plan: str | None, limits: dict[str, int], workspace: str) -> str:
    """The agent's system message for one phase (structurally identical across agents)."""
    teammates = ", ".join(agent_name(j) for j in range(n_agents) if j != agent) or "none"
    values = dict(name=agent_name(agent), teammates=teammates, n=n_agents, feature_block=feature_block(features),
                  plan=(plan or "(no plan was written)").strip(), workspace=workspace, **limits)
    if phase == PLAN_PHASE:
        return render("plan_system_solo" if setting == "solo" else "plan_system", **values)
    return render(f"execute_{setting}", **values)


def fixed_texts() -> list[str]:
    """Texts a run's agents may receive besides their system prompts (the fingerprint hashes them)."""
    t = texts()
    return [t[k] for k in HARNESS_KEYS]


#: the harness texts of a run (besides the system prompts), by key
HARNESS_KEYS = ("start", "teammate_message", "no_tool_call", "actions_left", "no_messaging", "plan_messages_spent",
                "unknown_recipient", "sent", "recipient_done", "not_executed", "cap_reached", "after_finish")
