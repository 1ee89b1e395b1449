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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_simas_sweep import start_head, stop_head  # noqa: E402
from masgrid._private.actors.serving.tiny_model import build_tiny_model  # noqa: E402
from masgrid._private.platform.commands.serve_cli import compose_model  # noqa: E402

ARMS = ("uni", "mp")


def deploy_once(executor: str, model: Path, index: int) -> float:
    """Seconds from the deploy call to the first answered request; the app is deleted after."""
    import urllib.request

    from ray import serve

    from masgrid._private.actors.serving.deploy import deploy, http_base_url
    from masgrid._private.actors.serving.spec import parse_serving

    app = f"start-{executor}-{index}"
    settings = compose_model(["model=tiny_cpu", f"model.serving.model_path={model}", f"model.serving.app={app}",
                              f"model.serving.route_prefix=/{app}",
                              f"+model.serving.engine.extra.distributed_executor_backend={executor}"])
    start = time.perf_counter()
    spec = deploy(settings)
    body = json.dumps({"model": settings.request_model, "max_tokens": 1,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(f"{http_base_url(settings, parse_serving(settings.serving))}/chat/completions",
                                     body, {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        json.loads(response.read())
    elapsed = time.perf_counter() - start
    serve.delete(spec.app)
    time.sleep(3)  # the replica's processes exit before the next deploy starts
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="ABBA pairs per arm")
    parser.add_argument("--out", type=Path, default=None)
    ns = parser.parse_args()

    import tempfile

    import ray

    work = Path(tempfile.mkdtemp(prefix="bench-start-"))
    model = work / "tiny"
    build_tiny_model(model)
    head = start_head()
    os.environ.update(head)
    times: dict[str, list[float]] = {arm: [] for arm in ARMS}
    try:
        ray.init(address="auto", namespace="masgrid", log_to_driver=False)
        warm = deploy_once("uni", model, 0)
        order = [arm for i in range(ns.repeat) for arm in (ARMS if i % 2 == 0 else ARMS[::-1])]
        for index, arm in enumerate(order, start=1):
            times[arm].append(deploy_once(arm, model, index))
            print(f"{arm}: {times[arm][-1]:.1f} s", flush=True)
    finally:
        ray.shutdown()
        stop_head(head)
    med = {arm: statistics.median(values) for arm, values in times.items()}
    lines = ["# Time to a served model: vLLM's uni executor against mp (tiny model, CPU, one rank)", "",
             f"{ns.repeat} ABBA pairs after one unmeasured warm-up deploy ({warm:.1f} s); "
             f"{os.cpu_count()} cores; one private Ray head.", "",
             "| executor | median s | each run s |", "|---|---:|---|"]
    for arm in ARMS:
        lines.append(f"| {arm} | {med[arm]:.1f} | {', '.join(f'{t:.1f}' for t in times[arm])} |")
    lines += ["", f"uni / mp: {med['uni'] / med['mp']:.2f}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if ns.out:
        ns.out.write_text(text)


if __name__ == "__main__":
    main()
