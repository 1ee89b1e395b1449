"""MAS-Bench's own configuration block (`masbench:` in the run config).

`mode` is the order of the global input INITSORTTASK draws (section 3): ascending, nearly
ascending, random, nearly descending, descending. It is declared top-level in family.py, so
`mode=desc` still means `masbench.mode=desc`, run ids keep it where it always was, and the
runs table keeps its `mode` column.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class MasBenchOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: null is accepted here, as it was at the top level (a sweep spanning families may set it for
    #: tasks that never read it); a MAS-Bench task refuses it
    mode: Literal["asc", "near_asc", "random", "near_desc", "desc"] | None = Field(
        "random", description="order of the global input (section 3): asc | near_asc | random | near_desc | desc")
