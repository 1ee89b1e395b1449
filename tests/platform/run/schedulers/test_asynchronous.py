"""The asynchronous scheduler with real agent hosts and scripted backends: each agent's loop
runs on its own, messages reach the recipient's next step in send order (under randomly
interleaved tool latencies), the action cap stops a loop, calls after finish or past the
cap get a "not executed" result, every event carries its time.

The task here is a small stand-in with the hooks the scheduler asks of CooperBench's
(tools, limits, texts, a session); its session's one tool sleeps a random few ms, which
is what interleaves the loops. The full CooperBench path is tests/families/cooper/test_cooper_runs.py.
"""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace
from typing import Any

import pytest

from masgrid._private.actors.agent_host import AgentHost, AgentSetup, HostSpec
from masgrid._private.actors.backends import BackendSettings
from masgrid._private.envs.policies import ScriptedPolicy
from masgrid._private.envs.tasks import AgentView, Instance, Score, Task, register_task
from masgrid._private.envs.tool_calls import ToolCall, ToolReply
from masgrid._private.platform.run.ports import AgentPoolClient, Port
from masgrid._private.platform.run.schedulers import PhaseContext, get_scheduler

TOOLS = [{"type": "function", "function": {"name": n, "description": n, "parameters": {"type": "object"}}}
         for n in ("wait", "send_message", "finish", "explode")]


class Talker(ScriptedPolicy):
    """Agent 0 sends `sends` numbered messages, every other step, then finishes; the others wait
    (one `wait` call a step) and write down every teammate message they read, until they
    have read all of them, then finish. `extra` calls are appended to one reply to test
    the after-finish and cap handling."""

    def __init__(self, view: AgentView, protocol: str, seed: int) -> None:
        super().__init__(view, protocol, seed)
        self.p = view.params
        self.sent = 0
        self.read: list[str] = []
        self.steps = 0

    def act(self, observations: list[str]) -> Any:
        self.steps += 1
        self.read += [o for o in observations if o.startswith("<teammate_message>")]
        mode = self.p["mode"]
        if mode == "burst":  # every call in one reply: cap and after-finish handling
            calls = [ToolCall.of("wait", {}) for _ in range(self.p["burst"])] + [ToolCall.of("finish", {"status": "done"}),
                                                                               ToolCall.of("wait", {})]
            return ToolReply(tool_calls=calls)
        if mode == "silent":
            return ToolReply(text="thinking aloud, no tool")
        if mode == "broken" and self.view.agent == 0:
            raise RuntimeError("policy bug")
        if mode == "crash" and self.view.agent == 0 and self.steps == 3:
            return ToolReply(tool_calls=[ToolCall.of("explode", {})])
        if self.view.agent == 0:
            if self.steps % 2:  # a (randomly slow) tool between sends: the loops interleave
                return ToolReply(tool_calls=[ToolCall.of("wait", {})])
            if self.sent < self.p["sends"]:
                self.sent += 1
                return ToolReply(tool_calls=[ToolCall.of("send_message", {"to": "agent_2", "content": f"m{self.sent}"})])
            return ToolReply(tool_calls=[ToolCall.of("finish", {"status": "done", "summary": "sent"})])
        if len(self.read) >= self.p["sends"]:
            return ToolReply(tool_calls=[ToolCall.of("finish", {"status": "done", "summary": "|".join(self.read)})])
        return ToolReply(tool_calls=[ToolCall.of("wait", {})])


SESSIONS: list[Any] = []


class SleepySession:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.closed = False
        self.calls: list[int] = []

    async def call(self, agent: int, name: str, arguments: dict[str, Any]) -> Any:
        if name == "explode":
            raise OSError("the workspace disk is gone")
        self.calls.append(agent)
        await asyncio.sleep(self.rng.random() * 0.004)
        return SimpleNamespace(ok=True, text="waited")

    def patch(self, agent: int) -> str:
        return ""

    def close(self) -> None:
        self.closed = True


