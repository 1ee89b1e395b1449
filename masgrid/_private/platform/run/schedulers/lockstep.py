"""Lockstep rounds (MAS-Bench Algorithm 2 STEPBENCH; SILO-Bench A.5; AgentsNet Alg. 1).

Each round: every agent that has not submitted generates in parallel; then the replies
are applied to the environment in agent-id order; their results reach the agents with
their next call. Nothing written in round r is seen by any model call before r + 1.
An agent whose call the server refused for good (`Completion.final`, e.g. the prompt no
longer fits the context) is not called again in the phase and counts as not submitted.
"""

from __future__ import annotations

from masgrid._private.platform.run.schedulers.base import PhaseContext, PhaseResult, Scheduler, register_scheduler


@register_scheduler
class LockstepScheduler(Scheduler):
    name = "lockstep"

    async def run_phase(self, ctx: PhaseContext) -> PhaseResult:
        submissions: list = [None] * ctx.n_agents
        pending: dict[int, list[str]] = {i: [] for i in range(ctx.n_agents)}
        calls = [0] * ctx.n_agents
        stopped: set[int] = set()
        rounds = 0
        while rounds < ctx.max_rounds:
            active = [i for i in range(ctx.n_agents) if submissions[i] is None and i not in stopped]
            if not active:
                break
            rounds += 1
            completions = await ctx.agents.step({i: pending[i] for i in active})
            for i in active:
                calls[i] += 1
            stopped.update(i for i in active if completions[i].final)
            replies = [(i, completions[i].text, completions[i].error) for i in active]
            outcomes = await ctx.env.apply_round(rounds, replies)
            for i in active:
                pending[i] = [o.reply for o in outcomes.get(i, [])]
                for o in outcomes.get(i, []):
                    if o.submitted is not None:
                        submissions[i] = o.submitted
            await ctx.on_round(ctx.phase, rounds, completions, outcomes)
        return PhaseResult(rounds=rounds, submissions=submissions, calls_per_agent=calls)
