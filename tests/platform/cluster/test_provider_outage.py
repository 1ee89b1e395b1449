"""A hosted provider's outage as the lost-endpoint probe sees it, against loopback fakes that
answer as providers do: a models list that still answers while every chat call fails with
503, 503 everywhere, a key-protected models list. What counts as an outage is written here
from docs/hosted-apis.md ("Provider errors"), not read from the code."""

from __future__ import annotations

import asyncio

import pytest

from masgrid._private.actors.backends.base import BackendSettings
from masgrid._private.platform.cluster.engine_alive import EngineLost, EngineWatch, probe
from tests.support.chat_server import ChatServer, Reply

KEY_ENV = "MASGRID_TEST_PROVIDER_KEY"
OVERLOADED = {"error": {"message": "The engine is currently overloaded, please try again later.",
                        "type": "server_error"}}


def settings(base_url: str, **extra) -> BackendSettings:
    return BackendSettings(name="test", base_url=base_url, api_key_env=KEY_ENV, **extra)


@pytest.mark.parametrize(("chat", "models", "server_failed", "outage"), [
    (Reply(status=503, body=OVERLOADED), None, True, "POST {url}/chat/completions: HTTP 503: The engine is currently "
                                                     "overloaded, please try again later."),
    (Reply(status=503, body=OVERLOADED), Reply(status=503, body=OVERLOADED), True, "GET {url}/models: HTTPError: "),
    (Reply(status=503, body=OVERLOADED), Reply(status=503, body=OVERLOADED), False, "GET {url}/models: HTTPError: "),
    # the calls timed out or broke, never a 5xx: the models list decides, no call is made
    (Reply(status=503, body=OVERLOADED), None, False, None),
    (Reply("ok"), None, True, None),  # the run's own prompts failed, a short call does not: not an outage
    (Reply(status=429, body={"error": {"message": "Rate limit reached"}}), None, True, None),  # an answer, not an outage
    (Reply(status=400, body={"error": {"message": "bad request"}}), None, True, None),
])
def test_an_outage_is_a_5xx_on_the_models_list_or_on_a_short_call(chat, models, server_failed, outage):
    with ChatServer(lambda body: chat) as server:
        server.models_reply = models
        found = probe(settings(server.base_url), server_failed)
        made = list(server.requests)
    if outage is None:
        assert found is None
    else:
        assert found is not None and found.startswith(outage.format(url=server.base_url)), found
    assert len(made) == (1 if server_failed and models is None else 0)  # one call, only when the list answered
    if made:
        assert made[0]["max_tokens"] == 1 and made[0]["model"] == "test"


def test_a_slow_call_is_not_an_outage(monkeypatch):
    from masgrid._private.platform.cluster import engine_alive

    monkeypatch.setattr(engine_alive, "PROBE_TIMEOUT_S", 0.5)
    with ChatServer(lambda body: Reply("late", hang_s=1.5)) as server:
        assert probe(settings(server.base_url), True) is None  # a busy engine queues the probe too


def test_a_connection_dropped_mid_answer_is_not_an_outage():
    def drop(body: dict) -> Reply:
        raise RuntimeError("the handler dies: the server closes the connection without an answer")

    with ChatServer(drop) as server:
        assert probe(settings(server.base_url), True) is None
        assert len(server.requests) == 1


