"""The shared adaptive connection limit per endpoint (backends/endpoint_limit.py).

The rule is checked against a reference written here on random outcome sequences; the
sharing across processes and the endpoint-wide Retry-After are checked on real runs
(Ray actors, the aiohttp client) against a loopback endpoint that counts what arrives.
"""

from __future__ import annotations

import asyncio
import random
import time
from email.utils import formatdate

import pandas as pd
import pytest

from masgrid._private.actors.backends.base import BackendSettings, Completion
from masgrid._private.actors.backends.endpoint_limit import (AdaptiveLimit, EndpointLimits, LocalGate, Slot,
                                                             outcome_of, retry_after_s)
from masgrid._private.actors.backends.errors import CallFailure
from masgrid._private.actors.backends.retry import AttemptFailed, with_retries
from masgrid._private.platform.run.config import RunConfig
from masgrid._private.platform.sweeps.ray_runs import run_many
from tests.support.chat_server import Reply
from tests.support.rate_limited_provider import RateLimitedProvider


def reference_limits(ceiling: int, events: list[tuple[int, str]]) -> list[float]:
    """The limit after each release, computed from scratch: (epoch the request was sent in,
    outcome) per release, in order. Overload or timeout halves the limit (floor 1) when the
    request went out after the last decrease, remembering the level it had; an answer adds
    1/limit, a tenth of that within 1 of the remembered level, and past it by more than 1
    the level is forgotten; never above the ceiling."""
    limit, decreases, level, out = float(ceiling), 0, None, []
    for sent_epoch, outcome in events:
        if outcome in ("overloaded", "timeout") and sent_epoch == decreases:
            level, limit, decreases = limit, max(1.0, limit * 0.5), decreases + 1
        elif outcome == "answered":
            near = level is not None and level - limit <= 1
            limit = min(float(ceiling), limit + (0.1 if near else 1) / limit)
            if level is not None and limit - level > 1:
                level = None
        out.append(limit)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_limit_follows_the_rule_on_random_outcomes(seed):
    rng = random.Random(seed)
    ceiling = rng.randint(1, 40)

    async def go() -> tuple[list[float], list[tuple[int, str]], int]:
        limit = AdaptiveLimit(ceiling)
        held: list[Slot] = []
        events, seen, most = [], [], 0
        for _ in range(300):
            if held and (rng.random() < 0.5 or limit.in_use >= int(limit.limit)):
                slot = held.pop(rng.randrange(len(held)))
                outcome = rng.choice(["answered", "answered", "answered", "overloaded", "timeout", "failed"])
                await limit.release(slot, outcome)
                events.append((slot.epoch, outcome))
                seen.append(limit.limit)
            else:
                held.append(await limit.acquire("e"))
                most = max(most, limit.in_use)
        return seen, events, most

    seen, events, most = asyncio.run(go())
    assert seen == pytest.approx(reference_limits(ceiling, events))
    assert most <= ceiling
    assert all(1.0 <= v <= ceiling for v in seen)


def test_no_slot_beyond_the_limit_until_one_is_released():
    async def go() -> None:
        limit = AdaptiveLimit(2)
        a, b = await limit.acquire("e"), await limit.acquire("e")
        third = asyncio.ensure_future(limit.acquire("e"))
        await asyncio.sleep(0.05)
        assert not third.done() and limit.waiting == 1
        await limit.release(a, "overloaded")  # limit 2 -> 1: b still holds the only slot
        await asyncio.sleep(0.05)
        assert not third.done()
        await limit.release(b, "answered")
        slot = await asyncio.wait_for(third, 5)
        assert slot.epoch == 1 and slot.waited_s > 0.05

    asyncio.run(go())


def test_retry_after_pauses_every_request_of_the_endpoint():
    async def go() -> None:
        limit = AdaptiveLimit(10)
        first = await limit.acquire("e")
        await limit.release(first, "overloaded", retry_after=0.4)
        start = time.monotonic()
        slots = await asyncio.gather(*(limit.acquire("e") for _ in range(3)))
        assert time.monotonic() - start >= 0.39
        assert all(s.waited_s >= 0.39 for s in slots)

    asyncio.run(go())


def test_a_slot_its_holder_never_releases_is_taken_back():
    """A holder that died keeps no slot for good: past its hold time the slot is free again,
    and its late release (if it ever comes) changes nothing."""
    async def go() -> None:
        limit = AdaptiveLimit(1)
        lost = await limit.acquire("e", hold_s=0.3)
        slot = await asyncio.wait_for(limit.acquire("e", hold_s=5), 5)
        assert slot.waited_s >= 0.25 and limit.counts["reclaimed"] == 1
        await limit.release(lost, "overloaded")  # too late: ignored, the limit stays
        assert limit.limit == 1.0 and limit.in_use == 1 and limit.counts["decreases"] == 0

    asyncio.run(go())


