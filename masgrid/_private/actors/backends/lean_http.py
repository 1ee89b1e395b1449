"""A plain-HTTP/1.1 keep-alive client for one origin (`model.http_client=lean`).

An agent host making thousands of calls to a server on its own network spends most of its
per-call CPU in the HTTP client: aiohttp 0.17-0.21 ms per call, a bare exchange over
asyncio 0.07-0.09 ms (benchmarks/bench_http_client_floor.py). This client is that bare
exchange made safe to use: an asyncio protocol per connection, responses parsed by
httptools (the C parser uvicorn uses: status, headers, Content-Length, chunked bodies),
kept-alive connections reused last-in first-out and dropped after `keepalive_s` idle, at
most `limit` connections in use.

What it leaves to its caller (backends/direct_http.py, backends/retry.py): timeouts (the
attempt's deadline cancels the exchange, and a cancelled exchange closes its connection)
and retries. It makes no hidden retry: a kept-alive connection the server closes while a
request is on it fails that attempt as a connection error, which the retry policy counts
and retries like any other. It speaks only `http://` (no TLS, no proxies, no redirects):
for anything else use `direct` or the openai client.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

import httptools


class ProtocolError(Exception):
    """The server's bytes are not an HTTP/1.1 response (classified as a connection error)."""


class _Exchange(asyncio.Protocol):
    """One connection; one request at a time. httptools calls the on_* methods while parsing."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[tuple[int, bytes, str | None]] | None = None
        self.lost = False
        self.parser: httptools.HttpResponseParser | None = None
        self.body: list[bytes] = []
        self.retry_after: str | None = None
        self.framed = False  # Content-Length or Transfer-Encoding: the parser knows where the body ends
        self.until_close = False  # neither: the body ends with the connection

    # -- asyncio.Protocol --------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self.parser is None:  # bytes nobody asked for: the connection is unusable
            self._close()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ProtocolError(f"malformed HTTP response: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self.waiter is not None and not self.waiter.done():
            if self.until_close:
                self._finish(keep_alive=False)
            else:
                self.waiter.set_exception(ConnectionResetError(
                    "the server closed the connection before its reply was complete"))

    # -- httptools callbacks ---------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"retry-after":
            self.retry_after = value.decode("latin-1").strip()
        elif name in (b"content-length", b"transfer-encoding"):
            self.framed = True

    def on_headers_complete(self) -> None:
        parser = self.parser
        # a response with neither length nor chunked framing runs to the end of the connection
        self.until_close = parser is not None and parser.get_status_code() not in (204, 304) and not self.framed

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self._finish(keep_alive=self.parser is not None and self.parser.should_keep_alive())

    # -- one request ------------------------------------------------------------------------------
    async def exchange(self, request: bytes) -> tuple[int, bytes, str | None]:
        """(status, body, Retry-After) of the response to `request` (a complete HTTP message)."""
        self.parser = httptools.HttpResponseParser(self)
        self.body, self.retry_after, self.until_close, self.framed = [], None, False, False
        self.waiter = asyncio.get_running_loop().create_future()
        assert self.transport is not None
        self.transport.write(request)
        return await self.waiter

    def _finish(self, keep_alive: bool) -> None:
        if self.waiter is None or self.waiter.done():
            return
        status = self.parser.get_status_code() if self.parser is not None else 0
        self.parser = None
        if not keep_alive:
            self._close()
        self.waiter.set_result((status, b"".join(self.body), self.retry_after))

    def _fail(self, exc: Exception) -> None:
        self._close()
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    def _close(self) -> None:
        self.lost = True
        if self.transport is not None:
            self.transport.close()

    @property
    def usable(self) -> bool:
        return not self.lost and self.transport is not None and not self.transport.is_closing()


class LeanSession:
    """Keep-alive connections to the origin of `base_url`, at most `limit` in use at once."""

    def __init__(self, base_url: str, limit: int, keepalive_s: float) -> None:
        url = urlsplit(base_url)
        if url.scheme != "http" or not url.hostname:
            raise ValueError(f"model.http_client=lean speaks plain http:// only, not {base_url!r}: "
                             "use http_client=direct (aiohttp) for https or proxies")
        self.host, self.port = url.hostname, url.port or 80
        self.authority = f"{self.host}:{self.port}" if url.port else self.host
        self.keepalive_s = keepalive_s
        self.slots = asyncio.Semaphore(limit)
        self.idle: list[tuple[_Exchange, float]] = []  # last in, first out: warm connections first
        self.closed = False

    def request_head(self, path: str, headers: dict[str, str]) -> bytes:
        """The request line and headers up to `Content-Length: ` (the body's length follows)."""
        lines = [f"POST {path} HTTP/1.1", f"Host: {self.authority}", *(f"{k}: {v}" for k, v in headers.items())]
        return ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1")

    async def post(self, head: bytes, body: bytes) -> tuple[int, bytes, str | None]:
        """(status, body, Retry-After) of POSTing `body` after `head` (from `request_head`)."""
        if self.closed:
            raise ConnectionError("the HTTP session is closed")
        async with self.slots:
            conn = self._take() or await self._connect()
            try:
                status, raw, retry_after = await conn.exchange(b"%s%d\r\n\r\n%s" % (head, len(body), body))
            except BaseException:  # failed, timed out, cancelled: never reuse a half-read connection
                conn._close()
                raise
            if conn.usable and not self.closed:
                self.idle.append((conn, time.monotonic()))
            return status, raw, retry_after

    def _take(self) -> _Exchange | None:
        now = time.monotonic()
        while self.idle:
            conn, since = self.idle.pop()
            if conn.usable and now - since < self.keepalive_s:
                return conn
            conn._close()
        return None

    async def _connect(self) -> _Exchange:
        _, protocol = await asyncio.get_running_loop().create_connection(_Exchange, self.host, self.port)
        return protocol

    async def close(self) -> None:
        self.closed = True
        idle, self.idle = self.idle, []
        for conn, _ in idle:
            conn._close()
