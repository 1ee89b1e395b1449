"""The masgrid Task wrapping a SiloSpec: `task=silo/<task_id>` for every registered spec.

Choices the paper leaves open (also in docs/tasks/silo.md):
- `k` is the per-agent workload; the run config's `k` (default: the spec's `default_k`)
  is passed to the spec, so the global input grows with N (section 3.2). MAS-Bench's `mode`
  and AgentsNet's `graph` (other families' options a config may give at the top level) have
  no meaning for SILO: they stand as None in its run identity, so a sweep over them is
  refused rather than run as pseudo-replicates.
- The instance of (task, N, k, seed) comes from `random.Random("silo:<id>:<N>:<k>:<seed>")`,
  independent of the protocol, so the three protocols see the same data.
- Round semantics are appendix A.5's (`ProtocolOptions.strict_rounds()`).
- Conditions: `base` and the scaffold ablations of appendix H (`planning`, `reminder`,
  `scratchpad`), and `oracle-<N>` (agents=1): the N=1 baseline of section 4.1, one agent
  holding the whole input of the N-agent instance with the same seed, answering without
  communication. For Level II its answer is the list of all N segment answers.
- `isolated` (scripted agents only): the no-communication floor, every agent submitting
  at once what its own shard alone implies (families/silo/isolated.py). Every other
  multi-agent run records the same floor on its own instance (`floor_sr`, `floor_pcs`,
  `floor_success`), so a table shows how much of a score needed no exchange.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any, ClassVar

from masgrid.families.silo import prompts
from masgrid.families.silo.isolated import isolated_answers as shard_answers
from masgrid.families.silo.isolated import isolated_score
from masgrid.families.silo.spec import SiloData, SiloSpec
from masgrid.sdk.policies import ScriptedPolicy
from masgrid.sdk.protocols import ProtocolOptions
from masgrid.sdk.tasks import AgentView, Instance, Score, Task

ORACLE = re.compile(r"^oracle-(\d+)$")
ORACLE_SCALES = (2, 5, 10, 20, 50, 100)
ORACLE_EXPECTED = "_oracle_expected"
ISOLATED = "isolated"


def oracle_scale(condition: str | None) -> int | None:
    """N of an `oracle-<N>` condition, else None."""
    match = ORACLE.match(condition or "")
    return int(match.group(1)) if match else None


def scored_partial(score: Score) -> list[float]:
    """P of every agent. A SILO score marks each one (a missing answer has quality 0.0), so a
    None means the score is not this task's: TypeError, as summing it always raised."""
    partial: list[float] = []
    for value in score.partial:
        if value is None:
            raise TypeError("a SILO score has a partial score for every agent, not None")
        partial.append(value)
    return partial


