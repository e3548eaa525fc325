"""Export pressure: many slow export readers must not starve /healthz or GraphQL.

    python -m perf.export_pressure [--readers 50] [--seconds 40] [--runs 30000] [--probes 200]

Builds the synthetic dataset (perf.dataset) in a temporary embedded PostgreSQL, so that runs.csv is
megabytes (more than the socket buffers hold), starts `kernelindex serve` on it, and connects
--readers clients to /exports/runs.csv that each read a few bytes per second (a small receive buffer,
so the server's writes block on them at once). A refused reader (503) waits its Retry-After and
tries again, so the export slots stay full for the whole run. Meanwhile it measures /healthz
(--probes sequential probes: p50, p99, max, statuses) and an uncached GraphQL query (a list whose
page size changes with every request, so the response cache never answers it).

Prints the figures, and writes them as JSON with --out. A script, not a test: the behaviour is
asserted by tests/reliability/test_web_bounds.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

from perf.dataset import build_dataset
from perf.server import Server

READ_BYTES = 8  # per READ_EVERY_S: a client that reads a few bytes a second
READ_EVERY_S = 0.5
RECEIVE_BUFFER = 4096


class SlowReaders:
    def __init__(self, host: str, port: int, path: str, count: int, until: float):
        self.host, self.port, self.path, self.count, self.until = host, port, path, count, until
        self.outcomes: Counter[str] = Counter()  # 200 (streams started), 503, cut (server ended it early), ...

    async def run(self) -> None:
        await asyncio.gather(*(self._reader() for _ in range(self.count)))

    async def _reader(self) -> None:
        while time.monotonic() < self.until:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)  # before connect: a small window
            sock.setblocking(False)
            try:
                await asyncio.get_running_loop().sock_connect(sock, (self.host, self.port))
                reader, writer = await asyncio.open_connection(sock=sock, limit=RECEIVE_BUFFER)
            except OSError:
                self.outcomes["connect failed"] += 1
                sock.close()
                await asyncio.sleep(1)
                continue
            writer.write(f"GET {self.path} HTTP/1.1\r\nHost: {self.host}\r\nConnection: close\r\n\r\n".encode())
            retry_after = await self._read_slowly(reader)
            writer.close()
            if retry_after is not None:
                await asyncio.sleep(retry_after)

    async def _read_slowly(self, reader: asyncio.StreamReader) -> float | None:
        """Read one response a few bytes at a time; the Retry-After of a refusal, else None."""
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            self.outcomes["no answer"] += 1
            return 1.0
        status = head.split(b" ", 2)[1].decode()
        self.outcomes[status] += 1
        if status != "200":
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"retry-after:"):
                    return float(line.split(b":", 1)[1])
            return 1.0
        tail = b""
        while time.monotonic() < self.until:
            chunk = await reader.read(READ_BYTES)
            if not chunk:
                # chunked encoding ends with 0\r\n\r\n; anything else is an export the server cut off
                self.outcomes["completed" if tail.endswith(b"0\r\n\r\n") else "cut off by the server"] += 1
                return None
            tail = (tail + chunk)[-16:]
            await asyncio.sleep(READ_EVERY_S)
        self.outcomes["still reading at the end"] += 1
        return None


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def probe(url: str, probes: int, gap_s: float, until: float) -> dict:
    health: list[float] = []
    health_status: Counter[int] = Counter()
    gql: list[float] = []
    gql_outcome: Counter[str] = Counter()
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        for i in range(probes):
            started = time.perf_counter()
            try:
                response = await client.get("/healthz")
                health_status[response.status_code] += 1
            except httpx.HTTPError as exc:
                health_status[type(exc).__name__] += 1  # type: ignore[index]
            health.append(time.perf_counter() - started)
            if i % 4 == 0:  # an uncached query: a page size the cache has not seen
                size = 1 + (i // 4) % 100
                started = time.perf_counter()
                try:
                    answer = await client.post("/graphql", json={"query": f"{{ workloads(first: {size}) {{ totalCount nodes {{ slug }} }} }}"})
                    ok = answer.status_code == 200 and "errors" not in answer.json()
                    gql_outcome["ok" if ok else f"{answer.status_code}"] += 1
                except httpx.HTTPError as exc:
                    gql_outcome[type(exc).__name__] += 1
                gql.append(time.perf_counter() - started)
            await asyncio.sleep(gap_s)
    return {
        "healthz": {"probes": len(health), "statuses": {str(k): v for k, v in health_status.items()},
                    "p50_ms": round(percentile(health, 0.5) * 1000, 2), "p99_ms": round(percentile(health, 0.99) * 1000, 2),
                    "max_ms": round(max(health) * 1000, 2)},
        "graphql_uncached": {"requests": len(gql), "outcomes": dict(gql_outcome),
                             "p50_ms": round(percentile(gql, 0.5) * 1000, 2), "p99_ms": round(percentile(gql, 0.99) * 1000, 2),
                             "max_ms": round(max(gql) * 1000, 2)},
    }


def _read_slowly(host: str, port: int, readers: int, seconds: float, out: multiprocessing.Queue) -> None:
    """The slow readers, in a process of their own: 50 connections handled in the prober's event
    loop would delay the probes themselves, and the figure must be the server's latency."""

    async def go() -> dict:
        slow = SlowReaders(host, port, "/exports/runs.csv", readers, time.monotonic() + seconds)
        await slow.run()
        return dict(slow.outcomes)

    out.put(asyncio.run(go()))


