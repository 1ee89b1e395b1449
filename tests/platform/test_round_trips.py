"""Issue 18 regression guard: a round's cost must not grow with the conversation.

A run's components talk through ports (Ray actor calls in a real run); the trace counts
those round trips and the pickled bytes each one carries. Against a loopback server whose
agents keep writing and reading a shared file, a 4-round and a 16-round run must make the
same round trips per round, and what a round ships to the agent hosts, to the environment
and back must stay flat while the histories the hosts keep grow every round: only new
observations cross to a host, never a history. Counts and sizes, not timings.
"""

from __future__ import annotations

from pathlib import Path

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from masgrid._private.platform.run.ports import PortTrace, trace_ports
from tests.support.chat_server import ChatServer, Reply

REPLY = "```\nwrite_file shared/notes.txt\nvalues so far: 1 2 3\n```\n```\nread_file shared/notes.txt\n```"


def traced_run(tmp: Path, rounds: int) -> tuple[PortTrace, list[dict]]:
    with ChatServer(lambda request: Reply(REPLY)) as server, trace_ports() as trace:
        cfg = RunConfig.from_mapping({
            "task": "sorting", "protocol": "kv", "agents": 4, "k": 3, "max_rounds": rounds, "seed": 1,
            "backend": "openai", "preflight": False,
            "model": {"name": "local_vllm", "base_url": server.base_url, "max_retries": 0, "http_client": "direct"},
            "results_dir": str(tmp / f"r{rounds}"),
            "execution": {"executor": "local", "agents_per_actor": 2}})
        summary = run_one(cfg)
        assert summary.status == "ok", summary.error
        assert summary.rounds == rounds  # nobody submits: every run lasts its round budget
        return trace, list(server.requests)


def per_round(trace: PortTrace, rounds: int) -> dict[str, float]:
    return {method: n / rounds for method, n in trace.calls.items() if method in ("step", "apply_round")}


def test_round_trips_and_bytes_per_round_do_not_grow_with_the_history(tmp_path):
    short, _ = traced_run(tmp_path, 4)
    long, requests = traced_run(tmp_path, 16)

    # the same round trips per round: one step per host (2 hosts), one apply_round
    assert per_round(short, 4) == per_round(long, 16) == {"step": 2.0, "apply_round": 1.0}
    # event chunks: one per 10 rounds and one at the phase end, however long the histories
    assert long.calls["write_events"] <= 16 // 10 + 2

    # the histories the server receives grow every round ...
    sizes = [sum(len(m["content"]) for m in r["messages"]) for r in requests if "messages" in r]
    assert sizes[-1] > 1.5 * sizes[3]
    # ... but what crosses between components per round does not
    for method in ("step", "apply_round"):
        for direction in ("sent", "returned"):
            series = getattr(long, direction)[method]
            early, late = series[2:6], series[-4:]  # rounds 2..3 against the last two (2 steps a round)
            assert max(late) <= 1.25 * max(early), (method, direction, early, late)


def test_a_run_generates_its_instance_once(tmp_path, monkeypatch):
    """Set-up inside the run is paid per run: the driver renders its prompt check from the
    instance it runs, instead of generating the instance a second time (a count, not a time)."""
    from masgrid._private.envs.tasks import get_task

    cfg = RunConfig.from_mapping({"task": "agentsnet/consensus", "protocol": "local", "agents": 12, "graph": "ws",
                                  "seed": 3, "results_dir": str(tmp_path), "execution": {"executor": "local"}})
    cfg.run_id  # the planner's identity (its prompt hash) is computed before the run, as in a sweep
    task_cls = type(get_task(cfg.task))
    generated: list[int] = []
    real = task_cls.generate

    def counting(self, *args, **kwargs):
        generated.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(task_cls, "generate", counting)
    summary = run_one(cfg)
    assert summary.status == "ok", summary.error
    assert len(generated) == 1
