"""A loopback OpenAI-compatible chat server that answers at once, for harness-cost benchmarks.

It runs in its own process (so its CPU is measured apart from masgrid's) on aiohttp and
answers every chat completion immediately with a reply the benchmarked protocol accepts:
- AgentsNet (LOCAL): a short message to every neighbour named in the system prompt, and in
  the final round the final-answer marker with the first option of the prompt;
- SILO P2P: read the inbox, then one message to the next agent (ring order);
- MAS-Bench / SILO key-value: one `write_file` and one `read_file` of a shared key;
- anything else: a `wait` command.
The reply is chosen by cheap string tests on the system prompt (cached per prompt), so the
server's own CPU stays small and is reported by `GET /stats` (process CPU seconds and
calls). Not a model stand-in: the answers are fixed and carry no reasoning.

    python benchmarks/zero_latency_server.py --port 0 --port-file /tmp/port
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

from aiohttp import web

NEIGHBOURS = re.compile(r"[Yy]our neighbou?rs? (?:are|is)[:\s]+([^\n.]+)")
FINAL_MARKER = "### Final Answer ###"
SILO_ID = re.compile(r"You are Agent-(\d+), one of (\d+) agents")
OPTIONS = re.compile(r"nothing else:\s*([^\n]+)")


class Replies:
    """Picks a valid reply per system prompt; the choice is cached by the prompt's text."""

    def __init__(self) -> None:
        self.cache: dict[str, tuple[str, str]] = {}

    def for_messages(self, messages: list[dict]) -> str:
        system = str(messages[0].get("content") or "") if messages else ""
        plain = self.cache.get(system) or self._learn(system)
        last = str(messages[-1].get("content") or "") if messages else ""
        if FINAL_MARKER in last:  # AgentsNet's final question: the first option it offers
            options = OPTIONS.findall(last)
            first = options[-1].split(",")[0].strip(" .'\"`") if options else "1"
            return f"Settled.\n{FINAL_MARKER} {first}"
        return plain

    def _learn(self, system: str) -> str:
        found = NEIGHBOURS.search(system)
        if found:
            names = [n.strip(" ,") for n in re.split(r",| and ", found.group(1))]
            plain = json.dumps({n: "my value is 1" for n in names if n})
        elif (silo := SILO_ID.search(system)) and "send_message <agent_id>" in system:
            peer = (int(silo.group(1)) + 1) % int(silo.group(2))
            plain = f"```\nreceive_messages\n```\n```\nsend_message {peer} my partial result is 1 2 3\n```"
        elif "write_file" in system:
            plain = "```\nwrite_file shared/notes.txt\nvalues seen so far: 1 2 3\n```\n```\nread_file shared/notes.txt\n```"
        else:
            plain = "```\nwait\n```"
        self.cache[system] = plain
        return plain


def make_app() -> web.Application:
    replies = Replies()
    state = {"calls": 0}

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        messages = body.get("messages") or []
        text = replies.for_messages(messages)
        state["calls"] += 1
        n_in = sum(len(str(m.get("content") or "")) for m in messages) // 4
        payload = {
            "id": f"c{state['calls']}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "zero"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": n_in, "completion_tokens": len(text) // 4,
                      "total_tokens": n_in + len(text) // 4},
        }
        return web.json_response(payload)

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "zero", "object": "model"}]})

    async def stats(_: web.Request) -> web.Response:
        cpu = os.times()
        return web.json_response({"calls": state["calls"], "cpu_s": cpu.user + cpu.system})

    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/stats", stats)
    return app


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", type=Path, required=True)
    args = ap.parse_args()

    async def started(app: web.Application) -> None:
        sockets = [s for site in runner.sites for s in site._server.sockets]
        args.port_file.write_text(str(sockets[0].getsockname()[1]))

    import asyncio

    async def serve() -> None:
        nonlocal runner
        runner = web.AppRunner(make_app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port, backlog=4096)
        await site.start()
        await started(runner.app)
        await asyncio.Event().wait()

    runner = None
    asyncio.run(serve())


if __name__ == "__main__":
    main()
