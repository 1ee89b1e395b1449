"""Time to a served model: the tiny model deployed on vLLM's CPU build behind Ray Serve LLM,
one rank, with vLLM's `uni` executor (the rank runs in the engine's own process) and with its
multiprocess executor `mp` (a worker process of its own; masgrid's CPU setting), side by side.
Asked because the suite deploys about fifteen engines: one process fewer each looked like a
saving. It is none (benchmarks/results/engine_start.md: uni / mp 1.02), so masgrid keeps mp.

    PYTHONPATH=. flock /tmp/masgrid-engine.lock python benchmarks/bench_engine_start.py \\
        --repeat 3 --out benchmarks/results/engine_start.md

One private Ray head (`masgrid up` in a temp dir of its own) for the whole run, so Ray's own
start-up is not measured. Each deploy is `deploy()` (masgrid's own path: Serve LLM's
`build_openai_app`, `serve.run`, the wait until the app is RUNNING), then one 1-token chat
request through the handle's OpenAI route answers, then the app is deleted. The arms
alternate ABBA, `--repeat` pairs; the first deploy of the run (vLLM's model-info cache,
Python's byte code) is a warm-up and not counted. Reported: the median seconds per arm, and
their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_simas_sweep import start_head, stop_head  # noqa: E402
from cpu_per_test import busy_cpu_s  # noqa: E402
from masgrid._private.actors.serving.tiny_model import build_tiny_model  # noqa: E402
from masgrid._private.platform.commands.serve_cli import compose_model  # noqa: E402

ARMS = ("uni", "mp")


def served_in(settings: Any) -> tuple[float, float]:
    """(seconds, the machine's busy CPU-seconds) from `deploy()` to the first answered 1-token
    request; the app is deleted after, and its processes given 3 s to exit."""
    import urllib.request

    from ray import serve

    from masgrid._private.actors.serving.deploy import deploy, http_base_url
    from masgrid._private.actors.serving.spec import parse_serving

    start, cpu = time.perf_counter(), busy_cpu_s()
    spec = deploy(settings)
    body = json.dumps({"model": settings.request_model, "max_tokens": 1,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(f"{http_base_url(settings, parse_serving(settings.serving))}/chat/completions",
                                     body, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        json.loads(response.read())
    elapsed, used = time.perf_counter() - start, busy_cpu_s() - cpu
    serve.delete(spec.app)
    time.sleep(3)  # the replica's processes exit before the next deploy starts
    return elapsed, used


def write_report(lines: list[str], out: Path | None) -> None:
    """Print a benchmark's Markdown report, and write it to `out` when given."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        out.write_text(text)


def abba(arms: tuple[str, str], repeat: int, once: Callable[[str, Path, int], tuple[float, float]],
         ) -> tuple[dict[str, list[tuple[float, float]]], tuple[float, float]]:
    """Each arm's (seconds, CPU-s) per deploy, ABBA over `repeat` pairs after one unmeasured
    warm-up deploy of the first arm, on one private Ray head; and the warm-up's."""
    import tempfile

    import ray

    work = Path(tempfile.mkdtemp(prefix="bench-start-"))
    model = work / "tiny"
    build_tiny_model(model)
    head = start_head()
    os.environ.update(head)
    runs: dict[str, list[tuple[float, float]]] = {arm: [] for arm in arms}
    try:
        ray.init(address="auto", namespace="masgrid", log_to_driver=False)
        warm = once(arms[0], model, 0)
        order = [arm for i in range(repeat) for arm in (arms if i % 2 == 0 else arms[::-1])]
        for index, arm in enumerate(order, start=1):
            runs[arm].append(once(arm, model, index))
            print(f"{arm}: {runs[arm][-1][0]:.1f} s, {runs[arm][-1][1]:.1f} CPU-s", flush=True)
    finally:
        ray.shutdown()
        stop_head(head)
    return runs, warm


def deploy_once(executor: str, model: Path, index: int) -> tuple[float, float]:
    app = f"start-{executor}-{index}"
    return served_in(compose_model(["model=tiny_cpu", f"model.serving.model_path={model}", f"model.serving.app={app}",
                                    f"model.serving.route_prefix=/{app}",
                                    f"+model.serving.engine.extra.distributed_executor_backend={executor}"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="ABBA pairs per arm")
    parser.add_argument("--out", type=Path, default=None)
    ns = parser.parse_args()

    runs, warm = abba(("uni", "mp"), ns.repeat, deploy_once)
    med = {arm: statistics.median(t for t, _ in values) for arm, values in runs.items()}
    lines = ["# Time to a served model: vLLM's uni executor against mp (tiny model, CPU, one rank)", "",
             f"{ns.repeat} ABBA pairs after one unmeasured warm-up deploy ({warm[0]:.1f} s); "
             f"{os.cpu_count()} cores; one private Ray head.", "",
             "| executor | median s | each run s |", "|---|---:|---|"]
    for arm in ARMS:
        lines.append(f"| {arm} | {med[arm]:.1f} | {', '.join(f'{t:.1f}' for t, _ in runs[arm])} |")
    lines += ["", f"uni / mp: {med['uni'] / med['mp']:.2f}"]
    write_report(lines, ns.out)


if __name__ == "__main__":
    main()
