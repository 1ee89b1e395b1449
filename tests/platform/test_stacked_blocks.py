"""The driver counts blocks that broke one command per block (issue 14, item 3)."""

from __future__ import annotations

from masgrid._private.actors.backends import Completion
from masgrid._private.actors.environment import EnvironmentHost
from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.run.driver import RunLog


def block(text: str) -> str:
    return f"```\n{text}\n```"


def test_run_log_counts_stacked_blocks_and_writes_their_events():
    """The driver's counter (run metric and agents column stacked_blocks) and the events rows."""
    env = EnvironmentHost("broadcast", get_task("sorting").generate(2, 2, 0, mode="random"))
    replies = {0: block("wait\nlist_agents") + "\n" + block("broadcast_message hi\nreceive_messages"),
               1: block("receive_messages")}
    records = env.apply_round(1, [(i, text, None) for i, text in replies.items()])
    log = RunLog("r", {}, 2)
    log.record_round(1, 1, {i: Completion(text=t, tokens_out=1) for i, t in replies.items()}, records)
    assert [s.stacked_blocks for s in log.stats] == [2, 0]
    rows = [(r["agent"], r["kind"], r["verb"]) for r in log.pending if r["kind"] in ("command", "harness")]
    assert rows == [(0, "harness", "stacked"), (0, "command", "wait"), (0, "command", "list_agents"),
                    (0, "harness", "stacked"), (0, "command", "broadcast_message"),
                    (0, "command", "receive_messages"), (1, "command", "receive_messages")]
    assert [s.command_errors for s in log.stats] == [0, 0]
