"""What a paper's runs of a model used for sampling, recorded in that model's preset.

The papers' models were called through clients with their own defaults (LangChain wrappers
for AgentsNet, SGLang's server defaults for MAS-Bench and SILO), so "the server's default"
is not automatically "as in the paper". A preset's `paper_sampling` states, per parameter,
the value the paper's client sent, that it sent none (`not sent`: the provider's or server's
default applied), or that neither the paper nor its released code tells (`unknown`).
docs/models.md lists every paper preset.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

NOT_SENT = "not sent"
UNKNOWN = "unknown"
#: sampling parameters a paper record covers, by their BackendSettings field names
PARAMETERS = ("temperature", "top_p", "max_tokens")


class PaperSampling(BaseModel):
    """Sampling of one paper model as the paper's runs used it (see module docstring)."""

    model_config = ConfigDict(extra="forbid")

    papers: list[str] = Field(min_length=1, description="the papers whose runs this records")
    model: str = Field(description="the model id the paper's runs requested")
    client: str = Field(description="how the paper's runs reached the model (client wrapper, serving stack)")
    temperature: float | Literal["not sent", "unknown"]
    top_p: float | Literal["not sent", "unknown"]
    max_tokens: int | Literal["not sent", "unknown"]
    other: dict[str, Any] = Field(default_factory=dict, description="further request settings the client sent")
    note: str = ""

    def deviations(self, sent: dict[str, Any]) -> list[str]:
        """Parameters whose value as sent (`sent[name]`, None: not sent) differs from the
        paper's known value; `unknown` ones cannot be checked and are not listed."""
        out = []
        for name in PARAMETERS:
            paper, ours = getattr(self, name), sent.get(name)
            if paper == UNKNOWN:
                continue
            expected = None if paper == NOT_SENT else paper
            if ours != expected:
                out.append(f"{name}: paper {paper}, sent {ours}")
        return out

    def unknown(self) -> list[str]:
        return [name for name in PARAMETERS if getattr(self, name) == UNKNOWN]


def compare_with_paper(record: PaperSampling | None, sent: dict[str, Any]) -> str | None:
    """The runs column `sampling_vs_paper`: null without a paper record, else `as paper`,
    `as paper where known (unknown: ...)`, or `differs: ...` naming each deviation."""
    if record is None:
        return None
    deviations = record.deviations(sent)
    if deviations:
        return "differs: " + "; ".join(deviations)
    unknown = record.unknown()
    return f"as paper where known (unknown: {', '.join(unknown)})" if unknown else "as paper"
