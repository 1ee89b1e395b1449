"""Schemas of the three result tables (runs, agents, events).

Every file of a table is written with the full schema below, so any subset of files reads
back with the same columns in pandas and pyarrow. Benchmark families declare their own metric
columns (`Family.metrics`, nullable); `RUN_METRICS` is the core ones followed by every
installed family's. A metric a task reports that is declared nowhere is a programming error
caught by the tests.
"""

from __future__ import annotations

import pyarrow as pa

from masgrid.family import Metric, family_columns, family_metrics


#: Hive partition keys of every table, in directory order.
PARTITION_KEYS = ("task", "protocol")

#: the run's configuration as runs columns, declared as every column is (`Metric`)
CONFIG_COLUMNS: dict[str, Metric] = {
    "task": Metric(type="string", unit="label", meaning=
        "task name (partition key); its family is the one that claims it"),
    "protocol": Metric(type="string", unit="label", meaning="communication substrate (partition key)"),
    "agents": Metric(type="int64", unit="agents", meaning="N, the number of agents"),
    "k": Metric(type="int64", unit="values per agent", meaning=
        "K, the per-agent workload; null where the family has no such notion"),
    "condition": Metric(type="string", unit="label", meaning="prompt or commit condition (the family's own list)"),
    "backend": Metric(type="string", unit="label", meaning="who answered: scripted, openai or serve"),
    "model": Metric(type="string", unit="label", meaning=
        "the model id requests named (served name), the unit tables group by; a team run's composition"),
    "model_preset": Metric(type="string", unit="label", meaning="the conf/model preset the run used"),
    "temperature": Metric(type="float64", unit="-", meaning="sampling temperature as sent; null: the server's default"),
    "top_p": Metric(type="float64", unit="-", meaning="nucleus sampling as sent; null: the server's default"),
    "max_tokens": Metric(type="int64", unit="tokens", meaning=
        "completion limit per call as sent; null: the server's default"),
    "sampling_seed": Metric(type="int64", unit="seed", meaning="the sampling seed sent with each call; null: none"),
    "sampling_vs_paper": Metric(type="string", unit="text", meaning=
        "paper presets: as paper, as paper where known (unknown: ...), or differs: ...; null for other presets"),
    "token_counter": Metric(type="string", unit="label", meaning=
        "how tokens without server usage were counted: approx or hf:<file>"),
    "token_counter_source": Metric(type="string", unit="text", meaning=
        "requested, model preset, or fallback: <why approx>"),
    "tokenizer_sha256": Metric(type="string", unit="hash", meaning=
        "sha256 of the tokenizer file counted with; null for approx"),
    "prompt_hash": Metric(type="string", unit="hash", meaning=
        "fingerprint of every prompt text the run's agents could receive"),
    "point_id": Metric(type="string", unit="id", meaning=
        "the grid point without its prompt version (analysis keeps the newest prompts)"),
    "seed": Metric(type="int64", unit="seed", meaning="instance seed: the same seed, the same instance"),
    "max_rounds": Metric(type="int64", unit="rounds", meaning="R_max, per phase"),
    "team_composition": Metric(type="string", unit="label", meaning=
        "team runs: canonical member counts, e.g. 3×scripted+2×tiny_cpu; else null"),
    "team_placement": Metric(type="string", unit="label", meaning=
        "team runs: random, by_degree, leaves or explicit; else null"),
    "team_strong": Metric(type="string", unit="label", meaning=
        "team runs: the member placed first (a composition's first entry); else null"),
    "team_members": Metric(type="string", unit="JSON", meaning=
        "team runs: {member: {backend, preset, model, base_url, sampling}}; else null"),
    "channel_loss": Metric(type="float64", unit="probability", meaning=
        "unreliable channel: per-message loss; null when the channel is off (docs/channel.md)"),
    "channel_delay": Metric(type="float64", unit="probability", meaning=
        "unreliable channel: per-message delay; null when it is off"),
    "channel_duplicate": Metric(type="float64", unit="probability", meaning=
        "unreliable channel: per-message duplication; null when it is off"),
    "channel_reorder": Metric(type="float64", unit="probability", meaning=
        "unreliable channel: per-message reordering; null when it is off"),
    "channel_delay_rounds": Metric(type="int64", unit="rounds", meaning=
        "unreliable channel: how late a delayed message arrives; null when it is off"),
    "channel_links": Metric(type="string", unit="JSON", meaning=
        "unreliable channel: {link: rates}; null when no link has its own rates"),
    "topology": Metric(type="string", unit="label", meaning=
        "topology.kind (complete in every run recorded before topologies); null: the task's own graph"),
    "results_dir": Metric(type="string", unit="path", meaning="the results directory the run was written to"),
    "experiment": Metric(type="string", unit="label", meaning=
        "the run's `experiment` (config), null when unset; not identity"),
    "tags": Metric(type="list<string>", unit="labels", meaning="the run's `tags` (config); not identity"),
}

