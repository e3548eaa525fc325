"""`kernelindex mcp`: the MCP server over stdio, for an agent that starts it as a subprocess.

The same server and tools as /mcp (kernelindex.mcp), on a pool, read model and response cache of this
process's own (each kept current by the change log, as the web server's are).
Writes (submit_kernel) carry the token in KERNELINDEX_TOKEN. Stdout is the protocol's channel: nothing
else may be written there (our messages go to stderr, as every command's do).
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime

from kernelindex.cli.common import EXIT_OK, database_url, run_migrations, say
from kernelindex.db.changes import DataVersionReader
from kernelindex.db.embedded import kept_alive
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.graphql.schema import build_schema
from kernelindex.mcp.gateway import Gateway
from kernelindex.mcp.server import GatewaySlot, build_server
from kernelindex.mcp.tools import TOKEN_VARIABLE, stdio_authorization
from kernelindex.services.read_model import ReadModel
from kernelindex.settings import get_settings
from kernelindex.web.response_cache import CachedOperations, ResponseCache

# As the web server's request pool (kernelindex.web.app.STATEMENT_TIMEOUT_MARGIN_S): the database ends a
# statement shortly after the call's own limit has answered.
STATEMENT_TIMEOUT_MARGIN_S = 1.0


def utc_now() -> datetime:
    return datetime.now(UTC)


async def serve_stdio(url: str) -> None:
    settings = get_settings()
    limit_s = settings.request_timeout_s + STATEMENT_TIMEOUT_MARGIN_S if settings.request_timeout_s > 0 else None
    engine = make_engine(url, pool_size=settings.db_pool_size, max_overflow=settings.db_max_overflow,
                         statement_timeout_s=limit_s, idle_in_transaction_timeout_s=limit_s)
    read_model = ReadModel(settings.read_model_workloads)
    response_cache = ResponseCache(settings.response_cache_entries, settings.response_cache_bytes,
                                   settings.response_cache_ttl_s)
    data_version = DataVersionReader(url, listeners=[response_cache.advance, read_model.advance])
    slot = GatewaySlot()
    schema = build_schema(settings)
    slot.gateway = Gateway(schema=schema, sessionmaker=make_sessionmaker(engine), settings=settings,
                           clock=utc_now, read_model=read_model, data_version=data_version.current,
                           cache=CachedOperations(response_cache, data_version.current, utc_now))
    server = build_server(slot, stdio_authorization, schema._schema)
    try:
        await server.run_stdio_async()
    finally:
        await data_version.close()
        await engine.dispose()


def cmd_mcp(args: argparse.Namespace) -> int:
    url = database_url()
    with kept_alive():
        if args.migrate:
            run_migrations(url)
        say("MCP server on stdio" + ("" if stdio_authorization() else f" (no {TOKEN_VARIABLE}: submit_kernel is refused)"))
        asyncio.run(serve_stdio(url))
    return EXIT_OK
