"""Time and CPU to a served model with and without Serve LLM's per-node download task: the
tiny model deployed on vLLM's CPU build behind Ray Serve LLM, one rank, once with masgrid's
callback that skips the task for a local model (`skip`, masgrid's default since 2026-12-05,
actors/serving/node_init.py) and once with Serve LLM's own step (`task`: a Ray task per node,
a fresh worker process importing torch and transformers, which returns the path it was given).

    PYTHONPATH=. flock /tmp/masgrid-engine.lock python benchmarks/bench_serve_node_init.py \\
        --repeat 2 --out benchmarks/results/serve_node_init.md

Measured as bench_engine_start.py measures (`abba`, `served_in`: one private Ray head, ABBA
after one unmeasured warm-up deploy, `deploy()` then one 1-token chat request). CPU is the
machine's busy time over the deploy (/proc/stat), so run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_engine_start import abba, served_in, write_report  # noqa: E402
from masgrid._private.actors.serving.spec import ServingSpec  # noqa: E402
from masgrid._private.platform.commands.serve_cli import compose_model  # noqa: E402

ARMS = ("skip", "task")
_WITH_CALLBACK = ServingSpec.llm_config_dict


def _without_callback(self: ServingSpec, model_id: str, replicas: int | None = None) -> dict[str, Any]:
    out = _WITH_CALLBACK(self, model_id, replicas)
    out.pop("callback_config", None)
    return out


def deploy_once(arm: str, model: Path, index: int) -> tuple[float, float]:
    ServingSpec.llm_config_dict = _WITH_CALLBACK if arm == "skip" else _without_callback  # type: ignore[method-assign]
    app = f"init-{arm}-{index}"
    return served_in(compose_model(["model=tiny_cpu", f"model.serving.model_path={model}", f"model.serving.app={app}",
                                    f"model.serving.route_prefix=/{app}"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="ABBA pairs per arm")
    parser.add_argument("--out", type=Path, default=None)
    ns = parser.parse_args()

    runs, warm = abba(ARMS, ns.repeat, deploy_once)
    med = {arm: (statistics.median(t for t, _ in v), statistics.median(c for _, c in v)) for arm, v in runs.items()}
    lines = ["# Time and CPU to a served model: Serve LLM's per-node download task skipped or run "
             "(tiny model, CPU, one rank)", "",
             f"{ns.repeat} ABBA pairs after one unmeasured warm-up deploy ({warm[0]:.1f} s); "
             f"{os.cpu_count()} cores; one private Ray head; CPU is the machine's busy time.", "",
             "| node init | median s | median CPU-s | each run (s, CPU-s) |", "|---|---:|---:|---|"]
    for arm in ARMS:
        each = ", ".join(f"({t:.1f}, {c:.1f})" for t, c in runs[arm])
        lines.append(f"| {arm} | {med[arm][0]:.1f} | {med[arm][1]:.1f} | {each} |")
    lines += ["", f"skip / task: {med['skip'][0] / med['task'][0]:.2f} in time, "
              f"{med['skip'][1] / med['task'][1]:.2f} in CPU"]
    write_report(lines, ns.out)


if __name__ == "__main__":
    main()