#: filing labels carried by every row of every table (not part of a run's identity)
LABEL_COLUMNS = ("experiment", "tags")

#: metrics recorded per phase as `<name>_phase1` / `<name>_phase2` (platform/run/phase_metrics.py): phase 1
#: is the first run of the task, phase 2 the rerun of a two-phase condition (null otherwise).
#: MAS-Bench tables report the scored phase by default (families/masbench/phases.py).
PHASE_METRICS: dict[str, Metric] = {
    "success": Metric(type="bool", unit="boolean", meaning="success of the submissions the phase ended with"),
    "sr": Metric(type="float64", unit="fraction in [0, 1]", meaning="sr of the submissions the phase ended with"),
    "check": Metric(type="bool", unit="boolean", meaning=
        "the task's global check of the submissions the phase ended with"),
    "submitted": Metric(type="int64", unit="agents", meaning="agents that submitted in the phase"),
    "rounds": Metric(type="int64", unit="rounds (model calls)", meaning="R = max over agents of model calls (eq. 5)"),
    "tokens_in": Metric(type="int64", unit="tokens", meaning="prompt tokens"),
    "tokens_out": Metric(type="int64", unit="tokens", meaning="completion tokens"),
    "tokens_total": Metric(type="int64", unit="tokens", meaning="tokens_in + tokens_out"),
    "tokens_comm": Metric(type="int64", unit="tokens", meaning="communication tokens (appendix C)"),
}