def test_a_slot_of_a_dead_limits_actor_frees_nothing_in_its_successor():
    """Slot ids restart with a new EndpointLimits; a late release of the old one's slot must
    not free the slot its successor granted under the same id."""
    async def go() -> None:
        old, new = EndpointLimits(), EndpointLimits()
        stale = await old.acquire("e", 1)
        fresh = await new.acquire("e", 1)
        assert stale.id == fresh.id
        await new.release(stale, "answered")
        assert new.limits["e"].in_use == 1
        await new.release(fresh, "answered")
        assert new.limits["e"].in_use == 0

    asyncio.run(go())


def test_retry_after_values():
    assert retry_after_s("2") == 2.0
    assert retry_after_s("0.5") == 0.5
    assert retry_after_s("600") == 60.0  # capped, as the per-call retry honours at most 60 s
    assert retry_after_s(None) is None and retry_after_s("") is None
    assert retry_after_s("-3") is None and retry_after_s("soon") is None and retry_after_s("nan") is None
    now = time.time()
    assert retry_after_s(formatdate(now + 10, usegmt=True), now=now) == pytest.approx(10, abs=1)
    assert retry_after_s(formatdate(now - 10, usegmt=True), now=now) is None


def test_outcomes_the_limit_learns_from():
    assert outcome_of(None, None) == "answered"
    assert outcome_of(429, "http_429") == "overloaded"
    assert outcome_of(503, "http_5xx") == "overloaded" and outcome_of(529, "http_5xx") == "overloaded"
    assert outcome_of(None, "timeout") == "timeout"
    assert outcome_of(500, "http_5xx") == "failed" and outcome_of(None, "connection_refused") == "failed"
    assert outcome_of(400, "context_length") == "failed"


def test_queueing_is_recorded_apart_from_latency():
    """A call that waits for a slot: the wait is queue_s, latency_s is the request alone,
    started_at is when the request went out; a retry waits again and adds to queue_s."""
    settings = BackendSettings(name="m", base_url="http://127.0.0.1:9/v1", max_retries=1, max_connections=1)

    async def go() -> tuple[Completion, float, float, float]:
        limits = EndpointLimits()
        gate = LocalGate(limits, "e", 1)
        holder = await gate.acquire()
        tries = []

        async def attempt(attempts: int, start: float) -> Completion:
            tries.append(time.time())
            await asyncio.sleep(0.1)
            if attempts == 1:
                raise AttemptFailed(CallFailure(error_class="http_429", message="slow down", http_status=429), "0.2")
            return Completion(text="ok", latency_s=time.perf_counter() - start)

        loop = asyncio.get_running_loop()
        loop.call_later(0.3, gate.release, holder, "answered")
        before = time.time()
        done = await with_retries(settings, attempt, lambda f, lat, n: Completion(error=f.error, latency_s=lat),
                                  gate)
        return done, before, tries[0], time.time()

    done, before, first_try, after = asyncio.run(go())
    assert done.text == "ok"
    # waited about 0.3 s for the held slot (the retry's wait for the Retry-After pause is
    # about 0: the call's own backoff already waited it out)
    assert done.queue_s >= 0.29
    # the model's share: two 0.1 s attempts and the 0.2 s backoff, not the queueing (bounded by
    # the call's own wall time less the held slot's 0.3 s, not by a clock a loaded machine overruns)
    assert 0.38 <= done.latency_s < (after - before) - 0.25
    assert done.started_at == pytest.approx(first_try, abs=0.05) and done.started_at >= before + 0.29


def _listen(request: dict) -> Reply:
    return Reply("```\nreceive_messages\n```")


def _sweep(tmp_path, provider: RateLimitedProvider, seeds: list[int], agents: int, **model) -> pd.DataFrame:
    cfgs = [RunConfig.from_mapping(dict(
        task="sorting", protocol="broadcast", agents=agents, k=2, mode="random", seed=seed, backend="openai",
        model={"name": "test", "base_url": provider.base_url, "timeout_s": 10, "max_retries": 4, **model},
        max_rounds=3, results_dir=str(tmp_path), execution={"executor": "ray", "components": "actors"}))
        for seed in seeds]
    summaries = run_many(cfgs, max_concurrent=len(cfgs))
    assert [s.status for s in summaries] == ["ok"] * len(cfgs), [s.error for s in summaries]
    return pd.read_parquet(tmp_path / "events")


