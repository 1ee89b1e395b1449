"""Backend factory: `backend=scripted|openai|serve`."""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

from masgrid._private.actors.backends.base import BackendSettings, ChatBackend, Completion, Message
from masgrid._private.actors.backends.clients import ClientCache
from masgrid._private.envs.registry import Registry
from masgrid._private.envs.tasks import AgentView, get_task
from masgrid._private.envs.tokens import TokenCounter

BACKENDS = ("scripted", "openai", "serve")

#: name -> factory(settings, counter, view, protocol, seed, shared); the serving layer adds
#: `serve`. `shared` is the host's per-run scratch space; `shared["clients"]` is the host's
#: ClientCache, so stateless clients (HTTP pools, Serve handles) are made once per agent host
#: and, on a pooled host, kept across runs.
#: Lookups go through the provider table (masgrid/_private/envs/registry.py), so `serve` resolves in any
#: process, whether or not it imported the serving layer.
_FACTORIES: Registry[Callable[..., ChatBackend]] = Registry("backend", {
    "scripted": __name__, "openai": __name__, "serve": "masgrid._private.actors.serving.handle_backend"})


def register_backend(name: str) -> Callable[[Callable[..., ChatBackend]], Callable[..., ChatBackend]]:
    def deco(factory: Callable[..., ChatBackend]) -> Callable[..., ChatBackend]:
        return _FACTORIES.register(name, factory)

    return deco


@register_backend("scripted")
def _scripted(settings: BackendSettings, count: TokenCounter, view: AgentView, protocol: str, seed: int,
              shared: dict[str, Any]) -> ChatBackend:
    from masgrid._private.actors.backends.scripted import ScriptedBackend

    return ScriptedBackend(get_task(view.task).scripted_policy(view, protocol, seed), count)


@register_backend("openai")
def _openai(settings: BackendSettings, count: TokenCounter, view: AgentView, protocol: str, seed: int,
            shared: dict[str, Any]) -> ChatBackend:
    from masgrid._private.actors.backends.openai_chat import http_backend

    if "openai" not in shared:
        shared["openai"] = http_backend(settings, count, host_clients(shared))
    return shared["openai"]


def host_clients(shared: dict[str, Any]) -> ClientCache:
    """The host's client cache (a private one when a caller passes no host state)."""
    return shared.setdefault("clients", ClientCache())


def make_backend(kind: str, settings: BackendSettings, count: TokenCounter, view: AgentView,
                 protocol: str, seed: int, shared: dict[str, Any] | None = None) -> ChatBackend:
    factory = _FACTORIES[kind]  # UnknownName (KeyError and ValueError) lists the backends
    shared = shared if shared is not None else {}
    backend = factory(settings, count, view, protocol, seed, shared)
    if settings.cache and kind != "scripted":  # inside FencedTools: the key is the request as sent
        from masgrid._private.actors.backends.response_cache import with_cache

        backend = with_cache(backend, kind, settings, seed, shared)
    if settings.tool_mode == "fenced" and kind != "scripted":  # a policy makes its calls directly
        from masgrid._private.actors.backends.chat_tools import FencedTools

        backend = FencedTools(backend)
    return backend


__all__ = ["BACKENDS", "BackendSettings", "ClientCache", "host_clients", "ChatBackend", "Completion", "Message", "make_backend", "register_backend"]
