"""The five AgentsNet problems as tasks `agentsnet/<problem>` (section 3, appendix B).

Instance layout (also what `masgrid instance agentsnet/coloring agents=8 graph=ws` prints):
- params: agents, graph model, seed, rounds T, cot, byzantine setting, groups (coloring),
  question (the final-answer question the protocol asks);
- inputs[i]: name, neighbours (names), valid_answers, byzantine flag;
- meta: names, edges as [name, name] pairs, diameter, max/min/mean degree, byzantine agents;
- expected: None per agent (the problems have many correct answers; `score` checks them).

Round budget T (section 5.1 / 5.3; the reference's determine_rounds): 2D + 1 for consensus
and leader election and for every task on graphs of more than 16 nodes; otherwise 4, 5 or 6
for graphs of up to 4, 8 or 16 nodes. `agentsnet.rounds=T` overrides it.
"""

from __future__ import annotations

import json
import math
from typing import Any, ClassVar

from masgrid.families.agentsnet import scoring
from masgrid.families.agentsnet.graphs import (
    GRAPH_MODELS,
    MIN_AGENTS,
    AgentGraph,
    generate_graph,
    graph_rng,
    sample_names,
)
from masgrid.families.agentsnet.local_protocol import FINAL_MARKER, PARSER_MODES, parser_mode, read_final_answer
from masgrid.families.agentsnet.prompts import build_system_prompt, final_question, variants
from masgrid.sdk.policies import ScriptedPolicy
from masgrid.sdk.tasks import AgentView, Instance, Score, Task, register_task
from masgrid.sdk.topology import TopologySettings, restricted_edges

#: message-passing rounds of the local tasks on small graphs (section 5.1)
LOCAL_BUDGET = ((4, 4), (8, 5), (16, 6))
#: Byzantine agents for the paper's sizes (appendix I: 1 of 4, 2 of 8, 3 of 16)
PAPER_BYZANTINE = {4: 1, 8: 2, 16: 3}


def round_budget(problem_is_global: bool, n: int, diameter: int) -> int:
    if problem_is_global or n > 16:
        return 2 * diameter + 1
    return next(rounds for size, rounds in LOCAL_BUDGET if n <= size)


REFERENCE_REASON = "reference_unscorable_reason"


def reference_unscorable(score_reason: str | None, model_errors: int) -> dict[str, Any]:
    """The run flag of runs the released code never recorded: any model call that failed
    after retries aborts its run, and its scorer raises on some answer sets
    (`scoring.reference_failure`). Reasons are joined with "+" (model_error first)."""
    reasons = (["model_error"] if model_errors else []) + ([score_reason] if score_reason else [])
    return {"reference_unscorable": bool(reasons), REFERENCE_REASON: "+".join(reasons) or None}


def score_reason(score: Score) -> str | None:
    """The score's REFERENCE_REASON metric: the reason string `score` puts there, or None."""
    reason = score.metrics.get(REFERENCE_REASON)
    if reason is not None and not isinstance(reason, str):
        raise TypeError(f"score metric {REFERENCE_REASON} is a reason or None, not {reason!r}")
    return reason


def topology_settings(value: Any) -> TopologySettings:
    """The `topology` generation keyword: the config's settings, a recorded config's dict, or none."""
    if isinstance(value, TopologySettings):
        return value
    return TopologySettings.model_validate(value) if value else TopologySettings()


def byzantine_count(n: int) -> int:
    """f with 3f < n, about a quarter of the agents."""
    if n in PAPER_BYZANTINE:
        return PAPER_BYZANTINE[n]
    return max(0, min(round(n / 4), math.ceil(n / 3) - 1))


