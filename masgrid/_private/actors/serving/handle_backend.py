"""`backend=serve`: agents reach a Ray Serve deployment, by handle or over its OpenAI route.

`model.serving.route=handle` (default) calls the deployment through a DeploymentHandle
inside the cluster (no HTTP hop; Serve's router, e.g. prefix-aware, picks the replica);
`route=http` uses the `openai` backend against Serve's HTTP route (`model.base_url`, or
the preset's route prefix on this node's proxy). For the CPU stand-in each request also
carries the agent's tag (see `standin.py`); a real model never receives it.

On the vLLM path the call goes to `chat_plain` (plain_server.py), which takes the request
body and returns the answer as dicts, so the agent host never imports vLLM; a deployment that
lacks it (an app masgrid did not deploy) is called through Serve LLM's `chat` with vLLM's own
request type, and each host remembers which deployments those are.

Handle calls get the same contract as the HTTP client: a per-attempt timeout
(`model.timeout_s`), `model.max_retries` retries with exponential backoff (a hung call is
cancelled; a replica that died is replaced by Serve and the retry lands on a live one),
and a `Completion.error` naming the cause after the last attempt.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from masgrid._private.actors.backends import host_clients, register_backend
from masgrid._private.actors.backends.base import BackendSettings, ChatBackend, Completion, Message
from masgrid._private.actors.backends.errors import CallFailure, classify_exception, error_reply, malformed
from masgrid._private.actors.backends.openai_chat import completion_from_reply, failed_call, http_backend, request_body
from masgrid._private.actors.serving.chat_body import PLAIN_METHOD, ChatBody
from masgrid._private.actors.serving.deploy import http_base_url, target
from masgrid._private.actors.serving.spec import ServingSpec, parse_serving
from masgrid._private.actors.serving.standin import AGENT_FIELD, AgentTag
from masgrid._private.envs.tasks import AgentView
from masgrid._private.envs.tokens import TokenCounter

log = logging.getLogger(__name__)
BACKOFF_S = 0.5
#: (app, deployment) found without it, in this process
_WITHOUT_PLAIN: set[tuple[str, str]] = set()
#: idle HTTP connections to Serve's proxy expire after this (it keeps them 90 s), so rounds
#: of a few seconds reuse connections instead of opening new ones
SERVE_KEEPALIVE_S = 60.0


class HandleChatBackend(ChatBackend):
    """One agent's calls through a DeploymentHandle (the handle itself is shared per host)."""

    def __init__(self, handle: Any, settings: BackendSettings, spec: ServingSpec, count: TokenCounter,
                 tag: dict[str, Any] | None) -> None:
        self.handle = handle
        self.settings = settings
        self.spec = spec
        self.count = count
        self.tag = tag

    def _request(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The request body; the stand-in's carries the agent's tag."""
        body = request_body(self.settings, messages, tools)
        if self.tag is not None:
            body[AGENT_FIELD] = self.tag
        return body

    async def _attempt(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        body = self._request(messages, tools)
        if self.spec.kind == "standin":
            return await self._answer(self.handle.chat.remote(body))
        where = (self.handle.app_name, self.handle.deployment_name)
        if where not in _WITHOUT_PLAIN:
            try:
                return _completion(await self._answer(getattr(self.handle, PLAIN_METHOD).remote(ChatBody(body))))
            except Refused:
                raise
            except Exception as exc:
                if f"'{PLAIN_METHOD}' that does not exist" not in str(exc):
                    raise
                log.info("Serve deployment %s/%s has no %s: calling its chat with vLLM's types", *where,
                         PLAIN_METHOD)
                _WITHOUT_PLAIN.add(where)
        return await self._attempt_vllm_types(body)

    async def _answer(self, response: Any) -> Any:
        try:
            return await asyncio.wait_for(_await(response), self.settings.timeout_s)
        except TimeoutError:
            response.cancel()
            raise

    async def _attempt_vllm_types(self, body: dict[str, Any]) -> dict[str, Any]:
        """Serve LLM's own `chat`: this process imports vLLM for its request and reply types."""
        from ray.serve.llm.openai_api_models import ChatCompletionRequest

        # LLMServer.chat is a generator: the non-streaming answer is its first item.
        stream = self.handle.options(stream=True).chat.remote(ChatCompletionRequest(**body))
        try:
            item = await asyncio.wait_for(stream.__anext__(), self.settings.timeout_s)
        except TimeoutError:
            stream.cancel()
            raise
        if isinstance(item, list):
            item = item[0]
        return _completion(item.model_dump() if hasattr(item, "model_dump") else item)

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> Completion:
        start = time.perf_counter()
        attempts = 0
        last = CallFailure(error_class="backend_error", message="no attempt was made")
        for attempt in range(self.settings.max_retries + 1):
            attempts = attempt + 1
            try:
                data = await self._attempt(messages, tools)
            except Refused as exc:
                last = exc.failure
                if last.final:
                    break
            except Exception as exc:  # noqa: BLE001 - replica death, router errors: retry, then record
                last = classify_exception(exc)
            else:
                return completion_from_reply(data, messages, self.count, time.perf_counter() - start, attempts,
                                             tools)
            if attempt < self.settings.max_retries:
                await asyncio.sleep(BACKOFF_S * 2 ** attempt)
        return failed_call(last, time.perf_counter() - start, attempts)


class Refused(Exception):
    """The deployment answered with an error object instead of a completion."""

    def __init__(self, failure: CallFailure) -> None:
        super().__init__(failure.error)
        self.failure = failure


def _completion(data: Any) -> dict[str, Any]:
    """The engine's answer as a completion, or Refused with the error it carries: vLLM's
    ErrorResponse (bare or under "error") carries the HTTP status it would have sent."""
    if not isinstance(data, dict) or "choices" not in data:
        raise Refused(error_reply(data) or malformed(str(data)))
    return data


async def _await(response: Any) -> Any:
    return await response


def agent_tag(view: AgentView, protocol: str, seed: int, token_counter: str) -> dict[str, Any]:
    return AgentTag(view=view, protocol=protocol, seed=seed, token_counter=token_counter).model_dump(mode="json")


@register_backend("serve")
def _serve(settings: BackendSettings, count: TokenCounter, view: AgentView, protocol: str, seed: int,
           shared: dict[str, Any]) -> ChatBackend:
    spec = shared.get("serve:spec") or shared.setdefault("serve:spec", parse_serving(settings.serving))
    tag = agent_tag(view, protocol, seed, shared.get("token_counter", "approx")) if spec.kind == "standin" else None
    clients = host_clients(shared)
    if spec.route == "http":
        http_settings = settings.model_copy(update={"base_url": http_base_url(settings, spec),
                                                    "keepalive_s": settings.keepalive_s or SERVE_KEEPALIVE_S})
        extra = dict(settings.extra_body, **({AGENT_FIELD: tag} if tag is not None else {}))
        agent_settings = http_settings.model_copy(update={"extra_body": extra})
        return http_backend(agent_settings, count, clients, pool_settings=http_settings)
    app, name = target(settings, spec)

    def make_handle() -> Any:
        from ray import serve

        return serve.get_deployment_handle(name, app_name=app)

    return HandleChatBackend(clients.get(("serve", app, name), make_handle), settings, spec, count, tag)
