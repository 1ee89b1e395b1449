"""AgentsNet system prompts (appendix A) from the templates in masgrid/families/agentsnet/conf/prompts/agentsnet.

The standard prompt fills system.txt with the agent's name, its neighbours, the round
count and the two task parts; a prompt variant (appendix J, `condition=`) adds a preamble
or closing, or replaces the template; Byzantine runs (appendix I) append the adversarial
objective for adversaries and, in the aware setting, a warning for honest agents.
"""

from __future__ import annotations

from string import Template
from typing import Any

import yaml

from masgrid.sdk.resources import conf_cached, read_text
from masgrid.sdk.tasks import AgentView

PROMPT_DIR = "prompts/agentsnet"


@conf_cached(maxsize=8)
def _yaml(name: str) -> dict[str, Any]:
    return yaml.safe_load(read_text(f"{PROMPT_DIR}/{name}"))


def variants() -> dict[str, dict[str, str]]:
    return {k: (v or {}) for k, v in _yaml("variants.yaml").items()}


def task_text(problem: str) -> dict[str, str]:
    return _yaml("tasks.yaml")[problem]


def final_question(problem: str) -> str:
    return task_text(problem)["question"]


def build_system_prompt(view: AgentView, problem: str, condition: str) -> str:
    local, params = view.local_input, view.params
    text = task_text(problem)
    values = {"n": view.n_agents, "name": local["name"], "neighbors": ", ".join(local["neighbors"]),
              "rounds": params["rounds"], "groups": params.get("groups", "")}
    task1 = Template(text["task1"]).safe_substitute(values)
    task2 = Template(text["task2"]).safe_substitute(values)
    values.update(task1=task1, task2=task2)
    variant = variants()[condition]
    body = Template(variant.get("template") or read_text(f"{PROMPT_DIR}/system.txt")).safe_substitute(values).rstrip()
    if variant.get("preamble"):
        body = Template(variant["preamble"]).safe_substitute(values).rstrip() + "\n\n" + body
    if variant.get("closing"):
        body += "\n" + Template(variant["closing"]).safe_substitute(values).rstrip()
    setting = params.get("byzantine", "none")
    byz = _yaml("byzantine.yaml")
    if local.get("byzantine"):
        body += "\n" + byz["adversary"]
    elif setting == "aware":
        body += "\n" + byz["aware_notice"]
    return body
