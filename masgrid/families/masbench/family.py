"""The MAS-Bench family as masgrid sees it (masgrid/family.py)."""

from masgrid.families.masbench.options import MasBenchOptions
from masgrid.family import Family, Metric

#: TE and CR are the paper's (eq. 6 and 7): elements sorted per 10^5 tokens, and the share of
#: tokens spent communicating; per phase for the two-phase conditions (null for a phase not run)
_EFFICIENCY = {
    "te": Metric(type="float64", unit="elements per 10^5 tokens", meaning="token efficiency N*K / total tokens * 1e5 (eq. 6)"),
    "cr": Metric(type="float64", unit="fraction in [0, 1]",
                 meaning="communication ratio, communication tokens / total tokens (eq. 7)"),
}
METRICS = {
    **_EFFICIENCY,
    "rho": Metric(type="float64", unit="fraction in [0, 1]", meaning="inversion rate of the global input (eq. 3)"),
    **{f"{name}_phase{p}": Metric(type=m.type, unit=m.unit, meaning=f"{m.meaning}, phase {p} only"
                                  + (" (two-phase conditions), else null" if p == 2 else ""))
       for p in (1, 2) for name, m in _EFFICIENCY.items()},
}

FAMILY = Family(
    name="masbench", label="MAS-Bench", order=0,
    paper="MAS-Bench: distributed sorting, max and prefix sum with communication protocols and CAMOC",
    tasks="masgrid.families.masbench.tasks", task_names=("sorting", "max", "prefix_sum"),
    default_protocol="broadcast",
    options=MasBenchOptions,
    top_level={"mode": Metric(type="string", unit="label", meaning=
                              "MAS-Bench's input order (masbench.mode): asc, near_asc, random, near_desc or desc")},
    report="masgrid.families.masbench.report:write_family_report",
    metrics=METRICS,
    site_score=("sr", "SR"),
    compare=(("model", "task", "protocol", "condition", "agents", "k"), ("sr", "success", "rounds", "tokens_total")),
    docs="docs/tasks/masbench.md",
    conf="conf",  # prompts, data, sweeps and model presets: on Hydra's search path and read by resources
)
