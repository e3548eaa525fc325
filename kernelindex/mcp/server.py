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
import types
from collections.abc import AsyncIterator, Callable
from typing import Any

from graphql import GraphQLSchema
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations
from starlette.types import ASGIApp

from kernelindex.mcp.answers import compact
from kernelindex.mcp.gateway import Gateway
from kernelindex.mcp.tools import Tools, tool_answers

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


def answering(method: Any, answer: Any) -> Any:
    """`method` (a bound tool) with `answer` as its return annotation, from which the SDK makes the tool's
    output schema and checks each answer: a copy of its function, so the class keeps its own annotations."""
    function = method.__func__
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__doc__ = function.__doc__
    copy.__qualname__ = function.__qualname__
    copy.__annotations__ = {**function.__annotations__, "return": answer}
    return types.MethodType(copy, method.__self__)


def build_server(gateway: Callable[[], Gateway], authorization: Callable[[Context | None], str | None],
                 schema: GraphQLSchema, version: str = "") -> MCPServer:
    """The server, its tools answering through `gateway`; `schema` (the API's, graphql-core's form) types
    their answers."""
    tools = Tools(gateway, authorization)
    answers = tool_answers(schema)
    titles = {
        "find_workloads": ("Find workloads", READ),
        "fastest_implementation": ("Fastest implementation on a hardware", READ),
        "compare_implementations": ("Compare a workload's implementations", READ),
        "compare_runs": ("Compare runs", READ),
        "workload_semantics": ("A workload's semantics and floors", READ),
        "list_sources": ("Sources and their terms", READ),
        "submit_kernel": ("Submit a kernel for measurement", WRITE),
        # Not idempotent in what it answers (a job moves), though it writes nothing.
        "follow_job": ("Follow a measurement job", ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                                   idempotent_hint=False, open_world_hint=False)),
    }
    registered = []
    for name, (title, hints) in titles.items():
        tool = Tool.from_function(answering(getattr(tools, name), answers[name]), title=title, annotations=hints,
                                  structured_output=True)
        # The schema tools/list sends, shorter (kernelindex.mcp.answers.compact); answers are still checked
        # against the type it was made from (the SDK reads these fields as it lists and calls).
        assert tool.fn_metadata.output_schema is not None  # structured: every tool answers a TypedDict
        tool.fn_metadata.output_schema = compact(tool.fn_metadata.output_schema)
        registered.append(tool)
    # MCPServer configures the root logger (logging.basicConfig with a handler of its own) as it is made: a
    # library's choice to make for a script, not inside our server, whose logging is uvicorn's and the
    # operator's. What the root logger had is put back.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        server: MCPServer = MCPServer(NAME, title="KernelIndex", instructions=INSTRUCTIONS, version=version,
                                      log_level="WARNING", tools=registered)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
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
