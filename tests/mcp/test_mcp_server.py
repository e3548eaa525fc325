"""What building the MCP server leaves alone: the process's root logger (the SDK's MCPServer would
configure it as it is made)."""

from __future__ import annotations

import logging

from kernelindex.graphql.schema import build_schema
from kernelindex.mcp.server import GatewaySlot, build_server
from kernelindex.mcp.tools import http_authorization
from kernelindex.settings import Settings


def test_building_the_server_leaves_the_root_logger_as_it_was():
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    root.handlers[:] = []  # as in `kernelindex serve`, where nothing configured it (pytest did, here)
    root.setLevel(logging.ERROR)
    try:
        build_server(GatewaySlot(), http_authorization, build_schema(Settings())._schema)
        assert (root.handlers, root.level) == ([], logging.ERROR)
    finally:
        root.handlers[:] = saved
        root.setLevel(level)
