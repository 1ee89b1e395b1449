"""EngineWatch: a call failing as if the endpoint went away has it probed, at most every few
seconds per run; a probe that finds it gone ends the run (EngineLost) naming the endpoint."""

from __future__ import annotations

import asyncio

import pytest

from masgrid._private.actors.backends.base import BackendSettings
from masgrid._private.platform.cluster import engine_alive
from masgrid._private.platform.cluster.engine_alive import EngineLost, EngineWatch, endpoint_name

URL = "http://127.0.0.1:9/v1"


def test_probes_only_after_lost_class_failures_and_at_most_every_interval(monkeypatch):
    probes: list[str] = []
    answers = iter([None, "GET http://127.0.0.1:9/v1/models: URLError: Connection refused"])

    def probe(settings: BackendSettings) -> str | None:
        probes.append(settings.base_url)
        return next(answers)

    monkeypatch.setattr(engine_alive, "endpoint_problem", probe)
    watch = EngineWatch(BackendSettings(name="m", base_url=URL), enabled=True, every_s=0.3)

    async def scenario() -> None:
        await watch.check([None, "context_length", "http_4xx"])  # the model's answers, not a lost endpoint
        assert probes == []
        await watch.check(["connection_refused"])  # probed: still answering
        await watch.check(["connection_refused", "timeout"])  # within the interval: no probe
        assert len(probes) == 1
        await asyncio.sleep(0.35)
        with pytest.raises(EngineLost) as lost:
            await watch.check(["connection_error"])
        assert lost.value.endpoint == URL and "Connection refused" in lost.value.problem
        assert str(lost.value).startswith(f"the model endpoint {URL} stopped answering during the run (GET ")
        assert "4 calls failed" in str(lost.value) and "\n" not in str(lost.value)

    asyncio.run(scenario())
    assert len(probes) == 2


def test_disabled_without_preflight_or_endpoint(monkeypatch):
    monkeypatch.setattr(engine_alive, "endpoint_problem", lambda s: pytest.fail("probed"))
    asyncio.run(EngineWatch(BackendSettings(name="m", base_url=URL), enabled=False).check(["connection_refused"]))


def test_endpoint_names():
    assert endpoint_name(BackendSettings(name="m", base_url=URL + "/")) == URL
    serve = {"kind": "standin", "app": "tiny", "route_prefix": "/tiny", "http_port": 8123}
    assert endpoint_name(BackendSettings(name="m", serving=serve)) == "Serve app tiny"
    assert endpoint_name(BackendSettings(name="m", serving={**serve, "route": "http"})) == "http://127.0.0.1:8123/tiny/v1"
