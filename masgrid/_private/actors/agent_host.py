"""AgentHost: holds the chat histories of a group of agents and asks their backends.

Several agents share one host (one Ray worker process) so a 100-agent run does not start
100 processes; within a host, all model calls of a round are in flight together.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from pydantic import BaseModel

from masgrid._private.actors import heap
from masgrid._private.actors.backends import BackendSettings, ChatBackend, ClientCache, Completion, Message, make_backend
from masgrid._private.actors.backends.history import ChatHistory
from masgrid._private.actors.backends.chat_tools import assistant_turn
from masgrid._private.envs.protocols import get_protocol
from masgrid._private.envs.tasks import AgentView
from masgrid._private.envs.tokens import get_counter
from masgrid._private.envs.tool_calls import tool_specs


#: seconds between a pooled host's `close` answering and its heap collection (the delay
#: lets the reply leave first: a collection holds the interpreter lock throughout)
SETTLE_AFTER_CLOSE_S = 0.05


class AgentSetup(BaseModel):
    """What an agent starts a phase with: its view and its system message."""

    view: AgentView
    system_prompt: str


class HostSpec(BaseModel):
    backend: str
    settings: BackendSettings
    protocol: str
    seed: int
    token_counter: str = "approx"
    #: borrowed from the host pool: keep HTTP clients and Serve handles for the next run
    pooled: bool = False
    #: a mixed-model team (platform/run/team.py): member name -> (backend, settings), and the
    #: member of each agent by agent id; None: every agent uses `backend` and `settings`
    members: dict[str, tuple[str, BackendSettings]] | None = None
    member_of: list[str] | None = None


class AgentHost:
    def __init__(self, spec: HostSpec | None = None) -> None:
        self.clients = ClientCache()  # lives as long as the host (see backends/clients.py)
        if spec is not None:
            self.configure(spec)

    def configure(self, spec: HostSpec) -> None:
        """(Re)initialise for a run; a pooled actor is configured afresh for every run."""
        self.spec = spec
        self.count = get_counter(spec.token_counter)
        self.histories: dict[int, ChatHistory] = {}
        self.backends: dict[int, ChatBackend] = {}
        # Per-host cache for backend factories; the counter spec lets a backend tell a server
        # how to count usage (the CPU stand-in counts like the scripted backend).
        self._shared: dict[str, Any] = {"token_counter": spec.token_counter, "clients": self.clients}
        #: a team member's own factory cache (one HTTP backend per endpoint); the clients stay the host's
        self._member_shared: dict[str, dict[str, Any]] = {}
        self.validators: dict[int, Any] = {}
        self._acting: dict[int, asyncio.Lock] = {}
        self._limit: contextlib.AbstractAsyncContextManager[object] = asyncio.Semaphore(spec.settings.max_concurrency)
        heap.settle()

    def ready(self) -> bool:
        return True

    async def start_phase(self, setups: dict[int, AgentSetup]) -> None:
        """Fresh histories (phase 2 carries nothing but what the prompt says)."""
        self.histories = {i: ChatHistory([{"role": "system", "content": s.system_prompt}]) for i, s in setups.items()}
        self.backends = {i: self._make_backend(i, s.view) for i, s in setups.items()}
        self._acting = {i: asyncio.Lock() for i in setups}
        # resolved through the registry's provider table, never through what this worker
        # happened to import: an unknown name is an error, not "no validator"
        protocol = get_protocol(self.spec.protocol)
        self.validators = {i: protocol.reply_validator(s.view) for i, s in setups.items()}
        # An agent has one call in flight at most: with no more agents than the limit allows
        # calls, the semaphore could never make a call wait, and acquiring it costs each call.
        limit = self.spec.settings.max_concurrency
        self._limit = (
            asyncio.Semaphore(limit) if limit < len(setups) else contextlib.nullcontext())

    def _make_backend(self, i: int, view: AgentView) -> ChatBackend:
        """Agent i's backend: the run's, or its team member's (backend and endpoint per member)."""
        spec = self.spec
        kind, settings, shared = spec.backend, spec.settings, self._shared
        if spec.members is not None and spec.member_of is not None:
            member = spec.member_of[i]
            kind, settings = spec.members[member]
            if spec.settings.cache and not settings.cache:  # model.cache covers the run's every model
                settings = settings.model_copy(update={"cache": True, "cache_dir": spec.settings.cache_dir})
            shared = self._member_shared.setdefault(member, {"token_counter": spec.token_counter,
                                                             "clients": self.clients})
        return make_backend(kind, settings, self.count, view, spec.protocol, spec.seed * 100_003 + i, shared)

    async def step(self, observations: dict[int, list[str]], expect: str | None = None) -> dict[int, Completion]:
        """Append each agent's pending observations, then generate for all of them at once.

        With `expect` (the reply kind the protocol wants, e.g. "messages"), a reply that
        fails the protocol's validator gets one retry: the invalid reply and the
        validator's message join the history and the model is called again.
        """
        for i, obs in observations.items():
            self.histories[i].extend({"role": "user", "content": o} for o in obs)
        ids = list(observations)
        results = await asyncio.gather(*(self._validated(i, expect) for i in ids))
        for i, completion in zip(ids, results):
            # A failed call still leaves an (empty) assistant turn, as in Algorithm 2 line 5.
            self.histories[i].append({"role": "assistant", "content": completion.text or ""})
        return dict(zip(ids, results))

    async def act(self, agent: int, new_messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        """One step of an agent's own tool loop (the asynchronous schedule): append the new
        messages (OpenAI format: user messages, `tool` results with their `tool_call_id`),
        call the model with `tools` offered, append its turn with the calls it made.

        Agents act concurrently; one agent's steps are serialised, so its history stays in
        order if a scheduler overlaps them. Tools that are not OpenAI function tools raise
        one line (a scheduler bug), before anything is appended."""
        tool_specs(tools)
        if agent not in self._acting:
            raise KeyError(f"agent {agent} is not hosted here in this phase (start_phase first)")
        for k, message in enumerate(new_messages):
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                raise ValueError(f"new_messages[{k}] is not a chat message (a dict with a string 'role')")
        async with self._acting[agent]:
            history = self.histories[agent]
            history.extend(new_messages)
            completion = await self._complete(agent, tools)
            history.append(assistant_turn(completion))
        return completion

    async def _validated(self, i: int, expect: str | None) -> Completion:
        first = await self._complete(i)
        check = self.validators.get(i) if expect is not None else None
        if check is None or first.error is not None:
            return first
        problem = check(expect, first.text)
        if problem is None:
            first.validation = "ok"  # this host's own object: no copy needed
            return first
        self.histories[i].append({"role": "assistant", "content": first.text or ""})
        self.histories[i].append({"role": "user", "content": problem})
        second = await self._complete(i)
        again = check(expect, second.text) if second.error is None else second.error
        return second.model_copy(update={
            "validation": "failed" if again else "retried", "invalid_reason": again,
            "retry_of": first.model_copy(update={"validation": "invalid", "invalid_reason": problem})})

    async def _complete(self, i: int, tools: list[dict[str, Any]] | None = None) -> Completion:
        async with self._limit:
            sent = time.time()
            try:
                # the live history, not a copy: nothing is appended to it while its call is
                # in flight (one call per agent at a time), and it carries its encodings
                history = self.histories[i]
                backend = self.backends[i]
                completion = await (backend.complete(history, tools) if tools else backend.complete(history))
            except Exception as exc:  # noqa: BLE001 - a backend bug must not end the round
                completion = Completion(error=f"{type(exc).__name__}: {exc}")
            if completion.started_at is None:  # HTTP backends set when their first request went out
                completion.started_at = sent
            return completion

    def history(self, agent: int) -> list[Message]:
        return self.histories[agent]

    async def close(self) -> None:
        """End of a run: release per-run backends; a host that is not pooled closes its clients too."""
        seen: set[int] = set()
        for backend in self.backends.values():
            if id(backend) not in seen:
                seen.add(id(backend))
                await backend.close()
        if not self.spec.pooled:
            await self.clients.aclose()
            return
        # Back to the pool: drop the run's state and freeze what stays (the clients, modules
        # the run imported), so the next run's settle() has little left to collect. The
        # collection (0.07-0.2 s of CPU after a 100-agent run) runs once this call has
        # answered: awaited here, it held the driver's end of every run.
        self.histories, self.backends, self.validators, self._acting = {}, {}, {}, {}
        asyncio.get_running_loop().call_later(SETTLE_AFTER_CLOSE_S, heap.settle)
