"""The runs row's metrics and the agents rows of a finished run: pure functions of what the run
left (its counters, submissions, scores and configuration), kept apart from the driver that
plays the run so that each column's rule can be read, and tested, on its own."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from masgrid._private.envs.tasks import Instance, Task
from masgrid._private.envs.tasks.base import Score
from masgrid._private.envs.topology import neighbor_lists, summary as topology_summary
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.run.phase_metrics import phase_columns, phase_usage

if TYPE_CHECKING:
    from masgrid._private.platform.run.driver import AgentStats, RunLog


@dataclass(frozen=True)
class PlayedRun:
    """What the phase loop leaves for the rows: each phase's submissions, the agents' counters at
    each phase boundary (`phase_metrics.mark`), the first phase's system prompts, start-up time,
    and the edges of the communication graph (`topology.run_edges`; None: complete)."""

    n_phases: int
    phase_submissions: list[list[Any]]
    marks: list[Any]
    first_prompts: list[str]
    startup_s: float
    edges: list[tuple[int, int]] | None

    @property
    def two_phase(self) -> bool:
        return self.n_phases > 1

    @property
    def submissions(self) -> list[Any]:
        """What the agents ended the run with: the last phase's submissions."""
        return self.phase_submissions[-1]

    def phase_scores(self, task: Task, instance: Instance, final: Score) -> list[Score]:
        """Each phase's score: the earlier phases scored here, the last one is `final`."""
        return [task.score(instance, subs) for subs in self.phase_submissions[:-1]] + [final]


def run_metrics(cfg: RunConfig, task: Task, instance: Instance, log: RunLog, scores: list[Score],
                scoring: dict[str, Any], played: PlayedRun) -> dict[str, Any]:
    """Every metric column of the run's row: the core's, the task's (`Task.run_metrics`), a
    scoring model's; a metric no family declares is refused (the recorder would drop it).
    `scores`: each phase's (`PlayedRun.phase_scores`), the final one last."""
    score = scores[-1]
    phased = phase_columns([phase_usage(a, b) for a, b in zip(played.marks, played.marks[1:])], scores,
                           played.phase_submissions)
    stats = log.stats
    usage = _usage(stats)
    metrics: dict[str, Any] = {
        "success": score.success,
        "sr": None if None in score.correct else sum(bool(c) for c in score.correct) / len(score.correct),
        "rounds": max(s.rounds for s in stats),
        "submitted": sum(s is not None for s in played.submissions),
        **usage,
        **_summed(stats),
        "agents_stopped": sum(s.stopped is not None for s in stats),
        "context_overflows": log.error_classes.get("context_length", 0),
        "content_filtered": log.error_classes.get("content_filter", 0) + log.filtered_replies,
        **cache_metrics(stats),
        "calls_usage_estimated": log.usage_estimated,
        "startup_s": played.startup_s,
        **phased,
        **topology_summary(cfg.topology, cfg.agents, cfg.seed, played.edges),
        "comm_floor_success": task.no_communication_floor(instance),
    }
    metrics["model_error_rate"] = metrics["model_errors"] / metrics["model_calls"] if metrics["model_calls"] else 0.0
    metrics.update(channel_metrics(log.channel_outcomes) if cfg.channel.active else {})
    metrics.update({k: v for k, v in score.metrics.items() if k != "sr"})
    metrics.update(scoring)  # a scoring model's calls and tokens, apart from the agents'
    metrics.update(team_metrics(cfg, task, instance, log))
    # Run-level counts a task's metrics may need (SILO C and D), beside the token usage.
    counts = {"rounds": metrics["rounds"], "messages_sent": metrics["messages_sent"],
              "model_errors": metrics["model_errors"],
              "deliveries": sum(s.deliveries for s in stats),
              "files_read_others": sum(s.files_read_others for s in stats),
              "phase1_submissions": played.phase_submissions[0] if played.two_phase else None}
    phase_tokens = {k: v for k, v in phased.items() if k.startswith("tokens_")}
    metrics.update(task.run_metrics(instance, score, {**usage, **counts, **phase_tokens}))
    from masgrid._private.platform.results.table_schemas import RUN_METRICS

    undeclared = sorted(set(metrics) - set(RUN_METRICS))
    if undeclared:  # the recorder would drop them silently: a family must declare its columns
        raise ValueError(f"task {cfg.task} reports metrics no family declares (Family.metrics): "
                         f"{', '.join(undeclared)}")
    return metrics


