"""What `agentsnet.parser=reference` does to coloring: the classical baseline read both ways.

The scripted (Delta+1)-colouring baseline answers "Group c" for any c up to Delta+1. Read
as the released code reads final answers, "Group 10" and above become "Group 1"; this
script measures the fraction solved per graph model and size in both modes (in-process
simulator, paper round budget 2D+1 above 16 nodes, 6 rounds at 16), and the share of
graphs with at least 10 groups.

    python benchmarks/agentsnet_parser_modes.py --seeds 10 --out benchmarks/results/agentsnet_parser_modes.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from masgrid._private.envs.tasks import get_task
from masgrid.families.agentsnet.simulate import run_scripted


def grid(sizes: list[int], seeds: int) -> pd.DataFrame:
    task = get_task("agentsnet/coloring")
    rows = []
    for n in sizes:
        for graph in ("ws", "ba", "dt"):
            for seed in range(seeds):
                row = {"agents": n, "graph": graph, "seed": seed}
                for parser in ("strict", "reference"):
                    inst = task.generate(n, 1, seed, graph=graph, parser=parser)
                    row["ten_groups"] = inst.params["groups"] >= 10
                    row[parser] = float(run_scripted(task, inst, seed).score.success)
                rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    cli = argparse.ArgumentParser()
    cli.add_argument("--seeds", type=int, default=10)
    cli.add_argument("--sizes", type=int, nargs="+", default=[16, 20, 30, 50, 100])
    cli.add_argument("--out", type=Path, default=Path("benchmarks/results/agentsnet_parser_modes.md"))
    args = cli.parse_args()
    df = grid(args.sizes, args.seeds)
    table = df.groupby(["graph", "agents"])[["ten_groups", "strict", "reference"]].mean().round(2)
    text = (f"# Coloring baseline, fraction solved by parser mode ({args.seeds} graphs per model and size)\n\n"
            "`ten_groups`: share of graphs with Delta+1 >= 10.\n\n" + table.to_markdown() + "\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
