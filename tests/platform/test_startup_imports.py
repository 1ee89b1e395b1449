"""Regression guard for the time to the first round (not a timed test): what the `masgrid run`
process imports before it hands a run to Ray. Each of these libraries cost 0.1-0.6 s of
start-up (docs/performance-startup.md) and none is needed there: pyarrow (and numpy with it)
belongs to the recorder, pandas to analysis and resume, FastAPI to the serving stand-in,
networkx and numpy to AgentsNet graphs, which only an AgentsNet run's prompt fingerprint
needs (its prompts name the graph's agents)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pandas", "networkx", "numpy", "scipy", "pyarrow", "fastapi", "starlette")

SCRIPT = """
import json, sys
from masgrid._private.platform.cluster import head
from masgrid._private.platform.commands import cli
from masgrid._private.platform.run import summary
from masgrid._private.platform.sweeps import preflight, ray_runs, warm
from masgrid._private.platform.sweeps.sweep import split_job_config
cfg, _ = split_job_config(cli._compose_once(%r))  # what _execute_run does before Ray starts
cfg.render_prompt_hash()
print(json.dumps(sorted(m for m in %r if m in sys.modules)))
"""


@pytest.mark.parametrize("overrides, allowed", [
    (["agents=3"], []),
    (["task=silo/I-01", "protocol=kv", "agents=4"], []),
    (["task=simas/mmlu", "protocol=groupchat", "agents=4", "simas.subject=college_physics"], []),
    (["task=agentsnet/coloring", "protocol=local", "graph=ws", "agents=8"], ["networkx", "numpy"]),
])
def test_a_single_runs_command_process_imports_no_heavy_library(overrides, allowed):
    out = subprocess.run([sys.executable, "-c", SCRIPT % (overrides, HEAVY)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == allowed
