"""Engines and sessions. Sessions never commit on their own: the request middleware or the command
that opened them commits or rolls back, in one place."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import AsyncIterator

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