def test_one_limit_is_shared_by_runs_in_different_processes(tmp_path, ray_session):
    """Two runs at once, each its agents on its own host process: 12 agents call together,
    yet the endpoint never has more than max_connections=3 requests to answer; the same
    sweep without the setting has more (the check can fail)."""
    with RateLimitedProvider(rate=1000, latency_s=0.15, answer=_listen) as free:
        _sweep(tmp_path / "free", free, [0, 1], agents=6)
    with RateLimitedProvider(rate=1000, latency_s=0.15, answer=_listen) as limited:
        events = _sweep(tmp_path / "limited", limited, [0, 1], agents=6, max_connections=3)
    assert free.log.max_in_flight > 3
    assert limited.log.max_in_flight <= 3
    calls = events[events["kind"] == "model_call"]
    assert (calls["queue_s"] > 0).any() and (calls["queue_s"] >= 0).all()
    runs = pd.read_parquet(tmp_path / "limited" / "runs")
    assert runs["queue_s"].tolist() == pytest.approx(
        calls.groupby("run_id")["queue_s"].sum().reindex(runs["run_id"]).tolist())


def test_a_retry_after_holds_back_every_run(tmp_path, ray_session):
    """The provider refuses beyond 4 requests a second with Retry-After: 2. Once the first
    refusal is out, no request of either run reaches it for the pause (without the shared
    pause each call backs off alone while the others keep sending), and every run still
    completes. The quiet window starts 1 s after the refusal: requests granted before the
    limits actor heard of it may still go out, and the provider stamps an arrival when its
    handler thread gets this busy process's GIL (a one-process run of the suite saw one
    such request 0.6 s after the refusal)."""
    with RateLimitedProvider(rate=4, latency_s=0.05, retry_after="2", answer=_listen) as provider:
        events = _sweep(tmp_path, provider, [0, 1], agents=6, max_connections=8)
    arrivals = provider.log.arrivals
    first = next(a.t for a in arrivals if a.refused)
    during = [a for a in arrivals if first + 1.0 <= a.t <= first + 1.9]
    assert during == [], (f"{len(during)} requests arrived during the endpoint's pause, at "
                          f"{[round(a.t - first, 2) for a in during]} s after the first refusal")
    calls = events[events["kind"] == "model_call"]
    assert calls["ok"].all()
    assert calls["queue_s"].max() >= 1.0  # some call waited out the pause


class _Caller:
    """An agent host stand-in: its own process, its own gate to the shared limit. Its calls
    return wall-clock times (one machine, one clock) so the test orders events across
    processes without assuming how soon a busy machine runs each call."""

    def __init__(self, endpoint: str, ceiling: int) -> None:
        from masgrid._private.actors.backends.endpoint_limit import SharedGate

        self.gate = SharedGate(endpoint, ceiling)
        self.held: list[Slot] = []

    async def take(self) -> float:
        """When the slot was granted."""
        slot = await self.gate.acquire()
        self.held.append(slot)
        return time.time()

    async def refused(self, retry_after: float) -> float:
        """When the refusal was handed to the gate."""
        at = time.time()
        self.gate.release(self.held.pop(), "overloaded", retry_after)
        return at

    async def answered(self) -> float:
        at = time.time()
        self.gate.release(self.held.pop(), "answered")
        return at

    def ready(self) -> bool:
        return True

    def last_epoch(self) -> int:
        return self.held[-1].epoch  # -1: granted by no limit (it was unreachable)


def test_the_limit_and_a_pause_reach_every_process(ray_session):
    """Three processes on one endpoint of ceiling 2: the third waits for a slot another
    process frees, and a Retry-After one process receives holds back the others."""
    import ray

    endpoint = f"http://127.0.0.1:9/v1 test-{time.time()}"
    a, b, c = (ray.remote(_Caller).options(num_cpus=0).remote(endpoint, 2) for _ in range(3))
    ray.get([x.ready.remote() for x in (a, b, c)])  # all three processes up before the first slot
    ray.get([a.take.remote(), b.take.remote()])
    third = c.take.remote()
    ready, _ = ray.wait([third], timeout=0.5)
    assert not ready  # both slots are held elsewhere
    freed_at = ray.get(a.answered.remote())
    assert ray.get(third, timeout=30) >= freed_at  # granted only once a's slot came back
    refused_at = ray.get(b.refused.remote(1.5))  # limit 2 -> 1, endpoint paused 1.5 s
    ray.get(c.answered.remote())
    # a slot is free again, but the pause holds: granted no sooner than 1.5 s after the
    # refusal, less the moment the limits actor took to hear of it
    assert ray.get(a.take.remote(), timeout=30) - refused_at >= 1.4
    # the limits actor dies (an earlier command's, on a warm worker): the next request finds
    # a new one and is limited again, not sent unlimited
    from masgrid._private.actors.backends.endpoint_limit import ACTOR_NAME, NAMESPACE, forget_actor

    ray.kill(ray.get_actor(ACTOR_NAME, namespace=NAMESPACE), no_restart=True)
    forget_actor()
    ray.get(c.take.remote(), timeout=30)
    assert ray.get(c.last_epoch.remote()) >= 0
    for actor in (a, b, c):
        ray.kill(actor)
