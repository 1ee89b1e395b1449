"""Watching runs (issue 11): with and without warm driver processes, a running run answers
as the named actor `run:<run_id>` with phase and round, and the name is gone when the run
ends (no actor leak over a sweep). Real Ray, a real loopback server slow enough to watch."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_many
from tests.platform.test_audit_trail import fenced, turn
from tests.support.chat_server import ChatServer, Reply


def slow_script(request: dict) -> Reply:
    plan = [fenced("broadcast_message hi", "receive_messages"), fenced("receive_messages"), fenced("receive_messages"),
            fenced("submit_result [1, 2]")]
    return Reply(plan[min(turn(request), len(plan) - 1)], hang_s=0.6)


def status_of(ray, name: str) -> dict | None:
    try:
        return ray.get(ray.get_actor(name, namespace="masgrid").status.remote(), timeout=5)
    except (ValueError, ray.exceptions.RayActorError):  # no such actor (yet, or any more)
        return None


@pytest.mark.parametrize("reuse", [True, False])
def test_running_run_answers_by_name_and_is_gone_after(ray_session, tmp_path: Path, reuse: bool) -> None:
    ray = ray_session
    with ChatServer(slow_script) as server:
        cfgs = [RunConfig.from_mapping({
            "task": "sorting", "protocol": "broadcast", "agents": 2, "k": 2, "seed": seed, "backend": "openai",
            "model": {"name": "local_vllm", "base_url": server.base_url, "max_retries": 0},
            "results_dir": str(tmp_path),
            "execution": {"reuse_actors": reuse, "status_actor_after_s": 1.0}}) for seed in (1, 2)]
        summaries: list = []
        sweep = threading.Thread(target=lambda: summaries.extend(run_many(cfgs, max_concurrent=1)))
        sweep.start()
        seen: dict[str, dict] = {}
        while sweep.is_alive():  # watch both runs of the sweep while they execute
            for cfg in cfgs:
                status = status_of(ray, f"run:{cfg.run_id}")
                if status and status["round"] >= 1:
                    seen.setdefault(cfg.run_id, status)
            time.sleep(0.1)
        sweep.join()
    assert [s.status for s in summaries] == ["ok", "ok"], summaries
    assert set(seen) == {c.run_id for c in cfgs}
    assert all(s["phase"] == 1 and 1 <= s["round"] <= 4 for s in seen.values()), seen
    deadline = time.monotonic() + 10
    while any(status_of(ray, f"run:{c.run_id}") is not None for c in cfgs) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(status_of(ray, f"run:{c.run_id}") is None for c in cfgs), "a run's named actor outlived it"


def test_a_short_run_starts_no_process_and_a_longer_one_is_named_with_its_progress(ray_session) -> None:
    import asyncio

    from masgrid._private.platform.run.run_status_actor import RunName

    async def scenario() -> tuple[dict | None, dict | None]:
        short = RunName("short-run", after_s=0.3)
        short.update(1, 1)
        short.close()  # over before it would be named
        longer = RunName("longer-run", after_s=0.0)
        longer.update(2, 5)
        await asyncio.sleep(0.05)  # the timer fires
        longer.update(2, 6)
        await asyncio.sleep(0.5)
        answered = await asyncio.to_thread(status_of, ray_session, "run:longer-run")
        longer.close()
        return answered, await asyncio.to_thread(status_of, ray_session, "run:short-run")

    answered, short = asyncio.run(scenario())
    assert answered == {"phase": 2, "round": 6} and short is None
