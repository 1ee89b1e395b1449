"""`protocol=workspace`: CooperBench's substrate, as far as the environment host sees it.

CooperBench has no command blocks and no rounds: the asynchronous scheduler runs each
agent's tool loop itself (platform/run/schedulers/asynchronous.py), executes file and shell
tools in the agent's sandboxed worktree (session.py) and routes `send_message` between the
loops. The environment host still holds a protocol object per run; this one only names the
substrate and contributes its fixed texts (the tool specifications and the harness notes)
to the run's prompt fingerprint, so editing a tool description re-runs what it changes.

Through an unreliable channel (masgrid's `channel:` block, docs/channel.md) each send to one
teammate is a message; a step is one of the recipient's model calls: a delayed message is
held back for `delay_rounds` of the recipient's steps, a duplicated one delivered twice in
the same step, a reordered one ahead of the other teammate messages of that step.
"""

from __future__ import annotations

import json
from typing import ClassVar

from masgrid.families.cooper import prompts
from masgrid.sdk.protocols import Protocol, register_protocol


@register_protocol
class WorkspaceProtocol(Protocol):
    name: ClassVar[str] = "workspace"
    #: the asynchronous scheduler sends each `send_message` through the run's channel
    channel_support: ClassVar[bool] = True

    @classmethod
    def fixed_texts(cls) -> tuple[str, ...]:
        from masgrid.families.cooper.tools import TOOL_SPECS

        return (*prompts.fixed_texts(), json.dumps(TOOL_SPECS, sort_keys=True))
