"""Who sent what to whom: the run page's sender x receiver heatmap and round timeline.

Receivers are read from the events table (docs/results.md):
- a command that sent messages (`messages_sent` > 0) with `peers`: one message to each peer
  (send, broadcast);
- `read_file` with `peers`: the reader got what the writer stored (Shared K-V, SFS), counted
  as writer -> reader;
- AgentsNet `messages` (LOCAL protocol): its text is a JSON object neighbour name -> message;
  names are mapped to agents with the instance's names (one message per named neighbour that
  is an agent; other keys are not counted);
- SIMAS `discuss`: the group chat, one message to every other member.
`receive_messages` lists senders already counted at the send, so it adds nothing. The
heatmap is therefore "messages addressed (and files read)", not only messages read.
"""

from __future__ import annotations

import json
from typing import Any
from collections.abc import Sequence

import pandas as pd

SNIPPET = 200  # characters of a command's text kept in the timeline (the transcript has all)


def _receivers(row: Any, n: int, names: dict[str, int] | None) -> tuple[list[int], str]:
    """(agents the command's content reached or was addressed to, how: sent/read/"")."""
    peers = [int(p) for p in row.peers] if row.peers is not None and len(row.peers) else []
    sent = int(row.messages_sent or 0) if not pd.isna(row.messages_sent) else 0
    if row.verb == "read_file" and peers:
        return peers, "read"
    if sent and peers:
        return peers, "sent"
    if row.verb == "messages" and names and isinstance(row.text, str):
        try:
            keys = json.loads(row.text)
        except ValueError:
            return [], ""
        if isinstance(keys, dict):
            return [names[k] for k in keys if k in names], "sent"
    if row.verb == "discuss":
        return [j for j in range(n) if j != int(row.agent)], "sent"
    return [], ""


def flows(events: pd.DataFrame, n_agents: int, names: Sequence[str] | None = None) -> dict[str, Any]:
    """{"heatmap": n x n counts [sender][receiver], "rounds": [{phase, round, items}]} for one run.
    An item is [agent, verb, receivers, direction, text snippet, ok]."""
    index = {name: i for i, name in enumerate(names)} if names else None
    matrix = [[0] * n_agents for _ in range(n_agents)]
    rounds: dict[tuple[int, int], list[list[Any]]] = {}
    commands = events[events["kind"] == "command"].sort_values("seq")
    for row in commands.itertuples(index=False):
        agent = int(row.agent)
        receivers, how = _receivers(row, n_agents, index)
        for j in receivers:
            if 0 <= j < n_agents and 0 <= agent < n_agents:
                if how == "read":
                    matrix[j][agent] += 1  # j wrote what `agent` read
                else:
                    matrix[agent][j] += 1
        text = row.text if isinstance(row.text, str) else ""
        ok = None if pd.isna(row.ok) else bool(row.ok)
        rounds.setdefault((int(row.phase), int(row.round)), []).append(
            [agent, row.verb, receivers, how, text[:SNIPPET] + ("…" if len(text) > SNIPPET else ""), ok])
    return {"heatmap": matrix,
            "rounds": [{"phase": p, "round": r, "items": items} for (p, r), items in sorted(rounds.items())]}
