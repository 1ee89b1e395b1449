"""Watches a Ray cluster's Serve apps and its engine counters from outside masgrid.

    python -m tests.support.serve_witness ADDRESS METRICS_PORT OUT.jsonl STOP_FILE

Every 0.5 s, one JSON line: the Serve apps and their status, and the vLLM token counters each
engine exports through Ray's metrics agent (Serve LLM's `log_engine_metrics`), by served
model. Run as its own process (it joins the cluster under test, which the test session's own
Ray must not meet) until STOP_FILE exists.
"""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.request
from pathlib import Path

_SAMPLE = re.compile(r"^ray_vllm[:_](prompt_tokens|generation_tokens)(?:_total)?\{([^}]*)\} ([0-9.e+]+)$", re.MULTILINE)


def counters(metrics_port: int) -> dict[str, dict[str, float]]:
    """served model -> {prompt_tokens, generation_tokens}, summed over the series of its engines."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    out: dict[str, dict[str, float]] = {}
    for name, labels, value in _SAMPLE.findall(text):
        model = dict(re.findall(r'(\w+)="([^"]*)"', labels)).get("model_name", "?")
        entry = out.setdefault(model, {})
        entry[name] = entry.get(name, 0.0) + float(value)
    return out


def main(address: str, metrics_port: int, out: Path, stop: Path) -> None:
    import ray
    from ray import serve

    ray.init(address=address, namespace="witness", log_to_driver=False, configure_logging=False)
    with out.open("a", encoding="utf-8") as sink:
        while not stop.exists():
            try:
                apps = {name: str(app.status).rsplit(".", 1)[-1] for name, app in serve.status().applications.items()}
            except Exception:
                apps = {}
            sink.write(json.dumps({"t": time.time(), "apps": apps, "counters": counters(metrics_port)}) + "\n")
            sink.flush()
            time.sleep(0.5)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
