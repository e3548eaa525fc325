"""The MCP SDK's own client over both transports, for the tests: a ClientSession on streamable HTTP (a
live server's /mcp) or on stdio (`kernelindex mcp` as a subprocess), and a call's answer read back."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
TOOLS = {"find_workloads", "fastest_implementation", "compare_implementations", "compare_runs", "workload_semantics",
         "list_sources", "submit_kernel", "follow_job"}


@asynccontextmanager
async def http_session(base_url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    # The SDK's HTTP client (httpx2), with the token, as its streamable_http_client says to pass one.
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http, \
            streamable_http_client(f"{base_url}/mcp", http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(db_url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
    env["KERNELINDEX_DATABASE_URL"] = db_url
    if token:
        env["KERNELINDEX_TOKEN"] = token
    server = StdioServerParameters(command=sys.executable, args=["-m", "kernelindex.cli", "mcp"], env=env, cwd=REPO)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A call that must succeed: its structured answer (the same JSON as its text content)."""
    result = await session.call_tool(tool, arguments or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content
    return result.structured_content


async def refused(session: ClientSession, tool: str, arguments: dict[str, Any]) -> str:
    """A call that must fail: the error's text."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return result.content[0].text  # type: ignore[union-attr]
