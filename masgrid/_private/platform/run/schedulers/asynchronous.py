"""Asynchronous tool loops (CooperBench, section 2.1 and 3): no turns, no rounds.

Every agent runs its own loop concurrently: call the model with what arrived since its
last step (its tool results, then any teammate messages, marked as such), execute the tool
calls of the reply in order, repeat, until it calls `finish` or has used its actions. A
`send_message` is put in the recipient's inbox at once and delivered into the recipient's
next step (the paper's communication tool: "immediately receive it, and include it in the
prompt for the next step"); messages reach a recipient in the order they were sent.

Choices where the paper is silent (docs/tasks/cooperbench.md):
- one action = one tool call, messages included; a reply without a tool call and a failed
  model call count as one action each, so every loop ends within the cap;
- tool calls after `finish` in the same reply, or beyond the cap, are answered "not
  executed" (every call gets its tool result, as the chat format requires);
- a message to a teammate who has finished the phase is recorded but never read.

Communication tokens (`tokens_comm`, as MAS-Bench appendix C counts tool commands and the
observations that messaging induces), counted with the run's token counter: every
`send_message` call the scheduler executed (its name and its arguments as the model wrote
them, refused calls included, as a refused `send_message` command counts on the other
substrates) and its tool result, for the sender, on the `action` and `tool_result` events;
every delivered teammate message as the recipient reads it, on its `delivery` event.

The phase ends when every loop has ended. Planning (phase 1) ends each agent's loop with
its plan (the summary of `finish`); execution (phase 2) with the agent's patch, taken from
its worktree. Every model call, action, tool result, message, delivery, plan and finish is
an event with its wall-clock time `t` (epoch seconds), recorded as it happens.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from masgrid._private.actors.backends import Completion
from masgrid._private.envs.channel import ChannelNote
from masgrid._private.envs.tasks.base import Instance
from masgrid._private.platform.run.schedulers.base import PhaseContext, PhaseResult, Scheduler, register_scheduler

SEND, FINISH = "send_message", "finish"
_AGENT_REF = re.compile(r"^\s*(?:agent[\s_-]*)?(\d+)\s*$", re.IGNORECASE)
#: consecutive failed model calls after which an agent's loop stops (the server is down)
MAX_FAILED_CALLS = 3


@runtime_checkable
class ToolLoopTask(Protocol):
    """What this schedule needs of a task beyond `Task`: a session of tools per run (worktrees,
    a sandbox), the tools and budgets of each phase, the harness's own wording, and a check of
    the arguments of the tools the schedule handles itself (send_message, finish)."""

    def phase_count(self, instance: Instance, condition: str) -> int: ...

    def open_session(self, instance: Instance) -> Any: ...

    def phase_tools(self, instance: Instance, phase: int) -> list[dict[str, Any]]: ...

    def phase_limits(self, instance: Instance, phase: int) -> dict[str, Any]: ...

    def harness_text(self, key: str, **values: Any) -> str: ...

    def agent_name(self, agent: int) -> str: ...

    def check_arguments(self, name: str, arguments: dict[str, Any]) -> str | None: ...


#: the hooks ToolLoopTask declares, in order (for the one-line refusal of a task that lacks some)
TOOL_LOOP_HOOKS = tuple(name for name, value in vars(ToolLoopTask).items() if callable(value) and not name.startswith("_"))


@dataclass
class Loop:
    """One agent's state in a phase."""

    agent: int
    pending: list[dict[str, Any]] = field(default_factory=list)  # tool results and notes for the next step
    inbox: list[tuple[int, str]] = field(default_factory=list)  # (sender, content), in send order
    #: with a channel: [steps still to wait, reordered, sender, content], in send order
    held: list[list[Any]] = field(default_factory=list)
    actions: int = 0
    steps: int = 0
    messages: int = 0
    failed_calls: int = 0
    done: bool = False
    status: str | None = None  # finish status; None: never finished
    summary: str = ""
    capped: bool = False
    stopped: str | None = None
    cap: int = 0  # actions this agent may take in the phase