#: metric columns every family shares, declared as families declare theirs (`Metric`: type, unit, meaning);
#: docs/results.md's schema table is built from them
CORE_METRICS: dict[str, Metric] = {
    "success": Metric(type="bool", unit="boolean", meaning=
        "instance solved: every agent's answer correct (SR = 1); null when the task has no answer key (open "
        "generation questions, judged afterwards)"),
    "sr": Metric(type="float64", unit="fraction in [0, 1]", meaning=
        "success rate, fraction of agents whose answer equals their expected answer (each family's docs give its "
        "paper's equation)"),
    "check": Metric(type="bool", unit="boolean", meaning=
        "the task's global check of all submissions together (a family's own rule; null when it has none)"),
    "rounds": Metric(type="int64", unit="rounds (model calls)", meaning=
        "R = max over agents of model calls, all phases (eq. 5)"),
    "submitted": Metric(type="int64", unit="agents", meaning="agents that submitted in the final phase"),
    "tokens_in": Metric(type="int64", unit="tokens", meaning="prompt tokens over all model calls"),
    "tokens_out": Metric(type="int64", unit="tokens", meaning="completion tokens over all model calls"),
    "tokens_total": Metric(type="int64", unit="tokens", meaning="tokens_in + tokens_out"),
    "tokens_comm": Metric(type="int64", unit="tokens", meaning=
        "tokens of communication commands and their replies ; under the asynchronous schedule: message tool calls, "
        "their results and the messages delivered"),
    "messages_sent": Metric(type="int64", unit="messages", meaning=
        "messages sent (a broadcast counts once; kv writes count)"),
    "model_calls": Metric(type="int64", unit="calls", meaning="model calls made"),
    "calls_from_cache": Metric(type="int64", unit="calls", meaning=
        "model calls answered from the response cache (model.cache): no request was sent; null in results recorded "
        "before the cache existed"),
    "tokens_in_from_cache": Metric(type="int64", unit="tokens", meaning=
        "prompt tokens of the calls answered from the response cache (part of tokens_in: what the original calls "
        "used; spent on this run: tokens_in minus these)"),
    "tokens_out_from_cache": Metric(type="int64", unit="tokens", meaning=
        "completion tokens of the calls answered from the response cache (part of tokens_out, as "
        "tokens_in_from_cache)"),
    "fallbacks": Metric(type="int64", unit="replies", meaning=
        "replies that failed the protocol's format check (a protocol with a reply validator) and got one retry"),
    "failed_parses": Metric(type="int64", unit="replies", meaning="retries that failed the format check as well"),
    "model_errors": Metric(type="int64", unit="calls", meaning="model calls that failed after retries"),
    "model_error_rate": Metric(type="float64", unit="fraction in [0, 1]", meaning=
        "model_errors / model_calls (0 when no call was made); above validity.max_model_error_rate the run is "
        "invalid"),
    "agents_stopped": Metric(type="int64", unit="agents", meaning=
        "agents no longer called because the server refused a call for good (a 4xx such as context length exceeded)"),
    "context_overflows": Metric(type="int64", unit="calls", meaning=
        "model calls refused because the prompt (or prompt + max_tokens) did not fit the model's context (error "
        "class context_length): each stops its agent, as the model's own limit; they count towards no failure rate "
        "(docs/results.md, Run status)"),
    "content_filtered": Metric(type="int64", unit="calls", meaning=
        "model calls the provider's content filter refused (error class content_filter) or cut short (an answer "
        "with finish_reason content_filter, its text empty or partial): the deployed model's answers, counted "
        "towards no failure rate (docs/results.md, Run status)"),
    "tokens_cached": Metric(type="int64", unit="tokens", meaning=
        "prompt tokens the server answered from its prefix cache (usage.prompt_tokens_details.cached_tokens), "
        "summed over the calls that reported it; null when none did"),
    "cache_hit_rate": Metric(type="float64", unit="fraction in [0, 1]", meaning=
        "tokens_cached / tokens_in: share of prompt tokens served from the prefix cache; null when no call reported"
        " cached tokens"),
    "calls_cache_reported": Metric(type="int64", unit="calls", meaning=
        "successful model calls whose server reported cached tokens (if fewer than model_calls - model_errors, "
        "cache_hit_rate understates the cache)"),
    "queue_s": Metric(type="float64", unit="seconds", meaning=
        "seconds the run's model calls waited for their endpoint's shared connection limit (model.max_connections),"
        " summed over calls; not part of any latency; 0 without a shared limit"),
    "calls_usage_estimated": Metric(type="int64", unit="calls", meaning=
        "successful model calls whose tokens were counted locally because the server sent no usage, or usage that "
        "was not a count (usage_source estimate or invalid)"),
    "command_errors": Metric(type="int64", unit="commands", meaning=
        "commands answered with an error or 'Unknown command'"),
    "stacked_blocks": Metric(type="int64", unit="blocks", meaning=
        "fenced blocks that broke the one-command-per-block rule: several commands (each run on its own), text no "
        "command takes, or command lines kept in a write_file value; each has a harness event with verb stacked"),
    "team_by_model": Metric(type="string", unit="JSON", meaning=
        "team runs (else null): JSON {member: {backend, model, agents, model_calls, model_errors, model_error_rate,"
        " tokens_in, tokens_out, tokens_total, status}}; status is the member judged alone by "
        "validity.max_model_error_rate (docs/team.md)"),
    "team_strong_degree": Metric(type="float64", unit="edges (mean node degree)", meaning=
        "team runs with a composition on a task with a communication graph (else null): mean degree of the agents "
        "running the strong member (the first entry)"),
    "startup_s": Metric(type="float64", unit="seconds", meaning=
        "seconds from driver start until environment and agent actors were ready"),
    "channel_sent": Metric(type="int64", unit="count", meaning=
        "messages offered to the unreliable channel, one per (message, recipient) (docs/channel.md); null when the "
        "channel is off"),
    "channel_delivered": Metric(type="int64", unit="count", meaning=
        "channel messages not lost (on time or late); null when the channel is off"),
    "channel_lost": Metric(type="int64", unit="count", meaning=
        "channel messages dropped; null when the channel is off"),
    "channel_late": Metric(type="int64", unit="count", meaning=
        "channel messages delayed by channel.delay_rounds; null when the channel is off"),
    "channel_duplicated": Metric(type="int64", unit="count", meaning=
        "channel messages delivered twice; null when the channel is off"),
    "channel_reordered": Metric(type="int64", unit="count", meaning=
        "channel messages moved ahead of their batch; null when the channel is off"),
    "topology_edges": Metric(type="string", unit="JSON", meaning=
        "JSON list of [u, v] agent-id pairs (u < v, sorted) of the communication graph: the restricted topology's, "
        "or the task's own graph (Task.graph_edges); null for the complete graph (docs/topology.md)"),
    "topology_n_edges": Metric(type="int64", unit="edges", meaning="edges of the communication graph"),
    "topology_diameter": Metric(type="int64", unit="edges (hops)", meaning=
        "diameter of the communication graph (longest shortest path); null when it is disconnected"),
    "topology_min_degree": Metric(type="int64", unit="neighbours", meaning=
        "smallest number of neighbours of an agent in the communication graph"),
    "topology_mean_degree": Metric(type="float64", unit="neighbours", meaning=
        "mean number of neighbours (2 * edges / agents)"),
    "topology_max_degree": Metric(type="int64", unit="neighbours", meaning="largest number of neighbours of an agent"),
    "topology_connected": Metric(type="bool", unit="boolean", meaning="the communication graph is connected"),
    "topology_seed": Metric(type="int64", unit="seed", meaning=
        "seed the graph generator received (topology.seed, or derived from the run seed); null for kinds without "
        "randomness"),
    "comm_floor_success": Metric(type="bool", unit="boolean", meaning=
        "no-communication floor: whether every agent answering from its own input alone solves this instance "
        "(Task.isolated_answers); null when the task defines none"),
    **{f"{name}_phase{p}": Metric(type=metric.type, unit=metric.unit,
                                  meaning=f"{metric.meaning}, phase {p} only" + (" (two-phase conditions), else null" if p == 2 else ""))
       for p in (1, 2) for name, metric in PHASE_METRICS.items()},
}

