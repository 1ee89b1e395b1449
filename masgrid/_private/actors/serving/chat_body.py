"""The argument of a `chat_plain` handle call (plain_server.py), in a module of its own: the
replica unpickles it, so it must import nothing heavy, and the calling agent host must not
import vLLM."""

from __future__ import annotations

from typing import Any

#: the handle method of masgrid's engine deployments
PLAIN_METHOD = "chat_plain"


class ChatBody(dict[str, Any]):
    """An OpenAI chat request body whose fields also read as attributes: Serve LLM's request
    routers, which run in the caller's process, read `messages` (prefix-aware) and
    `max_tokens` (KV-aware) as attributes of the call's first argument, as they would on
    vLLM's request object."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None
