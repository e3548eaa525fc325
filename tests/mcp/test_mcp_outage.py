"""A database that does not answer is the API's SERVICE_UNAVAILABLE to an agent too, for a read and for
a write, and never the driver's own words. In-process, through the SDK's own client on the server object."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from mcp.client import Client

from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.graphql.schema import build_schema
from kernelindex.mcp.gateway import Gateway
from kernelindex.mcp.server import GatewaySlot, build_server
from kernelindex.settings import Settings
from tests.serving import free_port


async def test_an_unreachable_database_is_service_unavailable():
    settings = Settings()
    engine = make_engine(f"postgresql+asyncpg://nobody@127.0.0.1:{free_port()}/nothing", pool_size=1, max_overflow=0)
    slot = GatewaySlot()
    schema = build_schema(settings)
    slot.gateway = Gateway(schema=schema, sessionmaker=make_sessionmaker(engine), settings=settings,
                           clock=lambda: datetime.now(UTC))
    server = build_server(slot, lambda _: "Bearer ki_not-a-token", schema._schema)
    try:
        async with Client(server) as client:
            read = await client.call_tool("fastest_implementation", {"workload": "w", "hardware": "NVIDIA H100"})
            write = await client.call_tool("submit_kernel", {"workload": "w", "source": "x = 1\n", "title": "t",
                                                             "hardware": "cpu"})
    finally:
        await engine.dispose()
    for result in (read, write):
        text = result.content[0].text
        assert result.is_error and "SERVICE_UNAVAILABLE" in text, text
        assert "Connect" not in text and "refused" not in text.lower(), text  # the outage said, not the driver's error


async def test_a_call_past_the_time_limit_is_timeout_and_the_next_call_is_answered(db_url):
    """The request timeout holds for a tool's operation as for /graphql: a limit no query can meet ends
    the call as TIMEOUT, its connection discarded, and the pool answers the next call."""
    from kernelindex.mcp import documents
    from kernelindex.mcp.gateway import GatewayError

    engine = make_engine(db_url, pool_size=1, max_overflow=0)
    schema = build_schema(Settings())
    try:
        def gateway(timeout_s: float) -> Gateway:
            return Gateway(schema=schema, sessionmaker=make_sessionmaker(engine),
                           settings=Settings(request_timeout_s=timeout_s), clock=lambda: datetime.now(UTC))

        variables = {"workload": "kernelbench-l3-p9-resnet18", "hardware": "NVIDIA H100", "first": 1}
        with pytest.raises(GatewayError) as refused:
            await gateway(1e-6).execute(documents.FASTEST, variables)
        assert refused.value.code == "TIMEOUT" and "longer than" in refused.value.message
        data = await gateway(30).execute(documents.FASTEST, variables)
        assert data["records"]["nodes"][0]["records"][0]["latencyMs"] == 1.39
    finally:
        await engine.dispose()
