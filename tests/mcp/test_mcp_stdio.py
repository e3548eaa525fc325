"""`kernelindex mcp`: the same server over stdio, started as an agent starts it (a subprocess), through
the SDK's stdio client: the same tools, the same answers as /mcp, and the token from KERNELINDEX_TOKEN."""

from __future__ import annotations

from tests.api.helpers import make_token
from tests.mcp.clients import TOOLS, call, http_session, refused, stdio_session

RESNET = "kernelbench-l3-p9-resnet18"


async def test_stdio_serves_the_same_tools_and_answers_as_http(db_url, live_server):
    async with stdio_session(db_url) as session:
        listed = {tool.name: tool.input_schema for tool in (await session.list_tools()).tools}
        fastest = await call(session, "fastest_implementation", {"workload": RESNET, "hardware": "NVIDIA H100"})
        sources = await call(session, "list_sources")
        anonymous = await refused(session, "submit_kernel", {"workload": RESNET, "source": "x = 1\n", "title": "t",
                                                             "hardware": "cpu"})
    async with http_session(live_server) as session:
        over_http = {tool.name: tool.input_schema for tool in (await session.list_tools()).tools}
        fastest_over_http = await call(session, "fastest_implementation", {"workload": RESNET, "hardware": "NVIDIA H100"})
    assert set(listed) == TOOLS and listed == over_http
    assert fastest == fastest_over_http and fastest["measured"] is True
    assert sources["sources"]
    assert "UNAUTHENTICATED" in anonymous and "Authorization" in anonymous


async def test_stdio_writes_carry_the_token_of_kernelindex_token(db_url):
    async with stdio_session(db_url, await make_token(db_url, "runs:write")) as session:
        forbidden = await refused(session, "submit_kernel", {"workload": RESNET, "source": "x = 1\n", "title": "t",
                                                             "hardware": "cpu"})
    assert "FORBIDDEN" in forbidden and "implementations:submit" in forbidden
