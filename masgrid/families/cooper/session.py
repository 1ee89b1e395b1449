"""One run's workspaces: a checkout per agent (workspace.make_worktree) at the base commit, its sandboxed tools.

The task's test environment (testenv.py, the one the evaluator uses) is built or checked
first, so a run that could not be scored fails before its agents start; every agent's
sandbox gets it read-only, with its interpreter first on PATH and the worktree's import
root on PYTHONPATH, so agents can run the project's tests as the evaluator will.

Made when the planning phase starts and kept through execution (planning only reads);
each agent's patch is its worktree's diff against the base, test files excluded
(evaluate.agent_patch), taken when execution ends; the worktrees are then removed. File
and shell tools run in a worker thread each, so one agent's long shell command never
holds up another agent's loop.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

from masgrid.families.cooper.prompts import EXECUTE_PHASE, PLAN_PHASE
from masgrid.sdk.tasks import Instance

#: tools the scheduler itself handles (messages, the end of an agent's phase)
SEND, FINISH = "send_message", "finish"
#: tools offered in the planning phase: reading and talking, no edits
PLAN_TOOLS = ("view", SEND, FINISH)


def offered_tools(phase: int, setting: str, n_agents: int) -> list[str]:
    """Tool names an agent gets in a phase: no messaging for solo, nor for nocomm's execution."""
    from masgrid.families.cooper.tools import TOOL_SPECS

    names = [spec["function"]["name"] for spec in TOOL_SPECS]
    if phase == PLAN_PHASE:
        names = [n for n in names if n in PLAN_TOOLS]
    talk = n_agents > 1 and (phase == PLAN_PHASE or setting == "coop")
    return [n for n in names if talk or n != SEND]


def tool_specs(names: list[str]) -> list[dict[str, Any]]:
    from masgrid.families.cooper.tools import TOOL_SPECS

    return [spec for spec in TOOL_SPECS if spec["function"]["name"] in names]


class CooperSession:
    """The agents' worktrees and tool boxes for one run (envs layer: no Ray, no platform)."""

    def __init__(self, instance: Instance) -> None:
        from masgrid.families.cooper.evaluate import env_readable, env_variables, task_env
        from masgrid.families.cooper.layout import load_task
        from masgrid.families.cooper.repos import clone_path
        from masgrid.families.cooper.sandbox import SandboxSettings
        from masgrid.families.cooper.tools import ToolBox, ToolLimits
        from masgrid.families.cooper.workspace import agent_sandbox, make_worktree

        p = instance.params
        self.params = p
        self.n_agents = instance.n_agents
        data = load_task(Path(p["data_dir"]), p["pool"], int(p["task_id"]))
        clone = clone_path(Path(p["repos_dir"]), data)
        # the evaluator's test environment, built (or checked) before any agent starts: a run that
        # cannot be tested fails now, in one line, not after the agents worked; the agents get it too
        self.env = task_env(data, Path(p["repos_dir"]), Path(p["cache_dir"]))
        base = Path(p["work_dir"]).expanduser() if p.get("work_dir") else Path(p["cache_dir"]) / "work"
        base.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="run-", dir=base))
        self.clone, self.base_commit = clone, str(p["base_commit"])
        self.worktrees: list[Path] = []
        self.boxes: list[Any] = []
        try:
            for i in range(self.n_agents):
                tree = make_worktree(clone, self.base_commit, self.root / f"agent_{i + 1}", f"agent_{i + 1}")
                self.worktrees.append(tree)
                sandbox = agent_sandbox(SandboxSettings(kind=p["sandbox"], timeout_s=float(p["tool_timeout_s"])), tree,
                                        readable=env_readable(self.env), env=env_variables(self.env, tree))
                self.boxes.append(ToolBox(tree, sandbox, ToolLimits(bash_timeout_s=float(p["tool_timeout_s"]))))
        except BaseException:
            self.close()
            raise

    async def call(self, agent: int, name: str, arguments: dict[str, Any]) -> Any:
        """A file or shell tool in the agent's own worktree (ToolResult; errors are results, not exceptions)."""
        return await asyncio.to_thread(self.boxes[agent].call, name, arguments)

    def patch(self, agent: int) -> str:
        from masgrid.families.cooper.evaluate import agent_patch

        return agent_patch(self.worktrees[agent], self.base_commit)

    def close(self) -> None:
        """Remove the worktrees (their patches were taken) and the run's directory."""
        from masgrid.families.cooper.workspace import remove_worktree

        for tree in self.worktrees:
            try:
                remove_worktree(tree)
            except Exception:  # noqa: BLE001 - cleanup must not hide the run's outcome
                pass
        self.worktrees = []
        shutil.rmtree(self.root, ignore_errors=True)


__all__ = ["CooperSession", "EXECUTE_PHASE", "FINISH", "PLAN_PHASE", "SEND", "offered_tools", "tool_specs"]