class SiloTask(Task):
    family = "silo"
    protocols = ("broadcast", "p2p", "kv")
    conditions = prompts.SCAFFOLDS + (ISOLATED,) + tuple(f"oracle-{n}" for n in ORACLE_SCALES)
    scripted_only_conditions = (ISOLATED,)
    generation_keys = ("condition",)
    ignored_keys = ("mode", "graph")
    topology_need = "connected"  # an answer may need every shard; the scripted policy relays
    spec_cls: ClassVar[type[SiloSpec]]

    def __init__(self) -> None:
        self.spec = self.spec_cls()

    # -- configuration ------------------------------------------------------------------------
    def validate_params(self, agents: int, k: int, protocol: str, condition: str) -> None:
        if self.protocols and protocol not in self.protocols:
            raise ValueError(f"protocol: task {self.name} supports {list(self.protocols)}, not {protocol!r}")
        scale = oracle_scale(condition)
        if scale is None and condition not in prompts.SCAFFOLDS + (ISOLATED,):
            raise ValueError(f"condition: task {self.name} supports {list(prompts.SCAFFOLDS + (ISOLATED,))} or "
                             f"oracle-<N>, not {condition!r}")
        if scale is not None and (agents != 1 or scale < 1):
            raise ValueError(f"agents: condition {condition} is the single-agent baseline; set agents=1")
        if scale is None and agents < 2:
            raise ValueError("agents: SILO-Bench needs agents >= 2 (the N=1 baseline is agents=1 "
                             "condition=oracle-<N>)")

    def protocol_options(self, protocol: str, condition: str) -> ProtocolOptions:
        return ProtocolOptions.strict_rounds()

    def round_notice(self, protocol: str, condition: str) -> str | None:
        return prompts.round_notice(protocol, condition) if condition in prompts.SCAFFOLDS else None

    # -- generation -----------------------------------------------------------------------------
    def silo_data(self, n: int, k: int, seed: int) -> SiloData:
        rng = random.Random(f"silo:{self.spec.task_id}:{n}:{k}:{seed}")
        data = self.spec.generate(n, k, rng)
        if len(data.shards) != n or len(data.expected) != n:
            raise ValueError(f"{self.name}: generator returned {len(data.shards)} shards for {n} agents")
        return data

    def generate(self, agents: int, k: int, seed: int, **extra: Any) -> Instance:
        scale = oracle_scale(extra.get("condition"))
        n = scale if scale is not None else agents
        data = self.silo_data(n, k, seed)
        params = {"agents": n, "k": k, "seed": seed, "public": data.public, "oracle": scale is not None,
                  "condition": extra.get("condition") or "base"}
        if scale is None:
            return Instance(task=self.name, params=params, inputs=data.shards, expected=data.expected,
                            meta=data.meta)
        return Instance(task=self.name, params=params, inputs=[{"segments": data.shards}],
                        expected=[self.oracle_expected(data)], meta={**data.meta, ORACLE_EXPECTED: data.expected})

    def oracle_expected(self, data: SiloData) -> Any:
        return list(data.expected) if self.spec.level == 2 else data.expected[0]

    @staticmethod
    def is_oracle(instance: Instance) -> bool:
        return bool(instance.params.get("oracle"))

    def data_of(self, instance: Instance) -> SiloData:
        """The N-agent SiloData behind an instance (also behind an oracle instance)."""
        meta = {key: value for key, value in instance.meta.items() if key != ORACLE_EXPECTED}
        public = instance.params.get("public", {})
        if self.is_oracle(instance):
            return SiloData(shards=instance.inputs[0]["segments"], expected=instance.meta[ORACLE_EXPECTED],
                            public=public, meta=meta)
        return SiloData(shards=instance.inputs, expected=instance.expected, public=public, meta=meta)

    # -- prompts --------------------------------------------------------------------------------
    def build_prompt(self, view: AgentView, protocol: str, condition: str) -> str:
        k, public = int(view.params["k"]), view.params.get("public", {})
        if view.params.get("oracle"):
            return prompts.build_oracle_prompt(self.spec.task_id, self.spec.level, int(view.params["agents"]), k,
                                               view.local_input["segments"], public)
        return prompts.build_agent_prompt(self.spec.task_id, view.agent, view.n_agents, k, view.local_input, public,
                                          protocol, condition)

    # -- answers ----------------------------------------------------------------------------------
    def parse_answer(self, instance: Instance, agent: int, raw: str) -> Any:
        data = self.data_of(instance)
        if not self.is_oracle(instance):
            return self.spec.parse_answer(raw, agent, data)
        if self.spec.level != 2:
            return self.spec.parse_answer(raw, 0, data)
        n = len(data.shards)
        try:
            items = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"expected a JSON list of {n} segment answers: {exc.msg}") from None
        if not isinstance(items, list) or len(items) != n:
            raise ValueError(f"expected a JSON list of {n} segment answers, one per segment")
        return [self.spec.parse_answer(json.dumps(item), j, data) for j, item in enumerate(items)]

    def score(self, instance: Instance, answers: list[Any]) -> Score:
        if len(answers) != instance.n_agents:
            raise ValueError(f"expected {instance.n_agents} answers, got {len(answers)}")
        data = self.data_of(instance)
        if self.is_oracle(instance) and self.spec.level == 2:
            correct, partial = self._score_oracle_segments(answers[0], data)
        else:
            correct = [self.spec.is_correct(a, e, data) for a, e in zip(answers, instance.expected)]
            partial = [float(self.spec.quality(a, e, data)) for a, e in zip(answers, instance.expected)]
        sr = sum(correct) / len(correct)
        return Score(success=sr == 1.0, correct=correct, partial=partial,
                     metrics={"sr": sr, "pcs": sum(partial) / len(partial),
                              "submitted": sum(a is not None for a in answers)})

    def _score_oracle_segments(self, answer: Any, data: SiloData) -> tuple[list[bool], list[float]]:
        if not isinstance(answer, list):
            return [False], [0.0]
        ok = all(self.spec.is_correct(a, e, data) for a, e in zip(answer, data.expected))
        quality = sum(float(self.spec.quality(a, e, data)) for a, e in zip(answer, data.expected))
        return [ok], [quality / len(data.expected)]

    def run_metrics(self, instance: Instance, score: Score, usage: dict[str, float]) -> dict[str, Any]:
        """S (= sr) and P come from the score; C (eq. 4) and D (eq. 5) from the run's counts.

        D's numerator is the messages that reached an active receiver (a broadcast counts
        once per receiver still active at the round boundary; a refused P2P send, or one to
        an agent that submitted in the same round, not at all) plus, for SFS, successful
        reads of files another agent wrote; the other term is zero under each protocol.
        """
        n = instance.n_agents
        rounds = usage.get("rounds") or 0
        transferred = usage.get("deliveries", 0) + usage.get("files_read_others", 0)
        partial = scored_partial(score)
        return {
            "pcs": sum(partial) / len(partial),
            "tokens_per_round": usage.get("tokens_out", 0) / rounds if rounds else None,
            "density": transferred / (n * (n - 1)) if n > 1 else None,
            **self.floor_metrics(instance),
        }

    def isolated_answers(self, instance: Instance) -> list[Any] | None:
        """Each agent's answer from its own shard alone (the floor_* metrics); None for the oracle."""
        if self.is_oracle(instance):
            return None
        return shard_answers(self.spec, self.data_of(instance))

    def floor_metrics(self, instance: Instance) -> dict[str, Any]:
        """The isolated baseline on this very instance (None for the single-agent oracle)."""
        if self.is_oracle(instance):
            return {"floor_sr": None, "floor_pcs": None, "floor_success": None}
        floor = isolated_score(self.spec, self.data_of(instance))
        return {"floor_sr": floor.metrics["sr"], "floor_pcs": floor.metrics["pcs"], "floor_success": floor.success}

    # -- classical baseline -------------------------------------------------------------------------
    def scripted_policy(self, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy:
        from masgrid.families.silo.policy import IsolatedPolicy, OraclePolicy, SiloPolicy

        if view.params.get("oracle"):
            return OraclePolicy(view, protocol, seed, self.spec)
        if view.params.get("condition") == ISOLATED:
            return IsolatedPolicy(view, protocol, seed, self.spec)
        return SiloPolicy(view, protocol, seed, self.spec)


def make_task_class(spec_cls: type[SiloSpec]) -> type[SiloTask]:
    name = f"silo/{spec_cls.task_id}"
    cls_name = "Silo_" + spec_cls.task_id.replace("-", "_")
    return type(cls_name, (SiloTask,), {"name": name, "spec_cls": spec_cls, "default_k": spec_cls.default_k,
                                         "__doc__": spec_cls.__doc__})