#: what became of the run and where it ran, declared the same way; `run_id` leads the runs table
RUN_STATUS_COLUMNS: dict[str, Metric] = {
    "run_id": Metric(type="string", unit="id", meaning="the run (16 hex digits of the config hash)"),
    "status": Metric(type="string", unit="label", meaning=
        "ok, degraded, invalid or failed (docs/results.md, \"Run status\")"),
    "error": Metric(type="string", unit="text", meaning=
        "why the run failed or what degraded it; null when nothing did"),
    "error_class": Metric(type="string", unit="label", meaning=
        "failed runs: interrupted, task_error or config_error (platform/run/run_outcome.py); else null"),
    "model_error_classes": Metric(type="string", unit="JSON", meaning=
        "{error_class: failed calls}; null when no call failed"),
    "wall_s": Metric(type="float64", unit="seconds", meaning="the run's wall time"),
    "started_at": Metric(type="timestamp", unit="UTC", meaning="when the run started"),
    "finished_at": Metric(type="timestamp", unit="UTC", meaning="when it finished"),
    "masgrid_version": Metric(type="string", unit="version", meaning="masgrid where the driver ran"),
    "git_commit": Metric(type="string", unit="commit", meaning="HEAD of the checkout (+dirty), or unknown"),
    "python_version": Metric(type="string", unit="version", meaning="Python where the driver ran"),
    "ray_version": Metric(type="string", unit="version", meaning="Ray where the driver ran"),
    "vllm_version": Metric(type="string", unit="version", meaning=
        "vLLM where the driver ran; null when it is not installed there"),
    "tokenizers_version": Metric(type="string", unit="version", meaning=
        "the library that counted with token_counter hf:..."),
    "hostname": Metric(type="string", unit="host", meaning="host of the run's driver"),
    "prefix_cache_reset": Metric(type="bool", unit="boolean", meaning=
        "true: the sweep reset the prefix cache of every engine the run calls right before it started "
        "(execution.prefix_cache=reset_per_run); false: the run found the cache as earlier calls left it; null: the "
        "run calls no model endpoint"),
    "config_json": Metric(type="string", unit="JSON", meaning="the whole validated configuration"),
}


