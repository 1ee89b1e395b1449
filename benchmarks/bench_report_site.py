"""Report-site figures: build time, and page load time in headless Chromium, for
(a) one 100-agent x 100-round run and (b) a 1,000-run sweep, both synthetic Parquet written
through the real Recorder with the real schemas.

    python benchmarks/bench_report_site.py [--agents 100] [--rounds 100] [--sweep 1000] [--out DIR]

The big run is P2P-shaped: every round each agent replies, sends one message to the next
agent, receives, and gets the two command replies back as observations (4 events per agent
and round, plus the system prompts). The sweep's runs have 4 agents and 5 rounds each.
Page load = from navigation until the page says it is ready (run page: header, heatmap and
timeline drawn, first agent's transcript shown; index: every row drawn).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.results.recorder import Recorder
from masgrid._private.site.build import build_site

REPLY = "I will send my numbers to my neighbour and read what arrived. " * 3


def write_run(recorder: Recorder, root: Path, agents: int, rounds: int, seed: int) -> str:
    cfg = RunConfig.from_mapping({"results_dir": str(root), "task": "sorting", "protocol": "p2p", "agents": agents,
                                  "k": 2, "seed": seed, "experiment": "bench", "execution": {"executor": "local"}})
    base = cfg.columns()
    part = {"task": "sorting", "protocol": "p2p"}
    run_id = base["run_id"]
    events: list[dict[str, Any]] = []

    def add(**row: Any) -> int:
        events.append({"run_id": run_id, "seq": len(events), "phase": 1, "tokens_in": 0, "tokens_out": 0,
                       "tokens_comm": 0, "messages_sent": 0, **row})
        return len(events) - 1

    for a in range(agents):
        add(round=0, agent=a, kind="prompt", role="system", text=f"You are Agent-{a}. Sort the numbers. " * 20, ok=True)
    pending: dict[int, list[int]] = {a: [] for a in range(agents)}
    for r in range(1, rounds + 1):
        for a in range(agents):
            for source in pending[a]:
                add(round=r, agent=a, kind="observation", role="user", source=source, ok=True)
            add(round=r, agent=a, kind="model_call", role="assistant", text=f"{REPLY}round {r}", ok=True,
                tokens_in=500 + 40 * r, tokens_out=60, usage_source="server")
            to = (a + 1) % agents
            send = add(round=r, agent=a, kind="command", verb="send_message", text=f"send_message {to} DATA [{r},{a}]",
                       reply=f"sent to Agent-{to}", peers=[to], messages_sent=1, ok=True)
            recv = add(round=r, agent=a, kind="command", verb="receive_messages", text="receive_messages",
                       reply=f"from Agent-{(a - 1) % agents}: DATA [{r - 1},{(a - 1) % agents}]",
                       peers=[(a - 1) % agents], ok=True)
            pending[a] = [send, recv]
    recorder.begin_run(run_id, part)
    for chunk, start in enumerate(range(0, len(events), 20000)):
        recorder.write_events(run_id, part, chunk + 1, events[start:start + 20000])
    agent_rows = [{"run_id": run_id, "agent": a, "submission": "[1, 2]", "expected": "[1, 2]", "correct": True,
                   "partial": 1.0, "rounds": rounds, "model_calls": rounds, "messages_sent": rounds} for a in range(agents)]
    tokens = sum(e["tokens_in"] + e["tokens_out"] for e in events)
    recorder.finish_run({**base, "status": "ok", "success": True, "sr": 1.0, "rounds": rounds, "tokens_total": tokens,
                         "model_calls": agents * rounds, "model_errors": 0, "model_error_rate": 0.0,
                         "wall_s": 1.0}, agent_rows, part)
    return run_id


def page_load_s(url: str, ready: str, repeats: int = 3) -> float:
    """Best of `repeats` navigations until `ready` matches (headless Debian chromium)."""
    from playwright.sync_api import sync_playwright

    best = float("inf")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        for _ in range(repeats):
            page = browser.new_page()
            start = time.perf_counter()
            page.goto(url)
            page.wait_for_selector(ready, timeout=60000)
            best = min(best, time.perf_counter() - start)
            page.close()
        browser.close()
    return best


def measure(root: Path, label: str, url_tail: str, ready: str) -> dict[str, Any]:
    start = time.perf_counter()
    index = build_site(root)
    build_s = time.perf_counter() - start
    size = sum(f.stat().st_size for f in index.parent.rglob("*") if f.is_file())
    load_s = page_load_s(index.parent.joinpath(url_tail.split("#")[0]).as_uri() + (
        "#" + url_tail.split("#")[1] if "#" in url_tail else ""), ready)
    return {"case": label, "build_s": round(build_s, 2), "site_mb": round(size / 2**20, 1), "load_s": round(load_s, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--sweep", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=None, help="keep the results here (default: a temp dir)")
    ns = parser.parse_args(argv)
    base = ns.out or Path(tempfile.mkdtemp(prefix="bench-site-"))
    rows = []
    big = base / "big"
    # --out with results from an earlier call: measure them again without rewriting them
    reuse = (big / "runs").is_dir() and (base / "sweep" / "runs").is_dir()
    run_id = write_run(Recorder(big), big, ns.agents, ns.rounds, 0) if not reuse else \
        str(pd.read_parquet(big / "runs")["run_id"].iloc[0])
    ready = "body[data-ready='1'] #transcript[data-agent='0']"
    rows.append(measure(big, f"one run, {ns.agents} agents x {ns.rounds} rounds: run page", f"run.html#{run_id}", ready))
    sweep = base / "sweep"
    if not reuse:
        recorder = Recorder(sweep)
        start = time.perf_counter()
        for seed in range(ns.sweep):
            write_run(recorder, sweep, 4, 5, seed)
        print(f"(wrote {ns.sweep} synthetic runs in {time.perf_counter() - start:.1f} s)")
    ns.sweep = len(pd.read_parquet(sweep / "runs"))
    rows.append(measure(sweep, f"sweep of {ns.sweep} runs (4 agents x 5 rounds): index page", "index.html",
                        f"#runs tbody tr:nth-child({ns.sweep})"))
    print("| case | build (s) | site (MiB) | page load (s) |\n|---|---|---|---|")
    for row in rows:
        print(f"| {row['case']} | {row['build_s']} | {row['site_mb']} | {row['load_s']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
