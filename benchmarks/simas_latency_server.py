"""A loopback OpenAI-compatible chat server that answers SIMAS prompts after a simulated decode time.

Every completion takes `base_s + per_token_s * completion_tokens` seconds (the sleep of a
thread, no CPU), where completion tokens are the whitespace words of the reply, the same
count the server reports in `usage`. Because the latency is a function of the reported
usage, a run's critical path (its calls are strictly sequential) is exactly
`model_calls * base_s + per_token_s * tokens_out` from the runs table, and the server's
own log gives the same total over all requests (the benchmark checks that they agree).

Replies, by prompt:
- the profile generator ("... panel of N assistants ..."): N distinct profiles as JSON;
- the final-answer turn ("The discussion is over ..."): a short reasoning, "Final answer: B";
- every discussion turn: `tokens` words of filler ending "My answer: B".

Written for benchmarks/bench_simas_sweep.py (not a model stand-in: the answers are fixed).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PANEL = re.compile(r"panel of (\d+) assistants")
FINAL_CUE = "The discussion is over"


@dataclass(frozen=True)
class Latency:
    """Simulated decode time of one call: a fixed part plus a part per output token."""

    base_s: float = 0.05
    per_token_s: float = 0.01

    def of(self, completion_tokens: int) -> float:
        return self.base_s + self.per_token_s * completion_tokens


@dataclass
class CallLog:
    """What the server saw: one (arrival, departure, simulated latency) per completion; the
    platform's preflight probe (a completion with max_tokens 1) is kept apart in `probes`."""

    calls: list[tuple[float, float, float]] = field(default_factory=list)
    probes: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self, arrived: float, latency: float, probe: bool) -> None:
        with self.lock:
            self.in_flight -= 1
            if probe:
                self.probes += 1
            else:
                self.calls.append((arrived, time.monotonic(), latency))


def profiles_reply(n: int) -> str:
    """n distinct profiles in the JSON list the SIMAS profile parser reads."""
    items = [{"personality": f"methodical panelist number {i + 1}",
              "belief": f"claims need checking, view {i + 1}",
              "expertise": f"area {i + 1} of the discipline"} for i in range(n)]
    return json.dumps(items)


def discussion_reply(tokens: int, answer: str = "B") -> str:
    """A turn of exactly `tokens` whitespace words (at least the closing three)."""
    filler = ["considering"] * max(0, tokens - 3)
    return " ".join([*filler, "My", "answer:", answer])


def reply_for(messages: list[dict], tokens: int) -> str:
    system = str(messages[0].get("content") or "") if messages else ""
    last = str(messages[-1].get("content") or "") if messages else ""
    panel = PANEL.search(system) or PANEL.search(last)
    if panel:
        return profiles_reply(int(panel.group(1)))
    if FINAL_CUE in last:
        return "Weighing the discussion, the group agrees.\nFinal answer: B"
    return discussion_reply(tokens)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # every run of a wide sweep may connect at once


class LatencyServer:
    """Threaded HTTP/1.1 server (keep-alive) on 127.0.0.1; a context manager."""

    def __init__(self, latency: Latency, tokens: int = 40, model: str = "bench") -> None:
        self.latency = latency
        self.tokens = tokens
        self.model = model
        self.log = CallLog()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body leave in two writes; on a kept-alive connection Nagle's algorithm
            # held the body until the client's delayed ACK (about 40 ms a call on Linux), which
            # this benchmark counted as harness overhead. Servers made for this (uvicorn, so
            # vLLM) set TCP_NODELAY too.
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:  # quiet
                return

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                arrived = time.monotonic()
                server.log.enter()
                latency, probe = 0.0, False
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                    messages = body.get("messages") or []
                    text = reply_for(messages, server.tokens)
                    limit = body.get("max_tokens")
                    probe = limit == 1
                    if isinstance(limit, int) and limit > 0:
                        text = " ".join(text.split(" ")[:limit])  # as a server stops at max_tokens
                    completion = len(text.split())
                    prompt = sum(len(str(m.get("content") or "").split()) for m in messages)
                    latency = server.latency.of(completion)
                    time.sleep(latency)
                    self._send(200, {
                        "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
                        "model": body.get("model", server.model),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                  "total_tokens": prompt + completion}})
                finally:
                    server.log.leave(arrived, latency, probe)

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> LatencyServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
