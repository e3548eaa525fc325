"""MCP tool latency (not a test): 'fastest on H100' through the MCP server, p50/p95 over N calls.

    python -m perf.mcp_latency [--calls 100] [--hardware "NVIDIA H100"] [--stdio]

Starts `kernelindex serve --migrate --seed` as the README does (perf.server: a temporary embedded
PostgreSQL), connects the MCP SDK's own client to /mcp (streamable HTTP; one ClientSession, as an agent
keeps one), warms up (10 calls, discarded), then times `--calls` calls of fastest_implementation for
the seed's ResNet18 on the hardware named, one after another, each from the call to its answer
(client-side wall time, so it includes the JSON-RPC framing and the HTTP round trip). For reference it
times the same GraphQL operation the tool runs (kernelindex.mcp.documents.FASTEST) POSTed to /graphql
with httpx: the difference is what the MCP layer costs. With --stdio it also times the same calls over
`kernelindex mcp` (a subprocess on the same database).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

import httpx
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from kernelindex.mcp.documents import FASTEST
from perf.server import REPO, Server

WORKLOAD = "kernelbench-l3-p9-resnet18"
WARMUP = 10


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def timed(calls: int, one: Callable[[], Awaitable[None]]) -> list[float]:
    for _ in range(WARMUP):
        await one()
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        await one()
        out.append((time.perf_counter() - start) * 1000)
    return out


def report(name: str, ms: list[float]) -> None:
    print(f"{name:<34} n={len(ms):<4} p50 {percentile(ms, 0.5):7.2f} ms  p95 {percentile(ms, 0.95):7.2f} ms  "
          f"mean {statistics.fmean(ms):7.2f} ms  max {max(ms):7.2f} ms")


async def through_session(session: ClientSession, calls: int, hardware: str) -> list[float]:
    arguments = {"workload": WORKLOAD, "hardware": hardware}

    async def one() -> None:
        result = await session.call_tool("fastest_implementation", arguments)
        if result.is_error or not (result.structured_content or {}).get("measured"):
            raise SystemExit(f"fastest_implementation did not answer a record: {result.content}")

    return await timed(calls, one)


async def main(args: argparse.Namespace) -> None:
    with Server() as server:
        async with streamable_http_client(f"{server.url}/mcp") as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            report("MCP streamable HTTP (/mcp)", await through_session(session, args.calls, args.hardware))

        async with httpx.AsyncClient(base_url=server.url) as client:
            body = {"query": FASTEST.text, "operationName": FASTEST.name,
                    "variables": {"workload": WORKLOAD, "hardware": args.hardware, "first": 3}}

            async def one() -> None:
                answer = (await client.post("/graphql", json=body)).json()
                if answer.get("errors"):
                    raise SystemExit(f"/graphql answered errors: {answer['errors']}")

            report("same operation on /graphql", await timed(args.calls, one))

        if args.stdio:
            # The server's environment: `kernelindex mcp` finds the same database (its embedded PostgreSQL
            # through the same data folder).
            params = StdioServerParameters(command=sys.executable, args=["-m", "kernelindex.cli", "mcp"],
                                           env=dict(server.env), cwd=REPO)
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                report("MCP stdio (kernelindex mcp)", await through_session(session, args.calls, args.hardware))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100, help="timed calls per transport")
    parser.add_argument("--hardware", default="NVIDIA H100", help="the hardware asked about")
    parser.add_argument("--stdio", action="store_true", help="also time the calls over stdio")
    asyncio.run(main(parser.parse_args()))
