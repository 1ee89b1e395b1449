"""The AgentsNet family as masgrid sees it (masgrid/family.py)."""

from masgrid.families.agentsnet.metrics import METRICS
from masgrid.families.agentsnet.options import AgentsNetOptions
from masgrid.family import Family, Metric

FAMILY = Family(
    name="agentsnet", label="AgentsNet", order=2,
    paper="AgentsNet: coloring, matching, leader election, consensus and vertex cover on graphs",
    tasks="masgrid.families.agentsnet.tasks", task_prefixes=("agentsnet/",), options=AgentsNetOptions,
    top_level={"graph": Metric(type="string", unit="label", meaning=
                               "AgentsNet's graph model (agentsnet.graph): ws, ba or dt; null on a restricted topology")},
    metrics=METRICS, protocols={"local": "masgrid.families.agentsnet.local_protocol"},
    schedules={"local_rounds": "masgrid.families.agentsnet.local_rounds"}, default_protocol="local",
    report="masgrid.families.agentsnet.report:write_family_report",
    site_panel="masgrid.families.agentsnet.site_panel:panel", site_script="site_panel.js",
    site_score=("soft_score", "soft score"),
    compare=(("model", "task", "graph", "agents", "condition"), ("success", "soft_score", "tokens_total")),
    docs="docs/agentsnet.md",
    conf="conf",  # prompts, data, sweeps and model presets: on Hydra's search path and read by resources
)
