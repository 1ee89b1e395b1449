"""AgentPoolClient.act routes one agent's tool-loop step to the host that holds it (local
ports over real agent hosts and a loopback chat server)."""

from __future__ import annotations

import asyncio

from masgrid._private.actors.agent_host import AgentHost, AgentSetup, HostSpec
from masgrid._private.actors.backends import BackendSettings
from masgrid._private.envs.tasks import get_task
from masgrid._private.platform.run.ports import AgentPoolClient, Port
from tests.support.chat_server import ChatServer, Reply, tool_call
from tests.support.tool_specs import TOOLS


def test_act_reaches_the_agents_own_host():
    def script(request):
        agent = request["messages"][0]["content"].split("#")[1]
        return Reply(tool_calls=[tool_call("view", {"path": f"agent{agent}.py"}, id=f"c{agent}")])

    task = get_task("sorting")
    instance = task.generate(3, 2, 1, mode="random")
    with ChatServer(script) as server:
        cfg = BackendSettings(name="t", base_url=server.base_url, max_retries=0, timeout_s=5, http_client="direct")
        hosts = [AgentHost(HostSpec(backend="openai", settings=cfg, protocol="broadcast", seed=0)) for _ in range(2)]
        assignment = [0, 1, 1]

        async def scenario():
            for h, host in enumerate(hosts):
                await host.start_phase({i: AgentSetup(view=task.view(instance, i), system_prompt=f"agent #{i}")
                                        for i in range(3) if assignment[i] == h})
            pool = AgentPoolClient([Port(h, remote=False) for h in hosts], assignment, None)
            done = await asyncio.gather(*(pool.act(i, [{"role": "user", "content": "go"}], TOOLS) for i in range(3)))
            histories = [dict(host.histories) for host in hosts]
            await pool.close()
            return done, histories

        done, histories = asyncio.run(scenario())
    assert [c.tool_calls[0].arguments for c in done] == [{"path": f"agent{i}.py"} for i in range(3)]
    assert sorted(histories[0]) == [0] and sorted(histories[1]) == [1, 2]
    assert histories[1][2][-1]["tool_calls"][0]["id"] == "c2"
