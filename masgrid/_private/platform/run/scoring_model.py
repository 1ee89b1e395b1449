"""Model calls a task makes while it scores (CooperBench's LLM merge resolver, appendix C).

A task asks for such a model with `Task.scoring_model` (envs/tasks/base.py): its own
settings (a `model` block, reached over HTTP) or the run's model and backend, with a
forced temperature. The client is the agents' own (`make_backend`: the openai client, direct
aiohttp or a Serve deployment, with `timeout_s` per attempt and `max_retries`). The scorer
is blocking code (git, pytest), so it runs in a worker thread and each `ask(prompt)` is
one chat call made on the caller's event loop. The driver records every call as a
`scoring_call` event of the actor (no agent), and counts its calls and tokens in
`<actor>_*` run columns, never in the agents' counts or the run's validity.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import ValidationError

from masgrid._private.actors.backends import BackendSettings, ChatBackend, Completion
from masgrid._private.envs.tasks.base import ScoringCallFailed, ScoringModel

T = TypeVar("T")

#: called on the loop after each call: (prompt, its completion)
OnCall = Callable[[str, Completion], None]


def scoring_settings(request: ScoringModel, backend: str, model: BackendSettings) -> tuple[str, BackendSettings]:
    """(backend kind, settings) of a task's scoring model; ValueError in one line naming the option."""
    key = request.config_key
    if request.settings is not None:
        try:
            settings = BackendSettings(**request.settings)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ValueError(f"{key}.{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        if not settings.base_url:
            raise ValueError(f"{key}.base_url: the {request.actor} reaches its model over HTTP and needs an "
                             f"OpenAI-compatible /v1 endpoint")
        kind = "openai"
    elif backend == "scripted":
        raise ValueError(f"{key}: scripted agents have no model the {request.actor} could use; give it one, "
                         f"e.g. {key}={{name: NAME, base_url: http://HOST:PORT/v1}}")
    else:
        settings, kind = model, backend
    update: dict[str, Any] = {"tool_mode": "native"}  # no tools are offered: nothing to fence
    if request.temperature is not None:
        update["temperature"] = request.temperature
    return kind, settings.model_copy(update=update)


def scoring_endpoint(cfg: Any) -> BackendSettings | None:
    """The settings of a run's scoring model when it has its own endpoint (not the run's model)."""
    from masgrid._private.envs.tasks import get_task

    request = get_task(cfg.task).scoring_model(**cfg.generation_kwargs())
    if request is None or request.settings is None:
        return None
    return scoring_settings(request, cfg.backend, cfg.model)[1]


class BlockingAsk:
    """`ask(prompt) -> reply text` for a scorer running in a worker thread: each call is one
    chat call on `loop`; a failed call (after the client's retries) raises ScoringCallFailed."""

    def __init__(self, backend: ChatBackend, loop: asyncio.AbstractEventLoop, on_call: OnCall | None = None) -> None:
        self.backend, self.loop, self.on_call = backend, loop, on_call
        self.completions: list[Completion] = []

    async def _call(self, prompt: str) -> Completion:
        done = await self.backend.complete([{"role": "user", "content": prompt}])
        self.completions.append(done)
        if self.on_call is not None:
            self.on_call(prompt, done)
        return done

    def __call__(self, prompt: str) -> str:
        done = asyncio.run_coroutine_threadsafe(self._call(prompt), self.loop).result()
        if done.error is not None:
            raise ScoringCallFailed(done.error)
        return done.text or ""

    def totals(self, actor: str, settings: BackendSettings) -> dict[str, Any]:
        """The run columns of this actor's calls."""
        c = self.completions
        return {f"{actor}_model": settings.request_model, f"{actor}_calls": len(c),
                f"{actor}_errors": sum(x.error is not None for x in c),
                f"{actor}_tokens_in": sum(x.tokens_in for x in c), f"{actor}_tokens_out": sum(x.tokens_out for x in c)}


async def run_with_ask(work: Callable[[BlockingAsk], T], actor: str, settings: BackendSettings,
                       backend: ChatBackend, on_call: OnCall | None = None) -> tuple[T, dict[str, Any]]:
    """`work(ask)` (blocking: a scorer) in a worker thread, its `ask` calling `backend` on this
    loop; returns (its result, the actor's run columns). The backend's clients are closed after."""
    ask = BlockingAsk(backend, asyncio.get_running_loop(), on_call)
    try:
        result = await asyncio.to_thread(work, ask)
    finally:
        await backend.close()
    return result, ask.totals(actor, settings)
