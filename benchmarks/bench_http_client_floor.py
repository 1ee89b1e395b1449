"""How much of an agent host's CPU per call is the HTTP client, and what a minimal one costs.

Every client POSTs the same chat request to benchmarks/zero_latency_server.py (its own
process) with 100 calls in flight over kept-alive connections, and reads and parses the
JSON reply. `aiohttp` is the session `model.http_client=direct` uses; `lean` is masgrid's
own client (`model.http_client=lean`, backends/lean_http.py); `streams` is a bare HTTP/1.1
exchange over asyncio streams (Content-Length bodies only, no error handling, no timeouts):
a floor, not a client masgrid could use as it is. By default on uvloop, the event loop
Ray's async actors (the agent hosts) run on; `--loop asyncio` for the standard one.
Reported: this process's CPU milliseconds per call, medians of interleaved repeats.

    python benchmarks/bench_http_client_floor.py --calls 3000 --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

import aiohttp

from bench_harness_per_call import Server  # type: ignore[import-not-found]

BODY = json.dumps({"model": "zero", "messages": [{"role": "system", "content": "You are agent Ada. " * 50}]}).encode()


async def with_aiohttp(port: int, calls: int, in_flight: int) -> float:
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    headers = {"Authorization": "Bearer EMPTY", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1024, keepalive_timeout=4)) as session:

        async def one() -> None:
            async with session.post(url, data=BODY, headers=headers) as reply:
                json.loads(await reply.read())

        return await _timed(one, calls, in_flight)


async def with_streams(port: int, calls: int, in_flight: int) -> float:
    idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer EMPTY\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n\r\n").encode()

    async def one() -> None:
        reader, writer = idle.pop() if idle else await asyncio.open_connection("127.0.0.1", port)
        writer.write(head + BODY)
        lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
        if int(lines[0].split(b" ", 2)[1]) != 200:
            raise RuntimeError(lines[0].decode())
        length = next(int(v) for k, _, v in (line.partition(b":") for line in lines[1:])
                      if k.strip().lower() == b"content-length")
        json.loads(await reader.readexactly(length))
        idle.append((reader, writer))

    try:
        return await _timed(one, calls, in_flight)
    finally:
        for _, writer in idle:
            writer.close()


async def with_lean(port: int, calls: int, in_flight: int) -> float:
    """masgrid's own client (`model.http_client=lean`), without the backend around it."""
    from masgrid._private.actors.backends.lean_http import LeanSession

    session = LeanSession(f"http://127.0.0.1:{port}/v1", 1024, 4.0)
    head = session.request_head("/v1/chat/completions", {"Authorization": "Bearer EMPTY",
                                                         "Content-Type": "application/json"})

    async def one() -> None:
        status, raw, _ = await session.post(head, BODY)
        if status != 200:
            raise RuntimeError(f"HTTP {status}")
        json.loads(raw)

    try:
        return await _timed(one, calls, in_flight)
    finally:
        await session.close()


async def _timed(one, calls: int, in_flight: int) -> float:
    """CPU ms per call of the second pass (the first opens the connections)."""
    for _ in range(2):
        cpu0 = time.process_time()
        for _ in range(calls // in_flight):
            await asyncio.gather(*(one() for _ in range(in_flight)))
        cpu = time.process_time() - cpu0
    return 1000 * cpu / (calls // in_flight * in_flight)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--in-flight", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--loop", default="uvloop", choices=["uvloop", "asyncio"])
    args = ap.parse_args()
    server = Server()
    clients = {"aiohttp": with_aiohttp, "lean": with_lean, "streams": with_streams}
    results: dict[str, list[float]] = {name: [] for name in clients}
    run = asyncio.run
    if args.loop == "uvloop":  # what Ray's async actors (the agent hosts) run on when uvloop is installed
        import uvloop

        run = uvloop.run
    try:
        for _ in range(args.repeats):  # interleaved
            for name, client in clients.items():
                results[name].append(run(client(server.port, args.calls, args.in_flight)))
    finally:
        server.close()
    text = "\n".join(f"{name}: {statistics.median(v):.3f} ms CPU per call (repeats {', '.join(f'{x:.3f}' for x in v)})"
                     for name, v in results.items())
    print(text)
    if args.out:
        args.out.write_text(f"# HTTP client floor ({time.strftime('%Y-%m-%d')}, {args.loop} event loop)\n\n{text}\n")


if __name__ == "__main__":
    main()
