"""A real OpenAI-compatible chat-completions server on loopback, scripted per request.

`script(request) -> Reply` decides each answer: text (with usage), tool calls (OpenAI
`message.tool_calls`, built with `tool_call`), an HTTP error status, or a hang longer than
the client's timeout. GET /v1/models lists the served names given
(`models`), as vLLM does. With `api_key`, every request without that bearer key is refused
with 401, as a hosted API does; `models_reply`, when set, answers GET /v1/models instead of
the list (an outage, say). Used to test how masgrid survives bad models and providers.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable, Sequence


@dataclass
class Reply:
    text: str = ""
    status: int = 200
    hang_s: float = 0.0
    usage: bool = True
    #: sent as is instead of a chat completion (a dict as JSON, a str as text/plain)
    body: dict | str | None = None
    #: extra response headers (e.g. Retry-After)
    headers: dict[str, str] | None = None
    #: send the body one byte per `trickle_s` seconds (a server that never quite stalls)
    trickle_s: float = 0.0
    #: `message.tool_calls` entries (see `tool_call`); the content is then `text` or null
    tool_calls: list | None = None


def tool_call(name: str, arguments: str | dict, id: str | None = None) -> dict:
    """One OpenAI tool-call entry; `arguments` as the server sends it (a JSON string, or
    anything else to test how a client copes)."""
    entry = {"type": "function", "function": {"name": name, "arguments": arguments}}
    return entry if id is None else {"id": id, **entry}


def words(text: str) -> int:
    return len(text.split())


class ChatServer:
    def __init__(self, script: Callable[[dict], Reply], models: Sequence[str] = ("test",),
                 api_key: str | None = None) -> None:
        self.script = script
        self.models = list(models)  # served names that GET /v1/models lists
        self.api_key = api_key
        self.models_reply: Reply | None = None
        self.refused_keys = 0  # requests refused for their key (401)
        self.requests: list[dict] = []
        self.gets: list[str] = []  # paths of GET requests
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                return

            def do_GET(self):
                with server.lock:
                    server.gets.append(self.path)
                if self._refused():
                    return
                if self.path.rstrip("/").endswith("/models") and server.models_reply is not None:
                    self._send(server.models_reply.status, server.models_reply.body or {})
                elif self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "test"}
                                                                for name in server.models]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self._refused():
                    return
                with server.lock:
                    server.requests.append(body)
                reply = server.script(body)
                if reply.hang_s:
                    time.sleep(reply.hang_s)
                if reply.body is not None:
                    self._send(reply.status, reply.body, reply.headers)
                    return
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": "scripted failure", "type": "server_error"}},
                               reply.headers)
                    return
                prompt = sum(words(m.get("content") or "") for m in body.get("messages", []))
                message = {"role": "assistant", "content": reply.text}
                if reply.tool_calls is not None:
                    message = {"role": "assistant", "content": reply.text or None, "tool_calls": reply.tool_calls}
                out = words(reply.text) + sum(words(json.dumps(c)) for c in reply.tool_calls or [])
                payload = {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "test"),
                    "choices": [{"index": 0, "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                                 "message": message}],
                }
                if reply.usage:
                    payload["usage"] = {"prompt_tokens": prompt, "completion_tokens": out,
                                        "total_tokens": prompt + out}
                self._send(200, payload, trickle_s=reply.trickle_s)

            def _refused(self) -> bool:
                """A hosted API's answer to a missing or wrong key (OpenAI's shape)."""
                if server.api_key is None or self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return False
                with server.lock:
                    server.refused_keys += 1
                self._send(401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                           "code": "invalid_api_key"}})
                return True

            def _send(self, status: int, payload: dict | str, headers: dict[str, str] | None = None,
                      trickle_s: float = 0.0) -> None:
                text = isinstance(payload, str)
                data = payload.encode() if text else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/plain" if text else "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    if not trickle_s:
                        self.wfile.write(data)
                    for i in range(len(data) if trickle_s else 0):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(trickle_s)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before we answered

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def agent_and_turn(request: dict) -> tuple[int, int]:
    """Which agent asks (from its system prompt) and how many replies it already gave."""
    messages = request["messages"]
    system = messages[0]["content"]
    agent = int(system.split("You are Agent-")[1].split(",")[0])
    return agent, sum(m["role"] == "assistant" for m in messages)
