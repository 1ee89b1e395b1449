"""Tables 9 and 10 with our classical baselines (appendix K), via the in-process simulator.

Grid: every task x size x graph model (ws, ba, dt) x seeds 0..S-1, at the paper's round
budget; `--rounds R` adds the same grid at a fixed larger budget ("more rounds").

    python benchmarks/agentsnet_classical.py --out benchmarks/results/agentsnet_classical.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from masgrid.families.agentsnet.analysis import TASKS, figure_scaling, table_by_size
from masgrid._private.envs.tasks import get_task
from masgrid.families.agentsnet.simulate import run_scripted


def grid(sizes: list[int], seeds: int, rounds: int | None) -> pd.DataFrame:
    rows = []
    for problem in TASKS:
        task = get_task(f"agentsnet/{problem}")
        for n in sizes:
            for graph in ("ws", "ba", "dt"):
                for seed in range(seeds):
                    inst = task.generate(n, 1, seed, graph=graph, rounds=rounds)
                    out = run_scripted(task, inst, seed)
                    rows.append({"problem": problem, "agents": n, "graph": graph, "seed": seed,
                                 "success": float(out.score.success), "soft_score": out.score.metrics["soft_score"],
                                 "rounds": inst.params["rounds"]})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/agentsnet_classical.md"))
    parser.add_argument("--figure", type=Path, default=Path("docs/figures/agentsnet_classical_scaling.png"))
    args = parser.parse_args()
    parts = ["# AgentsNet classical baselines (scripted, in-process)\n"]
    frames = {}
    for title, sizes, rounds in (
        ("Table 9: paper budget (4/5/6 rounds for local tasks, 2D+1 for global ones)", [4, 8, 16], None),
        (f"Table 9, more rounds: every task with {args.rounds} rounds", [4, 8, 16], args.rounds),
        ("Table 10: 2D+1 rounds for every task", [20, 30, 40, 50, 60, 70, 80, 90, 100], None),
    ):
        df = grid(sizes, args.seeds, rounds)
        frames[title] = df
        parts.append(f"## {title}\n\n{len(df)} runs, {args.seeds} graphs per model and size.\n\n"
                     + table_by_size(df).to_markdown() + "\n")
        print(parts[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(parts))
    paper_budget = pd.concat([df for title, df in frames.items() if "more rounds" not in title])
    args.figure.parent.mkdir(parents=True, exist_ok=True)
    figure_scaling(paper_budget, args.figure, title="Classical baselines, paper round budgets")


if __name__ == "__main__":
    main()
