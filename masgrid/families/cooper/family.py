"""The CooperBench family as masgrid sees it (masgrid/family.py)."""

from masgrid.families.cooper.metrics import METRICS
from masgrid.families.cooper.options import CooperOptions
from masgrid.family import CliCommand, Family

FAMILY = Family(
    name="cooper", label="CooperBench", order=4,
    paper="CooperBench: cooperative coding on real repositories, patches merged and tested",
    tasks="masgrid.families.cooper.catalog", task_prefixes=("cooper/",), options=CooperOptions, metrics=METRICS,
    protocols={"workspace": "masgrid.families.cooper.workspace_protocol"}, default_protocol="workspace",
    report="masgrid.families.cooper.report:write_report_index_first",
    site_panel="masgrid.families.cooper.site_panel:panel", site_script="site_panel.js",
    site_score=("success", "task success"),
    headline="success",
    headline_note="SR% is the paper's success rate (runs whose merged code passes every feature's tests), "
                  "not the mean per-agent rate.",
    compare=(("model", "task", "condition", "agents"), ("success", "features_passed", "tokens_total")),
    cli={"cooper": CliCommand(
        target="masgrid.families.cooper.cli:cooper_command",
        usage="eval|demo-data|judge|sweep ...  CooperBench: merge and test patches (e.g. --gold); the synthetic "
              "pool; the appendix J judge")},
    docs="docs/tasks/cooperbench.md",
    conf="conf",  # prompts, data, sweeps and model presets: on Hydra's search path and read by resources
)
