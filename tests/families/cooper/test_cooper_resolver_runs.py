"""The llm merge stage (appendix C) in real runs: scripted agents implement the synthetic
pool's pair 1,2 (whose union merge breaks feature 1's test), and the resolver's model is a
real OpenAI-compatible server on loopback reached through the agents' backend client.

A resolver that answers the resolution written in the test from the two features'
descriptions fixes the pair; broken resolvers (markers left, empty answer, an answer cut
off, HTTP 500 after retries) leave the llm stage failed with its reason and the union
result standing. The Parquet rows, the resolver's events and its token columns are read
back and checked against what the server sent."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from masgrid.families.cooper import resolver
from masgrid.families.cooper.sandbox import sandbox_problem
from masgrid.families.cooper.synthetic import write_synthetic_pool
from masgrid._private.platform.run.config import _MODEL_IDENTITY, ConfigError, RunConfig
from masgrid.families.cooper.options import RESOLVER_IDENTITY
from masgrid._private.platform.sweeps.ray_runs import run_local, run_one
from masgrid._private.platform.sweeps.preflight import PreflightError, preflight
from masgrid._private.platform.results.recorder import partition_dir
from masgrid._private.platform.commands.show import show
from tests.support.chat_server import ChatServer, Reply, words
from tests.support.resolver_server import BROKEN, RESOLVED_SLUGIFY, correct, excerpt

SANDBOX = "bwrap" if sandbox_problem() is None else "none"
PAIR = [1, 2]  # the pool's union_breaks pair


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory, cooper_cache: Path):
    root = tmp_path_factory.mktemp("cooper")
    written = write_synthetic_pool(root / "pool")
    assert written.expected["1,2"] == "union_breaks"
    return written, cooper_cache


def cfg_of(pool, results: Path, resolver_model: dict | None, **cooper: object) -> RunConfig:
    written, cache = pool
    return RunConfig.from_mapping({
        "task": f"cooper/{written.pool}/{written.task_id}", "protocol": "workspace", "results_dir": str(results),
        "cooper": {"features": PAIR, "data_dir": str(written.data_dir), "repos_dir": str(written.repos_dir),
                   "cache_dir": str(cache), "sandbox": SANDBOX, "resolver": "llm", "resolver_model": resolver_model,
                   **cooper},
        "execution": {"executor": "local"}})


def run_with(pool, results: Path, script, executor: str = "local") -> tuple[dict, list[dict], list[dict], list[dict]]:
    """One run against a resolver server: (run row, its events, its agent rows, the requests the server got)."""
    with ChatServer(script, models=("merge-resolver",)) as server:
        cfg = cfg_of(pool, results, {"name": "merge-resolver", "base_url": server.base_url, "max_retries": 1,
                                     "timeout_s": 20})
        if executor == "local":
            summary = run_local(cfg)
        else:  # the driver as a Ray actor: the scorer's thread and the resolver's calls inside it
            cfg = cfg.model_copy(update={"execution": cfg.execution.model_copy(update={"executor": "ray"})})
            summary = run_one(cfg)
        requests = list(server.requests)
    assert summary.status == "ok", summary.error

    def table(name: str) -> list[dict]:
        return pq.read_table(partition_dir(results, name, cfg.partition) / f"part-{cfg.run_id}.parquet").to_pylist()

    events = [e for chunk in sorted(partition_dir(results, "events", cfg.partition).glob(f"part-{cfg.run_id}*"))
              for e in pq.read_table(chunk).to_pylist()]
    return table("runs")[0], events, table("agents"), requests


def test_a_correct_resolver_fixes_the_pair_and_its_calls_are_recorded_apart(pool, tmp_path: Path) -> None:
    row, events, agents, requests = run_with(pool, tmp_path, correct)
    assert (row["merge_stage"], row["success"], row["resolver_outcome"]) == ("llm", True, "resolved")
    assert row["conflicts_naive"] == 1 and row["conflicts_union"] == 0 and row["conflicts_llm"] == 0
    assert json.loads(row["feature_pass_json"]) == {"1": True, "2": True} and row["resolver_failure"] is None
    # one region, one request: at temperature 0, naming the resolver model, no tools
    assert len(requests) == 1
    request = requests[0]
    assert request["model"] == "merge-resolver" and request["temperature"] == 0 and "tools" not in request
    prompt = request["messages"][0]["content"]
    assert excerpt(request).count("<<<<<<<") == 1 and "def slugify" in excerpt(request)
    # the event: no agent's, the resolver's; prompt and answer as sent and received
    (call,) = [e for e in events if e["kind"] == "scoring_call"]
    assert call["actor"] == "resolver" and call["agent"] is None and call["role"] is None
    assert call["text"] == prompt and RESOLVED_SLUGIFY in call["reply"] and call["ok"] and call["error"] is None
    assert call["t"] is not None and call["latency_s"] > 0 and call["attempts"] == 1
    # tokens: the server's usage (it counts words), in the resolver's columns only
    assert (call["tokens_in"], call["tokens_out"]) == (words(prompt), words(call["reply"]))
    assert call["usage_source"] == "server"
    assert (row["resolver_tokens_in"], row["resolver_tokens_out"]) == (call["tokens_in"], call["tokens_out"])
    assert (row["resolver_calls"], row["resolver_errors"], row["resolver_model"]) == (1, 0, "merge-resolver")
    agent_calls = [e for e in events if e["kind"] == "model_call"]
    assert row["tokens_in"] == sum(e["tokens_in"] for e in agent_calls) == sum(a["tokens_in"] for a in agents)
    assert row["tokens_out"] == sum(e["tokens_out"] for e in agent_calls) == sum(a["tokens_out"] for a in agents)
    assert row["model_calls"] == len(agent_calls) and all(e["actor"] is None for e in agent_calls)
    assert json.loads(row["config_json"])["cooper"]["resolver_model"]["name"] == "merge-resolver"
    # `masgrid show` lists the agents' conversations; the resolver's event (no agent) does not trip it
    text = io.StringIO()
    show(tmp_path, row["run_id"], None, text)
    assert "agent 1" in text.getvalue() and "Two developers" not in text.getvalue()


def test_the_resolver_runs_inside_a_ray_driver(pool, tmp_path: Path, ray_session) -> None:
    row, events, _, requests = run_with(pool, tmp_path, correct, executor="ray")
    assert (row["merge_stage"], row["success"], row["resolver_outcome"], row["resolver_calls"]) == \
        ("llm", True, "resolved", 1)
    assert len(requests) == 1 and [e["actor"] for e in events if e["kind"] == "scoring_call"] == ["resolver"]


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_resolver_leaves_the_llm_stage_failed_and_union_standing(pool, tmp_path: Path, name: str) -> None:
    script, reason = BROKEN[name]
    row, events, _, requests = run_with(pool, tmp_path, script)
    assert row["resolver_outcome"] == "failed" and reason in row["resolver_failure"]
    assert row["resolver_failure"].startswith("region 1: ")
    # the union result stands: its tree was tested, feature 1's test fails there (synthetic.py)
    assert (row["merge_stage"], row["success"]) == ("union", False)
    assert json.loads(row["feature_pass_json"]) == {"1": False, "2": True}
    assert row["conflicts_llm"] == 1 and "llm stage failed" in row["eval_notes"]
    calls = [e for e in events if e["kind"] == "scoring_call"]
    assert len(calls) == row["resolver_calls"] == 1 and calls[0]["actor"] == "resolver"
    if name == "http_500":  # one retry, then a recorded failure that never counts as an agent's error
        assert len(requests) == 2 and calls[0]["attempts"] == 2 and not calls[0]["ok"]
        assert calls[0]["error_class"] == "http_5xx" and calls[0]["http_status"] == 500
        assert (row["resolver_errors"], row["resolver_tokens_in"], row["model_errors"]) == (1, 0, 0)
        assert row["status"] == "ok"
    else:
        assert len(requests) == 1 and calls[0]["ok"] and row["resolver_errors"] == 0
        assert row["resolver_tokens_in"] == words(requests[0]["messages"][0]["content"]) > 0


def test_resolver_config_errors_are_one_line(pool, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cooper.resolver_model: scripted agents have no model") as err:
        cfg_of(pool, tmp_path, None)
    assert len(str(err.value).splitlines()) == 2  # "invalid configuration:" and the one line
    with pytest.raises(ConfigError, match="cooper.resolver_model.base_url: the resolver reaches its model over HTTP"):
        cfg_of(pool, tmp_path, {"name": "m"})
    with pytest.raises(ConfigError, match="cooper.resolver_model.timeout_s"):
        cfg_of(pool, tmp_path, {"name": "m", "base_url": "http://127.0.0.1:9/v1", "timeout_s": -1})
    with pytest.raises(ConfigError, match="cooper.resolver=none"):
        cfg_of(pool, tmp_path, {"name": "m", "base_url": "http://127.0.0.1:9/v1"}, resolver="none")


def test_resolver_identity_is_the_model_not_its_address(pool, tmp_path: Path) -> None:
    assert RESOLVER_IDENTITY == _MODEL_IDENTITY
    base = {"name": "m", "base_url": "http://127.0.0.1:9/v1"}
    a = cfg_of(pool, tmp_path, base)
    assert cfg_of(pool, tmp_path, {**base, "base_url": "http://127.0.0.1:10/v1", "timeout_s": 5}).run_id == a.run_id
    assert cfg_of(pool, tmp_path, {**base, "name": "other"}).run_id != a.run_id
    assert cfg_of(pool, tmp_path, {**base, "max_tokens": 64}).run_id != a.run_id


def test_editing_the_resolver_prompt_changes_only_resolver_runs(pool, tmp_path: Path, monkeypatch) -> None:
    base = {"name": "m", "base_url": "http://127.0.0.1:9/v1"}
    with_llm = cfg_of(pool, tmp_path, base).run_id
    without = cfg_of(pool, tmp_path, None, resolver="none").run_id
    monkeypatch.setattr("masgrid.families.cooper.resolver.PROMPT", resolver.PROMPT + "\nBe brief.")
    assert cfg_of(pool, tmp_path, base).run_id != with_llm
    assert cfg_of(pool, tmp_path, None, resolver="none").run_id == without


def test_preflight_checks_the_resolver_endpoint_even_for_scripted_agents(pool, tmp_path: Path) -> None:
    with ChatServer(lambda request: Reply(text="ok"), models=("merge-resolver",)) as server:
        preflight([cfg_of(pool, tmp_path, {"name": "merge-resolver", "base_url": server.base_url})])
        assert server.gets and len(server.requests) == 1  # the models list, one 1-token completion
        with pytest.raises(PreflightError, match="merge-other"):
            preflight([cfg_of(pool, tmp_path, {"name": "merge-other", "base_url": server.base_url})])
    with pytest.raises(PreflightError, match="connection refused"):
        preflight([cfg_of(pool, tmp_path, {"name": "m", "base_url": "http://127.0.0.1:9/v1"})])
    preflight([cfg_of(pool, tmp_path, {"name": "m", "base_url": "http://127.0.0.1:9/v1"}).model_copy(
        update={"preflight": False})])  # preflight=false skips it