@register_scheduler
class AsynchronousScheduler(Scheduler):
    name = "asynchronous"
    steps_agents = True
    counts_message_tokens = True
    routes_messages = True
    packs_in_driver = False  # the environment (the session's tools) works while agents call

    def __init__(self) -> None:
        self.session: Any = None
        self.spent: list[int] = []  # actions each agent took in the run's earlier phases

    async def run_phase(self, ctx: PhaseContext) -> PhaseResult:
        import asyncio

        task, instance = ctx.task, ctx.instance
        if task is None or instance is None or ctx.record_step is None:
            raise RuntimeError("the asynchronous scheduler needs the task, instance and event recorder in its context")
        if not isinstance(task, ToolLoopTask):
            missing = [m for m in TOOL_LOOP_HOOKS if not callable(getattr(task, m, None))]
            raise TypeError(f"task {task.name!r} cannot run on the asynchronous schedule: it lacks {', '.join(missing)}")
        last = ctx.phase == task.phase_count(instance, "base")
        try:
            if self.session is None:
                self.session = await asyncio.to_thread(task.open_session, instance)
            limits = task.phase_limits(instance, ctx.phase)
            tools = task.phase_tools(instance, ctx.phase)
            offered = {spec["function"]["name"] for spec in tools}
            loops = [Loop(i, pending=[{"role": "user", "content": task.harness_text("start")}])
                     for i in range(ctx.n_agents)]
            if ctx.phase == 1 or len(self.spent) != ctx.n_agents:
                self.spent = [0] * ctx.n_agents
            for loop in loops:  # a budget for the whole run (shared=True) is what earlier phases left
                loop.cap = int(limits["actions"]) - (self.spent[loop.agent] if limits.get("shared") else 0)
            phase = _Phase(ctx, task, self.session, loops, tools, offered, limits)
            running = [asyncio.ensure_future(phase.run(loop)) for loop in loops]
            try:
                await asyncio.gather(*running)
            except BaseException:  # one loop failed (a hung host, a bug): stop the others first
                for future in running:
                    future.cancel()
                await asyncio.gather(*running, return_exceptions=True)
                raise
            submissions = [phase.submission(loop) for loop in loops]
            for loop in loops:
                self.spent[loop.agent] += loop.actions
            if last:
                for i, sub in enumerate(submissions):
                    sub["patch"] = await asyncio.to_thread(self.session.patch, i)
        except BaseException:
            last = True
            raise
        finally:
            if last and self.session is not None:
                session, self.session = self.session, None
                await asyncio.to_thread(session.close)
        return PhaseResult(rounds=max((lp.steps for lp in loops), default=0), submissions=submissions,
                           calls_per_agent=[lp.steps for lp in loops])


