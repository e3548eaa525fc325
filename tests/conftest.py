"""Test fixtures: a real PostgreSQL (embedded, or KERNELINDEX_DATABASE_URL), the schema built by the
Alembic migrations, the seed loaded once into a template database, and a fresh copy of that template
for every test that touches the database."""

from __future__ import annotations

import asyncio
import itertools
import os
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from kernelindex.db.urls import to_libpq_url

FIXED_NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TEMPLATE_DB = "kernelindex_test_template"
_counter = itertools.count()


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(to_libpq_url(url))
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


async def _admin(url: str, *statements: str) -> None:
    conn = await asyncpg.connect(_with_database(url, "postgres"))
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory) -> str:
    """A server URL; databases are made per test."""
    external = os.environ.get("KERNELINDEX_DATABASE_URL")
    if external:
        yield external
        return
    from kernelindex.db.embedded import temporary_embedded

    with temporary_embedded("kernelindex-test-pg-") as server:
        yield server.url


@pytest.fixture(scope="session")
def template_url(pg_url) -> str:
    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.seed import seed_database

    asyncio.run(_admin(pg_url, f'DROP DATABASE IF EXISTS "{TEMPLATE_DB}"', f'CREATE DATABASE "{TEMPLATE_DB}"'))
    url = _with_database(pg_url, TEMPLATE_DB)
    upgrade(url)
    asyncio.run(seed_database(url))
    yield url
    asyncio.run(_admin(pg_url, f'DROP DATABASE IF EXISTS "{TEMPLATE_DB}"'))


def _fresh_database(pg_url: str, template: str | None) -> str:
    name = f"kernelindex_test_{os.getpid()}_{next(_counter)}"
    source = f' TEMPLATE "{template}"' if template else ""
    asyncio.run(_admin(pg_url, f'CREATE DATABASE "{name}"{source}'))
    return name


@pytest.fixture
def db_url(pg_url, template_url) -> str:
    """A database of its own for this test: migrated and seeded (a copy of the template)."""
    name = _fresh_database(pg_url, TEMPLATE_DB)
    yield _with_database(pg_url, name)
    asyncio.run(_admin(pg_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def second_db_url(pg_url, template_url) -> str:
    """Another database of its own, like db_url's: for a test that compares two histories (both orders)."""
    name = _fresh_database(pg_url, TEMPLATE_DB)
    yield _with_database(pg_url, name)
    asyncio.run(_admin(pg_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def empty_db_url(pg_url) -> str:
    """A database of its own with nothing in it: not even the schema."""
    name = _fresh_database(pg_url, None)
    yield _with_database(pg_url, name)
    asyncio.run(_admin(pg_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def engine(db_url):
    from kernelindex.db.engine import make_engine

    engine = make_engine(db_url, pool_size=2, max_overflow=2)
    yield engine
    await engine.dispose()


@pytest.fixture
async def session(engine):
    from kernelindex.db.engine import make_sessionmaker

    async with make_sessionmaker(engine)() as session:
        yield session
        await session.rollback()


@pytest.fixture
async def app(db_url):
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    application = create_app(Settings(), database_url=db_url, clock=lambda: FIXED_NOW)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app):
    import httpx

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


@pytest.fixture
def graphql(client):
    async def run(query: str, variables: dict | None = None, expect_errors: bool = False) -> dict:
        response = await client.post("/graphql", json={"query": query, "variables": variables or {}})
        body = response.json()
        if not expect_errors:
            assert "errors" not in body, body.get("errors")
            return body["data"]
        return body

    return run


@pytest.fixture
def count_statements():
    """Counts SQL statements sent through an engine while the block runs."""
    from contextlib import contextmanager

    from sqlalchemy import event

    @contextmanager
    def counting(engine):
        statements: list[str] = []

        def before(conn, cursor, statement, parameters, context, executemany):
            statements.append(statement)

        event.listen(engine.sync_engine, "before_cursor_execute", before)
        try:
            yield statements
        finally:
            event.remove(engine.sync_engine, "before_cursor_execute", before)

    return counting


REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_KERNELBENCH = REPO_ROOT.parent / "shared" / "kernelbench"


@pytest.fixture
def live_server(db_url):
    """The app served by uvicorn on a free loopback port, in a thread; yields its base URL."""
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from tests.serving import serve_in_thread

    with serve_in_thread(create_app(Settings(), database_url=db_url, clock=lambda: FIXED_NOW)) as url:
        yield url


@pytest.fixture
def cli(db_url, monkeypatch):
    """Run `kernelindex …` in-process against this test's database; returns (exit status, stdout, stderr)."""
    from kernelindex.cli.main import main
    from kernelindex.settings import get_settings

    monkeypatch.setenv("KERNELINDEX_DATABASE_URL", db_url)
    get_settings.cache_clear()

    def run(*args: str, capsys=None) -> int:
        return main(list(args))

    yield run
    get_settings.cache_clear()
