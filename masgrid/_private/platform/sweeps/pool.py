"""A warm pool of environment and agent-host actors, reused across runs.

Starting a Ray worker process costs far more than a lockstep round of scripted agents
(benchmarks/bench_runtime.py), so sweeps and concurrent runs can borrow already-started
hosts instead: a driver acquires hosts, configures them for its run, and releases them
when the run ended cleanly. A run that failed kills its hosts instead of returning
possibly broken ones. Pooled actors are named `pool:<kind>:<n>`.

A warm driver process keeps the hosts of its last run (`DriverHosts`): the next run of the
same shape takes them without a call to the pool actor, which all concurrent drivers
would otherwise queue on at the start of every run.
"""

from __future__ import annotations

from typing import Any

from masgrid._private.actors.agent_host import AgentHost
from masgrid._private.actors.environment import EnvironmentHost

#: kind -> (class, Ray max_concurrency): the environment stays strictly sequential.
KINDS: dict[str, tuple[type, int]] = {"EnvironmentHost": (EnvironmentHost, 1), "AgentHost": (AgentHost, 64)}


class HostPool:
    def __init__(self, max_idle: int = 64, prefix: str = "pool") -> None:
        self.max_idle = max_idle
        self.prefix = prefix
        self.idle: dict[str, list[Any]] = {kind: [] for kind in KINDS}
        self.created = 0
        self.reused = 0

    def acquire(self, kind: str, count: int) -> list[Any]:
        import ray

        cls, concurrency = KINDS[kind]
        out = [self.idle[kind].pop() for _ in range(min(count, len(self.idle[kind])))]
        self.reused += len(out)
        while len(out) < count:
            self.created += 1
            out.append(ray.remote(num_cpus=0)(cls).options(
                name=f"{self.prefix}:{kind}:{self.created}", namespace="masgrid", max_concurrency=concurrency).remote())
        return out

    def release(self, kind: str, actors: list[Any]) -> None:
        import ray

        keep = max(0, self.max_idle - len(self.idle[kind]))
        self.idle[kind].extend(actors[:keep])
        for actor in actors[keep:]:
            ray.kill(actor, no_restart=True)

    def stats(self) -> dict[str, int]:
        return {"created": self.created, "reused": self.reused, **{k: len(v) for k, v in self.idle.items()}}


class DriverHosts:
    """The hosts one warm driver keeps between its runs, backed by the session's HostPool.

    `acquire` takes kept hosts first and asks the pool actor only for the rest; `release`
    keeps exactly the hosts of the run that just ended and hands any others back.
    """

    def __init__(self, shared: Any) -> None:
        self.shared = shared  # the HostPool actor
        self.kept: dict[str, list[Any]] = {kind: [] for kind in KINDS}

    async def acquire(self, kind: str, count: int) -> list[Any]:
        kept = self.kept[kind]
        out = [kept.pop() for _ in range(min(count, len(kept)))]
        if len(out) < count:
            out += await self.shared.acquire.remote(kind, count - len(out))
        return out

    async def release(self, kind: str, actors: list[Any]) -> None:
        surplus, self.kept[kind] = self.kept[kind], list(actors)
        if surplus:
            await self.shared.release.remote(kind, surplus)

    def stats(self) -> dict[str, int]:
        return {kind: len(v) for kind, v in self.kept.items()}
