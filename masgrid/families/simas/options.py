"""SIMAS's own configuration block (`simas:` in conf/config.yaml).

The driver hands these fields to the generator as keywords, so they are part of the
instance and of the run identity (`masgrid instance simas/mmlu subject=college_physics`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SimasOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rounds: int = Field(3, ge=1, le=50, description="discussion rounds T (Algorithm 1; the paper uses 3)")
    profiles: Literal["generate", "pool"] = Field(
        "generate", description="generate: the model writes the n profiles once per run before the discussion "
        "(section 3.3); pool: profiles drawn by seed from masgrid/families/simas/conf/simas/profiles.yaml")
    data_dir: str | None = Field(None, description="directory holding the datasets in their public layouts; "
                                                   "null = the small question set shipped in masgrid/families/simas/conf/data/simas")
    subject: str | None = Field(None, description="MMLU subject, e.g. college_physics (simas/mmlu only)")
    question: int = Field(0, ge=0, description="index of the question within the sampled set")
    sample: int = Field(17, ge=1, description="questions sampled per subject (the paper: 17)")
    sample_seed: int = Field(0, description="seed of the question sample: fixed across repeats, so every "
                                            "repeat answers the same questions")
    answer_from: Literal["first", "last"] = Field(
        "first", description="which agent gives the group's final answer after round T: first (a_1, as "
        "Algorithm 1, Definition 2 and Figure 1 say) or last (a_n, as appendix A.4 says); docs/tasks/simas.md")
    sim_error: float = Field(0.35, ge=0.0, le=1.0, description="scripted simulation only: probability that an "
                                                               "agent's own belief is wrong")
    sim_conformity: float = Field(0.5, ge=0.0, le=1.0, description="scripted simulation only: probability that an "
                                                                   "agent adopts the majority of earlier replies")
