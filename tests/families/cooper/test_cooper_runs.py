"""CooperBench end to end through the real driver on the synthetic pool: scripted agents
apply their gold patches through the sandboxed tools, the patches are merged and tested,
and each pair's outcome must be the one the pool was designed to give (synthetic.py's
`expected`, written independently of the run code): a clean merge, a conflict the union
merge resolves, or a union that breaks a feature's tests. Also: solo, nocomm (no messages
in execution), the conflicting scripted variant, and the events of a run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from masgrid._private.analysis.transcript import calls
from masgrid.families.cooper.sandbox import sandbox_problem
from masgrid.families.cooper.synthetic import write_synthetic_pool
from masgrid._private.platform.run.config import ConfigError, RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_local
from masgrid._private.platform.results.recorder import partition_dir

#: designed outcome -> (merge stage, success)
OUTCOME = {"clean": ("naive", True), "union": ("union", True), "union_breaks": ("union", False)}
SANDBOX = "bwrap" if sandbox_problem() is None else "none"


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory, cooper_cache: Path):
    root = tmp_path_factory.mktemp("cooper")
    return write_synthetic_pool(root / "pool"), cooper_cache


def cfg_of(pool, results: Path, features: list[int], **cooper: object) -> RunConfig:
    written, cache = pool
    return RunConfig.from_mapping({
        "task": f"cooper/{written.pool}/{written.task_id}", "protocol": "workspace", "results_dir": str(results),
        "cooper": {"features": features, "data_dir": str(written.data_dir), "repos_dir": str(written.repos_dir),
                   "cache_dir": str(cache), "sandbox": SANDBOX, **cooper},
        "execution": {"executor": "local"}})


def pair_of(outcome: str, pool) -> list[int]:
    return [int(x) for x in next(k for k, v in sorted(pool[0].expected.items()) if v == outcome).split(",")]


#: the runs the tests read: name -> (designed outcome of the pair, cooper options)
RUNS = {"clean": ("clean", {}), "union": ("union", {}), "union_breaks": ("union_breaks", {}),
        "nocomm": ("union", {"setting": "nocomm"}), "solo": ("clean", {"setting": "solo"}),
        "solo_union": ("union", {"setting": "solo"}), "solo_union_breaks": ("union_breaks", {"setting": "solo"}),
        "conflicting": ("clean", {"policy": "conflicting"})}


@pytest.fixture(scope="module")
def runs(pool, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[RunConfig, dict]]:
    """Every run once (each costs a few seconds, mostly the sandboxed test commands)."""
    results = tmp_path_factory.mktemp("results")
    out = {}
    for name, (outcome, options) in RUNS.items():
        cfg = cfg_of(pool, results, pair_of(outcome, pool), **options)
        summary = run_local(cfg)
        assert summary.status == "ok", summary.error
        path = partition_dir(results, "runs", cfg.partition) / f"part-{cfg.run_id}.parquet"
        out[name] = (cfg, pq.read_table(path).to_pylist()[0])
    return out


@pytest.mark.parametrize("outcome", ["clean", "union", "union_breaks"])
def test_coop_pairs_give_their_designed_outcome(pool, runs, outcome: str) -> None:
    features = pair_of(outcome, pool)
    row = runs[outcome][1]
    stage, success = OUTCOME[outcome]
    assert (row["merge_stage"], row["success"]) == (stage, success)
    assert (row["conflicts_naive"] == 0) == (stage == "naive")
    passed = json.loads(row["feature_pass_json"])
    assert sorted(passed) == sorted(str(f) for f in features)
    assert row["features_passed"] == sum(passed.values()) and row["features_total"] == 2
    assert (row["features_passed"] == 2) == success
    assert row["cooper_setting"] == "coop" and row["cooper_sandbox"] == SANDBOX
    assert row["cooper_features"] == ",".join(map(str, features)) and row["agents"] == 2
    # each agent: a view and a str_replace per hunk, one message, finish (the synthetic patches have one hunk)
    assert row["messages_total"] == 2 and row["actions_total"] == 8 and row["agents_capped"] == 0


def test_nocomm_solo_and_conflicting(runs) -> None:
    row = runs["nocomm"][1]
    assert (row["merge_stage"], row["success"], row["messages_total"], row["actions_total"]) == ("union", True, 0, 6)
    row = runs["solo"][1]
    assert (row["merge_stage"], row["success"], row["agents"], row["messages_total"]) == ("single", True, 1, 0)
    assert row["conflicts_naive"] is None
    # the conflicting variant edits the partner's spot too: a clean pair now conflicts in the
    # naive merge, and the union stage produces the tree that is tested
    row = runs["conflicting"][1]
    assert row["merge_stage"] == "union" and row["conflicts_naive"] > 0 and row["actions_total"] == 10


def test_events_of_a_run(runs) -> None:
    cfg, _ = runs["clean"]
    events = pd.read_parquet(partition_dir(Path(cfg.results_dir), "events", cfg.partition))
    events = events[events.run_id == cfg.run_id].sort_values("seq")
    kinds = set(events.kind)
    assert {"prompt", "model_call", "action", "tool_result", "message", "plan", "finish", "observation"} <= kinds
    assert events.t.notna().all()  # every event, prompts included
    timed = events[events.kind != "prompt"]
    actions = events[events.kind == "action"]
    assert set(actions.tool) == {"send_message", "finish", "view", "str_replace"}
    assert all(isinstance(json.loads(t), dict) for t in actions.text)
    # a message names its receiver; the plan of phase 1 reaches the execution prompt of phase 2
    messages = events[events.kind == "message"]
    assert [list(p) for p in messages.peers] == [[1 - a] for a in messages.agent]
    plans = events[events.kind == "plan"]
    assert len(plans) == 2
    prompts2 = events[(events.kind == "prompt") & (events.phase == 2)]
    for _, plan in plans.iterrows():
        assert plan.text in prompts2[prompts2.agent == plan.agent].text.iloc[0]
    # the events alone rebuild every model call's input, tool results and deliveries included
    rebuilt = calls(events)
    assert len(rebuilt) == (events.kind == "model_call").sum()
    last = [c for c in rebuilt if c.reply.agent == 1 and c.reply.phase == 2][-1]
    roles = [m["role"] for m in last.messages]
    assert roles[0] == "system" and "tool" in roles and roles.count("assistant") == len(
        [c for c in rebuilt if c.reply.agent == 1 and c.reply.phase == 2]) - 1
    # per agent, event times follow the recorded order within a phase
    for _, group in timed.groupby(["agent", "phase"]):
        assert group.t.is_monotonic_increasing


def test_bad_configs_are_one_line(pool, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cooper.features"):
        cfg_of(pool, tmp_path, [1, 99])
    with pytest.raises(ConfigError, match="distinct"):
        cfg_of(pool, tmp_path, [1, 1])
    with pytest.raises(ConfigError, match="cooper/<pool>/<ID>"):
        RunConfig.from_mapping({"task": "cooper/textkit_task", "protocol": "workspace"})
    with pytest.raises(ConfigError, match="cooper.resolver_model: scripted agents have no model"):
        cfg_of(pool, tmp_path, [1, 2], resolver="llm")  # scripted agents: the resolver needs its own model
    with pytest.raises(ConfigError, match="no clone of masgrid/textkit.*fetch"):
        cfg_of(pool, tmp_path, [1, 2], repos_dir=str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="no task directory"):
        cfg_of(pool, tmp_path, [1, 2], data_dir=str(tmp_path))
    # the number of agents follows from the setting, whatever `agents` says
    assert cfg_of(pool, tmp_path, [1, 2, 3]).agents == 3
    assert cfg_of(pool, tmp_path, [1, 2, 3], setting="solo").agents == 1


# -- solo on overlapping pairs -----------------------------------------------------------------

def _git(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, input=stdin)


def combined_by_git(written, features: list[int], tmp: Path) -> dict[int, bool] | None:
    """What an agent implementing every feature should reach, computed here with git alone:
    the first gold patch applied, each further one re-diffed without context (`git diff -U0`,
    so lines an earlier feature changed next to it do not block it) and applied with
    `git apply --unidiff-zero`; then each feature's tests run by pytest on that tree.
    None: git could not combine them."""
    task = written.data_dir / written.pool / f"task{written.task_id}"
    combo = tmp / "combo"
    subprocess.run(["git", "clone", "--quiet", str(written.repos_dir / "textkit"), str(combo)], check=True)
    assert _git(combo, "checkout", "--quiet", written.base_commit).returncode == 0
    for k, f in enumerate(features):
        patch = (task / f"feature{f}" / "feature.patch").read_text()
        if k:
            other = tmp / f"alone{f}"
            subprocess.run(["git", "clone", "--quiet", str(written.repos_dir / "textkit"), str(other)], check=True)
            assert _git(other, "checkout", "--quiet", written.base_commit).returncode == 0
            assert _git(other, "apply", "-", stdin=patch).returncode == 0
            patch = _git(other, "diff", "-U0").stdout
        if _git(combo, "apply", "--unidiff-zero", "-", stdin=patch).returncode != 0:
            return None
    passed = {}
    for f in features:
        tree = tmp / f"tests{f}"
        shutil.copytree(combo, tree)
        assert _git(tree, "apply", "-", stdin=(task / f"feature{f}" / "tests.patch").read_text()).returncode == 0
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=tree,
                              capture_output=True, text=True)
        passed[f] = done.returncode == 0 and " passed" in done.stdout
    return passed


def overlaps_for_git(written, features: list[int], tmp: Path) -> int:
    """Conflicts of git's own three-way merge of the two features' versions of core.py."""
    task = written.data_dir / written.pool / f"task{written.task_id}"
    versions = []
    for f in features:
        tree = tmp / f"merge{f}"
        subprocess.run(["git", "clone", "--quiet", str(written.repos_dir / "textkit"), str(tree)], check=True)
        assert _git(tree, "checkout", "--quiet", written.base_commit).returncode == 0
        assert _git(tree, "apply", "-", stdin=(task / f"feature{f}" / "feature.patch").read_text()).returncode == 0
        versions.append(str(tree / "textkit" / "core.py"))
    base = tmp / "base.py"
    base.write_text(_git(Path(versions[0]).parent, "show", f"{written.base_commit}:textkit/core.py").stdout)
    return subprocess.run(["git", "merge-file", "-p", versions[0], str(base), versions[1]], capture_output=True).returncode


@pytest.mark.parametrize("name", ["solo", "solo_union", "solo_union_breaks"])
def test_solo_implements_every_feature_of_a_pair(pool, runs, name: str, tmp_path: Path) -> None:
    cfg, row = runs[name]
    features = [int(f) for f in row["cooper_features"].split(",")]
    expected = combined_by_git(pool[0], features, tmp_path)
    assert expected is not None, "git combines every pair of the demo pool"
    assert json.loads(row["feature_pass_json"]) == {str(f): v for f, v in expected.items()}
    assert row["success"] == all(expected.values()) and row["success"] is True
    assert (row["merge_stage"], row["agents"], row["agents_not_done"]) == ("single", 1, 0)
    # the overlapping pairs are the ones the gold patches cannot simply be stacked on
    assert (overlaps_for_git(pool[0], features, tmp_path) > 0) == (name != "solo")
    events = pd.read_parquet(partition_dir(Path(cfg.results_dir), "events", cfg.partition))
    events = events[events.run_id == cfg.run_id]
    assert events[events.kind == "tool_result"].ok.all()  # every edit matched where it was applied
    assert events[events.kind == "finish"].verb.tolist() == ["done"]


def test_solo_flags_features_it_cannot_combine(pool, tmp_path: Path) -> None:
    """A sixth feature rewrites the line feature 3 rewrites, differently: the scripted solo
    agent keeps both versions, finishes `partial` naming them, and the row counts it."""
    written, cache = pool
    data = tmp_path / "data"
    shutil.copytree(written.data_dir, data)
    scratch = tmp_path / "scratch"
    subprocess.run(["git", "clone", "--quiet", str(written.repos_dir / "textkit"), str(scratch)], check=True)
    assert _git(scratch, "checkout", "--quiet", written.base_commit).returncode == 0
    core = scratch / "textkit" / "core.py"
    core.write_text(core.read_text().replace("    return text[:width]\n", "    return text[:width].rstrip()\n"))
    feature = data / written.pool / f"task{written.task_id}" / "feature6"
    feature.mkdir()
    (feature / "feature.md").write_text("# Strip truncated text\n\nTrailing spaces are removed after a cut.\n")
    (feature / "feature.patch").write_text(_git(scratch, "diff").stdout)
    _git(scratch, "checkout", "--quiet", "--", ".")
    (scratch / "tests" / "test_strip.py").write_text(
        "from textkit.core import truncate\n\n\ndef test_strip():\n    assert truncate('ab  cd', 4) == 'ab'\n")
    _git(scratch, "add", "-A")
    (feature / "tests.patch").write_text(_git(scratch, "diff", "--cached").stdout)
    cfg = cfg_of(pool, tmp_path / "results", [3, 6], setting="solo", data_dir=str(data))
    summary = run_local(cfg)
    assert summary.status == "ok", summary.error
    row = pq.read_table(partition_dir(tmp_path / "results", "runs", cfg.partition) /
                        f"part-{cfg.run_id}.parquet").to_pylist()[0]
    assert row["agents_not_done"] == 1 and row["success"] is False
    events = pd.read_parquet(partition_dir(tmp_path / "results", "events", cfg.partition))
    (finish,) = events[events.kind == "finish"].itertuples()
    assert finish.verb == "partial"
    assert "features 3, 6" in finish.text and "textkit/core.py" in finish.text


# -- no messaging where the setting has none ----------------------------------------------------

def test_nocomm_and_solo_send_no_messages(runs) -> None:
    for name, silent_phases in (("nocomm", {2}), ("solo", {1, 2}), ("solo_union", {1, 2})):
        cfg, row = runs[name]
        events = pd.read_parquet(partition_dir(Path(cfg.results_dir), "events", cfg.partition))
        events = events[events.run_id == cfg.run_id]
        for phase in (1, 2):
            e = events[events.phase == phase]
            talk = (e.kind.isin(["message", "delivery"]) | (e.tool == "send_message")).sum()
            if phase in silent_phases:
                assert talk == 0, (name, phase)
                assert (e.tokens_comm == 0).all()
            else:  # nocomm keeps planning's messages
                assert (e.kind == "message").sum() == 2
        assert row["messages_total"] == 0


# -- communication tokens -----------------------------------------------------------------------

def test_coop_communication_tokens_are_the_messages(runs) -> None:
    """Counted here from the events, with masgrid's estimate written out independently: the
    scripted run's counter is `approx` (letter runs, digit groups of up to three, symbols)."""
    import re

    def approx(text: str) -> int:
        return len(re.findall(r"[A-Za-z]+|[0-9]{1,3}|[^\sA-Za-z0-9]", text or ""))

    cfg, row = runs["clean"]
    assert row["token_counter"] == "approx"
    events = pd.read_parquet(partition_dir(Path(cfg.results_dir), "events", cfg.partition))
    events = events[events.run_id == cfg.run_id].sort_values("seq")
    sends = events[(events.kind == "action") & (events.tool == "send_message")]
    results = events[(events.kind == "tool_result") & (events.tool == "send_message")]
    deliveries = events[events.kind == "delivery"]
    assert len(sends) == len(results) == 4 and len(deliveries) >= 1  # a plan and a report per agent
    # the scripted calls' arguments as written: JSON of {to, content}, key order aside
    call_tokens = [approx("send_message") + approx(t) for t in sends.text]
    expected = sum(call_tokens) + sum(approx(r) for r in results.reply) + sum(approx(r) for r in deliveries.reply)
    assert row["tokens_comm"] == expected > 0
    assert sends.tokens_comm.tolist() == call_tokens
    assert deliveries.tokens_comm.tolist() == [approx(r) for r in deliveries.reply]
    others = events[~events.index.isin(sends.index.union(results.index).union(deliveries.index))]
    assert (others.tokens_comm == 0).all()
    assert row["tokens_comm_phase1"] + row["tokens_comm_phase2"] == row["tokens_comm"]
    assert row["tokens_comm_phase1"] > 0 and row["tokens_comm_phase2"] > 0
    agents = pd.read_parquet(partition_dir(Path(cfg.results_dir), "agents", cfg.partition))
    assert agents[agents.run_id == cfg.run_id].tokens_comm.sum() == row["tokens_comm"]
