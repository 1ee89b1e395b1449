"""The family's option block, `relay:` in a run config."""

from pydantic import BaseModel, ConfigDict, Field


class RelayOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    high: int = Field(99, ge=1, le=10**9, description="numbers are drawn from 0..high")
    lie: int = Field(-1, ge=-1, description="scripted agents: this agent adds one to its answer (-1: nobody)")
