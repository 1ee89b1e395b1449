"""model.cache in whole runs (in one process, against a loopback server that fails where told):
a re-executed run sends only the calls its first execution did not answer, records which
calls came from the cache, and keeps its run id."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from masgrid._private.analysis.load import read_table
from masgrid._private.analysis.report import build_report
from masgrid._private.analysis.response_cache import cache_sentence
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_one
from masgrid._private.platform.sweeps.preflight import PreflightError, preflight
from tests.support.chat_server import ChatServer, Reply, agent_and_turn

RUN = {"task": "sorting", "protocol": "broadcast", "agents": 3, "k": 2, "seed": 4, "max_rounds": 4}
CACHE_COLUMNS = ["calls_from_cache", "tokens_in_from_cache", "tokens_out_from_cache"]


def config(base_url: str, results: Path, cache_dir: Path | None, **over: object) -> RunConfig:
    model = {"name": "local_vllm", "base_url": base_url, "max_retries": 0, "http_client": "direct"}
    if cache_dir is not None:
        model.update(cache=True, cache_dir=str(cache_dir))
    return RunConfig.from_mapping({**RUN, "backend": "openai", "model": model, "results_dir": str(results),
                                   "execution": {"executor": "local"}, **over})


def script(fail: set[tuple[int, int]]):
    """Each agent's turn-t reply names the agent and turn (the same request gets the same text);
    (agent, turn) pairs in `fail` get a 500."""
    def answer(request: dict) -> Reply:
        if not from_an_agent(request):  # masgrid's own probe of the endpoint (after a 5xx): it answers
            return Reply("ok")
        agent, turn = agent_and_turn(request)
        if (agent, turn) in fail:
            return Reply(status=500)
        return Reply(f"```\nreceive_messages\n```\nagent {agent} turn {turn} of {len(request['messages'])}")
    return answer


def from_an_agent(request: dict) -> bool:
    """An agent's call, not masgrid's probe of the endpoint (preflight, or the outage check
    after a failed call: platform/cluster/engine_alive.py)."""
    messages = request.get("messages") or [{}]
    return "You are Agent-" in str(messages[0].get("content"))


class Endpoint(ChatServer):
    """One server for every execution of a test (the endpoint is part of the cache key);
    `fail` holds the (agent, turn) pairs it answers with a 500."""

    def __init__(self) -> None:
        self.fail: set[tuple[int, int]] = set()
        super().__init__(script(self.fail))


@pytest.fixture
def server():
    with Endpoint() as running:
        yield running


def execute(server: Endpoint, results: Path, cache_dir: Path | None, **over: object) -> tuple[
        pd.Series, pd.DataFrame, list]:
    """One run: its runs row, its model_call events, and the requests the server received for it."""
    before = len(server.requests)
    summary = run_one(config(server.base_url, results, cache_dir, **over))
    assert summary.status != "failed", summary.error  # one failed call of 12 makes it invalid: a resume re-runs it
    requests = [r for r in server.requests[before:] if from_an_agent(r)]
    runs = read_table(results, "runs")
    events = read_table(results, "events")
    return runs.iloc[-1], events[events["kind"] == "model_call"].sort_values("seq"), requests


def test_a_re_executed_run_replays_what_was_answered(tmp_path: Path, server: Endpoint) -> None:
    cache = tmp_path / "cache"
    server.fail.add((1, 2))
    first_run, first, sent_first = execute(server, tmp_path / "a", cache)
    server.fail.clear()
    again_run, again, sent_again = execute(server, tmp_path / "b", cache)
    assert again_run["run_id"] == first_run["run_id"]
    # the server's own request log: the second execution sent exactly the calls it did not replay
    hits = again[again["from_cache"]]
    assert len(sent_again) == len(again) - len(hits)
    assert len(sent_first) == len(first) == 3 * 4
    # what was answered before is replayed (text, tokens); agent 1's failed turn and all its
    # later turns (its history now differs) are asked again; the other agents replay everything
    key = ["phase", "round", "agent"]
    merged = again.merge(first, on=key, suffixes=("", "_first"))
    replayed = merged[merged["from_cache"]]
    assert (replayed["text"] == replayed["text_first"]).all()
    assert (replayed["tokens_in"] == replayed["tokens_in_first"]).all()
    assert (replayed["attempts"] == 0).all() and (replayed["latency_s"] == replayed["latency_s_first"]).all()
    expected_hits = {(a, r) for a in range(3) for r in range(1, 5) if a != 1 or r < 3}
    assert set(zip(hits["agent"], hits["round"])) == expected_hits
    assert not first["from_cache"].any() and first["from_cache"].notna().all()
    # run counters follow from the events, summed here on their own
    assert again_run[CACHE_COLUMNS].tolist() == [len(hits), int(hits["tokens_in"].sum()), int(hits["tokens_out"].sum())]
    assert first_run[CACHE_COLUMNS].tolist() == [0, 0, 0]
    agents = read_table(tmp_path / "b", "agents").sort_values("agent")
    assert agents["calls_from_cache"].tolist() == [4, 2, 4]
    assert agents["tokens_in_from_cache"].sum() == again_run["tokens_in_from_cache"]
    # other events carry no from_cache
    others = read_table(tmp_path / "b", "events")
    assert others.loc[others["kind"] != "model_call", "from_cache"].isna().all()


def test_another_seed_or_no_cache_shares_nothing(tmp_path: Path, server: Endpoint) -> None:
    cache = tmp_path / "cache"
    execute(server, tmp_path / "a", cache)
    other_run, other, sent = execute(server, tmp_path / "b", cache, seed=5)
    assert not other["from_cache"].any() and len(sent) == len(other) and other_run["calls_from_cache"] == 0
    off_run, off, sent = execute(server, tmp_path / "c", None)
    assert not off["from_cache"].any() and len(sent) == len(off) and off_run["calls_from_cache"] == 0


def test_the_cache_is_no_part_of_a_run_identity(tmp_path: Path) -> None:
    plain = config("http://127.0.0.1:1/v1", tmp_path, None)
    cached = config("http://127.0.0.1:1/v1", tmp_path, tmp_path / "c")
    elsewhere = config("http://127.0.0.1:1/v1", tmp_path, tmp_path / "d")
    assert cached.model.cache and plain.run_id == cached.run_id == elsewhere.run_id
    assert plain.point_id == cached.point_id


def test_the_report_says_how_many_calls_came_from_the_cache(tmp_path: Path, server: Endpoint) -> None:
    results, cache = tmp_path / "results", tmp_path / "cache"
    execute(server, results, cache)
    replay_run, replay, sent = execute(server, results, cache)  # the same run again: it replaces its files
    assert not sent and replay["from_cache"].all()
    # a run recorded by a masgrid without the cache columns, beside it
    old = RunConfig.from_mapping({**RUN, "seed": 9, "results_dir": str(results), "execution": {"executor": "local"}})
    assert run_one(old).status == "ok"
    (path,) = (results / "runs").rglob(f"part-{old.run_id}*.parquet")
    pq.write_table(pq.read_table(path).drop_columns(CACHE_COLUMNS), path)

    index = build_report(results, tmp_path / "report")[0].read_text()
    hits, tokens = len(replay), int(replay["tokens_in"].sum() + replay["tokens_out"].sum())
    expected = (f"Response cache: {hits} of {hits} model calls (100.0%) were answered from the cache (model.cache), "
                f"in 1 of 1 runs; their {tokens} tokens (100.0% of {tokens}) are counted in the tables but were not "
                f"paid again. 1 more runs were recorded before masgrid counted cache hits.")
    assert expected in index.splitlines()
    assert replay_run["tokens_in_from_cache"] + replay_run["tokens_out_from_cache"] == tokens


def test_no_cache_line_without_hits() -> None:
    runs = pd.DataFrame({"model_calls": [12, 3], "tokens_in": [90, 9], "tokens_out": [9, 1],
                         "calls_from_cache": [0, None], "tokens_in_from_cache": [0, None],
                         "tokens_out_from_cache": [0, None]})
    assert cache_sentence(runs) is None
    assert cache_sentence(runs.drop(columns=CACHE_COLUMNS)) is None


def test_preflight_refuses_a_cache_dir_it_cannot_write(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cfg = config("http://127.0.0.1:1/v1", tmp_path / "results", blocker / "cache", preflight=False)
    with pytest.raises(PreflightError) as caught:
        preflight([cfg])
    assert str(caught.value).startswith(f"model.cache_dir {blocker / 'cache'}: not writable: ")
    assert "\n" not in str(caught.value)
    nested = tmp_path / "a" / "b" / "cache"
    preflight([config("http://127.0.0.1:1/v1", tmp_path / "results", nested, preflight=False)])
    assert nested.is_dir() and not list(nested.iterdir())  # made, and the check left nothing in it
    scripted = RunConfig.from_mapping({**RUN, "results_dir": str(tmp_path / "results"),
                                       "model": {"cache": True, "cache_dir": str(blocker / "x")}})
    preflight([scripted])  # scripted agents: nothing is cached, nothing checked
