"""Run-table columns of this family (name -> type, unit, meaning)."""

from __future__ import annotations

from masgrid.family import Metric

METRICS: dict[str, Metric] = {
    "soft_score": Metric(type="float64", unit='fraction in [0, 1]', meaning=(
        "AgentsNet soft score of the final answers, as the released code computes it (appendix B)")),
    "message_rounds": Metric(type="int64", unit='rounds', meaning=(
        "AgentsNet message-passing rounds T (the final-answer call comes after them)")),
    "diameter": Metric(type="int64", unit='edges (hops)', meaning=(
        "AgentsNet graph diameter D")),
    "max_degree": Metric(type="int64", unit='neighbours', meaning=(
        "AgentsNet graph maximum degree Delta")),
    "edges": Metric(type="int64", unit='edges', meaning=(
        "AgentsNet graph edge count")),
    "invalid_answers": Metric(type="int64", unit='agents', meaning=(
        "AgentsNet final answers missing or not a valid option (scored agents)")),
    "byzantine_agents": Metric(type="int64", unit='agents', meaning=(
        "AgentsNet agents given the adversarial objective (appendix I)")),
    "byzantine_setting": Metric(type="string", unit='label', meaning=(
        "AgentsNet Byzantine setting: none, aware or unaware")),
    "chain_of_thought": Metric(type="bool", unit='boolean', meaning=(
        "AgentsNet: agents asked to reason before each JSON reply")),
    "reply_parser": Metric(type="string", unit='label', meaning=(
        "AgentsNet: how replies were read, strict or reference (agentsnet.parser)")),
    "reference_unscorable": Metric(type="bool", unit='boolean', meaning=(
        "AgentsNet: the released code would have recorded no score for this run "
                             "(a model call failed after retries, or its scorer divides by zero); masgrid scores it")),
    "reference_unscorable_reason": Metric(type="string", unit="labels ('+'-joined)", meaning=(
        "AgentsNet: why reference_unscorable, '+'-joined: model_error, "
                                    "no_coordinator (vertex cover, nobody said Yes), no_edges, no_agents; null when scorable")),
}
