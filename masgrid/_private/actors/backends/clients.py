"""Connection pools and Serve handles that outlive a run on a pooled agent host.

A new `AsyncOpenAI` client loads the TLS trust store and opens fresh connections, and a
new DeploymentHandle starts its router; paid once per run and host, that cost lands
exactly at the start of round 1, when every run of a sweep is trying to fire its first
calls. The host keeps one cache for its whole life and hands it to the backend
factories; a pooled host keeps it across runs, a per-run host closes it at the end.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable, Hashable


class ClientCache:
    def __init__(self) -> None:
        self._items: dict[Hashable, Any] = {}

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        if key not in self._items:
            self._items[key] = make()
        return self._items[key]

    def __len__(self) -> int:
        return len(self._items)

    async def aclose(self) -> None:
        """Close the HTTP clients (their connection pools); Serve handles need nothing."""
        import sys

        # only the client libraries a run used are loaded; importing openai here would cost 1.4 s
        closable = tuple(getattr(sys.modules[name], cls) for name, cls in
                         (("openai", "AsyncOpenAI"), ("aiohttp", "ClientSession"),
                          ("masgrid._private.actors.backends.lean_http", "LeanSession")) if name in sys.modules)
        items, self._items = list(self._items.values()), {}
        for item in items:
            if closable and isinstance(item, closable):
                await item.close()