class AgentsNetTask(Task):
    family = "agentsnet"
    schedule = "local_rounds"
    protocols = ("local",)
    conditions = tuple(variants())
    #: the graph is AgentsNet's own model (`graph`) or, when `topology` restricts it, the run's
    #: communication graph (docs/topology.md); validate_options refuses neither or both
    generation_keys = ("topology",)
    topology_need = "builds"
    #: the graph model and n fix the instance; `k` and `mode` are never read
    ignored_keys = ("k", "mode")
    problem: ClassVar[str]

    def identity_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """Without Byzantine agents their count is never read: not part of the identity. The
        default parser is left out, so runs recorded before `parser` existed keep their ids."""
        if options.get("byzantine") == "none":
            options = {**options, "byzantine_count": None}
        if options.get("parser", "strict") == "strict":
            options = {k: v for k, v in options.items() if k != "parser"}
        return options
    is_global: ClassVar[bool] = False

    def validate_params(self, agents: int, k: int, protocol: str, condition: str) -> None:
        super().validate_params(agents, k, protocol, condition)
        if agents < MIN_AGENTS:
            raise ValueError(f"agents: AgentsNet graphs need at least {MIN_AGENTS} agents, got {agents}")

    def validate_options(self, agents: int, k: int, seed: int, graph: str | None = None,
                         rounds: int | None = None, cot: bool = True, byzantine: str = "none",
                         byzantine_count: int | None = None, parser: str = "strict",
                         topology: Any = None, **extra: Any) -> None:
        """Everything `generate` would refuse, without building the graph."""
        if extra:
            raise ValueError(f"agentsnet: unknown AgentsNet option(s): {', '.join(sorted(extra))}")
        on_topology = topology_settings(topology).restricted
        if on_topology and graph is not None:
            raise ValueError(f"graph: AgentsNet runs on its own graph model (graph={graph}) or on the communication "
                             f"graph (topology.kind), not both; set graph=null to use topology.kind")
        if not on_topology and graph not in GRAPH_MODELS:
            what = ("AgentsNet needs a graph model (or a restricted topology.kind)," if graph is None
                    else f"unknown graph model {graph!r};")
            raise ValueError(f"graph: {what} choose one of {sorted(GRAPH_MODELS)}")
        if agents < MIN_AGENTS:
            raise ValueError(f"agents: AgentsNet graphs need at least {MIN_AGENTS} agents, got {agents}")
        if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1):
            raise ValueError(f"agentsnet.rounds: a whole number >= 1, not {rounds!r}")
        if parser not in PARSER_MODES:
            raise ValueError(f"agentsnet.parser: one of {', '.join(PARSER_MODES)}, not {parser!r}")
        if byzantine not in ("none", "aware", "unaware"):
            raise ValueError(f"agentsnet.byzantine: none | aware | unaware, not {byzantine!r}")
        if byzantine != "none" and byzantine_count is not None and not 0 <= byzantine_count < agents:
            raise ValueError(f"agentsnet.byzantine_count: need 0 <= f < agents = {agents}, got {byzantine_count}")

    # -- generation ----------------------------------------------------------------------------
    def generate(self, agents: int, k: int, seed: int, graph: str | None = None,
                 rounds: int | None = None, cot: bool = True, byzantine: str = "none",
                 byzantine_count: int | None = None, parser: str = "strict", topology: Any = None,
                 **extra: Any) -> Instance:
        self.validate_options(agents, k, seed, graph=graph, rounds=rounds, cot=cot, byzantine=byzantine,
                              byzantine_count=byzantine_count, parser=parser, topology=topology, **extra)
        settings = topology_settings(topology)
        if settings.restricted:  # the run's communication graph, with names drawn as for a graph model
            graph = settings.kind
            g = AgentGraph(model=graph, names=sample_names(agents, graph_rng(f"topology:{graph}", agents, seed)),
                           edges=restricted_edges(settings, agents, seed))
        else:
            assert graph is not None  # validate_options refused None
            g = generate_graph(graph, agents, seed)
        diameter = g.diameter()
        degrees = g.degrees()
        budget = int(rounds) if rounds is not None else round_budget(self.is_global, agents, diameter)
        adversaries = self._adversaries(g, seed, byzantine, byzantine_count)
        params: dict[str, Any] = {"agents": agents, "graph": graph, "seed": seed, "rounds": budget,
                                  "rounds_default": rounds is None, "cot": bool(cot), "byzantine": byzantine,
                                  "parser": parser,
                                  "question": final_question(self.problem)}
        if self.problem == "coloring":
            params["groups"] = max(degrees) + 1
        neighbors = g.neighbors()
        inputs = []
        for i in range(agents):
            names = [g.names[j] for j in neighbors[i]]
            inputs.append({"name": g.names[i], "neighbors": names,
                           "valid_answers": self.valid_answers(names, params), "byzantine": i in adversaries})
        meta = {"names": g.names, "edges": [[g.names[u], g.names[v]] for u, v in g.edges], "diameter": diameter,
                "max_degree": max(degrees), "min_degree": min(degrees), "mean_degree": sum(degrees) / agents,
                "byzantine_agents": sorted(adversaries)}
        return Instance(task=self.name, params=params, inputs=inputs, expected=[None] * agents, meta=meta)

    def graph_edges(self, instance: Instance) -> list[tuple[int, int]]:
        """The instance's graph (its own model, or the restricted topology it was built on)."""
        index = {name: i for i, name in enumerate(instance.meta["names"])}
        return [(index[u], index[v]) for u, v in instance.meta["edges"]]

    def _adversaries(self, g: AgentGraph, seed: int, setting: str, count: int | None) -> set[int]:
        if setting == "none":
            return set()
        f = byzantine_count(g.n) if count is None else count
        if not 0 <= f < g.n:
            raise ValueError(f"agentsnet.byzantine_count: need 0 <= f < {g.n}, got {f}")
        rng = graph_rng(f"byzantine:{g.model}", g.n, seed)
        return {int(i) for i in rng.choice(g.n, size=f, replace=False)}

    #: the same valid final answers for every agent (None: depends on the agent)
    options: ClassVar[tuple[str, ...] | None] = None
    #: soft score and success on the (honest) graph
    scorer: ClassVar[staticmethod[[scoring.ScoredGraph], scoring.TaskScore]]

    def valid_answers(self, neighbors: list[str], params: dict[str, Any]) -> list[str]:
        assert self.options is not None, f"{self.name} must define options or valid_answers"
        return list(self.options)

    def round_limit(self, instance: Instance, max_rounds: int) -> int:
        """T message rounds plus the final-answer call; `max_rounds` does not apply."""
        return int(instance.params["rounds"]) + 1

    # -- prompts and answers -------------------------------------------------------------------
    def build_prompt(self, view: AgentView, protocol: str, condition: str) -> str:
        return build_system_prompt(view, self.problem, condition)

    def parse_answer(self, instance: Instance, agent: int, raw: str) -> str:
        """A full reply with the final-answer marker, or (for `masgrid score`) a bare option."""
        options = instance.inputs[agent]["valid_answers"]
        if FINAL_MARKER in raw:
            return read_final_answer(raw, options, parser_mode(instance.params))
        text = raw.strip()
        if text.startswith('"'):
            try:
                text = str(json.loads(text))
            except json.JSONDecodeError:
                pass
        text = text.strip().strip("'")
        if text not in options:
            raise ValueError(f"{text!r} is not a valid answer; options: {', '.join(options)}")
        return text

    # -- scoring ---------------------------------------------------------------------------------
    def score(self, instance: Instance, answers: list[Any]) -> Score:
        if len(answers) != instance.n_agents:
            raise ValueError(f"expected {instance.n_agents} answers, got {len(answers)}")
        names = instance.meta["names"]
        index = {name: i for i, name in enumerate(names)}
        edges = [(index[u], index[v]) for u, v in instance.meta["edges"]]
        honest = [not x.get("byzantine") for x in instance.inputs]
        graph, kept = scoring.restrict(names, edges, [a if isinstance(a, str) else None for a in answers], honest)
        result = self.score_graph(graph, instance)
        correct = [False] * instance.n_agents
        for j, i in enumerate(kept):
            correct[i] = bool(result.correct[j])
        return Score(success=result.success, correct=correct, partial=[float(c) for c in correct],
                     metrics={"soft_score": result.soft, "invalid_answers": result.invalid,
                              "submitted": sum(a is not None for a in answers),
                              REFERENCE_REASON: scoring.reference_failure(self.problem, graph)})

    def score_graph(self, graph: scoring.ScoredGraph, instance: Instance) -> scoring.TaskScore:
        return type(self).scorer(graph)

    def run_metrics(self, instance: Instance, score: Score, usage: dict[str, float]) -> dict[str, Any]:
        p, m = instance.params, instance.meta
        return {"message_rounds": p["rounds"], "diameter": m["diameter"], "max_degree": m["max_degree"],
                "edges": len(m["edges"]), "byzantine_agents": len(m["byzantine_agents"]),
                "byzantine_setting": p["byzantine"], "chain_of_thought": p["cot"], "reply_parser": parser_mode(p),
                **reference_unscorable(score_reason(score), int(usage.get("model_errors") or 0))}

    def scripted_policy(self, view: AgentView, protocol: str, seed: int) -> ScriptedPolicy:
        from masgrid.families.agentsnet.policies import make_policy

        return make_policy(self.problem, view, protocol, seed)


