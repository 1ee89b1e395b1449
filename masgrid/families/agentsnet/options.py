"""AgentsNet's own configuration block (`agentsnet:` in conf/config.yaml).

The driver hands these fields to the generator as keywords, so they are part of the
instance (and of `masgrid instance agentsnet/... rounds=7 byzantine=aware`). `graph` is
declared top-level in family.py: `graph=ws` still means `agentsnet.graph=ws`, run ids keep
it where it always was, and the runs table keeps its `graph` column.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class AgentsNetOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    graph: str | None = Field(None, description="graph model (section 3): ws | ba | dt; null only with a restricted "
                                                "topology.kind, whose graph the run uses instead")
    rounds: int | None = Field(None, ge=1, description="message-passing rounds T; null = the paper's budget")
    cot: bool = Field(True, description="ask for step-by-step reasoning before each JSON reply and the final answer")
    byzantine: Literal["none", "aware", "unaware"] = Field(
        "none", description="appendix I: adversarial agents, honest agents told (aware) or not (unaware)")
    parser: Literal["strict", "reference"] = Field(
        "strict", description="how replies are read: strict, or as the released code reads them "
                              "(masgrid/families/agentsnet/local_reference.py, docs/agentsnet.md)")
    byzantine_count: int | None = Field(None, ge=0, description="adversaries f; null = 1, 2, 3 for 4, 8, 16 agents, "
                                                                 "else round(n/4) capped below n/3")
