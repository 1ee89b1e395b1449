"""SIMAS (Scaling Behavior of Single LLM-Driven Multi-Agent Systems): sequential group
discussion on question answering. Importing registers `simas/<dataset>` tasks, the
`groupchat` protocol and (through masgrid.platform.schedulers) the `sequential` schedule."""

from masgrid.envs.tasks.simas import groupchat, tasks  # noqa: F401  (registration)
