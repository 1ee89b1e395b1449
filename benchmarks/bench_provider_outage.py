"""A hosted provider's outage mid-sweep: how long the sweep goes on, and how many requests it
sends into the outage, with a given masgrid tree.

The provider is a loopback fake (tests/support/chat_server.py) whose agents wait every round;
after `--healthy-calls` agent calls its chat route answers 503 to everything while its models
list keeps answering (the outage the lost-endpoint probe used to miss). The sweep is a real
`masgrid run -m` command: `--runs` sorting runs (3 agents, k=2, 16 rounds), two at a time,
the preset's retries (2). Each tree runs in its own process and Ray (own RAY_TMPDIR), its
masgrid first on PYTHONPATH; repeats interleave the trees, so a load change hits both alike.
Reported per tree: seconds from the outage's start to the command's exit, requests sent
during the outage (agents' calls and their retries, probes included), exit status, and the
runs table's statuses.

    git archive <base> | tar -x -C /tmp/base   # the tree to compare with
    python benchmarks/bench_provider_outage.py --tree before=/tmp/base --tree after=. --repeats 3 \\
        --out benchmarks/results/provider_outage.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import pandas as pd

from figures_header import emit, machine_line  # benchmarks/ (run as a script)

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.support.chat_server import ChatServer, Reply  # noqa: E402 - after the repository is on the path

OVERLOADED = {"error": {"message": "The engine is currently overloaded, please try again later.",
                        "type": "server_error"}}


class Provider:
    """Healthy for `healthy_calls` agent calls, then 503 on every chat call (models list up)."""

    def __init__(self, healthy_calls: int) -> None:
        self.healthy_calls = healthy_calls
        self.lock = threading.Lock()
        self.agent_calls = 0
        self.outage_at: float | None = None
        self.during = 0

    def __call__(self, body: dict) -> Reply:
        with self.lock:
            if self.outage_at is not None:
                self.during += 1
                return Reply(status=503, body=OVERLOADED)
            if body.get("max_tokens") != 1:  # preflight's call asks for one token
                self.agent_calls += 1
                if self.agent_calls > self.healthy_calls:
                    self.outage_at = time.monotonic()
                    self.during = 1
                    return Reply(status=503, body=OVERLOADED)
        return Reply("```\nwait\n```")


def one_sweep(tree: Path, runs: int, healthy_calls: int) -> dict:
    provider = Provider(healthy_calls)
    with ChatServer(provider, models=("provider-model",)) as server, tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        env = {**os.environ, "PYTHONPATH": str(tree.resolve()), "RAY_TMPDIR": tempfile.mkdtemp(prefix="ray", dir="/tmp"),
               "RAY_AUTH_MODE": "disabled"}
        env.pop("RAY_ADDRESS", None)
        args = ["run", "-m", f"seed={','.join(map(str, range(runs)))}", "task=sorting", "protocol=broadcast",
                "agents=3", "k=2", "max_rounds=16", "backend=openai", "model=local_vllm",
                "model.name=provider-model", f"model.base_url={server.base_url}", "model.timeout_s=30",
                f"results_dir={results}", "sweep.max_concurrent=2", "sweep.admission=fixed", "sweep.progress=plain",
                "execution.keep_warm=false"]
        proc = subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", *args], env=env,
                              cwd=tree, capture_output=True, text=True)
        ended = time.monotonic()
        statuses: Counter[str] = Counter()
        if (results / "runs").is_dir():
            table = pd.read_parquet(results / "runs")
            statuses.update(f"{s}/{c}" if s == "failed" else s for s, c in zip(table["status"], table["error_class"]))
        statuses["no row"] = runs - sum(statuses.values())
    if provider.outage_at is None:
        raise RuntimeError(f"the outage never began; the command said: {proc.stderr.strip()[-1500:]}")
    return {"after_outage_s": ended - provider.outage_at, "requests_in_outage": provider.during,
            "exit": proc.returncode, "statuses": dict(sorted(statuses.items())),
            "last_line": (proc.stderr.strip().splitlines() or [""])[-1][:300]}


def spread(rows: list[dict], key: str, digits: int) -> str:
    """Median (min-max) of one figure over the repeats."""
    values = [r[key] for r in rows]
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True, help="label=path of a masgrid checkout")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--healthy-calls", type=int, default=48, help="agent calls answered before the outage")
    parser.add_argument("--out", type=Path)
    a = parser.parse_args()
    trees = dict(t.split("=", 1) for t in a.tree)
    load_before = os.getloadavg()
    found: dict[str, list[dict]] = {label: [] for label in trees}
    for _ in range(a.repeats):
        for label, path in trees.items():
            found[label].append(one_sweep(Path(path), a.runs, a.healthy_calls))
    lines = [f"# A provider outage mid-sweep (`bench_provider_outage.py`, {a.runs} runs of 3 agents x 16 rounds, "
             f"two at a time, outage after {a.healthy_calls} agent calls)", "",
             machine_line(load_before, os.getloadavg()) + ".",
             "Medians (min-max) of the repeats; the outage: chat calls answer 503, the models list still answers.", "",
             "| tree | repeats | outage to exit (s) | requests sent into the outage | exit status | runs (each repeat) |",
             "|---|---:|---:|---:|---|---|"]
    for label, rows in found.items():
        exits = ", ".join(str(r["exit"]) for r in rows)
        states = "; ".join(", ".join(f"{k} {v}" for k, v in r["statuses"].items()) for r in rows)
        lines.append(f"| {label} | {len(rows)} | {spread(rows, 'after_outage_s', 1)} | "
                     f"{spread(rows, 'requests_in_outage', 0)} | "
                     f"{exits} | {states} |")
    lines += ["", "Last line of each tree's first command:", ""]
    lines += [f"- {label}: `{rows[0]['last_line']}`" for label, rows in found.items()]
    emit(lines, a.out)


if __name__ == "__main__":
    main()
