"""The MAS-Bench family as masgrid sees it (masgrid/family.py)."""

from masgrid.family import Family

FAMILY = Family(
    name="masbench", label="MAS-Bench", order=0,
    paper="MAS-Bench: distributed sorting, max and prefix sum with communication protocols and CAMOC",
    tasks="masgrid.families.masbench.tasks", task_names=("sorting", "max", "prefix_sum"),
    default_protocol="broadcast",
    report="masgrid.families.masbench.report:write_family_report",
    site_score=("sr", "SR"),
    compare=(("model", "task", "protocol", "condition", "agents", "k"), ("sr", "success", "rounds", "tokens_total")),
    docs="docs/tasks/masbench.md",
    conf="conf",  # prompts, data, sweeps and model presets: on Hydra's search path and read by resources
)
