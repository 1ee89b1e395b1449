"""CooperBench's own configuration block (`cooper:` in conf/config.yaml).

The driver hands these fields to the generator as keywords, so each is part of the
instance and of the run identity, except the paths (`data_dir`, `repos_dir`,
`cache_dir`, `work_dir`): where the data lives on this machine does not change a run's
outcome (`CooperTask.identity_options` blanks them).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: the settings of section 4-5: two (or more) agents with messaging, the no-comm ablation
#: (planning kept, messaging removed in execution), and one agent holding every feature
SETTINGS = ("coop", "solo", "nocomm")


class CooperOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    features: list[int] = Field(default_factory=lambda: [1, 2], description="feature ids of the pool, one per "
                                "agent in coop/nocomm (a pair by default; 3-4 for appendix F's scaling)")
    setting: Literal["coop", "solo", "nocomm"] = Field("coop", description="coop | solo (one agent, every feature) "
                                                      "| nocomm (planning kept, no messages during execution)")
    data_dir: str | None = Field(None, description="the dataset in the public layout (<repo>_task/task<ID>/...); "
                                                   "null = the synthetic demo pool, written on first use under cache_dir")
    repos_dir: str | None = Field(None, description="local git clones of the source repositories (nothing is "
                                                    "downloaded at run time); null = data_dir's demo clones")
    cache_dir: str | None = Field(None, description="per-task test environments and the demo pool; "
                                                    "null = ~/.cache/masgrid/cooper")
    work_dir: str | None = Field(None, description="where the agents' git worktrees are made (removed after the "
                                                   "run); null = a temporary directory")
    sandbox: Literal["bwrap", "none"] = Field("bwrap", description="bwrap: every tool and test command in "
                                              "bubblewrap; none: an explicit opt-out, recorded in every row")
    max_actions: int = Field(100, ge=2, le=10_000, description="actions (tool calls, messages included) per agent "
                             "in all, planning included (section 2.1: an upper bound of 100 actions an agent can "
                             "take to complete a task)")
    plan_actions: int = Field(20, ge=1, le=1_000, description="the most of max_actions an agent may spend in the "
                              "planning phase; execution gets what planning left")
    plan_rounds: int = Field(3, ge=0, le=50, description="planning: messages each agent may send before it "
                                                        "must write its plan (0: plans without talking)")
    resolver: Literal["none", "llm"] = Field("none", description="the merge stage after union: none, or the "
                                             "LLM resolver of appendix C through the configured model")
    resolver_model: dict[str, Any] | None = Field(
        None, description="the resolver's model as a `model` block ({name, base_url, ...}, reached over HTTP with "
        "the agents' client code); null: the run's own model. Temperature is always 0 (appendix C)")
    policy: Literal["gold", "conflicting"] = Field("gold", description="scripted agents only: apply the feature's "
                                                   "gold patch; conflicting also edits the partner's lines")
    tool_timeout_s: float = Field(60.0, gt=0, le=3600, description="time limit of one shell command")

    @field_validator("features")
    @classmethod
    def _distinct(cls, value: list[int]) -> list[int]:
        if not 1 <= len(value) <= 8:
            raise ValueError(f"between 1 and 8 features, not {len(value)}")
        if len(set(value)) != len(value):
            raise ValueError(f"features must be distinct, got {value}")
        return value

    @model_validator(mode="after")
    def _planning_leaves_actions(self) -> CooperOptions:
        if self.plan_actions >= self.max_actions:
            raise ValueError(f"cooper.plan_actions ({self.plan_actions}) must be below cooper.max_actions "
                             f"({self.max_actions}): planning's actions come out of the run's budget")
        return self

    @model_validator(mode="after")
    def _resolver_model_needs_llm(self) -> CooperOptions:
        if self.resolver_model is not None and self.resolver != "llm":
            raise ValueError("cooper.resolver_model is set but cooper.resolver=none: set cooper.resolver=llm "
                             "or drop the resolver model")
        return self

    def n_agents(self) -> int:
        """One agent per feature, or one for all of them in solo."""
        return 1 if self.setting == "solo" else len(self.features)


#: fields of `resolver_model` that enter a run's identity: what changes the resolver's answers, as for
#: the agents' model (platform/run/config.py `_MODEL_IDENTITY`; a test keeps the two equal)
RESOLVER_IDENTITY = ("name", "served_name", "temperature", "top_p", "max_tokens", "seed", "extra_body")

#: option keys that only locate files on this machine: never part of a run's identity
PATH_KEYS = ("data_dir", "repos_dir", "cache_dir", "work_dir")
