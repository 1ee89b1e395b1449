"""RunConfig is plain validated data: every field's final value comes out of its own
validation (k and execution from the validated task, agents from the family's options on the
input), and the checks across fields assign nothing."""

from __future__ import annotations

import ast
import inspect
import random

import pytest

from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.run import config as config_module
from masgrid._private.platform.run.config import ConfigError, ExecutionSettings, RunConfig

TASKS = ["sorting", "agentsnet/coloring", "agentsnet/matching", "silo/I-01", "silo/II-11", "simas/ekar"]


def field_assignments(tree: ast.AST) -> list[str]:
    """`validator: self.<field>` for every assignment to a RunConfig field inside a function
    decorated as a pydantic validator."""
    fields = set(RunConfig.model_fields)
    assigned = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", "") in ("model_validator", "field_validator")
                for d in node.decorator_list):
            for sub in ast.walk(node):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target] if isinstance(
                    sub, (ast.AugAssign, ast.AnnAssign)) else []
                assigned += [f"{node.name}: self.{t.attr}" for t in targets
                             if isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "self"
                             and t.attr in fields]
    return assigned


def test_no_validator_assigns_a_field():
    """Only derived private data (the resolved team) may be kept on the instance."""
    assert field_assignments(ast.parse(inspect.getsource(config_module))) == []


def test_the_checker_catches_an_assignment():
    source = ("@model_validator(mode='after')\ndef v(self):\n    self.k = 3\n    self._team = None\n"
              "@field_validator('k')\ndef w(cls, value):\n    self.agents += 1\n")
    assert field_assignments(ast.parse(source)) == ["v: self.k", "w: self.agents"]


@pytest.mark.parametrize("seed", range(60))
def test_resolved_fields_match_a_separate_computation(seed):
    rng = random.Random(seed)
    task_name = rng.choice(TASKS)  # built-in families: always installed
    task = get_task(task_name)
    data: dict = {"task": task_name, "seed": rng.randrange(1000)}
    if task_name.startswith("agentsnet/"):
        data["graph"] = rng.choice(["ws", "ba", "dt"])  # AgentsNet needs a graph model
    k = rng.choice([None, None, 1, 2, 3])
    if k is not None:
        data["k"] = k
    execution = {key: rng.choice(values) for key, values in
                 {"components": ["auto", "actors", "driver"], "runs_per_driver": [None, 1, 2, 4],
                  "status_actor_after_s": ["auto", None, 5.0]}.items() if rng.random() < 0.5}
    if execution:
        data["execution"] = execution
    try:
        expected = ExecutionSettings(**execution).resolved(task.schedule)
    except ValueError as exc:  # e.g. runs_per_driver > 1 with components=actors: refused as the config's
        words = str(exc).split("[type=")[0].split("Value error, ")[-1].strip()
        with pytest.raises(ConfigError) as refused:
            RunConfig.from_mapping(data)
        assert words.removeprefix("execution.").split(" (")[0] in str(refused.value)
        return
    cfg = RunConfig.from_mapping(data)
    assert cfg.k == (k if k is not None else task.default_k)
    assert cfg.execution == expected
    assert cfg.execution.components in ("actors", "driver") and cfg.execution.runs_per_driver is not None
    # validating the validated config again changes nothing
    again = RunConfig.model_validate(cfg.model_dump())
    assert again.model_dump() == cfg.model_dump() and again.run_id == cfg.run_id


def test_cooperbench_derives_agents_from_its_options_on_the_input():
    if "cooper" not in RunConfig.model_fields:
        pytest.skip("CooperBench is not installed")
    derive = config_module._agents_from_family_options
    task = "cooper/textkit_task/1"  # the name only: the step reads no dataset
    for features, setting, expected in (([1, 2], "coop", 2), ([1, 2, 3], "nocomm", 3), ([4, 5], "solo", 1)):
        out = derive({"task": task, "agents": 7, "cooper": {"features": features, "setting": setting}})
        assert out["agents"] == expected
    # an invalid block is left for the field's own validation to name
    bad = {"task": task, "agents": 7, "cooper": {"setting": "crowd"}}
    assert derive(bad) is bad

