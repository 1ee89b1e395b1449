"""Synchronous LOCAL rounds with a final-answer call (AgentsNet Algorithm 1, appendix A).

Every agent is called in every round; nobody stops early (there is no submit_result).
Calls 1..T ask for messages, each reply validated by the agent host with one retry; the
protocol delivers round r's messages as round r + 1's user message. Call T + 1 asks for
the final answer. `ctx.max_rounds` is T + 1 (the task's `round_limit`). An agent whose call
the server refused for good (`Completion.final`) is not called again: it stays silent and
gives no final answer.
"""

from __future__ import annotations

from masgrid.families.agentsnet.local_protocol import EXPECT_FINAL, EXPECT_MESSAGES
from masgrid.sdk.schedules import PhaseContext, PhaseResult, Scheduler, register_scheduler


@register_scheduler
class LocalRoundsScheduler(Scheduler):
    name = "local_rounds"

    async def run_phase(self, ctx: PhaseContext) -> PhaseResult:
        n = ctx.n_agents
        calls = ctx.max_rounds
        submissions: list = [None] * n
        opening = await ctx.env.opening()
        pending: dict[int, list[str]] = {i: list(opening.get(i, [])) for i in range(n)}
        stopped: set[int] = set()
        for round_no in range(1, calls + 1):
            expect = EXPECT_FINAL if round_no == calls else EXPECT_MESSAGES
            active = [i for i in range(n) if i not in stopped]
            completions = await ctx.agents.step({i: pending[i] for i in active}, expect) if active else {}
            stopped.update(i for i in active if completions[i].final)
            replies = [(i, completions[i].text, completions[i].error) for i in active]
            outcomes = await ctx.env.apply_round(round_no, replies)
            for i in active:
                records = outcomes.get(i, [])
                pending[i] = [o.reply for o in records if o.kind == "delivery"]
                for o in records:
                    if o.submitted is not None:
                        submissions[i] = o.submitted
            await ctx.on_round(ctx.phase, round_no, completions, outcomes)
        return PhaseResult(rounds=calls, submissions=submissions, calls_per_agent=[calls] * n)
