"""Build the static report site of a results directory (docs/report.md).

Layout under `out` (RESULTS_DIR/report/site by default):
  index.html, run.html, assets/          the pages, our own CSS and JS (nothing external)
  data/index.js                          every run's index row, the families, the reports
  data/runs/<run_id>/header.js           setting, status, provenance, metrics, agents table
  data/runs/<run_id>/flows.js            sender x receiver heatmap and round timeline
  data/runs/<run_id>/agent-<i>.js        agent i's transcript (loaded when it is opened)
  data/runs/<run_id>/family.js           the family's own panel (Family.site_panel), drawn by its script
  assets/panels/<family>.js              each family's panel renderer (Family.site_script)
A run page loads its header first and the rest only when needed, so a 100-agent,
100-round run opens without reading its transcripts (benchmarks/bench_report_site.py).
"""

from __future__ import annotations

import shutil
from datetime import datetime, UTC
from importlib.resources import files
from pathlib import Path
from typing import Any

import pandas as pd

from masgrid._private.analysis.families import families_present
from masgrid._private.analysis.load import load_results
from masgrid.family import families, family_of, resolve
from masgrid._private.site.flows import flows
from masgrid._private.site.jsdata import write_data
from masgrid._private.site.run_data import Run, index_row, run_header
from masgrid._private.site.transcripts import agent_transcripts

PAGES = ("index.html", "run.html")
ASSETS = ("site.css", "site.js")


def _copy_assets(out: Path) -> None:
    source = files("masgrid._private.site") / "assets"
    (out / "assets" / "panels").mkdir(parents=True, exist_ok=True)
    scripts = []
    for family in families().values():
        script = family.site_script_path()
        if script is not None and script.is_file():
            (out / "assets" / "panels" / f"{family.name}.js").write_text(script.read_text(encoding="utf-8"),
                                                                          encoding="utf-8")
            scripts.append(f'<script src="assets/panels/{family.name}.js"></script>')
    site_js = '<script src="assets/site.js"></script>'
    for name in PAGES:
        page = (source / name).read_text(encoding="utf-8").replace(site_js, "\n".join([site_js, *scripts]))
        (out / name).write_text(page, encoding="utf-8")
    for name in ASSETS:
        (out / "assets" / name).write_text((source / name).read_text(encoding="utf-8"), encoding="utf-8")


def family_view(run: Run, agents: pd.DataFrame, events: pd.DataFrame,
                scoring: pd.DataFrame | None = None) -> dict[str, Any] | None:
    """The family's own panel data (Family.site_panel), None when the family has none.
    `scoring`: the run's events that belong to no agent (e.g. a merge resolver's calls)."""
    family = family_of(str(run["task"]))
    if family is None or family.site_panel is None:
        return None
    return dict(resolve(family.site_panel)(run, agents, events, scoring))


def build_run(run: Run, agents: pd.DataFrame, events: pd.DataFrame, out: Path) -> None:
    """Write the data files of one run under out/data/runs/<run_id>/."""
    folder = out / "data" / "runs" / str(run["run_id"])
    run_id = str(run["run_id"])
    header = run_header(run, agents)
    # events without an agent (a scoring model's calls) have no transcript or flow of their
    # own; the family panel shows them
    agentless = events["agent"].isna() if "agent" in events.columns else pd.Series(False, index=events.index)
    scoring, events = events[agentless], events[~agentless]
    view = family_view(run, agents, events, scoring)
    names = view.pop("agent_names", None) if view else None  # a panel may name the agents (AgentsNet's graph)
    n = int(run["agents"])
    header["has_events"] = not events.empty
    header["family_panel"] = view is not None
    transcripts = agent_transcripts(events) if not events.empty else {}
    header["transcript_agents"] = sorted(transcripts)
    write_data(folder / "header.js", f"run:{run_id}:header", header)
    write_data(folder / "flows.js", f"run:{run_id}:flows", flows(events, n, names) if not events.empty
               else {"heatmap": [[0] * n for _ in range(n)], "rounds": []})
    for agent, entries in transcripts.items():
        write_data(folder / f"agent-{agent}.js", f"run:{run_id}:agent:{agent}", entries)
    if view is not None:
        write_data(folder / "family.js", f"run:{run_id}:family", view)


def report_links(out: Path) -> dict[str, str]:
    """The Markdown reports next to the site (`masgrid report` writes them to its parent):
    label -> path relative to the site."""
    candidates = [("report index", "README.md")] + [
        (f"{family.label} report", f"{key}/{name}") for key, family in families().items()
        for name in ("README.md", f"{key}_report.md")]
    links: dict[str, str] = {}
    for label, rel in candidates:
        if label not in links and (out.parent / rel).is_file():
            links[label] = f"../{rel}"
    return links


def _by_run(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """One frame per run, split in one pass. Text columns become plain Python objects first:
    row-wise reads of pandas' Arrow-backed strings cost far more, and the site reads every row."""
    if table.empty:
        return {}
    text = [c for c in table.columns if pd.api.types.is_string_dtype(table[c]) and table[c].dtype != object]
    table = table.astype({c: object for c in text})
    return {str(rid): frame for rid, frame in table.groupby("run_id", sort=False)}


def build_site(results_dir: str | Path, out: str | Path | None = None,
               reports: dict[str, str] | None = None) -> Path:
    """Write the site and return its index.html. `reports`: label -> path (relative to
    `out`) of the Markdown reports to link from the index. ValueError if no runs."""
    results_dir = Path(results_dir)
    out = Path(out) if out is not None else results_dir / "report" / "site"
    loaded = load_results(results_dir)
    runs = loaded.runs
    if runs.empty:
        raise ValueError(f"no runs recorded under {results_dir}")
    if out.exists():
        shutil.rmtree(out / "data", ignore_errors=True)
    _copy_assets(out)
    agents = _by_run(loaded.agents)
    events = _by_run(loaded.events)
    empty_agents = pd.DataFrame(columns=["agent", "submission", "correct"])
    empty_events = pd.DataFrame(columns=["kind"])
    records = runs.sort_values(["task", "protocol", "agents", "seed"]).to_dict("records")
    for run in records:
        rid = run["run_id"]
        build_run(run, agents.get(rid, empty_agents), events.get(rid, empty_events), out)
    rows = [index_row(run) for run in records]
    status = runs["status"].value_counts().to_dict()
    present = families_present(runs)
    recorded = set(runs["run_id"])  # a quarantined file's run may have been re-run since
    write_data(out / "data" / "index.js", "index", {
        "results_dir": str(results_dir.resolve()), "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "families": [families()[f].label for f in present], "status": status, "runs": rows,
        "reports": reports if reports is not None else report_links(out),
        "damaged": [{**entry.model_dump(), "recorded_again": entry.run_id in recorded}
                    for entry in loaded.quarantined]})
    return out / "index.html"
