"""A small results directory holding every family the report site shows, plus a degraded
run: MAS-Bench sorting (2 protocols), SILO, AgentsNet (coloring, matching, and a vertex-cover
run whose seventh model call fails with HTTP 500 against a loopback chat server), SIMAS,
CooperBench (a pair of the synthetic pool that conflicts and is merged by the union stage, and
the pair union breaks, fixed by an LLM resolver answering from a loopback chat server).
All runs execute in-process (executor local, no Ray) with scripted agents."""

from __future__ import annotations

import itertools
import re
import threading
from pathlib import Path

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from tests.support.chat_server import ChatServer, Reply
from tests.support.resolver_server import correct


def _config(root: Path, **fields: object) -> RunConfig:
    return RunConfig.from_mapping(dict(results_dir=str(root), execution={"executor": "local"}, **fields))


def _failing_seventh_call() -> object:
    """AgentsNet replies naming a neighbour; request 7 answers HTTP 500 (a degraded run)."""
    counter, lock = itertools.count(1), threading.Lock()

    def script(request: dict) -> Reply:
        with lock:
            number = next(counter)
        if number == 7:
            return Reply(status=500, text="overloaded")
        system, last = request["messages"][0]["content"], request["messages"][-1]["content"]
        if "### Final Answer ###" in last or "final answer" in last:
            return Reply("Done. ### Final Answer ### Yes")
        nb = re.search(r"Your neighbours are: ([\w-]+)", system).group(1)
        return Reply(f'{{"{nb}": "hello"}}')

    return script


def build_results(root: Path) -> Path:
    """Write the runs under `root` and return it."""
    scripted = [
        dict(task="sorting", protocol="broadcast", agents=3, k=2, seed=0, experiment="ui", tags=["demo"]),
        dict(task="sorting", protocol="p2p", agents=3, k=2, seed=1, experiment="ui", tags=["demo"]),
        dict(task="sorting", protocol="kv", agents=2, k=2, seed=2, experiment="ui"),
        dict(task="silo/I-01", protocol="p2p", agents=3, seed=0, experiment="ui-silo"),
        dict(task="agentsnet/coloring", protocol="local", agents=5, graph="ws", seed=0),
        dict(task="agentsnet/matching", protocol="local", agents=4, graph="ws", seed=0),
        dict(task="simas/mmlu", protocol="groupchat", agents=3,
             simas={"subject": "college_physics", "profiles": "pool", "question": 2}),
        dict(task="cooper/textkit_task/1", protocol="workspace", seed=0, cooper={"features": [4, 5]}),
    ]
    for fields in scripted:
        summary = run_local(_config(root, **fields))
        assert summary.status == "ok", (fields, summary.error)
    with ChatServer(_failing_seventh_call()) as server:
        summary = run_local(_config(root, task="agentsnet/vertex_cover", protocol="local", agents=4, graph="ba",
                                    seed=1, backend="openai", preflight=False,
                                    model={"name": "h", "base_url": server.base_url, "max_retries": 0}))
    assert summary.status == "degraded", summary.error
    with ChatServer(correct, models=("merge-resolver",)) as server:
        summary = run_local(_config(root, task="cooper/textkit_task/1", protocol="workspace", seed=0, cooper={
            "features": [1, 2], "resolver": "llm",
            "resolver_model": {"name": "merge-resolver", "base_url": server.base_url, "max_retries": 0}}))
    assert summary.status == "ok", summary.error
    return root