@register_task
class AsyncEcho(Task):
    name = "test/async_echo"
    family = "test"
    schedule = "asynchronous"

    def generate(self, agents: int, k: int, mode: str | None, seed: int, **extra: Any) -> Instance:
        return Instance(task=self.name, params=dict(extra), inputs=[None] * agents, expected=[None] * agents)

    def build_prompt(self, view: AgentView, protocol: str, condition: str) -> str:
        return "system"

    def parse_answer(self, instance: Instance, agent: int, raw: str) -> Any:
        return raw

    def score(self, instance: Instance, answers: list[Any]) -> Score:
        return Score(success=None, correct=[None] * len(answers), partial=[None] * len(answers))

    def scripted_policy(self, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy:
        return Talker(view, protocol, seed)

    def phases(self, condition: str) -> int:
        return 2

    # the hooks of the asynchronous scheduler
    def open_session(self, instance: Instance) -> SleepySession:
        SESSIONS.append(SleepySession(instance.params.get("seed_", 0)))
        return SESSIONS[-1]

    def phase_tools(self, instance: Instance, phase: int) -> list[dict[str, Any]]:
        return TOOLS

    def phase_limits(self, instance: Instance, phase: int) -> dict[str, Any]:
        return {"actions": instance.params["cap"], "messages": None}

    @staticmethod
    def harness_text(key: str, **values: Any) -> str:
        return f"<{key}> " + " ".join(f"{k}={v}" for k, v in sorted(values.items()))

    @staticmethod
    def check_arguments(name: str, arguments: dict[str, Any]) -> str | None:
        return None

    @staticmethod
    def agent_name(agent: int) -> str:
        return f"agent_{agent + 1}"


async def run_phase(n: int, phase: int = 1, **params: Any) -> tuple[Any, list[dict[str, Any]]]:
    task = AsyncEcho()
    instance = Instance(task=task.name, params={"seed_": 0, **params}, inputs=[None] * n, expected=[None] * n)
    host = AgentHost(HostSpec(backend="scripted", settings=BackendSettings(), protocol="broadcast", seed=0))
    views = {i: AgentView(agent=i, n_agents=n, task=task.name, params=instance.params, local_input=None, phase=phase)
             for i in range(n)}
    await host.start_phase({i: AgentSetup(view=v, system_prompt="system") for i, v in views.items()})
    pool = AgentPoolClient([Port(host, remote=False)], [0] * n, None)
    rows: list[dict[str, Any]] = []

    async def record_step(phase: int, step: int, agent: int, started: Any, completion: Any, before: list, after: list) -> None:
        if completion is not None:
            rows.append({"kind": "model_call", "agent": agent, "round": step, "t": started})
        rows.extend({**r, "agent": agent, "round": step} for r in before + after)

    async def on_round(*_: Any) -> None:
        raise AssertionError("the asynchronous scheduler records through record_step only")

    scheduler = get_scheduler("asynchronous")
    SESSIONS.clear()
    ctx = PhaseContext(phase=phase, n_agents=n, max_rounds=100, agents=pool, env=None, on_round=on_round,
                       task=task, instance=instance, record_step=record_step)
    result = await scheduler.run_phase(ctx)
    return SimpleNamespace(result=result, host=host), rows


@pytest.mark.parametrize("seed", range(8))
def test_messages_arrive_in_send_order_at_the_next_step(seed: int) -> None:
    sends = 6
    out, rows = asyncio.run(run_phase(2, seed_=seed, mode="talk", sends=sends, cap=100))
    subs = out.result.submissions
    # agent_2 read every message exactly once, in the order sent
    assert subs[1]["plan"] == "|".join(f"<teammate_message> content=m{k} sender=agent_1" for k in range(1, sends + 1))
    assert subs[0]["messages"] == sends and subs[1]["messages"] == 0
    assert subs[1]["finish"] == "done" and not subs[1]["capped"]
    sent = [r for r in rows if r["kind"] == "message"]
    delivered = [r for r in rows if r["kind"] == "delivery"]
    assert [r["text"] for r in sent] == [f"m{k}" for k in range(1, sends + 1)]
    assert [r["peers"] for r in sent] == [[1]] * sends and [r["peers"] for r in delivered] == [[0]] * sends
    # each delivery is recorded with the step that read it, never before its send
    for s, d in zip(sent, delivered):
        assert d["t"] >= s["t"]
    assert len({d["round"] for d in delivered}) > 1  # the loops interleaved: read over several steps
    # the recipient's history holds the messages as user turns, before its next model call
    history = out.host.history(1)
    user = [m["content"] for m in history if m["role"] == "user" and m["content"].startswith("<teammate")]
    assert len(user) == sends
    assert all(isinstance(r["t"], float) for r in rows)


def test_action_cap_and_calls_after_finish() -> None:
    out, rows = asyncio.run(run_phase(1, mode="burst", burst=5, cap=3))
    (sub,) = out.result.submissions
    assert sub["actions"] == 3 and sub["finish"] is None and sub["capped"] is True
    results = [r for r in rows if r["kind"] == "tool_result"]
    assert [r["ok"] for r in results] == [True, True, True, False, False, False, False]
    assert all("cap_reached" in r["reply"] for r in results[3:])
    # every call of the reply got its tool result, as the chat format requires
    turn = next(m for m in out.host.history(0) if m["role"] == "assistant")
    assert len(turn["tool_calls"]) == len(results) == 7

    out, rows = asyncio.run(run_phase(1, mode="burst", burst=2, cap=10))
    (sub,) = out.result.submissions
    assert sub["actions"] == 3 and sub["finish"] == "done" and not sub["capped"]
    last = [r for r in rows if r["kind"] == "tool_result"][-1]
    assert not last["ok"] and "after_finish" in last["reply"]


def test_replies_without_tool_calls_count_and_end_at_the_cap() -> None:
    out, rows = asyncio.run(run_phase(2, mode="silent", cap=4))
    for sub in out.result.submissions:
        assert sub["actions"] == 4 and sub["steps"] == 4 and sub["capped"]
    assert sum(r["kind"] == "harness" and r.get("verb") == "no_tool_call" for r in rows) == 8


def test_failed_model_calls_stop_one_agent_not_the_other() -> None:
    out, rows = asyncio.run(run_phase(2, mode="broken", sends=0, cap=50))
    broken, other = out.result.submissions
    assert broken["stopped"] and broken["actions"] == 3 and broken["steps"] == 3 and broken["finish"] is None
    assert other["finish"] == "done" and not other["stopped"]


def test_a_failing_loop_stops_the_others_and_closes_the_session() -> None:
    async def scenario() -> tuple[int, int]:
        with pytest.raises(OSError, match="disk is gone"):
            await asyncio.wait_for(run_phase(2, phase=2, mode="crash", sends=10**6, cap=10**6), 10)
        before = len(SESSIONS[0].calls)
        await asyncio.sleep(0.05)  # in the same event loop: a loop left running would go on calling tools
        return before, len(SESSIONS[0].calls)

    before, after = asyncio.run(scenario())
    assert SESSIONS[0].closed and before == after


def test_each_schedule_declares_what_it_needs_from_the_driver() -> None:
    """The driver asks the schedule (steps_agents, counts_message_tokens, routes_messages)
    instead of testing its name: only the asynchronous schedule asks for all three."""
    from masgrid._private.platform.run.schedulers import SCHEDULERS, scheduler_class

    needs = {name: (scheduler_class(name).steps_agents, scheduler_class(name).counts_message_tokens,
                    scheduler_class(name).routes_messages, scheduler_class(name).placement,
                    scheduler_class(name).packs_in_driver) for name in ("lockstep", "sequential", "asynchronous")}
    assert needs == {"lockstep": (False, False, False, "actors", True),
                     "sequential": (False, False, False, "driver", True),
                     "asynchronous": (True, True, True, "actors", False)}
    assert "local_rounds" in SCHEDULERS.names() and not scheduler_class("local_rounds").steps_agents


def test_a_task_without_the_tool_loop_hooks_is_refused_in_one_line() -> None:
    async def record(*_: Any) -> None:
        return None

    async def on_round(*_: Any) -> None:
        return None

    class Plain(SimpleNamespace):
        name = "plain/task"

        def phase_count(self, instance: Any, condition: str) -> int:
            return 1

    ctx = PhaseContext(phase=1, n_agents=2, max_rounds=3, agents=None, env=None, on_round=on_round,  # type: ignore[arg-type]
                       task=Plain(), instance=Instance(task="plain/task", params={}, inputs=[1, 2], expected=[3, 3]),
                       record_step=record)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="task 'plain/task' cannot run on the asynchronous schedule: it lacks "
                                        "open_session, phase_tools, phase_limits, harness_text, agent_name, check_arguments"):
        asyncio.run(get_scheduler("asynchronous").run_phase(ctx))
