"""Sorting end to end through Ray Serve (handle and OpenAI route): same metrics as scripted."""

from __future__ import annotations

import logging

import pandas as pd
import pytest

from masgrid._private.platform.sweeps.ray_runs import run_many
from tests.actors.serving.conftest import compose_run, metrics_of

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("protocol,route,client", [("broadcast", "http", "aiohttp"), ("kv", "handle", "aiohttp"),
                                                   ("p2p", "handle", "aiohttp"), ("p2p", "http", "direct")])
def test_serve_standin_reproduces_scripted(tmp_path, serve_port: int, protocol: str, route: str, client: str) -> None:
    common = [f"protocol={protocol}", "agents=4", "k=3", "mode=random", "seed=5", f"results_dir={tmp_path}"]
    scripted = compose_run(["backend=scripted", *common])
    served = compose_run(["backend=serve", "model=standin", f"model.serving.route={route}",
                          f"model.http_client={client}", f"model.serving.http_port={serve_port}", *common])
    a, b = run_many([scripted, served], max_concurrent=2)
    assert a.status == "ok" and b.status == "ok", (a.error, b.error)
    assert a.success  # the classical algorithm solves it
    assert metrics_of(str(tmp_path), a.run_id) == metrics_of(str(tmp_path), b.run_id)
    agents = pd.read_parquet(tmp_path / "agents")
    subs = {rid: agents[agents.run_id == rid].sort_values("agent").submission.tolist() for rid in (a.run_id, b.run_id)}
    assert subs[a.run_id] == subs[b.run_id]
    events = pd.read_parquet(tmp_path / "events")
    calls = events[(events.run_id == b.run_id) & (events.kind == "model_call")]
    assert set(calls.usage_source) == {"server"}  # usage came from the stand-in's usage fields
    texts = {rid: events[(events.run_id == rid) & (events.kind == "model_call")].sort_values("seq").text.tolist()
             for rid in (a.run_id, b.run_id)}
    assert texts[a.run_id] == texts[b.run_id]


def test_openai_backend_without_agent_tag_gets_a_clear_refusal(tmp_path, serve_port: int, caplog) -> None:
    """backend=openai at the stand-in's route: every call fails with the stand-in's 400 reason."""
    cfg = compose_run(["backend=serve", "model=standin", f"model.serving.http_port={serve_port}",
                       f"results_dir={tmp_path / 'a'}", "agents=2", "k=2"])
    with caplog.at_level(logging.INFO, logger="masgrid"):
        run_many([cfg])  # deploys the stand-in
    assert f"results are written to {tmp_path / 'a'}" in caplog.text  # what the CLI shows on stdout
    plain = compose_run(["backend=openai", "model=local_vllm", f"model.base_url=http://127.0.0.1:{serve_port}/standin/v1",
                         "model.max_retries=0", "max_rounds=1", "agents=2", "k=2", f"results_dir={tmp_path / 'b'}"])
    (summary,) = run_many([plain])
    events = pd.read_parquet(tmp_path / "b" / "events")
    errors = events[(events.run_id == summary.run_id) & (events.kind == "model_call")].error.tolist()
    assert errors and all("http 400" in e and "backend=serve" in e for e in errors)
