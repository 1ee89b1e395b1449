"""One small run per benchmark family under `execution.executor=ray` (driver and hosts in Ray
workers, which import only what they are asked for), the same with `execution.components=driver`
(environment and hosts inside the Ray driver) and `execution.executor=local` (one process):
the events tables must be identical apart from ids, timestamps and durations.

The SIMAS run generates its profiles through a loopback chat server whose first profile
reply is malformed: both executors must retry it once and use the corrected profiles. Before
the registries resolved names through their provider tables, a Ray agent host that had not
imported the SIMAS package saw no `groupchat` validator and went to the pool at once (11
calls against 12 here)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from collections.abc import Callable

import pandas as pd
import pyarrow.parquet as pq
import pytest

from masgrid.families.cooper.sandbox import sandbox_problem
from masgrid.families.cooper.synthetic import write_synthetic_pool
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from masgrid._private.platform.results.recorder import partition_dir
from tests.support.chat_server import ChatServer, Reply

ROOT = Path(__file__).resolve().parents[2]

#: differ between two executions of the same run by construction
VOLATILE = ("run_id", "time", "call_started", "latency_s", "t")

SPEAKER = re.compile(r"You are (Agent_\d+), the")
PROFILES = [{"personality": f"Calm-{i}", "belief": f"Check twice {i}", "expertise": f"Optics {i}"} for i in range(3)]


class SimasScript:
    """Profile generator: a malformed reply, then a valid one; discussion turns name the
    speaker and its turn; the final answer is B. Deterministic per request."""

    def __call__(self, request: dict) -> Reply:
        messages = request["messages"]
        system = messages[0]["content"]
        if system.startswith("You set up a panel"):
            first = sum(m["role"] == "assistant" for m in messages) == 0
            return Reply(text="not json at all" if first else json.dumps(PROFILES))
        name = SPEAKER.search(system).group(1)
        if "The discussion is over" in messages[-1]["content"]:
            return Reply(text="Final answer: B")
        return Reply(text=f"I am {name}, turn {sum(m['role'] == 'assistant' for m in messages)}. My answer: B")


#: what an agent of the asynchronous schedule decided (its tool calls, messages, plans)
OWN = ("action", "message", "plan", "finish")


def comparable(results: Path, per_agent: bool = False) -> pd.DataFrame:
    """The events in order.

    `per_agent` is for the asynchronous schedule (CooperBench), whose agents interleave by
    wall-clock timing, and that differs between executors by design: in one process a
    scripted agent can finish before its teammate starts, while on Ray both run at once. So
    whether a message reaches a teammate before it finishes (the send's reply, the delivery,
    the receiver's prompt tokens) is timing, not the executor's doing. Then: what each agent
    did (its actions, messages, plans, finish), in its own order."""
    events = pd.read_parquet(results / "events").sort_values("seq").reset_index(drop=True)
    events = events.drop(columns=[c for c in VOLATILE if c in events.columns])
    if per_agent:
        events = events[events["kind"].isin(OWN)].sort_values(["phase", "agent", "seq"], kind="stable")
        events = events[["phase", "agent", "round", "kind", "verb", "tool", "text", "peers"]].reset_index(drop=True)
    return events


def run_row(cfg: RunConfig) -> dict:
    path = partition_dir(Path(cfg.results_dir), "runs", cfg.partition) / f"part-{cfg.run_id}.parquet"
    return pq.read_table(path).to_pylist()[0]


#: how a run executes: its components as Ray actors, inside its Ray driver
#: (`execution.components=driver`), or everything in this process
EXECUTIONS = {"ray": {"executor": "ray", "components": "actors"}, "driver": {"executor": "ray", "components": "driver"},
              "local": {"executor": "local"}}


def both(make: Callable[[str, Path], RunConfig], tmp_path: Path, per_agent: bool = False) -> tuple[dict, dict]:
    """Run the same config under each execution; assert equal events; return the Ray and local run rows."""
    rows = {}
    for executor in EXECUTIONS:
        cfg = make(executor, tmp_path / executor)
        summary = run_one(cfg)
        assert summary.status == "ok", (executor, summary.error)
        rows[executor] = run_row(cfg)
    events = {ex: comparable(tmp_path / ex, per_agent) for ex in EXECUTIONS}
    assert len(events["local"]) > 0
    pd.testing.assert_frame_equal(events["ray"], events["local"])
    pd.testing.assert_frame_equal(events["driver"], events["local"])
    if not per_agent:  # the asynchronous schedule's prompt tokens depend on when messages arrive (above)
        metrics = [k for k in rows["ray"] if k in ("model_calls", "tokens_in", "tokens_out", "rounds", "success", "sr")]
        assert {k: rows["driver"][k] for k in metrics} == {k: rows["ray"][k] for k in metrics}
    return rows["ray"], rows["local"]


def cfg(results: Path, executor: str, **data: object) -> RunConfig:
    return RunConfig.from_mapping({"results_dir": str(results), "seed": 2, "execution": EXECUTIONS[executor],
                                   **data})


def test_masbench_sorting(ray_session, tmp_path: Path) -> None:
    ray_row, local_row = both(lambda ex, out: cfg(out, ex, task="sorting", protocol="kv", agents=4, k=3), tmp_path)
    assert ray_row["success"] == local_row["success"]


def test_silo_one_task(ray_session, tmp_path: Path) -> None:
    both(lambda ex, out: cfg(out, ex, task="silo/I-09", protocol="p2p", agents=4), tmp_path)


def test_agentsnet_one_problem(ray_session, tmp_path: Path) -> None:
    both(lambda ex, out: cfg(out, ex, task="agentsnet/coloring", protocol="local", agents=5, graph="ba"), tmp_path)


def test_simas_profile_retry(ray_session, tmp_path: Path) -> None:
    with ChatServer(SimasScript()) as server:
        def make(ex: str, out: Path) -> RunConfig:
            return cfg(out, ex, task="simas/mmlu", protocol="groupchat", agents=3, backend="openai", preflight=False,
                       model={"name": "test", "base_url": server.base_url, "max_retries": 0},
                       simas={"subject": "college_physics", "question": 2, "rounds": 1, "profiles": "generate"})
        ray_row, local_row = both(make, tmp_path)
    # the malformed reply was retried under both executors: 2 profile calls + n*T + 1
    for row in (ray_row, local_row):
        assert row["profiles_source"] == "generated"
        assert row["model_calls"] == 2 + 3 * 1 + 1


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                    reason="git is needed to build the synthetic CooperBench pool")
def test_cooper_synthetic(ray_session, tmp_path: Path) -> None:
    written = write_synthetic_pool(tmp_path / "pool")
    pair = [int(x) for x in next(k for k, v in sorted(written.expected.items()) if v == "clean").split(",")]

    def make(ex: str, out: Path) -> RunConfig:
        return cfg(out, ex, task=f"cooper/{written.pool}/{written.task_id}", protocol="workspace",
                   cooper={"features": pair, "data_dir": str(written.data_dir), "repos_dir": str(written.repos_dir),
                           "cache_dir": str(tmp_path / "cache"),
                           "sandbox": "bwrap" if sandbox_problem() is None else "none"})
    ray_row, local_row = both(make, tmp_path, per_agent=True)
    assert (ray_row["merge_stage"], ray_row["success"]) == (local_row["merge_stage"], local_row["success"]) == ("naive", True)


def test_registries_answer_in_a_fresh_process() -> None:
    """A process that imported nothing of the families still resolves every name, and an
    unknown name is a KeyError that lists the known ones."""
    code = """
from masgrid._private.envs.protocols import PROTOCOLS, get_protocol
validator = get_protocol("groupchat").reply_validator
assert validator is not None and PROTOCOLS.get("groupchat") is not None
assert get_protocol("workspace").name == "workspace"
from masgrid._private.platform.run.schedulers.base import get_scheduler
assert get_scheduler("sequential").name == "sequential"
from masgrid._private.actors.backends import _FACTORIES
assert _FACTORIES["serve"] is not None
from masgrid._private.envs.tasks import get_task
assert get_task("simas/ekar").name == "simas/ekar"
for lookup in (get_protocol, get_scheduler, get_task, _FACTORIES.__getitem__):
    try:
        lookup("nope")
    except KeyError as exc:
        assert "nope" in str(exc) and "known:" in str(exc), str(exc)
    else:
        raise AssertionError(lookup)
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_every_provider_registers_its_names() -> None:
    from masgrid._private.actors.backends import _FACTORIES
    from masgrid._private.envs.protocols import PROTOCOLS
    from masgrid._private.envs.tasks import task_names
    from masgrid.family import families
    from masgrid._private.platform.run.schedulers.base import SCHEDULERS

    for registry in (PROTOCOLS, SCHEDULERS, _FACTORIES):
        assert set(registry.providers) == set(registry.names()), registry.kind
    names = task_names()
    for family in families().values():  # every family's claimed names exist (data-named prefixes excepted)
        claimed = [n for n in names if family.claims(n)]
        assert claimed or family.name == "cooper", family.name
        assert set(family.task_names) <= set(names), family.name
