"""AgentsNet (agentsnet.txt): five distributed-computing problems on generated graphs."""

from masgrid.envs.tasks.agentsnet import tasks  # noqa: F401  (registers agentsnet/<problem>)
