"""Scripted classical baselines for SILO tasks, through the same text interface as a model.

`SiloPolicy`: share the spec's payload with every agent (AllGather over P2P, BP or SFS),
then submit `spec.solve` of all payloads. Under condition `planning` the first round is
spent on a `wait` (the planning round carries no data). `OraclePolicy`: the N=1 baseline,
which holds every segment and submits at once. `IsolatedPolicy`: the no-communication
floor (condition `isolated`), which submits at once what its own shard alone implies.
"""

from __future__ import annotations

import json
from typing import Any

from masgrid.families.silo.isolated import isolated_answer_text
from masgrid.families.silo.spec import SiloData, SiloSpec
from masgrid.sdk.policies import GatherThenSubmit, ScriptedPolicy, reply
from masgrid.sdk.tasks import AgentView


class SiloPolicy(GatherThenSubmit):
    def __init__(self, view: AgentView, protocol: str, seed: int, spec: SiloSpec) -> None:
        self.spec = spec
        self.public: dict[str, Any] = view.params.get("public", {})
        self.planning = view.params.get("condition") == "planning"
        super().__init__(view, protocol, seed)

    def payload(self) -> Any:
        return self.spec.payload(self.view.agent, self.view.local_input, self.public)

    def answer(self, gathered: dict[int, Any]) -> str:
        value = self.spec.solve(self.view.agent, self.view.n_agents, gathered, self.public)
        return self.spec.format_answer(value)

    def act(self, observations: list[str]) -> str:
        if self.planning:
            self.planning = False
            return reply("wait", thought="Planning round: the plan is that everyone shares a summary of their data.")
        return super().act(observations)


class OraclePolicy(ScriptedPolicy):
    def __init__(self, view: AgentView, protocol: str, seed: int, spec: SiloSpec) -> None:
        super().__init__(view, protocol, seed)
        self.spec = spec

    def act(self, observations: list[str]) -> str:
        shards = self.view.local_input["segments"]
        public = self.view.params.get("public", {})
        n = len(shards)
        payloads = {j: self.spec.payload(j, shard, public) for j, shard in enumerate(shards)}
        if self.spec.level == 2:
            parts = [json.loads(json.dumps(self.spec.solve(j, n, payloads, public))) for j in range(n)]
            text = json.dumps(parts)
        else:
            text = self.spec.format_answer(self.spec.solve(0, n, payloads, public))
        return reply(f"submit_result {text}", thought="I hold every segment; computing the answer directly.")


class IsolatedPolicy(ScriptedPolicy):
    def __init__(self, view: AgentView, protocol: str, seed: int, spec: SiloSpec) -> None:
        super().__init__(view, protocol, seed)
        self.spec = spec

    def act(self, observations: list[str]) -> str:
        n = self.view.n_agents
        shards: list[Any] = [None] * n
        shards[self.view.agent] = self.view.local_input  # nothing else is known to this agent
        data = SiloData(shards=shards, expected=[None] * n, public=self.view.params.get("public", {}))
        text = isolated_answer_text(self.spec, self.view.agent, n, data)
        if text is None:
            return reply("wait", thought="My own data alone does not determine an answer.")
        return reply(f"submit_result {text}", thought="Answering from my own data alone, without communicating.")
