"""The relay family, declared to masgrid through the `masgrid.families` entry point."""

from masgrid import CliCommand, Family, Metric
from masgrid_relay.options import RelayOptions

FAMILY = Family(
    name="relay", label="Relay", tasks="masgrid_relay.tasks", task_prefixes=("relay/",), options=RelayOptions,
    metrics={"relay_total": Metric(type="int64", unit="count", meaning="Relay: the true sum"),
             "relay_mean_error": Metric(type="float64", unit="count",
                                        meaning="Relay: mean absolute error of the submitted sums")},
    default_protocol="broadcast", report="masgrid_relay.report:write_report",
    site_panel="masgrid_relay.site_panel:panel", site_script="site_panel.js", site_score=("sr", "SR"),
    compare=(("task", "agents"), ("success",)),
    cli={"relay-total": CliCommand(target="masgrid_relay.cli:main", usage="--agents N --k K --seed S  an instance's true sum")},
    conf="conf",
)
