"""Sequential turns (SIMAS Algorithm 1): one agent speaks at a time, each seeing all earlier turns.

The protocol owns the order: whoever it hands a message (the opening, then each turn's
`end_round` delivery) speaks next, one model call at a time, until it hands none. Each
call is one step of the agent pool and one `apply_round` of the environment, recorded
under the discussion round the protocol assigns (`rounds_of`, asked once per phase for
every turn the phase may have, and sent with each step so the events carry the discussion
round, not the turn). The submissions are the protocol's
slots at the end of the phase: in SIMAS's profile phase one reply fills every agent's.
An agent whose call the server refused for good is skipped: its turns are empty.
"""

from __future__ import annotations

from masgrid._private.platform.run.schedulers.base import PhaseContext, PhaseResult, Scheduler, register_scheduler

#: what the agent hosts are told to validate (the protocol's validator decides by phase)
EXPECT_TURN = "turn"


@register_scheduler
class SequentialScheduler(Scheduler):
    name = "sequential"
    placement = "driver"  # one agent speaks at a time: its components gain nothing from actors

    async def run_phase(self, ctx: PhaseContext) -> PhaseResult:
        n = ctx.n_agents
        calls = [0] * n
        pending = {i: list(m) for i, m in (await ctx.env.opening()).items() if m}
        stopped: set[int] = set()
        turns, last_round = 0, 0
        # a runaway protocol cannot loop forever: every agent speaks at most once a round
        limit = max(1, ctx.max_rounds) * n + 1
        rounds = await ctx.env.rounds_of(limit)
        while pending and turns < limit:
            speaker = min(pending)
            observations = pending.pop(speaker)
            turns += 1
            round_no = rounds[turns - 1]
            last_round = max(last_round, round_no)
            if speaker in stopped:
                completions = {}
                replies: list[tuple[int, str | None, str | None]] = [(speaker, None, "agent stopped: the server refused its calls for good")]
            else:
                completions = await ctx.agents.step({speaker: observations}, EXPECT_TURN, round_no=round_no)
                calls[speaker] += 1
                if completions[speaker].final:
                    stopped.add(speaker)
                replies = [(speaker, completions[speaker].text, completions[speaker].error)]
            outcomes = await ctx.env.apply_round(round_no, replies)
            for i, records in outcomes.items():
                texts = [o.reply for o in records if o.kind == "delivery"]
                if texts:
                    pending.setdefault(i, []).extend(texts)
            await ctx.on_round(ctx.phase, round_no, completions, outcomes)
        return PhaseResult(rounds=last_round, submissions=await ctx.env.submissions(), calls_per_agent=calls)
