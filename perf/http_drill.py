"""HTTP drill: request heads that are too big or too slow, against `kernelindex serve` on loopback.

    python -m perf.http_drill                                  # the issue's attacks, about a minute
    python -m perf.http_drill --slow 150 --big 3 --big-mib 24 --watch 30

It starts `kernelindex serve` (its own embedded PostgreSQL in a temporary folder, perf/server.py) on a
free 127.0.0.1 port, and nothing else is contacted. Then, one after the other:

1. a request with one 200 KB header line (the issue saw it answered 200): its status;
2. --big connections each sending --big-mib MiB of one unterminated header line as fast as the
   server reads it (the issue saw three of 24 MiB stay open and grow the server by 72-118 MiB): the
   status each got, how many bytes the server took before refusing, and how long that took;
3. --slow connections sending a request head one byte every --byte-every seconds (slowloris; the
   issue saw 150 still open after 30 s): when the server closed each (seconds after it connected),
   while a client keeps asking /healthz and a GraphQL query, whose latencies are reported.

Throughout, the server process's resident memory is sampled: before, at its highest, and after.
Exit status 1 when a bound does not hold: a head over 64 KiB not refused with 431, a slow connection
still open --watch seconds after it began, the server grown by more than --max-growth-mib, or a
normal request failing or slower than --max-latency-s during the attack. Every loop is bounded by
its own deadline.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

import httpx
import psutil

from perf.server import Server

HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
QUERY = {"query": "{ policy { version } }"}


class Memory:
    """The server process's RSS, sampled every `every_s` seconds by a task until stopped (MiB)."""

    def __init__(self, pid: int, every_s: float = 0.1):
        self.process = psutil.Process(pid)
        self.every_s = every_s
        self.samples: list[float] = []
        self.task: asyncio.Task | None = None

    def now(self) -> float:
        return self.process.memory_info().rss / 2**20

    async def _run(self) -> None:
        while True:
            self.samples.append(self.now())
            await asyncio.sleep(self.every_s)

    def __enter__(self) -> Memory:
        self.task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc) -> None:
        assert self.task is not None
        self.task.cancel()


async def _answer(reader: asyncio.StreamReader, limit_s: float) -> tuple[bytes, float | None]:
    """What the server sends until it closes the connection (or `limit_s` passes), and when it closed
    (seconds from the call; None if it had not)."""
    started = time.monotonic()
    received = b""
    deadline = started + limit_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            chunk = await asyncio.wait_for(reader.read(65536), timeout=left)
        except TimeoutError:
            return received, None
        except (ConnectionResetError, BrokenPipeError):
            return received, time.monotonic() - started
        if not chunk:
            return received, time.monotonic() - started
        received += chunk[: max(0, 4096 - len(received))]  # the status line and a little: all a drill reads
    return received, None


def _status(answer: bytes) -> str:
    first = answer.split(b"\r\n", 1)[0].decode("latin-1")
    return first.split(" ", 2)[1] if first.startswith("HTTP/") and " " in first else ("closed" if not answer else "?")


async def big_line(port: int, size: int) -> dict:
    """One request whose one header line is `size` bytes, sent whole."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        writer.write(HEAD + b"X-Big: " + b"a" * size + b"\r\nConnection: close\r\n\r\n")
        try:
            await asyncio.wait_for(writer.drain(), timeout=10)
        except (ConnectionResetError, BrokenPipeError, TimeoutError):
            pass
        answer, _ = await _answer(reader, 10)
    finally:
        writer.close()
    return {"header_bytes": size, "status": _status(answer), "answered_in_s": round(time.monotonic() - started, 3)}


async def endless_line(port: int, mib: int, limit_s: float) -> dict:
    """One connection sending `mib` MiB of one header line, never ending it, as fast as it is taken."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    sent = 0
    answer = b""
    closed_after = None
    piece = b"z" * 65536
    try:
        writer.write(HEAD + b"X-Endless: ")
        reading = asyncio.ensure_future(_answer(reader, limit_s))
        while sent < mib * 2**20 and not reading.done() and time.monotonic() - started < limit_s:
            writer.write(piece)
            try:
                await asyncio.wait_for(writer.drain(), timeout=1)
            except TimeoutError:
                continue  # the server stopped reading: wait for its answer, or the deadline
            except (ConnectionResetError, BrokenPipeError):
                break
            sent += len(piece)
        answer, closed_after = await reading
    finally:
        writer.close()
    return {"sent_bytes": sent, "status": _status(answer),
            "closed_after_s": None if closed_after is None else round(closed_after, 2)}


