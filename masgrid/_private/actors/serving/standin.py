"""CPU stand-in for a served model: scripted policies behind the OpenAI chat protocol.

Which agent a request belongs to travels in the request body, field `masgrid_agent`
(the agent's view at the start of the phase, its protocol, policy seed and token counter);
`backend=serve` adds it, and only for `model.serving.kind=standin`. The policy's state is
not kept in the server: each request rebuilds the policy from that tag and replays the
chat history (the user turns between assistant turns are exactly the observations the
policy saw before each of its replies). A request therefore carries everything needed
to answer it, so any replica can serve any call, a retried call after a replica died gets
the same answer, and `backend=serve` reproduces `backend=scripted` exactly.

Usage is counted with the run's token counter over the same texts the scripted backend
counts (every message of the prompt; the reply), and returned in the `usage` fields.

A policy that calls tools (its reply is a `ToolReply`) is answered as a server would: in
`message.tool_calls` when the request offered `tools`, else as ```tool blocks in the text
(`model.tool_mode=fenced` strips the tools from the request and reads the blocks).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections import Counter
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from masgrid._private.actors.backends.scripted import OBSERVED_ROLES, policy_calls
from masgrid._private.actors.backends.chat_tools import fenced_result, prompt_tokens, turn_of
from masgrid._private.actors.serving.spec import StandinSpec
from masgrid._private.envs.tasks import AgentView, get_task
from masgrid._private.envs.tokens import get_counter
from masgrid._private.envs.tool_calls import ToolCall, ToolReply, with_calls

AGENT_FIELD = "masgrid_agent"
STANDIN_MODEL = "masgrid-standin"


class AgentTag(BaseModel):
    """Identity of the agent behind a request (sent by backend=serve to the stand-in)."""

    model_config = ConfigDict(extra="forbid")

    view: AgentView
    protocol: str
    seed: int
    token_counter: str = "approx"


class ChatRequest(BaseModel):
    """The subset of an OpenAI chat-completions request the stand-in reads."""

    model_config = ConfigDict(extra="allow")

    model: str = STANDIN_MODEL
    messages: list[dict[str, Any]] = Field(min_length=1)
    masgrid_agent: AgentTag | None = None


class StandinError(ValueError):
    """A request the stand-in cannot answer (HTTP 400)."""


def replay_reply(messages: list[dict[str, Any]], tag: AgentTag) -> str | ToolReply:
    """The policy's next reply: rebuild it, feed it its past observations turn by turn."""
    policy = get_task(tag.view.task).scripted_policy(tag.view, tag.protocol, tag.seed)
    observations: list[str] = []
    for msg in messages:
        role = msg.get("role")
        if role in OBSERVED_ROLES:
            text = str(msg.get("content") or "")
            bare = fenced_result(text) if role == "user" else None  # model.tool_mode=fenced
            observations.append(text if bare is None else bare)
        elif role == "assistant":
            policy.act(observations)
            observations = []
    return policy.act(observations)


class StandinCore:
    """Answers chat requests; shared by the Serve deployment and the loopback server."""

    def __init__(self, spec: StandinSpec | None = None, served_name: str = STANDIN_MODEL) -> None:
        self.spec = spec or StandinSpec()
        self.served_name = served_name
        self.calls = 0
        self._hangs: Counter[str] = Counter()

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.served_name, "object": "model", "created": 0,
                                            "owned_by": "masgrid"}]}

    async def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        request = ChatRequest.model_validate(body)
        tag = request.masgrid_agent
        if tag is None:
            raise StandinError(f"the CPU stand-in needs the `{AGENT_FIELD}` request field; reach it with "
                               "backend=serve (model.serving.kind=standin), not backend=openai")
        self.calls += 1
        messages = request.messages
        await self._maybe_hang(messages, tag)
        tools = body.get("tools") or None
        reply = replay_reply(messages, tag)
        text, calls = ((reply.text, policy_calls(reply, tools, turn_of(messages))) if isinstance(reply, ToolReply)
                       else (reply, None))
        message = _tool_message(text, calls, native=tools is not None)
        count = get_counter(tag.token_counter)  # counted as the scripted backend counts
        prompt = prompt_tokens(messages, tools, count)
        completion = count(with_calls(text, calls) or "")
        if self.spec.per_token_latency_s:
            await asyncio.sleep(completion * self.spec.per_token_latency_s)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop",
                         "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    async def _maybe_hang(self, messages: list[dict[str, Any]], tag: AgentTag) -> None:
        """Fault injection for the reliability tests: selected calls hang for some attempts."""
        spec = self.spec
        if tag.view.agent not in spec.hang_agents:
            return
        call = 1 + sum(m.get("role") == "assistant" for m in messages)
        if call != spec.hang_call:
            return
        key = hashlib.sha1(str(messages[0].get("content")).encode()).hexdigest() + f":{call}"
        if self._hangs[key] < spec.hang_attempts:
            self._hangs[key] += 1
            await asyncio.sleep(spec.hang_s)


def _tool_message(text: str, calls: list[ToolCall] | None, native: bool) -> dict[str, Any]:
    """A policy's tool calls as a server answers: in `tool_calls` when the request offered
    tools (native mode), else written into the text as ```tool blocks (what a model asked
    in fenced mode writes)."""
    if not native or not calls:
        return {"role": "assistant", "content": with_calls(text, calls) or ""}
    return {"role": "assistant", "content": text or None,
            "tool_calls": [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                           for c in calls]}


def build_app(core: StandinCore) -> FastAPI:
    """FastAPI app with the OpenAI routes (/v1/models, /v1/chat/completions) over `core`.
    (Request is imported at module level: FastAPI resolves these annotations by name.)"""
    app = FastAPI(title="masgrid CPU stand-in")

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return core.models()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        try:
            body = await request.json()
            return JSONResponse(await core.chat(body))
        except (StandinError, ValueError) as exc:
            return JSONResponse({"error": {"message": str(exc), "type": "invalid_request_error"}}, status_code=400)

    return app