def test_the_probes_send_the_key_a_provider_asks_for(monkeypatch):
    """A provider's models list refuses a request without the key: a probe without it would
    end every run whose call once failed, though the endpoint is fine."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with ChatServer(lambda body: Reply("ok"), api_key="sk-test") as server:
        assert probe(settings(server.base_url), True) is None
        assert server.refused_keys == 0 and len(server.requests) == 1


def test_a_run_ends_on_an_outage_at_the_first_failed_round():
    with ChatServer(lambda body: Reply(status=502, body="<html>Bad Gateway</html>")) as server:
        watch = EngineWatch(settings(server.base_url), enabled=True)
        with pytest.raises(EngineLost) as lost:
            asyncio.run(watch.check([None, "http_5xx"]))
    assert lost.value.endpoint == server.base_url
    assert str(lost.value) == (f"the model endpoint {server.base_url} stopped answering during the run (POST "
                               f"{server.base_url}/chat/completions: HTTP 502: <html>Bad Gateway</html>); 1 calls "
                               "failed: rerun with resume once it is back")


class Provider:
    """A hosted endpoint whose agents wait every round, until an outage begins after
    `outage_after` agent calls: then every chat call gets 503 (and, `everywhere`, its models
    list too) until `recover()`."""

    def __init__(self, outage_after: int | None = None, everywhere: bool = False) -> None:
        self.outage_after, self.everywhere = outage_after, everywhere
        self.agent_calls = 0
        self.down = False
        self.server = ChatServer(self.answer)

    def answer(self, body: dict) -> Reply:
        with self.server.lock:
            if body.get("max_tokens") != 1:  # preflight's and the probe's calls ask for one token
                self.agent_calls += 1
            if self.outage_after is not None and self.agent_calls > self.outage_after and not self.down:
                self.down = True
                if self.everywhere:
                    self.server.models_reply = Reply(status=503, body=OVERLOADED)
        return Reply(status=503, body=OVERLOADED) if self.down else Reply("```\nwait\n```")

    def recover(self) -> None:
        self.outage_after, self.down, self.server.models_reply = None, False, None


@pytest.mark.slow
def test_an_outage_mid_sweep_holds_that_endpoints_runs_and_a_resume_runs_them(tmp_path, ray_session):
    """Runs of 2 agents x 3 rounds (6 calls each), one at a time: A's outage begins in the
    second round of its second run. That run is interrupted, A's later runs are not started,
    B's runs go on; no run is recorded with A's 503s as the agents' failures."""
    import pandas as pd

    from masgrid._private.platform.run.config import RunConfig
    from masgrid._private.platform.sweeps.sweep import run_sweep, sweep_settings

    a, b = Provider(outage_after=8), Provider()
    with a.server, b.server:
        def cfg(provider: Provider, name: str, seed: int) -> RunConfig:
            return RunConfig.from_mapping(dict(
                task="sorting", protocol="broadcast", agents=2, k=2, mode="random", seed=seed, backend="openai",
                max_rounds=3, results_dir=str(tmp_path), execution={"status_actor_after_s": 600},
                model={"name": name, "base_url": provider.server.base_url, "timeout_s": 5, "max_retries": 1}))

        a.server.models, b.server.models = ["a"], ["b"]
        order = [(a, "a", 0), (a, "a", 1), (b, "b", 0), (a, "a", 2), (b, "b", 1), (a, "a", 3)]
        cfgs = [cfg(*run) for run in order]
        settings = sweep_settings({"max_concurrent": 1, "admission": "fixed", "progress": "off"})
        with pytest.raises(EngineLost) as lost:
            run_sweep(cfgs, settings)
        runs = pd.read_parquet(tmp_path / "runs").set_index("run_id")
        calls_before_resume = a.agent_calls
        a.recover()
        resumed = run_sweep(cfgs, settings)
    ids = [c.run_id for c in cfgs]
    assert str(lost.value).startswith(f"the model endpoint stopped answering: {a.server.base_url} (POST "
                                      f"{a.server.base_url}/chat/completions: HTTP 503: The engine is currently ")
    assert "; 4 of 6 run(s) recorded (1 interrupted), 2 not started: " in str(lost.value)
    assert set(runs.index) == {ids[0], ids[1], ids[2], ids[4]}  # A's third and fourth runs: held, no row
    assert runs.loc[ids[1], "status"] == "failed" and runs.loc[ids[1], "error_class"] == "interrupted"
    assert "stopped answering" in runs.loc[ids[1], "error"]
    assert [runs.loc[ids[i], "status"] for i in (0, 2, 4)] == ["ok", "ok", "ok"]  # B went on after A was lost
    # run 1's six calls, run 2's first round, then its second round's two calls with one retry each: the probe
    # that followed ended the run, and no later call of A was made
    assert calls_before_resume == 6 + 2 + 2 * 2
    assert (resumed.skipped_ok, resumed.ran, resumed.ok) == (3, 3, 3)
    after = pd.read_parquet(tmp_path / "runs").set_index("run_id")
    assert set(after.index) == set(ids) and set(after["status"]) == {"ok"}


def test_a_key_revoked_mid_run_is_final_per_call_and_recorded_not_an_outage(tmp_path, monkeypatch):
    """Regression (the code before issue 35 did this already): a 401 stops each agent at its
    first refused call, names the status and the provider's words, and is no lost endpoint."""
    import json

    import pandas as pd

    from masgrid._private.platform.run.config import RunConfig
    from masgrid._private.platform.sweeps.ray_runs import run_local

    monkeypatch.setenv(KEY_ENV, "sk-test")
    calls = {"n": 0}

    def script(body: dict) -> Reply:
        calls["n"] += 1
        if calls["n"] == 2:  # the second round's calls come after the key is revoked
            server.api_key = "sk-rotated"
        return Reply("```\nwait\n```")

    with ChatServer(script, api_key="sk-test") as server:
        summary = run_local(RunConfig.from_mapping(dict(
            task="sorting", protocol="broadcast", agents=2, k=2, mode="random", seed=1, backend="openai",
            max_rounds=4, results_dir=str(tmp_path), execution={"executor": "local"},
            model={"name": "test", "base_url": server.base_url, "api_key_env": KEY_ENV, "max_retries": 2})))
        refused = server.refused_keys
    assert refused == 2  # one refused call per agent: final, never retried, never called again
    run = pd.read_parquet(tmp_path / "runs").iloc[0]
    assert summary.status == run["status"] == "invalid" and run["agents_stopped"] == 2
    assert json.loads(run["model_error_classes"]) == {"http_4xx": 2} and "http_4xx x2" in run["error"]
    failed = pd.read_parquet(tmp_path / "events").query("kind == 'model_call' and not ok")
    assert set(failed["http_status"]) == {401} and set(failed["attempts"]) == {1}
    assert set(failed["error"]) == {"http_4xx: http 401: Incorrect API key provided."}
    stopped = pd.read_parquet(tmp_path / "agents")["stopped"]
    assert stopped.str.contains("round 2: http_4xx: http 401: Incorrect API key provided.", regex=False).all()


def test_a_real_engine_answers_the_probe(vllm_engine):
    """The probe's call is one the engine accepts (the run's request settings, one token)."""
    from tests.support.engine import SERVED

    engine = BackendSettings(name=SERVED, base_url=vllm_engine.base_url, temperature=0.0, extra_body={"top_k": 5})
    before = vllm_engine.counters()
    assert probe(engine, True) is None
    after = vllm_engine.counters()
    # answered, not refused with a 4xx (which the probe would also take as no outage): one request, one token
    assert after["request_success_total"] - before["request_success_total"] == 1
    assert after["generation_tokens_total"] - before["generation_tokens_total"] == 1
