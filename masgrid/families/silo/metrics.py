"""Run-table columns of this family (name -> type, unit, meaning)."""

from __future__ import annotations

from masgrid.family import Metric

METRICS: dict[str, Metric] = {
    "pcs": Metric(type="float64", unit='fraction in [0, 1]', meaning=(
        "SILO partial correctness score P, mean per-agent quality q_i (eq. 3)")),
    "tokens_per_round": Metric(type="float64", unit='tokens per round', meaning=(
        "SILO token consumption C, output tokens of all agents / rounds executed (eq. 4)")),
    "density": Metric(type="float64", unit='messages per ordered agent pair', meaning=(
        "SILO communication density D, messages delivered (SFS: reads of others' files) / N(N-1) (eq. 5)")),
    "floor_sr": Metric(type="float64", unit='fraction in [0, 1]', meaning=(
        "SILO no-communication floor of this instance: S when every agent answers from "
                 "its own shard alone (families/silo/isolated.py)")),
    "floor_pcs": Metric(type="float64", unit='fraction in [0, 1]', meaning=(
        "SILO no-communication floor of this instance: P of the isolated answers")),
    "floor_success": Metric(type="bool", unit='boolean', meaning=(
        "SILO no-communication floor of this instance: whether the isolated answers "
                      "give S = 1")),
}
