"""The stand-in's stateless replay gives the scripted policy's exact replies (no Ray)."""

from __future__ import annotations

import asyncio

import pytest

from masgrid._private.actors.backends.scripted import ScriptedBackend
from masgrid._private.actors.serving.standin import AgentTag, StandinCore, StandinError, replay_reply
from masgrid._private.actors.environment import EnvironmentHost
from masgrid._private.envs.tasks import get_task
from masgrid._private.envs.tokens import approx_tokens


@pytest.mark.parametrize("protocol", ["broadcast", "p2p", "kv"])
def test_replay_matches_a_live_policy_turn_by_turn(protocol: str) -> None:
    task = get_task("sorting")
    inst = task.generate(3, 3, 7, mode="random")
    env = EnvironmentHost(protocol, inst)
    views = [task.view(inst, i) for i in range(3)]
    live = [ScriptedBackend(task.scripted_policy(v, protocol, 11 + i), approx_tokens) for i, v in enumerate(views)]
    core = StandinCore()
    histories = [[{"role": "system", "content": task.build_prompt(v, protocol, "base")}] for v in views]
    active = set(range(3))
    for round_no in range(1, 10):
        if not active:
            break
        replies = []
        for i in sorted(active):
            expected = asyncio.run(live[i].complete(histories[i]))
            tag = AgentTag(view=views[i], protocol=protocol, seed=11 + i).model_dump(mode="json")
            answer = asyncio.run(core.chat({"messages": histories[i], "masgrid_agent": tag}))
            assert answer["choices"][0]["message"]["content"] == expected.text
            assert answer["usage"]["prompt_tokens"] == expected.tokens_in
            assert answer["usage"]["completion_tokens"] == expected.tokens_out
            histories[i].append({"role": "assistant", "content": expected.text})
            replies.append((i, expected.text, None))
        outcomes = env.apply_round(round_no, replies)
        for i, records in outcomes.items():
            histories[i] += [{"role": "user", "content": r.reply} for r in records]
            if any(r.submitted is not None for r in records):
                active.discard(i)
    assert not active, "the scripted exchange should finish within a few rounds"


def test_untagged_request_is_refused_with_a_reason() -> None:
    with pytest.raises(StandinError, match="backend=serve"):
        asyncio.run(StandinCore().chat({"messages": [{"role": "user", "content": "hi"}]}))


def test_replay_ignores_the_system_turn() -> None:
    task = get_task("max")
    inst = task.generate(2, 2, 0, mode="asc")
    tag = AgentTag(view=task.view(inst, 0), protocol="broadcast", seed=0)
    first = replay_reply([{"role": "system", "content": "x"}], tag)
    assert "broadcast_message" in first
