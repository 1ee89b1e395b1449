"""`model.cache`: answer a request that was answered before from the local store.

Researchers on a paid API re-execute runs (a sweep resumed after a crash, a run repeated
to check a fix); the cache makes such a re-execution replay its earlier answers instead of
paying for them again. Two requests share an answer only when everything that decides it
is equal: the endpoint, the full request body (model, messages, tools, tool choice,
sampling and seed, extra_body) and the replicate, i.e. the agent seed the host gives each
agent (run seed and agent id): another run seed or another agent never shares an answer,
the same run executed again does. Within one replicate, the n-th identical request gets
the n-th stored answer, so a run that asks the same thing twice replays both answers as
they were drawn, not the first one twice. Only successful answers are stored.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from masgrid._private.actors.backends.base import BackendSettings, ChatBackend, Completion, Message
from masgrid._private.actors.backends.history import message_pieces
from masgrid._private.actors.backends.openai_chat import request_body
from masgrid._private.actors.backends.response_store import ResponseStore, cache_root

#: bump when what the key covers changes: older entries then miss instead of answering
KEY_VERSION = 1


def endpoint_of(kind: str, settings: BackendSettings) -> dict[str, Any]:
    """Who answers: the base URL, or for backend=serve the preset's deployment as configured
    (its name, deployment and serving block), never this node's proxy address."""
    if kind == "serve":
        return {"serve": settings.name, "deployment": settings.deployment, "serving": settings.serving,
                "base_url": settings.base_url}
    return {"base_url": (settings.base_url or "").rstrip("/")}


def request_digest(endpoint: dict[str, Any], body: dict[str, Any], replicate: int) -> str:
    """sha256 of the endpoint, the request body and the replicate. The fields beside the
    messages are canonical JSON (sorted keys); each message is hashed as its history encodes
    it (backends/history.py), so a long history costs only its new messages. A change of
    key order inside a message makes a miss, never a wrong hit."""
    head = {"v": KEY_VERSION, "endpoint": endpoint, "replicate": replicate,
            "body": {k: v for k, v in body.items() if k != "messages"}}
    digest = hashlib.sha256(json.dumps(head, sort_keys=True, separators=(",", ":")).encode())
    for piece in message_pieces(body.get("messages") or []):
        digest.update(b"\n")  # a message's JSON holds no raw newline: the framing is unambiguous
        digest.update(piece)
    return digest.hexdigest()


def entry_key(digest: str, occurrence: int) -> str:
    """The key of the `occurrence`-th (from 0) request with this digest in one replicate."""
    return hashlib.sha256(f"{digest}:{occurrence}".encode()).hexdigest()


class CachedBackend(ChatBackend):
    """One agent's calls: from the store when answered before, else from `inner` (and stored)."""

    def __init__(self, inner: ChatBackend, settings: BackendSettings, endpoint: dict[str, Any], replicate: int,
                 store: ResponseStore, seen: dict[str, int]) -> None:
        self.inner = inner
        self.settings = settings
        self.endpoint = endpoint
        self.replicate = replicate
        self.store = store
        #: requests made so far per digest; the host's, so it spans the run's phases
        self.seen = seen

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Completion:
        body = request_body(self.settings, messages, tools)
        digest = request_digest(self.endpoint, body, self.replicate)
        occurrence = self.seen.get(digest, 0)
        self.seen[digest] = occurrence + 1
        key = entry_key(digest, occurrence)
        model = self.settings.request_model
        stored = self.store.get(model, key)
        if stored is not None:
            return stored
        completion = await (self.inner.complete(messages, tools) if tools else self.inner.complete(messages))
        if completion.error is None:
            self.store.put(model, key, completion)
        return completion

    async def close(self) -> None:
        await self.inner.close()


def with_cache(inner: ChatBackend, kind: str, settings: BackendSettings, replicate: int,
               shared: dict[str, Any]) -> ChatBackend:
    """`inner` behind the cache; the store and the request counts are the host's (`shared`)."""
    root = cache_root(settings.cache_dir)
    store = shared.get(f"response_cache:{root}")
    if store is None:
        store = shared[f"response_cache:{root}"] = ResponseStore(root)
    seen = shared.setdefault("response_cache:seen", {})
    return CachedBackend(inner, settings, endpoint_of(kind, settings), replicate, store, seen)