async def slow_head(port: int, byte_every_s: float, watch_s: float) -> dict:
    """A connection sending a request head one byte at a time: when the server closed it, and what it said."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    head = HEAD + b"X-Slow: " + b"s" * 10_000
    reading = asyncio.ensure_future(_answer(reader, watch_s))
    try:
        for byte in head:
            if reading.done() or time.monotonic() - started > watch_s:
                break
            writer.write(bytes([byte]))
            try:
                await writer.drain()
            except (ConnectionResetError, BrokenPipeError):
                break
            await asyncio.sleep(byte_every_s)
        answer, _ = await reading
    finally:
        writer.close()
    closed = reading.result()[1]
    return {"status": _status(answer), "closed_after_s": None if closed is None else round(closed, 2)}


async def normal_traffic(url: str, stop: asyncio.Event, every_s: float = 0.1, most: int = 2000) -> dict:
    """/healthz and a small GraphQL query, alternately, on fresh connections, until `stop`: latencies and failures."""
    latencies: list[float] = []
    failures: list[str] = []
    async with httpx.AsyncClient(base_url=url, timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        for i in range(most):
            if stop.is_set():
                break
            started = time.monotonic()
            try:
                response = await (client.get("/healthz") if i % 2 == 0 else client.post("/graphql", json=QUERY))
                if response.status_code != 200:
                    failures.append(f"status {response.status_code}")
            except httpx.HTTPError as exc:
                failures.append(type(exc).__name__)
            latencies.append(time.monotonic() - started)
            await asyncio.sleep(every_s)
    latencies.sort()
    return {
        "requests": len(latencies), "failures": len(failures), "failure_kinds": sorted(set(failures)),
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000, 1) if latencies else None,
        "max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
    }


async def drill(server: Server, args: argparse.Namespace) -> dict:
    port = server.port
    memory = Memory(server.pid)
    quiet = asyncio.Event()
    baseline_stop = asyncio.Event()
    baseline_task = asyncio.ensure_future(normal_traffic(server.url, baseline_stop))
    await asyncio.sleep(3)
    baseline_stop.set()
    report: dict = {"baseline": await baseline_task, "rss_before_mib": round(memory.now(), 1)}
    with memory:
        report["big_header"] = await big_line(port, 200_000)
        report["small_header"] = await big_line(port, 60_000)
        report["endless_lines"] = await asyncio.gather(*(endless_line(port, args.big_mib, 30) for _ in range(args.big)))
        peak_after_big = max(memory.samples)
        traffic = asyncio.ensure_future(normal_traffic(server.url, quiet))
        started = time.monotonic()
        # Connections opened in a burst of --slow, as the attack did.
        slow = await asyncio.gather(*(slow_head(port, args.byte_every, args.watch) for _ in range(args.slow)))
        report["slow_heads_done_in_s"] = round(time.monotonic() - started, 1)
        quiet.set()
        report["traffic_during_slow_heads"] = await traffic
    await asyncio.sleep(1)
    closed = sorted(s["closed_after_s"] for s in slow if s["closed_after_s"] is not None)
    report["slow_heads"] = {
        "connections": len(slow), "closed": len(closed), "still_open_at_watch_end": len(slow) - len(closed),
        "statuses": {status: sum(s["status"] == status for s in slow) for status in sorted({s["status"] for s in slow})},
        "closed_after_s_min": closed[0] if closed else None, "closed_after_s_median": statistics.median(closed) if closed else None,
        "closed_after_s_max": closed[-1] if closed else None,
    }
    report["rss_peak_during_big_mib"] = round(peak_after_big, 1)
    report["rss_peak_mib"] = round(max(memory.samples), 1)
    report["rss_after_mib"] = round(memory.now(), 1)
    report["rss_growth_peak_mib"] = round(report["rss_peak_mib"] - report["rss_before_mib"], 1)
    return report


def problems(report: dict, args: argparse.Namespace) -> list[str]:
    found = []
    if report["big_header"]["status"] != "431":
        found.append(f"a 200 KB header line was answered {report['big_header']['status']}, not 431")
    if report["small_header"]["status"] != "200":
        found.append(f"a 60 KB header line was answered {report['small_header']['status']}, not 200")
    for line in report["endless_lines"]:
        if line["status"] != "431" or line["closed_after_s"] is None:
            found.append(f"an endless header line got {line['status']}, closed after {line['closed_after_s']} s")
    if report["slow_heads"]["still_open_at_watch_end"]:
        found.append(f"{report['slow_heads']['still_open_at_watch_end']} slow heads still open after {args.watch} s")
    if report["rss_growth_peak_mib"] > args.max_growth_mib:
        found.append(f"the server grew by {report['rss_growth_peak_mib']} MiB (limit {args.max_growth_mib})")
    traffic = report["traffic_during_slow_heads"]
    if traffic["failures"]:
        found.append(f"{traffic['failures']} normal requests failed during the attack: {traffic['failure_kinds']}")
    if traffic["max_ms"] is not None and traffic["max_ms"] > args.max_latency_s * 1000:
        found.append(f"a normal request took {traffic['max_ms']} ms during the attack (limit {args.max_latency_s * 1000:g})")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow", type=int, default=150, help="slow-head connections (default 150)")
    parser.add_argument("--byte-every", type=float, default=1.0, help="seconds between a slow head's bytes (default 1)")
    parser.add_argument("--watch", type=float, default=30, help="how long a slow head is watched, in s (default 30)")
    parser.add_argument("--big", type=int, default=3, help="connections sending an endless header line (default 3)")
    parser.add_argument("--big-mib", type=int, default=24, help="MiB each endless line tries to send (default 24)")
    parser.add_argument("--max-growth-mib", type=float, default=40, help="server memory growth allowed (default 40 MiB)")
    parser.add_argument("--max-latency-s", type=float, default=1.0, help="slowest normal request allowed (default 1 s)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = parser.parse_args(argv)
    if not (1 <= args.slow <= 1000 and 0 <= args.big <= 16 and 1 <= args.big_mib <= 256 and 1 <= args.watch <= 120):
        parser.error("--slow 1-1000, --big 0-16, --big-mib 1-256, --watch 1-120")
    with Server() as server:
        report = asyncio.run(drill(server, args))
    found = problems(report, args)
    report["problems"] = found
    if args.json:
        print(json.dumps(report))
    else:
        print(json.dumps(report, indent=2))
        print("OK: every bound held" if not found else "FAILED:\n  " + "\n  ".join(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