def _run_metrics() -> dict[str, Metric]:
    """The core metrics, then each installed family's, in family order. A family column that
    reuses a core, configuration or status column's name is refused: it would silently take
    that column's place in every runs file."""
    from masgrid.family import FamilyError

    taken = {*CORE_METRICS, *CONFIG_COLUMNS, *RUN_STATUS_COLUMNS}
    clashes = sorted(taken & {*family_metrics(), *family_columns()})
    if clashes:
        raise FamilyError(f"family columns reuse masgrid's own column names: {', '.join(clashes)}")
    return {**CORE_METRICS, **family_metrics()}


#: every metric column: the core ones, then each installed family's, in family order
RUN_METRICS: dict[str, Metric] = _run_metrics()
#: each family's top-level options (`Family.top_level`, e.g. MAS-Bench's input mode), recorded
#: under their own names after the core configuration columns
FAMILY_SETTING_COLUMNS: dict[str, Metric] = family_columns()


def runs_columns() -> dict[str, Metric]:
    """Every runs column in file order: run_id, the configuration, the families' top-level
    options, the metrics, then what became of the run."""
    status = dict(RUN_STATUS_COLUMNS)
    first = {"run_id": status.pop("run_id")}
    return {**first, **CONFIG_COLUMNS, **FAMILY_SETTING_COLUMNS, **RUN_METRICS, **status}


def runs_schema() -> pa.Schema:
    return pa.schema([(name, column.arrow_type()) for name, column in runs_columns().items()])


#: the columns that tie an agents or events row to its run
_RUN_KEYS: dict[str, Metric] = {
    "run_id": Metric(type="string", unit="id", meaning="the run (16 hex digits of the config hash)"),
    "task": Metric(type="string", unit="label", meaning="task name (partition key)"),
    "protocol": Metric(type="string", unit="label", meaning="protocol name (partition key)"),
}

#: the filing labels (LABEL_COLUMNS) as agents and events columns
_LABELS: dict[str, Metric] = {
    "experiment": Metric(type="string", unit="label", meaning="the run's `experiment` (config), null when unset"),
    "tags": Metric(type="list<string>", unit="labels", meaning="the run's `tags` (config)"),
}

