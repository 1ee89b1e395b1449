"""Schemas of the three result tables (runs, agents, events).

Every file of a table is written with the full schema below, so any subset of files reads
back with the same columns in pandas and pyarrow. Benchmark families add their metric
columns to `RUN_METRICS` (nullable); a metric a task reports that is not declared here is
a programming error caught by the tests.
"""

from __future__ import annotations

import pyarrow as pa

#: Hive partition keys of every table, in directory order.
PARTITION_KEYS = ("task", "protocol")

CONFIG_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("task", pa.string()),
    ("protocol", pa.string()),
    ("agents", pa.int64()),
    ("k", pa.int64()),
    ("mode", pa.string()),
    ("condition", pa.string()),
    ("backend", pa.string()),
    ("model", pa.string()),  # the model id requests named (served name), the unit tables group by
    ("model_preset", pa.string()),  # the conf/model preset the run used
    ("temperature", pa.float64()),  # sampling as sent; null: the server's default
    ("top_p", pa.float64()),
    ("max_tokens", pa.int64()),
    ("sampling_seed", pa.int64()),
    ("token_counter", pa.string()),  # how tokens without server usage were counted
    ("prompt_hash", pa.string()),  # fingerprint of every prompt text the run's agents could receive
    ("point_id", pa.string()),  # the grid point without its prompt version (analysis keeps the newest)
    ("seed", pa.int64()),
    ("max_rounds", pa.int64()),
    ("graph", pa.string()),
    ("results_dir", pa.string()),
    ("experiment", pa.string()),
    ("tags", pa.list_(pa.string())),
]

#: filing labels carried by every row of every table (not part of a run's identity)
LABEL_COLUMNS: list[tuple[str, pa.DataType]] = [("experiment", pa.string()), ("tags", pa.list_(pa.string()))]

#: metric columns: name -> (type, meaning and unit; the README's schema table is built from it)
RUN_METRICS: dict[str, tuple[pa.DataType, str]] = {
    "success": (pa.bool_(), "instance solved: every agent's answer correct (SR = 1)"),
    "sr": (pa.float64(), "success rate, fraction of agents whose answer equals their expected answer (MAS-Bench eq. 4; SILO S, eq. 2)"),
    "check": (pa.bool_(), "task's global check, e.g. MAS-Bench CHECK: submissions concatenate to the sorted union"),
    "rounds": (pa.int64(), "R = max over agents of model calls, all phases (eq. 5)"),
    "rounds_phase1": (pa.int64(), "rounds executed in phase 1"),
    "rounds_phase2": (pa.int64(), "rounds executed in phase 2 (two-phase conditions), else null"),
    "te": (pa.float64(), "token efficiency N*K / total tokens * 1e5 (eq. 6)"),
    "cr": (pa.float64(), "communication ratio, communication tokens / total tokens (eq. 7)"),
    "rho": (pa.float64(), "inversion rate of the global input (eq. 3)"),
    "submitted": (pa.int64(), "agents that submitted in the final phase"),
    "tokens_in": (pa.int64(), "prompt tokens over all model calls"),
    "tokens_out": (pa.int64(), "completion tokens over all model calls"),
    "tokens_total": (pa.int64(), "tokens_in + tokens_out"),
    "tokens_comm": (pa.int64(), "tokens of communication commands and their replies (appendix C)"),
    "messages_sent": (pa.int64(), "messages sent (a broadcast counts once; kv writes count)"),
    "model_calls": (pa.int64(), "model calls made"),
    "model_errors": (pa.int64(), "model calls that failed after retries"),
    "model_error_rate": (pa.float64(), "model_errors / model_calls (0 when no call was made); above "
                         "validity.max_model_error_rate the run is invalid"),
    "agents_stopped": (pa.int64(), "agents no longer called because the server refused a call for good "
                       "(a 4xx such as context length exceeded)"),
    "calls_usage_estimated": (pa.int64(), "successful model calls whose tokens were counted locally because "
                              "the server sent no usage, or usage that was not a count (usage_source estimate or invalid)"),
    "command_errors": (pa.int64(), "commands answered with an error or 'Unknown command'"),
    "startup_s": (pa.float64(), "seconds from driver start until environment and agent actors were ready"),
    "pcs": (pa.float64(), "SILO partial correctness score P, mean per-agent quality q_i (eq. 3)"),
    "tokens_per_round": (pa.float64(), "SILO token consumption C, output tokens of all agents / rounds executed (eq. 4)"),
    "density": (pa.float64(), "SILO communication density D, messages delivered (SFS: reads of others' files) / N(N-1) (eq. 5)"),
    "fallbacks": (pa.int64(), "replies that failed the protocol's format check and got one retry (AgentsNet)"),
    "failed_parses": (pa.int64(), "retries that failed the format check as well (AgentsNet)"),
    # AgentsNet (issue 6): graph, budget and soft score of the instance
    "soft_score": (pa.float64(), "AgentsNet soft score of the final answers, as the released code computes it (appendix B)"),
    "message_rounds": (pa.int64(), "AgentsNet message-passing rounds T (the final-answer call comes after them)"),
    "diameter": (pa.int64(), "AgentsNet graph diameter D"),
    "max_degree": (pa.int64(), "AgentsNet graph maximum degree Delta"),
    "edges": (pa.int64(), "AgentsNet graph edge count"),
    "invalid_answers": (pa.int64(), "AgentsNet final answers missing or not a valid option (scored agents)"),
    "byzantine_agents": (pa.int64(), "AgentsNet agents given the adversarial objective (appendix I)"),
    "byzantine_setting": (pa.string(), "AgentsNet Byzantine setting: none, aware or unaware"),
    "chain_of_thought": (pa.bool_(), "AgentsNet: agents asked to reason before each JSON reply"),
}