async def pressure(url: str, readers: int, seconds: float, probes: int) -> dict:
    host, port = url.removeprefix("http://").split(":")
    until = time.monotonic() + seconds
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue = context.Queue()
    reader_process = context.Process(
        target=_read_slowly, args=(host, int(port), readers, seconds, results), daemon=True)
    reader_process.start()
    await asyncio.sleep(3)  # the export slots fill first
    figures = await probe(url, probes, gap_s=max(0.0, (seconds - 5) / probes - 0.005), until=until)
    figures["export_readers"] = await asyncio.to_thread(results.get, True, seconds + 60)
    reader_process.join(timeout=10)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--readers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--workloads", type=int, default=30)
    parser.add_argument("--runs", type=int, default=30_000)
    parser.add_argument("--export-concurrency", type=int, default=4)
    parser.add_argument("--export-idle-timeout", type=float, default=15.0)
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()

    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade

    with temporary_embedded("kernelindex-exports-") as pg:
        upgrade(pg.url)
        asyncio.run(build_dataset(pg.url, args.workloads, args.runs))
        env = {"KERNELINDEX_EXPORT_CONCURRENCY": str(args.export_concurrency),
               "KERNELINDEX_EXPORT_IDLE_TIMEOUT_S": str(args.export_idle_timeout),
               "KERNELINDEX_ENVIRONMENT": "production"}
        with Server(database_url=pg.url, migrate_and_seed=False, extra_env=env) as server:
            size = len(httpx.get(f"{server.url}/exports/runs.csv", timeout=120).content)
            print(f"runs.csv: {size / 1e6:.1f} MB", file=sys.stderr)
            figures = asyncio.run(pressure(server.url, args.readers, args.seconds, args.probes))
            figures["runs_csv_bytes"] = size
            figures["settings"] = {"readers": args.readers, "seconds": args.seconds, **env}
            log = Path(server.log_path).read_text()
            figures["server_log_cut_offs"] = log.count("cut off")
    print(json.dumps(figures, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2))
    healthy = figures["healthz"]["statuses"] == {"200": figures["healthz"]["probes"]}
    answered = figures["graphql_uncached"]["outcomes"] == {"ok": figures["graphql_uncached"]["requests"]}
    print(f"healthz p50 {figures['healthz']['p50_ms']} ms, p99 {figures['healthz']['p99_ms']} ms; "
          f"uncached GraphQL {figures['graphql_uncached']['outcomes']}; export readers {figures['export_readers']}",
          file=sys.stderr)
    if not (healthy and answered):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
