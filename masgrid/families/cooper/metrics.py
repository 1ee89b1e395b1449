"""Run-table columns of this family (name -> type, unit, meaning)."""

from __future__ import annotations

from masgrid.family import Metric

METRICS: dict[str, Metric] = {
    "cooper_pool": Metric(type="string", unit='label', meaning=(
        "CooperBench task set's pool, e.g. pallets_jinja_task")),
    "cooper_task_id": Metric(type="int64", unit='id', meaning=(
        "CooperBench task id within the pool (task<ID>/)")),
    "cooper_features": Metric(type="string", unit='labels (comma-joined)', meaning=(
        "CooperBench feature ids of the run, comma-joined in config order")),
    "cooper_setting": Metric(type="string", unit='label', meaning=(
        "CooperBench setting: coop, solo or nocomm (planning kept, no messages in execution)")),
    "cooper_sandbox": Metric(type="string", unit='label', meaning=(
        "CooperBench: bwrap, or none (tools and tests ran without isolation: an explicit opt-out)")),
    "merge_stage": Metric(type="string", unit='label', meaning=(
        "CooperBench: the merge stage that produced the evaluated tree: naive (git three-way "
                    "merge), union (conflict hunks keep both sides), llm, failed (no conflict-free tree), single (solo)")),
    "conflicts_naive": Metric(type="int64", unit='conflict hunks', meaning=(
        "CooperBench: conflict hunks of the naive merge (null: not attempted, e.g. solo)")),
    "conflicts_union": Metric(type="int64", unit='conflict hunks', meaning=(
        "CooperBench: conflict hunks left after the union stage (null: not reached)")),
    "feature_pass_json": Metric(type="string", unit='JSON', meaning=(
        "CooperBench: JSON {feature id: its tests passed on the merged tree}")),
    "features_passed": Metric(type="int64", unit='features', meaning=(
        "CooperBench: features whose tests passed on the merged tree")),
    "features_total": Metric(type="int64", unit='features', meaning=(
        "CooperBench: features of the run")),
    "actions_total": Metric(type="int64", unit='actions', meaning=(
        "CooperBench: execution-phase actions of all agents (tool calls, messages included; "
                      "a reply without a tool call or a failed model call counts one)")),
    "messages_total": Metric(type="int64", unit='messages', meaning=(
        "CooperBench: messages sent in the execution phase by all agents")),
    "patch_lines": Metric(type="int64", unit='lines', meaning=(
        "CooperBench: changed lines (added + removed) of all agents' patches")),
    "agents_capped": Metric(type="int64", unit='agents', meaning=(
        "CooperBench: agents stopped by the action cap before calling finish")),
    "agents_not_done": Metric(type="int64", unit='agents', meaning=(
        "CooperBench: agents that called finish with status partial or blocked in "
                        "execution (the scripted solo agent: features it could not combine; its summary names them)")),
    "agents_without_patch": Metric(type="int64", unit='agents', meaning=(
        "CooperBench: agents that left no execution record (evaluated as an empty patch)")),
    "eval_wall_s": Metric(type="float64", unit='seconds', meaning=(
        "CooperBench: wall time of merge and tests")),
    "conflicts_llm": Metric(type="int64", unit='files', meaning=(
        "CooperBench: files still holding conflict markers after the llm stage (0: it "
                      "gave a conflict-free tree; null: not run)")),
    "resolver_outcome": Metric(type="string", unit='label', meaning=(
        "CooperBench llm stage: resolved (a conflict-free tree, which was then tested), "
                         "failed (the union result stands, or nothing merged; see resolver_failure), null: not run")),
    "resolver_failure": Metric(type="string", unit='text', meaning=(
        "CooperBench: why the llm stage failed, per conflict region (a failed call, an "
                         "empty answer, markers left, an unclosed code block); null unless resolver_outcome is failed")),
    "resolver_model": Metric(type="string", unit='label', meaning=(
        "CooperBench cooper.resolver=llm: the model id the resolver's requests named "
                       "(null: no resolver configured)")),
    "resolver_calls": Metric(type="int64", unit='calls', meaning=(
        "CooperBench: the resolver's model calls (one per conflict region; 0 when no "
                       "run reached the llm stage; null: no resolver configured)")),
    "resolver_errors": Metric(type="int64", unit='calls', meaning=(
        "CooperBench: resolver calls that failed after retries (not in model_errors)")),
    "resolver_tokens_in": Metric(type="int64", unit='tokens', meaning=(
        "CooperBench: prompt tokens of the resolver's calls (not in tokens_in)")),
    "resolver_tokens_out": Metric(type="int64", unit='tokens', meaning=(
        "CooperBench: completion tokens of the resolver's calls (not in tokens_out)")),
    "eval_notes": Metric(type="string", unit='text', meaning=(
        "CooperBench: what the evaluator noted (test files dropped from a patch, a patch "
                   "that did not apply, no conflict-free tree), '; '-joined; null when nothing")),
}
