"""Reading recorded runs and writing tables from them. `usable` is the validity rule every
table applies (runs that count, the rest excluded), and `exclusion_note` the sentence that says
what it left out; a family's report states both, so a number is right or visibly flagged."""

from masgrid._private.analysis.load import Results, load_results, read_table
from masgrid._private.analysis.markdown import to_markdown, write_table
from masgrid._private.analysis.token_units import approximate_token_note
from masgrid._private.analysis.usable_runs import exclusion_note, include_invalid, usable
from masgrid._private.platform.results.recorder import write_table_atomic
from masgrid._private.site.run_data import Run

__all__ = ["Results", "Run", "approximate_token_note", "exclusion_note", "include_invalid", "load_results",
           "read_table", "to_markdown", "usable", "write_table", "write_table_atomic"]
