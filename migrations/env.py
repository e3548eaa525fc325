"""Alembic environment: runs migrations over an async engine (asyncpg)."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy.ext.asyncio import create_async_engine

from kernelindex.db.models import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.attributes.get("database_url") or config.get_main_option("sqlalchemy.url")
    if not url:
        from kernelindex.db.embedded import resolve_database_url
        from kernelindex.settings import get_settings

        url = resolve_database_url(get_settings())
    from kernelindex.db.urls import to_async_url

    return to_async_url(url)


def include_name(name, type_, parent_names) -> bool:
    """procrastinate's tables (applied from its own schema by 0011) are not ours to compare."""
    return not (type_ == "table" and name is not None and name.startswith("procrastinate_"))


def _run_sync(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, compare_type=True, include_name=include_name)
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        await connection.run_sync(_run_sync)
        return
    engine = create_async_engine(_url())
    async with engine.connect() as conn:
        await conn.run_sync(_run_sync)
        await conn.commit()
    await engine.dispose()


def run_migrations_online() -> None:
    connection = config.attributes.get("sync_connection")
    if connection is not None:
        _run_sync(connection)
    else:
        asyncio.run(_run_async())


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
