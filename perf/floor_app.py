"""The floor perf.api_speed measures the API against: a plain Starlette endpoint per query that runs
the same SQL statements as an executed GraphQL request (captured from the real app), with asyncpg in
one transaction, and returns the same JSON bytes. What is left between it and the API is the cost of
the API's own machinery (GraphQL parsing and execution, SQLAlchemy, middleware).

    FLOOR_SQL=sql.json FLOOR_BODIES='{"page": "page.json"}' FLOOR_DSN=postgresql://… \\
        python -m uvicorn perf.floor_app:app --port 8001

FLOOR_SQL: a JSON file {query name: [[statement, [arguments]], …]}; FLOOR_BODIES: a JSON object
{query name: file with the response body}; FLOOR_DSN: a libpq URL. Each query answers at
GET /q/{name}. The files are read at startup, not at import.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import asyncpg
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def load_queries() -> tuple[dict[str, list], dict[str, bytes]]:
    """The statements and the response body of each query, from the files the environment names."""
    sql = json.loads(Path(os.environ["FLOOR_SQL"]).read_text())
    bodies = {name: Path(path).read_bytes() for name, path in json.loads(os.environ["FLOOR_BODIES"]).items()}
    return sql, bodies


@contextlib.asynccontextmanager
async def lifespan(app: Starlette):
    app.state.sql, app.state.bodies = load_queries()  # before serving: nothing else runs on the loop yet
    app.state.pool = await asyncpg.create_pool(os.environ["FLOOR_DSN"], min_size=4, max_size=10)
    try:
        yield
    finally:
        await app.state.pool.close()


async def query(request: Request) -> Response:
    name = request.path_params["name"]
    state = request.app.state
    async with state.pool.acquire() as conn, conn.transaction():
        for statement, args in state.sql[name]:
            await conn.fetch(statement, *args)
    return Response(state.bodies[name], media_type="application/json")


app = Starlette(routes=[Route("/q/{name}", query)], lifespan=lifespan)
