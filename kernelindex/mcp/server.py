"""KernelIndex's MCP server: the tools (kernelindex.mcp.tools) on the official SDK's MCPServer, served
over stdio (`kernelindex mcp`) or streamable HTTP at /mcp beside /graphql (kernelindex.web.app).

Over HTTP the server is stateless and answers in JSON: every call is one POST that stands alone, so any
worker process of `serve --workers N` can answer any call (no session lives in one process's memory),
and nothing is left open between calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations
from starlette.types import ASGIApp

from kernelindex.mcp.gateway import Gateway
from kernelindex.mcp.tools import Tools

NAME = "kernelindex"
INSTRUCTIONS = (
    "KernelIndex: the fastest known implementation of a GPU workload, and how far to trust that number. "
    "Find a workload with find_workloads, then ask fastest_implementation for its record on a piece of hardware "
    "(figure, 95% interval, trust level, source and licence), compare_implementations or compare_runs to set them "
    "side by side, workload_semantics for what it computes and its roofline floors, list_sources for each source's "
    "terms. submit_kernel (a token with implementations:submit) queues a measurement; follow_job follows it."
)

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# A submission writes (a job), but the same file for the same subject is the same job.
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class GatewaySlot:
    """Where the server finds its Gateway: set once the process has its database (the web server's
    lifespan, or `kernelindex mcp` once it has connected); the tools are registered before that."""

    def __init__(self) -> None:
        self.gateway: Gateway | None = None

    def __call__(self) -> Gateway:
        if self.gateway is None:
            raise RuntimeError("the MCP server has no database yet")  # a call before start-up: a bug
        return self.gateway


def build_server(gateway: Callable[[], Gateway], authorization: Callable[[Context | None], str | None],
                 version: str = "") -> MCPServer:
    tools = Tools(gateway, authorization)
    # MCPServer configures the root logger (logging.basicConfig with a handler of its own) as it is made: a
    # library's choice to make for a script, not inside our server, whose logging is uvicorn's and the
    # operator's. What the root logger had is put back.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        server: MCPServer = MCPServer(NAME, title="KernelIndex", instructions=INSTRUCTIONS, version=version,
                                      log_level="WARNING")
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    server.add_tool(tools.find_workloads, title="Find workloads", annotations=READ)
    server.add_tool(tools.fastest_implementation, title="Fastest implementation on a hardware", annotations=READ)
    server.add_tool(tools.compare_implementations, title="Compare a workload's implementations", annotations=READ)
    server.add_tool(tools.compare_runs, title="Compare runs", annotations=READ)
    server.add_tool(tools.workload_semantics, title="A workload's semantics and floors", annotations=READ)
    server.add_tool(tools.list_sources, title="Sources and their terms", annotations=READ)
    server.add_tool(tools.submit_kernel, title="Submit a kernel for measurement", annotations=WRITE)
    # Not idempotent in what it answers (a job moves), though it writes nothing.
    server.add_tool(tools.follow_job, title="Follow a measurement job",
                    annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=False,
                                                open_world_hint=False))
    return server


def http_endpoint(server: MCPServer, max_body_bytes: int) -> ASGIApp:
    """The streamable-HTTP endpoint of `server`, to route at /mcp; it answers while `serving(server)` runs."""
    server.streamable_http_app(
        stateless_http=True, json_response=True, max_request_body_size=max_body_bytes,
        # The API is public like /graphql (CORS governs browsers there too): no Host allow-list of the SDK's.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return StreamableHTTPASGIApp(server.session_manager)


@contextlib.asynccontextmanager
async def serving(server: MCPServer) -> AsyncIterator[None]:
    """The streamable-HTTP session manager of `server`, running for as long as the block does.

    The manager holds an anyio task group, which must be left in the task that entered it; an
    application's lifespan may be entered and left in two tasks (a test's async fixture is), so the
    manager runs in a task of its own, started here and stopped when the block ends."""
    started = asyncio.Event()
    stop = asyncio.Event()

    async def run() -> None:
        async with server.session_manager.run():
            started.set()
            await stop.wait()

    task = asyncio.create_task(run(), name="mcp-session-manager")
    ready = asyncio.create_task(started.wait())
    await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():  # it failed to start: say why
        ready.cancel()
        task.result()
    try:
        yield
    finally:
        stop.set()
        await task
