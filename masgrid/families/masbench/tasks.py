"""MAS-Bench tasks: distributed sorting (section 3) and, from appendix G.3, distributed
maximum and distributed prefix sum. All three share INITSORTTASK's generator, the three
protocols and the four CAMOC conditions.

Choices where the paper is silent (documented in docs/tasks/masbench.md as well):
- maximum: every agent submits the global maximum as a one-element list;
- prefix sum: the global array is the agents' lists concatenated in agent order, as held;
  agent i submits the inclusive prefix sums at its own K positions;
- for maximum and prefix sum the global check equals per-agent strict correctness.
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

from masgrid.families.masbench.answers import parse_int_list
from masgrid.families.masbench.generator import MODES, init_sort_task, inversion_rate
from masgrid.families.masbench.prompts import CONDITIONS, build_prompt
from masgrid.sdk.policies import GatherThenSubmit, ScriptedPolicy
from masgrid.sdk.protocols import format_answer
from masgrid.sdk.tasks import AgentView, Instance, Score, Task, register_task


class MasBenchTask(Task):
    family = "masbench"
    protocols = ("broadcast", "p2p", "kv")
    conditions = tuple(CONDITIONS)
    default_k = 10  # the largest K of the paper's grid (K in {1, 5, 10})
    ignored_keys = ("graph",)  # AgentsNet's; accepted so one sweep may span families
    topology_need = "connected"  # every answer may depend on every agent's values; the policy relays
    prompt_key: ClassVar[str]
    #: the most integers one instance holds (agents x k): the generator samples them all
    MAX_TOTAL: ClassVar[int] = 10_000_000

    def validate_options(self, agents: int, k: int, seed: int, **extra: Any) -> None:
        mode = extra.get("mode", "random")
        if mode not in MODES:
            raise ValueError(f"mode: task {self.name} supports {list(MODES)}, not {mode!r}")
        if agents * k > self.MAX_TOTAL:
            raise ValueError(f"k: agents x k = {agents * k} integers exceeds the {self.MAX_TOTAL} one instance "
                             "may hold")

    def generate(self, agents: int, k: int, seed: int, mode: str | None = "random", **extra: Any) -> Instance:
        if mode is None or mode not in MODES:
            raise ValueError(f"mode: task {self.name} supports {list(MODES)}, not {mode!r}")
        xs, sorted_slices, global_input = init_sort_task(agents, k, mode, seed)
        return Instance(
            task=self.name,
            params={"agents": agents, "k": k, "mode": mode, "seed": seed},
            inputs=xs,
            expected=self.expected(xs, sorted_slices),
            meta={"rho": inversion_rate(global_input)},
        )

    def expected(self, xs: list[list[int]], sorted_slices: list[list[int]]) -> list[list[int]]:
        raise NotImplementedError

    def answer_length(self, instance: Instance) -> int:
        return int(instance.params["k"])

    def isolated_answers(self, instance: Instance) -> list[Any]:
        """The no-communication floor: each agent answers from its own values alone."""
        return [self.isolated_answer(list(x)) for x in instance.inputs]

    def isolated_answer(self, values: list[int]) -> list[int]:
        raise NotImplementedError

    def phases(self, condition: str) -> int:
        return 2 if CONDITIONS[condition][1] else 1

    def build_prompt(self, view: AgentView, protocol: str, condition: str) -> str:
        return build_prompt(view, protocol, condition, self.prompt_key)

    def parse_answer(self, instance: Instance, agent: int, raw: str) -> list[int]:
        return parse_int_list(raw, self.answer_length(instance))

    def global_check(self, instance: Instance, answers: list[Any]) -> bool:
        return all(a == e for a, e in zip(answers, instance.expected))

    def score(self, instance: Instance, answers: list[Any]) -> Score:
        if len(answers) != instance.n_agents:
            raise ValueError(f"expected {instance.n_agents} answers, got {len(answers)}")
        correct = [a == e for a, e in zip(answers, instance.expected)]
        partial = [_positional_match(a, e) for a, e in zip(answers, instance.expected)]
        sr = sum(correct) / len(correct)
        return Score(
            success=sr == 1.0,
            correct=correct,
            partial=partial,
            metrics={"sr": sr, "check": self.global_check(instance, answers),
                     "submitted": sum(a is not None for a in answers)},
        )

    def run_metrics(self, instance: Instance, score: Score, usage: dict[str, float]) -> dict[str, Any]:
        """rho, and TE (eq. 6) and CR (eq. 7) for the whole run and for each phase the usage
        gives (`tokens_total_phase<p>`; null for a phase the run did not have)."""
        elements = instance.n_agents * int(instance.params["k"])
        out: dict[str, Any] = {"rho": instance.meta.get("rho"),
                               **efficiency(elements, usage.get("tokens_total", 0), usage.get("tokens_comm", 0))}
        for p in (1, 2):
            total, comm = usage.get(f"tokens_total_phase{p}"), usage.get(f"tokens_comm_phase{p}")
            per_phase = efficiency(elements, total, comm or 0) if total is not None else {"te": None, "cr": None}
            out.update({f"{name}_phase{p}": value for name, value in per_phase.items()})
        return out


def efficiency(elements: int, tokens_total: float, tokens_comm: float) -> dict[str, float | None]:
    """TE = N*K / T_total * 1e5 (eq. 6) and CR = T_comm / T_total (eq. 7); null without tokens."""
    if not tokens_total:
        return {"te": None, "cr": None}
    return {"te": elements / tokens_total * 1e5, "cr": tokens_comm / tokens_total}


def _positional_match(answer: Any, expected: list[int]) -> float:
    if not isinstance(answer, list) or not expected:
        return 0.0
    return sum(a == e for a, e in zip(answer, expected)) / len(expected)


@register_task
class SortingTask(MasBenchTask):
    name = "sorting"
    prompt_key = "sorting"

    def expected(self, xs: list[list[int]], sorted_slices: list[list[int]]) -> list[list[int]]:
        return sorted_slices

    def isolated_answer(self, values: list[int]) -> list[int]:
        return sorted(values)  # right only where its own values already are its block of the union

    def global_check(self, instance: Instance, answers: list[Any]) -> bool:
        """CHECK of F.2: every slot has K integers and their concatenation is the sorted union."""
        k = int(instance.params["k"])
        if any(not isinstance(a, list) or len(a) != k for a in answers):
            return False
        union = sorted(v for x in instance.inputs for v in x)
        return [v for a in answers for v in a] == union

    def scripted_policy(self, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy:
        return _SortPolicy(view, protocol, seed)


@register_task
class MaximumTask(MasBenchTask):
    name = "max"
    prompt_key = "max"

    def expected(self, xs: list[list[int]], sorted_slices: list[list[int]]) -> list[list[int]]:
        top = max(v for x in xs for v in x)
        return [[top] for _ in xs]

    def answer_length(self, instance: Instance) -> int:
        return 1

    def isolated_answer(self, values: list[int]) -> list[int]:
        return [max(values)]

    def scripted_policy(self, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy:
        return _MaxPolicy(view, protocol, seed)


@register_task
class PrefixSumTask(MasBenchTask):
    name = "prefix_sum"
    prompt_key = "prefix_sum"

    def expected(self, xs: list[list[int]], sorted_slices: list[list[int]]) -> list[list[int]]:
        running, out = 0, []
        for x in xs:
            block = []
            for v in x:
                running += v
                block.append(running)
            out.append(block)
        return out

    def isolated_answer(self, values: list[int]) -> list[int]:
        return list(itertools.accumulate(values))  # no offset: right only where the earlier totals are 0

    def scripted_policy(self, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy:
        return _PrefixPolicy(view, protocol, seed)


class _SortPolicy(GatherThenSubmit):
    """Gather every list, sort the union, submit the block at my index."""

    def payload(self) -> Any:
        return list(self.view.local_input)

    def answer(self, gathered: dict[int, Any]) -> str:
        k, i = int(self.view.params["k"]), self.view.agent
        union = sorted(v for values in gathered.values() for v in values)
        return format_answer(union[i * k:(i + 1) * k])


class _MaxPolicy(GatherThenSubmit):
    """Share the local maximum only (loose coupling)."""

    def payload(self) -> Any:
        return max(self.view.local_input)

    def answer(self, gathered: dict[int, Any]) -> str:
        return format_answer([max(gathered.values())])


class _PrefixPolicy(GatherThenSubmit):
    """Share the segment total; my offset is the sum of the totals of lower-indexed agents."""

    def payload(self) -> Any:
        return sum(self.view.local_input)

    def answer(self, gathered: dict[int, Any]) -> str:
        running = sum(gathered[j] for j in range(self.view.agent))
        out = []
        for v in self.view.local_input:
            running += v
            out.append(running)
        return format_answer(out)
