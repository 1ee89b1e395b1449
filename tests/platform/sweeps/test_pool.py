"""A warm driver keeps the hosts of its last run and hands surplus back to the shared pool."""

import asyncio

from masgrid._private.platform.sweeps.pool import DriverHosts, HostPool


def test_driver_keeps_last_runs_hosts_and_returns_the_rest(ray_session):
    shared = ray_session.remote(num_cpus=0)(HostPool).remote(prefix="test-driver-hosts")
    hosts = DriverHosts(shared)

    async def scenario():
        first = await hosts.acquire("AgentHost", 3)  # all new, from the pool actor
        await hosts.release("AgentHost", first)
        second = await hosts.acquire("AgentHost", 1)  # one of the kept three
        assert second[0] in first
        await hosts.release("AgentHost", second)  # keeps this one, the other two go back
        third = await hosts.acquire("AgentHost", 2)  # the kept one + one from the pool
        return first, second, third

    first, second, third = asyncio.run(scenario())
    stats = ray_session.get(shared.stats.remote())
    assert stats["created"] == 3 and stats["reused"] == 1 and stats["AgentHost"] == 1
    assert set(third) <= set(first) and second[0] in third
    assert hosts.stats() == {"EnvironmentHost": 0, "AgentHost": 0}
    for actor in first:
        ray_session.kill(actor, no_restart=True)
    ray_session.kill(shared, no_restart=True)
