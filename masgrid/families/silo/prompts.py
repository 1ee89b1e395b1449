"""SILO-Bench system prompts (appendix B), built from the templates in masgrid/families/silo/conf/prompts/silo.

Every agent of a run gets the same text except its id and its local data: the task
description (masgrid/families/silo/conf/prompts/silo/tasks/<task_id>.yaml), the protocol's command list, the
answer format, and the scaffold text of the run's condition (appendix H). Coordination
ideas are phrased as options; no agent is given a role.
"""

from __future__ import annotations

import json
from string import Template
from typing import Any

import yaml

from masgrid.sdk.resources import conf_cached, read_text

PROMPT_DIR = "prompts/silo"
#: conditions of appendix H (plus "base"); `oracle-<N>` is handled by the adapter.
SCAFFOLDS = ("base", "planning", "reminder", "scratchpad")


@conf_cached(maxsize=64)
def _yaml(name: str) -> dict[str, Any]:
    """Parsed prompt data, cached (parsing took 4 ms per agent prompt); treat as read-only."""
    return yaml.safe_load(read_text(f"{PROMPT_DIR}/{name}"))


def task_text(task_id: str) -> dict[str, str]:
    data = _yaml(f"tasks/{task_id}.yaml")
    missing = [key for key in ("title", "description", "answer_format") if not data.get(key)]
    if missing:
        raise ValueError(f"conf/{PROMPT_DIR}/tasks/{task_id}.yaml lacks {missing}")
    return data


def placeholders(n: int, k: int, public: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {key: _show(value) for key, value in public.items()}
    values.update(n=n, k=k, last=n - 1, total=n * k, last_item=n * k - 1, k_minus_1=k - 1)
    return values


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _fill(text: str, values: dict[str, Any], where: str) -> str:
    try:
        return Template(text).substitute(values)
    except (KeyError, ValueError) as exc:
        raise ValueError(f"{where}: bad placeholder {exc}") from None


def _public_block(public: dict[str, Any]) -> str:
    if not public:
        return ""
    items = ", ".join(f"{key} = {_show(value)}" for key, value in public.items())
    return f"\nParameters every agent is told: {items}\n"


def protocol_text(protocol: str) -> dict[str, Any]:
    spec = _yaml("protocols.yaml")
    if protocol not in spec:
        raise ValueError(f"protocol: SILO-Bench has no prompt for protocol {protocol!r}")
    return spec[protocol]


def condition_text(condition: str) -> dict[str, str]:
    return _yaml("conditions.yaml")[condition]


def level_of(task_id: str) -> int:
    """1, 2 or 3 from a task id such as "II-17"."""
    roman = task_id.split("-", 1)[0]
    if roman not in ("I", "II", "III"):
        raise ValueError(f"not a SILO task id: {task_id!r}")
    return len(roman)


def goal_text(task_id: str) -> dict[str, str]:
    """The level-dependent sentences: Level II agents each answer for their own part."""
    return _yaml("goals.yaml")["segment" if level_of(task_id) == 2 else "shared"]


def action_names(protocol: str) -> str:
    names = [line.split(" ", 1)[0] for line in protocol_text(protocol)["actions"]]
    return ", ".join(names)


def build_agent_prompt(task_id: str, agent: int, n: int, k: int, shard: Any, public: dict[str, Any],
                       protocol: str, condition: str) -> str:
    text = task_text(task_id)
    values = placeholders(n, k, public)
    proto = protocol_text(protocol)
    where = f"conf/{PROMPT_DIR}/tasks/{task_id}.yaml"
    goal = goal_text(task_id)
    body = Template(read_text(f"{PROMPT_DIR}/system.txt")).substitute(
        agent_id=agent, n=n, last=n - 1,
        insufficient=goal["insufficient"].strip(), goal=goal["goal"].strip(),
        title=_fill(text["title"], values, where),
        description=_fill(text["description"], values, where).strip(),
        data=json.dumps(shard),
        public_block=_public_block(public),
        protocol_name=proto["name"],
        protocol_description=proto["description"].strip(),
        example_block=f"```\n{proto['example']}\n```",
        actions="\n".join(f"- {line}" for line in proto["actions"]),
        answer_format=_fill(text["answer_format"], values, where).strip(),
        condition_text=condition_text(condition)["text"].strip(),
    )
    return body.rstrip() + "\n"


def build_oracle_prompt(task_id: str, level: int, n: int, k: int, shards: list[Any], public: dict[str, Any]) -> str:
    text = task_text(task_id)
    values = placeholders(n, k, public)
    where = f"conf/{PROMPT_DIR}/tasks/{task_id}.yaml"
    fmt = text.get("oracle_answer_format")
    if not fmt and level == 2:
        # the segment format's example is one agent's list, not the oracle's list of lists
        raise ValueError(f"{where}: a Level II task needs oracle_answer_format (with its own example)")
    answer_format = _fill(fmt or text["answer_format"], values, where)
    data = "\n".join(f"segment {j}: {json.dumps(shard)}" for j, shard in enumerate(shards))
    body = Template(read_text(f"{PROMPT_DIR}/oracle.txt")).substitute(
        n=n, last=n - 1,
        title=_fill(text["title"], values, where),
        description=_fill(text["description"], values, where).strip(),
        data=data,
        public_block=_public_block(public),
        answer_format=answer_format.strip(),
    )
    return body.rstrip() + "\n"


def round_notice(protocol: str, condition: str) -> str | None:
    notice = condition_text(condition).get("notice")
    return Template(notice).substitute(actions=action_names(protocol)) if notice else None