#: agents columns, declared as every column is (`Metric`: type, unit, meaning); docs/results.md is
#: generated from them
AGENT_COLUMNS: dict[str, Metric] = {
    **_RUN_KEYS,
    "agent": Metric(type="int64", unit="agent id", meaning="agent id, 0 .. agents-1"),
    "submission": Metric(type="string", unit="JSON", meaning=
        "the agent's final-phase answer as JSON, null if it submitted none"),
    "expected": Metric(type="string", unit="JSON", meaning="the answer the task expected from this agent, as JSON"),
    "correct": Metric(type="bool", unit="boolean", meaning=
        "submission equals expected; null when the task has no answer key"),
    "partial": Metric(type="float64", unit="fraction in [0, 1]", meaning=
        "the task's partial credit for this agent's answer"),
    "submitted_phase1": Metric(type="string", unit="JSON", meaning=
        "the phase-1 answer as JSON (two-phase conditions only, else null)"),
    "correct_phase1": Metric(type="bool", unit="boolean", meaning=
        "the phase-1 answer equals expected (two-phase conditions only, else null): with `correct`, what the rerun "
        "fixed or broke"),
    "rounds": Metric(type="int64", unit="rounds (model calls)", meaning=
        "rounds in which this agent was called, all phases (a retry is not a round)"),
    "tokens_in": Metric(type="int64", unit="tokens", meaning=
        "prompt tokens of this agent's model calls, retries included"),
    "tokens_out": Metric(type="int64", unit="tokens", meaning=
        "completion tokens of this agent's model calls, retries included"),
    "tokens_cached": Metric(type="int64", unit="tokens", meaning=
        "prompt tokens of this agent's calls the server took from its prefix cache; null when no call of it reported "
        "any"),
    "tokens_comm": Metric(type="int64", unit="tokens", meaning=
        "tokens of this agent's communication commands and their replies (asynchronous schedule: its message tool "
        "calls and their results, and the messages delivered to it)"),
    "messages_sent": Metric(type="int64", unit="messages", meaning=
        "messages this agent sent (a broadcast counts once; kv writes count)"),
    "messages_received": Metric(type="int64", unit="messages", meaning=
        "messages this agent received through receive commands"),
    "deliveries": Metric(type="int64", unit="messages", meaning=
        "messages of this agent that reached a receiver (a broadcast: one per receiver; with strict rounds, a "
        "receiver still active at the round boundary)"),
    "files_read_others": Metric(type="int64", unit="reads", meaning="reads of files other agents wrote (SFS, kv)"),
    "model_errors": Metric(type="int64", unit="calls", meaning="this agent's model calls that failed after retries"),
    "queue_s": Metric(type="float64", unit="seconds", meaning=
        "time this agent's model calls waited for their endpoint's shared connection limit (model.max_connections), "
        "summed"),
    "command_errors": Metric(type="int64", unit="commands", meaning=
        "this agent's commands answered with an error or 'Unknown command'"),
    "stacked_blocks": Metric(type="int64", unit="blocks", meaning=
        "this agent's fenced blocks that broke one command per block (see the run metric)"),
    "fallbacks": Metric(type="int64", unit="replies", meaning=
        "replies that failed the protocol's format check and got one retry"),
    "failed_parses": Metric(type="int64", unit="replies", meaning="retries that failed the format check as well"),
    "model_calls": Metric(type="int64", unit="calls", meaning="this agent's model calls, retries included"),
    "calls_from_cache": Metric(type="int64", unit="calls", meaning=
        "this agent's model calls answered from the response cache (model.cache)"),
    "tokens_in_from_cache": Metric(type="int64", unit="tokens", meaning=
        "prompt tokens of those calls (part of tokens_in)"),
    "tokens_out_from_cache": Metric(type="int64", unit="tokens", meaning=
        "completion tokens of those calls (part of tokens_out)"),
    "stopped": Metric(type="string", unit="text", meaning=
        "why the agent was no longer called (phase, round and a final server refusal), else null"),
    "degree": Metric(type="int64", unit="neighbours", meaning=
        "agents this agent can message directly in the run's communication graph (agents - 1 on the complete graph)"),
    "system_prompt": Metric(type="string", unit="text", meaning=
        "phase-1 system message (every phase's is in events, kind prompt)"),
    "model": Metric(type="string", unit="label", meaning=
        "the model id this agent's requests named (served name); the run's, or its team member's"),
    "model_preset": Metric(type="string", unit="label", meaning=
        "the run's preset name (`model.name`), or in a team run the agent's member as the team names it (a conf/model"
        " preset or a team.presets alias)"),
    "backend": Metric(type="string", unit="label", meaning=
        "backend of this agent's calls: scripted, openai or serve (a team's scripted members: scripted)"),
    **_LABELS,
}

AGENTS_SCHEMA = pa.schema([(name, column.arrow_type()) for name, column in AGENT_COLUMNS.items()])