RUN_STATUS_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("run_id", pa.string()),
    ("status", pa.string()),  # ok | degraded | invalid | failed (docs/results.md, "Run status")
    ("error", pa.string()),
    ("model_error_classes", pa.string()),  # JSON {error_class: failed calls}, null when none failed
    ("wall_s", pa.float64()),
    ("started_at", pa.timestamp("us", tz="UTC")),
    ("finished_at", pa.timestamp("us", tz="UTC")),
    ("masgrid_version", pa.string()),
    ("git_commit", pa.string()),  # HEAD of the checkout (+dirty), or unknown
    ("python_version", pa.string()),
    ("ray_version", pa.string()),
    ("vllm_version", pa.string()),  # null when vLLM is not installed where the driver ran
    ("hostname", pa.string()),  # host of the run's driver
    ("config_json", pa.string()),
]


def runs_schema() -> pa.Schema:
    fields = RUN_STATUS_COLUMNS[:1] + CONFIG_COLUMNS + [(k, t) for k, (t, _) in RUN_METRICS.items()]
    return pa.schema(fields + RUN_STATUS_COLUMNS[1:])


AGENTS_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("task", pa.string()),
    ("protocol", pa.string()),
    ("agent", pa.int64()),
    ("submission", pa.string()),  # JSON of the final-phase answer, null if none
    ("expected", pa.string()),  # JSON
    ("correct", pa.bool_()),
    ("partial", pa.float64()),
    ("submitted_phase1", pa.string()),  # JSON, two-phase conditions only
    ("rounds", pa.int64()),
    ("tokens_in", pa.int64()),
    ("tokens_out", pa.int64()),
    ("tokens_comm", pa.int64()),
    ("messages_sent", pa.int64()),
    ("messages_received", pa.int64()),
    ("deliveries", pa.int64()),  # messages of this agent that reached a receiver (a broadcast: one per receiver)
    ("files_read_others", pa.int64()),
    ("model_errors", pa.int64()),
    ("command_errors", pa.int64()),
    ("fallbacks", pa.int64()),  # replies retried after failing the protocol's format check
    ("failed_parses", pa.int64()),  # retries that failed the check as well
    ("model_calls", pa.int64()),
    ("stopped", pa.string()),  # why the agent was no longer called (a final server refusal), else null
    ("system_prompt", pa.string()),  # phase-1 system message
    *LABEL_COLUMNS,
])

EVENTS_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("task", pa.string()),
    ("protocol", pa.string()),
    ("seq", pa.int64()),  # order within the run
    ("phase", pa.int64()),
    ("round", pa.int64()),
    ("agent", pa.int64()),
    ("kind", pa.string()),  # model_call | command | harness
    ("verb", pa.string()),
    ("text", pa.string()),  # model output, or the command block
    ("reply", pa.string()),  # harness reply to the agent
    ("ok", pa.bool_()),
    ("error", pa.string()),
    ("error_class", pa.string()),  # model_call: class of a failed call (actors/backends/errors.py)
    ("http_status", pa.int64()),  # model_call: HTTP status of a failed call, when there was one
    ("tokens_in", pa.int64()),
    ("tokens_out", pa.int64()),
    ("tokens_comm", pa.int64()),
    ("usage_source", pa.string()),
    ("latency_s", pa.float64()),
    ("call_started", pa.timestamp("us", tz="UTC")),  # model_call: when the request went out
    ("attempts", pa.int64()),
    ("messages_sent", pa.int64()),
    ("peers", pa.list_(pa.int64())),  # send: receivers; receive: senders (one per message); read_file: writer
    ("time", pa.timestamp("us", tz="UTC")),
    *LABEL_COLUMNS,
])
