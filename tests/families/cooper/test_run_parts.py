"""CooperBench run parts without a run: changed-line counts against git's own --numstat on
random edits, the execution prompt's section order (appendix G) per setting, the tools
offered per phase and setting, and task names."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from masgrid._private.envs.tasks import get_task
from masgrid.families.cooper import prompts
from masgrid.families.cooper.scoring import patch_lines
from masgrid.families.cooper.session import offered_tools
from masgrid.families.cooper.task import parse_name


@pytest.mark.parametrize("seed", range(15))
def test_patch_lines_match_git_numstat(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    files = {f"f{k}.py": [f"v{k}_{i} = {rng.randrange(99)}" for i in range(rng.randint(1, 30))] for k in range(3)}
    for name, lines in files.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    for name, lines in files.items():
        for _ in range(rng.randint(0, 3)):
            k = rng.randrange(len(lines) + 1)
            if rng.random() < 0.5 or not lines:
                lines.insert(k, f"added_{rng.randrange(10**6)}")
            elif k < len(lines):
                lines.pop(k)
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    patch = subprocess.run([*git, "diff"], capture_output=True, text=True, check=True).stdout
    numstat = subprocess.run([*git, "diff", "--numstat"], capture_output=True, text=True, check=True).stdout
    expected = sum(int(a) + int(d) for a, d, _ in (line.split("\t") for line in numstat.splitlines()))
    assert patch_lines(patch) == expected


FEATURES = [{"id": 3, "description": "Add a thing."}]
LIMITS = {"max_actions": 100, "plan_actions": 20, "plan_rounds": 3}
#: appendix G's order: identity, scenario, feature, plan, task, coordination requirements, prevention
ORDER = ("Identity:", "Scenario:", "Feature 3:", "Your plan", "What to do:", "Coordination rules:", "Avoiding merge conflicts:")


def test_execution_prompt_follows_appendix_g() -> None:
    text = prompts.system_prompt(2, "coop", 0, 2, FEATURES, "edit a.py lines 1-5", LIMITS, "the root")
    positions = [text.index(marker) for marker in ORDER]
    assert positions == sorted(positions)
    assert "edit a.py lines 1-5" in text and "agent_2" in text and "send_message" in text
    nocomm = prompts.system_prompt(2, "nocomm", 1, 2, FEATURES, None, LIMITS, "the root")
    assert "send_message" not in nocomm and "(no plan was written)" in nocomm and "agent_1" in nocomm
    solo = prompts.system_prompt(2, "solo", 0, 1, FEATURES, "p", LIMITS, "the root")
    assert "teammate" not in solo and "send_message" not in solo
    plan = prompts.system_prompt(1, "coop", 0, 2, FEATURES, None, LIMITS, "the root")
    assert "planning phase" in plan and "(at most 3 messages)" in plan


def test_tools_per_phase_and_setting() -> None:
    assert offered_tools(1, "coop", 2) == ["view", "send_message", "finish"]
    assert offered_tools(1, "nocomm", 2) == ["view", "send_message", "finish"]  # nocomm keeps planning talk
    assert offered_tools(1, "solo", 1) == ["view", "finish"]
    full = ["view", "create_file", "str_replace", "insert", "bash", "finish"]
    assert offered_tools(2, "coop", 2) == full[:5] + ["send_message", "finish"]
    assert offered_tools(2, "nocomm", 2) == full and offered_tools(2, "solo", 1) == full


def test_task_names() -> None:
    assert parse_name("cooper/pallets_jinja_task/1621") == ("pallets_jinja_task", 1621)
    for bad in ("cooper/x_task", "cooper//3", "cooper/x_task/one", "cooper/a/1/2"):
        with pytest.raises(ValueError, match="cooper/<pool>/<ID>"):
            get_task(bad)
    task = get_task("cooper/x_task/7")
    assert (task.name, task.pool, task.task_id, task.schedule) == ("cooper/x_task/7", "x_task", 7, "asynchronous")
    assert type(get_task("cooper/x_task/7")) is type(task)
