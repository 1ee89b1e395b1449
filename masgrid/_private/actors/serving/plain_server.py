"""Serve LLM's engine deployment with a handle method that speaks plain data.

`LLMServer.chat` takes vLLM's `ChatCompletionRequest` and yields vLLM's response models, so
a process calling it by DeploymentHandle must import vLLM (and with it torch) to build the
request and to unpickle the answer: a host making three calls used 6.9 CPU-s and 656 MB
that way against 1.1 CPU-s and 205 MB through `chat_plain` on the development machine
(benchmarks/bench_handle_host.py), and a node without vLLM could not call at all.
`chat_plain` takes the request body as a dict and returns the answer as a dict, building and
dumping vLLM's models inside the replica, which has vLLM loaded anyway. masgrid deploys its
engines with this class (`LLMConfig.server_cls`); the class keeps Serve LLM's name, so
deployments keep their `LLMServer:<model id>` names and everything Serve LLM does with `chat`
(its OpenAI ingress, routers, sleep and wake-up) is unchanged. A deployment without `chat_plain` (an app masgrid
did not deploy) is called through `chat` as before (handle_backend.py).

Only replicas and the deploying process import this module.
"""

from __future__ import annotations

from typing import Any

from ray.serve.llm.deployment import LLMServer as _ServeLLMServer


class LLMServer(_ServeLLMServer):
    """Serve LLM's `LLMServer` plus `chat_plain` (chat_body.PLAIN_METHOD)."""

    async def chat_plain(self, body: dict[str, Any]) -> Any:  # a chat_body.ChatBody
        """The non-streaming answer to an OpenAI chat request body: the completion as a dict,
        or vLLM's error object as a dict (the caller tells them apart by `choices`)."""
        from ray.serve.llm.openai_api_models import ChatCompletionRequest

        stream = await self.chat(ChatCompletionRequest(**body))  # a coroutine that returns the generator
        try:
            item: Any = await stream.__anext__()  # a non-streaming request yields one item
        finally:
            await stream.aclose()
        if isinstance(item, list):
            item = item[0]
        return item.model_dump() if hasattr(item, "model_dump") else item