@register_task
class Coloring(AgentsNetTask):
    name = "agentsnet/coloring"
    problem = "coloring"

    def valid_answers(self, neighbors: list[str], params: dict[str, Any]) -> list[str]:
        return [f"Group {c}" for c in range(1, params["groups"] + 1)]

    def score_graph(self, graph: scoring.ScoredGraph, instance: Instance) -> scoring.TaskScore:
        return scoring.coloring_score(graph, int(instance.params["groups"]))


@register_task
class Matching(AgentsNetTask):
    name = "agentsnet/matching"
    problem = "matching"
    scorer = staticmethod(scoring.matching_score)

    def valid_answers(self, neighbors: list[str], params: dict[str, Any]) -> list[str]:
        return [*neighbors, scoring.NONE]


@register_task
class VertexCover(AgentsNetTask):
    name = "agentsnet/vertex_cover"
    problem = "vertex_cover"
    options = (scoring.YES, scoring.NO)
    scorer = staticmethod(scoring.vertex_cover_score)


@register_task
class LeaderElection(AgentsNetTask):
    name = "agentsnet/leader_election"
    problem = "leader_election"
    is_global = True
    options = (scoring.YES, scoring.NO)
    scorer = staticmethod(scoring.leader_election_score)


@register_task
class Consensus(AgentsNetTask):
    name = "agentsnet/consensus"
    problem = "consensus"
    is_global = True
    options = ("0", "1")
    scorer = staticmethod(scoring.consensus_score)
