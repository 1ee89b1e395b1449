"""An unreliable channel under a real engine (vLLM's CPU build serving the tiny model).

A SIMAS group discussion: every reply of the model is an utterance, so every call makes
channel messages whatever the (noise) text says. Each recorded outcome must equal the draw
recomputed from docs/channel.md, and each listener must have been shown exactly the copies
the channel let through by the end (a lost utterance never, a duplicated one twice).
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.actors.serving.test_real_engine_families import assert_engine_counted, run_on_engine
from tests.envs.test_channel import check_against_draw

pytestmark = pytest.mark.slow

BLOCK = {"loss": 0.4, "delay": 0.3, "duplicate": 0.3, "reorder": 0.3}


def test_group_chat_through_a_lossy_channel(vllm_engine, tmp_path, ray_session) -> None:
    summary, run, events, probes, before, after = run_on_engine(
        vllm_engine, tmp_path, task="simas/mmlu", agents=3, seed=5, channel=BLOCK,
        simas={"subject": "college_physics", "question": 2, "rounds": 2})
    assert run["status"] == "ok" and run["model_errors"] == 0
    assert_engine_counted(events, probes, before, after)
    events = events.sort_values("seq")
    messages = check_against_draw(run, events, BLOCK, 5, on_time=0)
    assert len(messages) == 3 * 2 * 2 and run["channel_lost"] > 0
    # what each agent was shown: the user messages of its history (the sequential schedule records
    # them as observations with their text)
    shown = events[events["kind"] == "observation"].assign(reply=lambda e: e["text"].fillna(""))
    texts = Counter(m["text"] for m in messages)
    checked = 0
    for m in messages:
        if texts[m["text"]] != 2 or len(m["text"].strip()) < 8:  # an utterance said once, to both listeners
            continue
        seen = sum(reply.count(m["text"]) for reply in shown[shown["agent"] == m["to"]]["reply"])
        copies = 0 if m["outcome"] == "lost" else 2 if "duplicated" in m["outcome"] else 1
        assert seen == (copies if copies and shown_by_end(m, rounds=2, answerer=0) else 0), m
        checked += 1
    assert checked >= 6


def shown_by_end(m: dict, rounds: int, answerer: int) -> bool:
    """Whether the listener has a turn after the utterance from its due round on: its turns
    are (round, its id) for rounds 1..T, and the answerer's final turn at T + 1."""
    sender, listener, said_in = m["sender"], m["to"], m["round"]
    first = m["due"] if (m["due"] > said_in or listener > sender) else said_in + 1
    return first <= rounds or listener == answerer
