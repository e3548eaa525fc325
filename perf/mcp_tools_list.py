"""What `tools/list` weighs (not a test): the MCP server's tools as the SDK's own client lists them.

    python -m perf.mcp_tools_list

Builds the server in-process (no database: listing reads only the GraphQL schema), lists its tools
through the SDK's Client (in-memory transport) and prints the bytes of the result as the SDK
serialises it, then each tool's share: its input schema, its output schema and its description.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from mcp.client.client import Client

from kernelindex.graphql.schema import build_schema
from kernelindex.mcp.server import GatewaySlot, build_server
from kernelindex.mcp.tools import http_authorization
from kernelindex.settings import Settings


def size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


async def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    server = build_server(GatewaySlot(), http_authorization, build_schema(Settings())._schema)
    async with Client(server) as client:
        listed = await client.list_tools()
    print(f"tools/list: {len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())} bytes "
          f"({len(listed.tools)} tools)")
    for tool in listed.tools:
        print(f"  {tool.name:24} input {size(tool.input_schema):6} output {size(tool.output_schema):6} "
              f"description {len((tool.description or '').encode()):5}")

if __name__ == "__main__":
    asyncio.run(main())
