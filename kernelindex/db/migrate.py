"""Applying Alembic migrations from code (the CLI, the test suite)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from alembic import command
from alembic.config import Config

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent.parent / "migrations"


def alembic_config(database_url: str | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if database_url:
        cfg.attributes["database_url"] = database_url
    return cfg


def upgrade_with_connection(sync_connection: Connection, revision: str = "head") -> None:
    """Run inside an existing (sync-facing) connection, e.g. from AsyncConnection.run_sync."""
    cfg = alembic_config()
    cfg.attributes["sync_connection"] = sync_connection
    command.upgrade(cfg, revision)


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)