def _usage(stats: list[AgentStats]) -> dict[str, int]:
    usage = {"tokens_in": sum(s.tokens_in for s in stats), "tokens_out": sum(s.tokens_out for s in stats),
             "tokens_comm": sum(s.tokens_comm for s in stats)}
    usage["tokens_total"] = usage["tokens_in"] + usage["tokens_out"]
    return usage


#: agent counters summed as they are into the runs row
SUMMED = ("messages_sent", "model_calls", "fallbacks", "failed_parses", "model_errors", "queue_s", "command_errors",
          "stacked_blocks")


def _summed(stats: list[AgentStats]) -> dict[str, Any]:
    return {key: sum(getattr(s, key) for s in stats) for key in (*SUMMED, *CACHE_COUNTERS)}


def agent_rows(cfg: RunConfig, instance: Instance, log: RunLog, scores: list[Score],
               played: PlayedRun) -> list[dict[str, Any]]:
    """One agents row per agent: its answer against the expected one (and phase 1's in a
    two-phase run), its degree in the communication graph, its counters and model."""
    edges = played.edges
    degrees = [cfg.agents - 1] * cfg.agents if edges is None else [len(a) for a in neighbor_lists(cfg.agents, edges)]
    two_phase, phase1, submissions = played.two_phase, played.phase_submissions[0], played.submissions
    score, phase1_correct = scores[-1], scores[0].correct
    stats = log.stats
    return [
        {
            "run_id": log.run_id, **log.partition, "agent": i,
            "submission": _json(submissions[i]), "expected": _json(instance.expected[i]),
            "correct": score.correct[i], "partial": score.partial[i],
            "submitted_phase1": _json(phase1[i]) if two_phase else None,
            "correct_phase1": phase1_correct[i] if two_phase else None,
            "degree": degrees[i],
            "system_prompt": played.first_prompts[i], **_agent_counters(stats[i]), **agent_model(cfg, i),
            **cfg.labels(),
        }
        for i in range(cfg.agents)
    ]


def channel_metrics(outcomes: Counter) -> dict[str, int]:
    """The run's channel counts from its messages' outcome labels (docs/channel.md)."""
    def having(part: str) -> int:
        return sum(n for label, n in outcomes.items() if part in label.split("+"))

    sent = sum(outcomes.values())
    lost = outcomes.get("lost", 0)
    return {"channel_sent": sent, "channel_delivered": sent - lost, "channel_lost": lost,
            "channel_late": having("delayed"), "channel_duplicated": having("duplicated"),
            "channel_reordered": having("reordered")}




def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _agent_counters(st: AgentStats) -> dict[str, Any]:
    """An agent's counters as its row holds them: cached tokens null when no call reported any."""
    row = {k: v for k, v in st.__dict__.items() if k != "calls_cache_reported"}
    row["tokens_cached"] = st.tokens_cached if st.calls_cache_reported else None
    return row


def agent_model(cfg: RunConfig, agent: int) -> dict[str, Any]:
    """The model an agent's row names: its team member's, else the run's."""
    team = cfg.team_resolved
    if team is None:
        return {"model": cfg.model.request_model, "model_preset": cfg.model.name, "backend": cfg.backend}
    member = team.members[team.agents[agent]]
    return {"model": member.settings.request_model, "model_preset": member.name, "backend": member.backend}


def team_metrics(cfg: RunConfig, task: Task, instance: Instance, log: RunLog) -> dict[str, Any]:
    """A team run's per-member breakdown and where its strong member sat (platform/run/team.py)."""
    team = cfg.team_resolved
    if team is None:
        return {}
    from masgrid._private.platform.run.team import by_member, strong_position

    summary = by_member(team.agents, log.stats, log.member_errors, team.members, cfg.validity)
    return {"team_by_model": json.dumps(summary, sort_keys=True),
            "team_strong_degree": strong_position(team, cfg.placement_graph(instance))}


#: AgentStats counters of response-cache hits (model.cache), summed into the runs row as they are
CACHE_COUNTERS = ("calls_from_cache", "tokens_in_from_cache", "tokens_out_from_cache")


def cache_metrics(stats: list[AgentStats]) -> dict[str, Any]:
    """Prefix-cache figures of a run: cached prompt tokens, and their share of the prompt
    tokens of the calls whose server reported them (null when no call reported any: a server
    without prompt-token details, or a scripted run)."""
    reported = sum(s.calls_cache_reported for s in stats)
    if not reported:
        return {"tokens_cached": None, "cache_hit_rate": None, "calls_cache_reported": 0}
    cached = sum(s.tokens_cached for s in stats)
    prompt = sum(s.tokens_in for s in stats)
    return {"tokens_cached": cached, "cache_hit_rate": cached / prompt if prompt else None,
            "calls_cache_reported": reported}
