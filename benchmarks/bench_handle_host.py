"""What an agent host pays to call a Serve LLM engine by DeploymentHandle: its process's CPU
and peak memory, through masgrid's `chat_plain` (plain dicts, masgrid's default since
2026-12-06, actors/serving/plain_server.py) and through Serve LLM's own `chat` with vLLM's
request and response types (`vllm_types`, what hosts did before and still do for a deployment
without `chat_plain`).

    PYTHONPATH=. flock /tmp/masgrid-engine.lock python benchmarks/bench_handle_host.py \\
        --pairs 3 --out benchmarks/results/handle_host.md

The tiny model is deployed once through Serve LLM on vLLM's CPU build. Each measurement is a
fresh Ray actor (a fresh worker process, as an agent host is) that makes three chat calls by
handle and reports its own CPU (user + system) and peak RSS; the arms alternate (ABBA).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_engine_start import write_report  # noqa: E402

ARMS = ("chat_plain", "vllm_types")
CALLS = 3


class _Host:
    """A fresh process calling the engine by handle, as an agent host does."""

    def measure(self, arm: str, settings: dict[str, Any], app: str, deployment: str) -> dict[str, Any]:
        import asyncio
        import resource

        from ray import serve

        from masgrid._private.actors.backends.base import BackendSettings
        from masgrid._private.actors.serving import handle_backend
        from masgrid._private.actors.serving.spec import parse_serving
        from masgrid._private.envs.tokens import get_counter

        model = BackendSettings.model_validate(settings)
        handle = serve.get_deployment_handle(deployment, app_name=app)
        if arm == "vllm_types":  # as for a deployment found without chat_plain
            handle_backend._WITHOUT_PLAIN.add((app, deployment))
        backend = handle_backend.HandleChatBackend(handle, model, parse_serving(model.serving),
                                                   get_counter("approx"), None)
        errors = []
        for i in range(CALLS):
            done = asyncio.run(backend.complete([{"role": "user", "content": f"Say something {i}."}]))
            errors.append(done.error)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {"cpu_s": usage.ru_utime + usage.ru_stime, "max_rss_mb": usage.ru_maxrss / 1024,
                "errors": [e for e in errors if e], "vllm_imported": "vllm" in sys.modules}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3, help="ABBA pairs (each arm measured 2 x pairs times)")
    parser.add_argument("--out", type=Path, default=None)
    ns = parser.parse_args()

    import ray
    from ray import serve

    from masgrid._private.actors.serving.deploy import deploy, target
    from masgrid._private.actors.serving.tiny_model import build_tiny_model
    from masgrid._private.platform.commands.serve_cli import compose_model

    model = Path(tempfile.mkdtemp(prefix="bench-handle-")) / "tiny"
    build_tiny_model(model)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    settings = compose_model(["model=tiny_cpu", f"model.serving.model_path={model}", "model.serving.app=bench-handle",
                              "model.serving.route_prefix=/bench-handle", f"model.tokenizer=hf:{model}/tokenizer.json"])
    spec = deploy(settings)
    app, deployment = target(settings, spec)
    order = [arm for _ in range(ns.pairs) for arm in (ARMS + ARMS[::-1])]
    got: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS}
    try:
        for arm in order:
            host = ray.remote(_Host).options(num_cpus=0).remote()
            row = ray.get(host.measure.remote(arm, settings.model_dump(), app, deployment), timeout=300)
            ray.kill(host)
            if row["errors"]:
                raise SystemExit(f"{arm}: calls failed: {row['errors']}")
            got[arm].append(row)
            print(f"{arm}: {row['cpu_s']:.2f} CPU-s, {row['max_rss_mb']:.0f} MB, vLLM imported: {row['vllm_imported']}")
    finally:
        serve.delete(app)
        ray.shutdown()
    med = {arm: (statistics.median(r["cpu_s"] for r in rows), statistics.median(r["max_rss_mb"] for r in rows))
           for arm, rows in got.items()}
    lines = ["# An agent host's cost of calling a Serve LLM engine by handle (tiny model, CPU)", "",
             f"Each row: the median of {2 * ns.pairs} fresh Ray actors (ABBA), each making {CALLS} chat calls by "
             f"handle; CPU is the actor process's own (user + system), memory its peak RSS; "
             f"{os.cpu_count()} cores.", "",
             "| path | CPU-s per host | peak RSS (MB) | vLLM imported in the host |", "|---|---|---|---|"]
    for arm in ARMS:
        imported = {r["vllm_imported"] for r in got[arm]}
        lines.append(f"| `{arm}` | {med[arm][0]:.2f} | {med[arm][1]:.0f} | {', '.join(map(str, sorted(imported)))} |")
    lines += ["", f"Ratio vllm_types / chat_plain: CPU {med['vllm_types'][0] / med['chat_plain'][0]:.1f}, "
              f"memory {med['vllm_types'][1] / med['chat_plain'][1]:.1f}."]
    write_report(lines, ns.out)


if __name__ == "__main__":
    main()
