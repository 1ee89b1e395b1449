"""The SIMAS family as masgrid sees it (masgrid/family.py)."""

from masgrid.families.simas.metrics import METRICS
from masgrid.families.simas.options import SimasOptions
from masgrid.family import CliCommand, Family

FAMILY = Family(
    name="simas", label="SIMAS", order=3,
    paper="Scaling behaviour of single-LLM multi-agent systems: sequential group discussion",
    tasks="masgrid.families.simas.tasks", task_prefixes=("simas/",), options=SimasOptions, metrics=METRICS,
    protocols={"groupchat": "masgrid.families.simas.groupchat"}, default_protocol="groupchat",
    report="masgrid.families.simas.report:write_report",
    site_panel="masgrid.families.simas.site_panel:panel", site_script="site_panel.js",
    site_score=("accuracy", "accuracy"),
    compare=(("model", "task", "condition", "agents", "discussion_rounds"), ("accuracy", "tokens_total")),
    cli={"judge": CliCommand(
        target="masgrid.families.simas.judge:judge_command",
        usage="RESULTS_DIR [--model PRESET] [--set key=value] [--where column=value]  SIMAS vs CoT pairwise "
              "judge (generation questions)")},
    docs="docs/tasks/simas.md",
    conf="conf",  # prompts, data, sweeps and model presets: on Hydra's search path and read by resources
)