#: events kinds -> meaning. Rows with a `role` are the chat messages of the agents' histories.
EVENT_KINDS: dict[str, str] = {
    "prompt": "the system message that opens an agent's history in a phase (round 0, role system)",
    "observation": "a user message appended to an agent's history before its next model call (role user): "
                   "the text, or when `text` is null the `reply` of the event numbered `source`",
    "model_call": "one model call and its reply (role assistant; a failed call leaves an empty assistant "
                  "message); verb invalid_reply: a reply that failed the format check and was retried",
    "command": "one command the environment executed from a reply, with the reply it gave",
    "harness": "a harness reply that is no command's (no command found, model error, round notice; verb "
               "stacked: the note on a block that broke one command per block, the block in `text`)",
    "delivery": "LOCAL protocol: the user message a round's end delivers to this agent (its neighbours' messages "
                "and the next instruction), in `reply`; asynchronous schedule: a teammate's message delivered "
                "into this agent's next step (sender in `peers`)",
    "action": "asynchronous schedule: one tool call of a reply (tool name in `tool`, its arguments as JSON in `text`)",
    "tool_result": "asynchronous schedule: the result of one tool call, in `reply` (role tool)",
    "message": "asynchronous schedule: a message tool call (content in `text`, receivers in `peers`)",
    "plan": "a planning phase (asynchronous schedule): the agent called finish with its plan (in `text`)",
    "finish": "an execution phase (asynchronous schedule): the agent called finish (status in `verb`, summary in `text`)",
    "scoring_call": "a model call the scorer made, not an agent (e.g. a merge resolver: `actor` names it, "
                    "`agent` null): the prompt in `text`, the reply in `reply`, its tokens, latency and error",
}

