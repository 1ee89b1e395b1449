"""An HTTP/1.1 server on loopback that writes its responses byte by byte as scripted.

For testing HTTP clients on what servers really send: bodies framed by Content-Length, by
chunked transfer encoding (in chunks of any size) or by closing the connection; keep-alive
or `Connection: close`; a connection closed after the reply without warning; garbage
instead of a response. Requests are parsed here with the standard library's own reading
of a request line, headers and a Content-Length body.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field
from collections.abc import Callable


@dataclass
class RawReply:
    body: bytes = b""
    status: int = 200
    reason: str = "OK"
    framing: str = "length"  # length | chunked | close
    chunk_size: int = 7
    headers: dict[str, str] = field(default_factory=dict)
    keep_alive: bool = True  # False: say `Connection: close` and close
    drop_after: bool = False  # close after the reply without saying so
    raw: bytes | None = None  # sent as is instead of a response, then the connection closes
    delay_s: float = 0.0


def chat_reply(text: str, **kw) -> RawReply:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": max(1, len(text.split()))}}
    return RawReply(body=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, **kw)


class RawHttpServer:
    def __init__(self, script: Callable[[dict, int], RawReply]) -> None:
        self.script = script
        self.requests: list[dict] = []
        self.connections = 0
        self.open_now = 0
        self.max_open = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                with outer.lock:
                    outer.connections += 1
                    outer.open_now += 1
                    outer.max_open = max(outer.max_open, outer.open_now)
                    conn_no = outer.connections
                try:
                    while self._one(conn_no):
                        pass
                finally:
                    with outer.lock:
                        outer.open_now -= 1

            def _one(self, conn_no: int) -> bool:
                line = self.rfile.readline()
                if not line:
                    return False
                length = 0
                while True:
                    header = self.rfile.readline()
                    if header in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = header.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                request = json.loads(self.rfile.read(length))
                with outer.lock:
                    outer.requests.append(request)
                reply = outer.script(request, conn_no)
                time.sleep(reply.delay_s)
                if reply.raw is not None:
                    self.wfile.write(reply.raw)
                    return False
                self.wfile.write(_encode(reply))
                self.wfile.flush()
                return reply.keep_alive and reply.framing != "close" and not reply.drop_after

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> RawHttpServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _encode(reply: RawReply) -> bytes:
    head = [f"HTTP/1.1 {reply.status} {reply.reason}", *(f"{k}: {v}" for k, v in reply.headers.items())]
    if not reply.keep_alive or reply.framing == "close":
        head.append("Connection: close")
    if reply.framing == "length":
        head.append(f"Content-Length: {len(reply.body)}")
        payload = reply.body
    elif reply.framing == "chunked":
        head.append("Transfer-Encoding: chunked")
        parts = [reply.body[i:i + reply.chunk_size] for i in range(0, len(reply.body), reply.chunk_size)]
        payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"
    else:
        payload = reply.body
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
