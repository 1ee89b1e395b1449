"""The SILO-Bench family as masgrid sees it (masgrid/family.py)."""

from masgrid.families.silo.metrics import METRICS
from masgrid.family import Family

FAMILY = Family(
    name="silo", label="SILO-Bench", order=1,
    paper="SILO-Bench: 30 distributed tasks in three levels, agents holding shards of the data",
    tasks="masgrid.families.silo.catalog", task_prefixes=("silo/",), metrics=METRICS,
    default_protocol="broadcast",
    report="masgrid.families.silo.report:write_report",
    site_score=("pcs", "P (partial correctness)"),
    compare=(("model", "task", "protocol", "condition", "agents"), ("sr", "pcs", "tokens_total")),
    docs="docs/tasks/silo.md",
    conf="conf",  # prompts, data, sweeps and model presets: on Hydra's search path and read by resources
)
