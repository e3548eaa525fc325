"""Engines and sessions. Sessions never commit on their own: the request middleware or the command
that opened them commits or rolls back, in one place."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from kernelindex.db.urls import to_async_url


def make_engine(database_url: str, *, pool_size: int = 10, max_overflow: int = 10, echo: bool = False) -> AsyncEngine:
    return create_async_engine(
        to_async_url(database_url),
        pool_size=pool_size,
        max_overflow=max_overflow,
        # After a PostgreSQL restart the pool's connections are dead; ping them before use.
        pool_pre_ping=True,
        echo=echo,
    )


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)


@asynccontextmanager
async def transaction(sessionmaker: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """One unit of work: commit when the block succeeds, roll back when it raises."""
    async with sessionmaker() as session:
        try:
            yield session
        except BaseException:
            await session.rollback()
            raise
        else:
            await session.commit()


T = TypeVar("T")


async def in_own_transaction(database_url: str, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """`work(session)` as one transaction on a one-connection engine of its own, disposed after: for
    commands and scripts that do one unit of work against a database URL."""
    engine = make_engine(database_url, pool_size=1, max_overflow=0)
    try:
        async with transaction(make_sessionmaker(engine)) as session:
            return await work(session)
    finally:
        await engine.dispose()