class _Phase:
    """The loops of one phase and what they share (inboxes, the session)."""

    def __init__(self, ctx: PhaseContext, task: ToolLoopTask, session: Any, loops: list[Loop], tools: list[dict[str, Any]],
                 offered: set[str], limits: dict[str, Any]) -> None:
        self.ctx, self.task, self.session, self.loops = ctx, task, session, loops
        self.tools, self.offered = tools, offered
        self.message_cap: int | None = limits.get("messages")
        if ctx.record_step is None:
            raise ValueError("the asynchronous schedule needs the driver's step recorder (PhaseContext.record_step)")
        self.record_step = ctx.record_step
        if ctx.count_tokens is None:  # a context built outside the driver: estimate (token_counter=approx)
            from masgrid._private.envs.tokens import approx_tokens

            self.count: Callable[[str], int] = approx_tokens
        else:
            self.count = ctx.count_tokens

    def names(self, exclude: int) -> str:
        return ", ".join(self.task.agent_name(j) for j in range(len(self.loops)) if j != exclude) or "none"

    async def run(self, loop: Loop) -> None:
        ctx = self.ctx
        while not loop.done:
            new, rows = self._inputs(loop)
            started = time.time()
            completion: Completion = await ctx.agents.act(loop.agent, new, self.tools)
            loop.steps += 1
            rows_after = await self._apply(loop, completion)
            await self.record_step(ctx.phase, loop.steps, loop.agent, started, completion, rows, rows_after)
            if loop.actions >= loop.cap and not loop.done:
                loop.done, loop.capped = True, True
                await self.record_step(ctx.phase, loop.steps, loop.agent, None, None, [], [
                    _row("harness", verb="cap", reply=self.task.harness_text(
                        "not_executed", why=self.task.harness_text("cap_reached", cap=loop.cap)), ok=False)])

    def _inputs(self, loop: Loop) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """What the agent's next call appends: pending tool results and notes, then every
        teammate message that arrived since its last step, in send order."""
        new, loop.pending = loop.pending, []
        rows = [_row("observation", role="user", text=m["content"]) for m in new if m["role"] == "user"]
        if self.ctx.channel is not None:
            loop.inbox = self._arrived(loop)
        for sender, content in loop.inbox:
            text = self.task.harness_text("teammate_message", sender=self.task.agent_name(sender), content=content)
            new.append({"role": "user", "content": text})
            rows.append(_row("delivery", verb="deliver", role="user", reply=text, peers=[sender],
                             tokens_comm=self.count(text)))
        loop.inbox = []
        return new, rows

    @staticmethod
    def _arrived(loop: Loop) -> list[tuple[int, str]]:
        """Channel messages due at this step (reordered ones first); the others wait one step less."""
        due = sorted((h for h in loop.held if h[0] == 0), key=lambda h: not h[1])
        loop.held = [h for h in loop.held if h[0] > 0]
        for h in loop.held:
            h[0] -= 1
        return [(sender, content) for _, _, sender, content in due]

    async def _apply(self, loop: Loop, c: Completion) -> list[dict[str, Any]]:
        """Execute the reply's tool calls in order; the tool results go into `pending`."""
        rows: list[dict[str, Any]] = []
        if c.error is not None:
            loop.failed_calls += 1
            loop.actions += 1
            if c.final or loop.failed_calls >= MAX_FAILED_CALLS:
                loop.done, loop.stopped = True, c.error
            return rows
        loop.failed_calls = 0
        calls = list(getattr(c, "tool_calls", None) or [])
        if not calls:
            loop.actions += 1
            note = self.task.harness_text("no_tool_call")
            loop.pending.append({"role": "user", "content": note})
            rows.append(_row("harness", verb="no_tool_call", reply=note, ok=False))
            return rows
        for call in calls:
            why = None
            if loop.done:
                why = self.task.harness_text("after_finish")
            elif loop.actions >= loop.cap:
                why = self.task.harness_text("cap_reached", cap=loop.cap)
            if why is not None:
                text = self.task.harness_text("not_executed", why=why)
                loop.pending.append({"role": "tool", "tool_call_id": call.id, "content": text})
                rows.append(_row("tool_result", tool=call.name, reply=text, ok=False, role="tool",
                                 tool_call_id=call.id))
                continue
            loop.actions += 1
            args = call.arguments if call.error is None else None
            talk = call.name == SEND
            rows.append(_row("action", tool=call.name, verb=call.name, ok=call.error is None,
                             text=json.dumps(args, sort_keys=True) if args is not None else call.raw_arguments,
                             tokens_comm=self.count(call.name) + self.count(call.raw_arguments) if talk else 0))
            ok, text, extra = await self._run_tool(loop, call.name, args, call.error)
            loop.pending.append({"role": "tool", "tool_call_id": call.id, "content": text})
            rows.extend(extra)  # the message or finish happened before its result was written
            rows.append(_row("tool_result", tool=call.name, reply=text, ok=ok, role="tool", tool_call_id=call.id,
                             tokens_comm=self.count(text) if talk else 0))
        return rows

    async def _run_tool(self, loop: Loop, name: str, args: dict[str, Any] | None,
                        error: str | None) -> tuple[bool, str, list[dict[str, Any]]]:
        if error is not None:
            return False, error, []
        if name not in self.offered:
            if name == SEND:
                return False, self.task.harness_text("no_messaging"), []
            return False, f"unknown tool {name!r}; the tools are: {', '.join(sorted(self.offered))}", []
        args = args or {}
        if name in (SEND, FINISH):
            problem = self.task.check_arguments(name, args)
            if problem is not None:
                return False, problem, []
        if name == SEND:
            return self._send(loop, args)
        if name == FINISH:
            loop.done = True
            loop.status = str(args.get("status") or "done")
            loop.summary = str(args.get("summary") or "")
            kind = "plan" if self.ctx.phase == 1 else "finish"
            return True, "Finished.", [_row(kind, verb=loop.status, text=loop.summary)]
        result = await self.session.call(loop.agent, name, args)
        return bool(result.ok), str(result.text), []

    def _send(self, loop: Loop, args: dict[str, Any]) -> tuple[bool, str, list[dict[str, Any]]]:
        to, content = str(args.get("to", "")), args.get("content")
        if not isinstance(content, str) or not content.strip():
            return False, "send_message: `content` must be a non-empty string. Nothing was sent.", []
        if self.message_cap is not None and loop.messages >= self.message_cap:
            return False, self.task.harness_text("plan_messages_spent"), []
        targets = self._recipients(loop.agent, to)
        if not targets:
            return False, self.task.harness_text("unknown_recipient", to=to, teammates=self.names(loop.agent)), []
        loop.messages += 1
        rows = [_row("message", tool=SEND, text=content, peers=targets, messages_sent=1)]
        done = [j for j in targets if self.loops[j].done]
        if self.ctx.channel is not None:
            rows[0].update(self._through_channel(loop.agent, targets, content))
        for j in targets:
            if not self.loops[j].done and self.ctx.channel is None:
                self.loops[j].inbox.append((loop.agent, content))
        label = ", ".join(self.task.agent_name(j) for j in targets)
        if done:
            return True, self.task.harness_text("recipient_done", to=", ".join(self.task.agent_name(j) for j in done)), rows
        return True, self.task.harness_text("sent", to=label), rows

    def _through_channel(self, sender: int, targets: list[int], content: str) -> dict[str, Any]:
        """Each (message, teammate) pair drawn by the channel (docs/channel.md); what reaches a
        teammate still active waits in its `held` list. The send's channel columns."""
        note = ChannelNote.empty()
        channel = self.ctx.channel
        assert channel is not None, "called only with a channel"
        for j in targets:
            fate = channel.fate(sender, j)
            note.add(j, fate, None)  # the step it is read at depends on the teammate's pace
            if not self.loops[j].done:
                self.loops[j].held.extend([fate.delay, fate.reordered, sender, content] for _ in range(fate.copies))
        return note.as_columns()

    def _recipients(self, sender: int, to: str) -> list[int]:
        """`agent_2`, `2` or `all` (every teammate); an unknown name gives none."""
        others = [j for j in range(len(self.loops)) if j != sender]
        if to.strip().lower() in ("all", "everyone", "team"):
            return others
        match = _AGENT_REF.match(to)
        if match and int(match.group(1)) - 1 in others:
            return [int(match.group(1)) - 1]
        return []

    def submission(self, loop: Loop) -> dict[str, Any]:
        out = {"actions": loop.actions, "messages": loop.messages, "finish": loop.status, "capped": loop.capped,
               "steps": loop.steps, "stopped": loop.stopped}
        if self.ctx.phase == 1:
            out["plan"] = loop.summary
        else:
            out["summary"] = loop.summary
        return out


def _row(kind: str, **values: Any) -> dict[str, Any]:
    """One event row; `t` is when it happened (epoch seconds)."""
    return {"kind": kind, "t": time.time(), **values}