#: events columns, declared the same way
EVENT_COLUMNS: dict[str, Metric] = {
    **_RUN_KEYS,
    "seq": Metric(type="int64", unit="position", meaning=
        "order of the event within the run, from 0; history order within an agent's phase"),
    "phase": Metric(type="int64", unit="phase", meaning="phase, from 1 (2: the rerun of a two-phase condition)"),
    "round": Metric(type="int64", unit="round", meaning="round within the phase, from 1 (prompt events: 0)"),
    "agent": Metric(type="int64", unit="agent id", meaning=
        "the agent the event belongs to; null for a scoring_call (see `actor`)"),
    "actor": Metric(type="string", unit="label", meaning=
        "scoring_call: who made the call (resolver); null: the agent in `agent`"),
    "kind": Metric(type="string", unit="label", meaning=
        "what happened: prompt, observation, model_call, command, harness, delivery, action, tool_result, message, "
        "plan, finish, scoring_call"),
    "verb": Metric(type="string", unit="label", meaning=
        "command verb (command), stacked (harness), deliver (delivery), invalid_reply (model_call), retry "
        "(observation: the format check's message), else null"),
    "text": Metric(type="string", unit="text", meaning=
        "model output (model_call), the command (its lines of the block; command), the message (prompt, observation "
        "without source)"),
    "reply": Metric(type="string", unit="text", meaning=
        "what the environment answered the agent (command, harness, delivery); invalid_reply: the format check's "
        "message"),
    "text_chars": Metric(type="int64", unit="characters", meaning=
        "length of the original `text` when it was longer than execution.max_recorded_chars and `text` holds only its"
        " start; null: `text` is whole"),
    "text_sha256": Metric(type="string", unit="hex digest", meaning=
        "sha256 of the original `text` (UTF-8) when it was capped, else null"),
    "reply_chars": Metric(type="int64", unit="characters", meaning=
        "length of the original `reply` when it was capped (as `text_chars`); null: `reply` is whole"),
    "reply_sha256": Metric(type="string", unit="hex digest", meaning=
        "sha256 of the original `reply` (UTF-8) when it was capped, else null"),
    "role": Metric(type="string", unit="label", meaning=
        "chat role of the message this event added to the agent's history (system, user, assistant); null: the event "
        "added none"),
    "source": Metric(type="int64", unit="seq", meaning=
        "observation: seq of the event whose reply is the message; null when `text` holds it; asynchronous schedule, "
        "tool_result and delivery: the event's own seq (its `reply` is the history message)"),
    "ok": Metric(type="bool", unit="boolean", meaning=
        "model_call: the call succeeded; command: it was not an error; prompt, observation: true"),
    "error": Metric(type="string", unit="text", meaning=
        "model_call: why the call failed after its retries (the server's message)"),
    "error_class": Metric(type="string", unit="label", meaning=
        "model_call: class of a failed call (actors/backends/errors.py)"),
    "http_status": Metric(type="int64", unit="HTTP status", meaning=
        "model_call: HTTP status of a failed call, when there was one"),
    "finish_reason": Metric(type="string", unit="label", meaning=
        "model_call: why the model stopped, as the server said (stop, length, tool_calls; content_filter: the "
        "provider's filter cut the reply short); null: a failed call, or the server said nothing"),
    "tokens_in": Metric(type="int64", unit="tokens", meaning="model_call: prompt tokens (0 on other events)"),
    "tokens_out": Metric(type="int64", unit="tokens", meaning="model_call: completion tokens (0 on other events)"),
    "tokens_cached": Metric(type="int64", unit="tokens", meaning=
        "model_call: prompt tokens the server took from its prefix cache (usage.prompt_tokens_details.cached_tokens);"
        " null: not reported"),
    "tokens_comm": Metric(type="int64", unit="tokens", meaning=
        "command: communication tokens of block and reply (appendix C); asynchronous schedule action and tool_result "
        "of a send_message, delivery: tokens of the call, its result, the delivered message; 0 on other events"),
    "usage_source": Metric(type="string", unit="label", meaning=
        "model_call: where the token counts come from: server (usage fields), estimate (counted here: no usage), "
        "invalid (counted here: usage was not a count), none (failed call)"),
    "latency_s": Metric(type="float64", unit="seconds", meaning=
        "model_call: wall time of the call, client retries and their backoff included, waiting for the endpoint's "
        "shared limit (queue_s) not"),
    "call_started": Metric(type="timestamp", unit="UTC time", meaning="model_call: when the request went out"),
    "attempts": Metric(type="int64", unit="requests", meaning=
        "model_call: HTTP requests the call made (1 + client retries; 0 when from_cache)"),
    "queue_s": Metric(type="float64", unit="seconds", meaning=
        "model_call: time the call waited for its endpoint's shared connection limit (model.max_connections), all "
        "attempts; left out of latency_s"),
    "from_cache": Metric(type="bool", unit="boolean", meaning=
        "model_call, scoring_call: the answer came from the response cache (model.cache), no request was sent; its "
        "tokens, latency_s and finish_reason are those of the original call. Null on other events and in results "
        "recorded before the cache existed"),
    "messages_sent": Metric(type="int64", unit="messages", meaning="command: messages it sent (0 on other events)"),
    "peers": Metric(type="list<int64>", unit="agent ids", meaning=
        "send: receivers; receive: senders (one per message); read_file: writer"),
    "channel_to": Metric(type="list<int64>", unit="agent ids", meaning=
        "a send through the unreliable channel (docs/channel.md): one entry per channel message, its recipient (-1: "
        "the kv store); null without a channel"),
    "channel_outcome": Metric(type="list<string>", unit="labels", meaning=
        "what the channel did to each message of `channel_to`: delivered, lost, or delayed / duplicated / reordered "
        "joined by '+'; null without a channel"),
    "channel_round": Metric(type="list<int64>", unit="round", meaning=
        "per message of `channel_to`: the round it becomes readable (its first copy); null when lost or, on the "
        "asynchronous schedule, not known when sent"),
    "time": Metric(type="timestamp", unit="UTC time", meaning="when the driver recorded the event"),
    "tool": Metric(type="string", unit="label", meaning=
        "action, tool_result, message (asynchronous schedule): the tool called, else null"),
    "tool_calls": Metric(type="string", unit="JSON", meaning=
        "model_call of a reply with tool calls: {\"content_chars\": length of the reply text the history message holds "
        "(the start of `text`), \"calls\": the OpenAI tool_calls list as it entered the history (id, name, arguments)},"
        " or \"capped\": true instead of calls when longer than execution.max_recorded_chars; null otherwise"),
    "tool_call_id": Metric(type="string", unit="label", meaning=
        "tool_result: the id of the call it answers (the history's tool message carries it); null otherwise"),
    "t": Metric(type="float64", unit="seconds since the Unix epoch", meaning=
        "asynchronous schedule, every event: wall-clock time it happened (model_call: when the call was made; prompt:"
        " when recorded); null for the other schedules"),
    **_LABELS,
}

EVENTS_SCHEMA = pa.schema([(name, column.arrow_type()) for name, column in EVENT_COLUMNS.items()])
