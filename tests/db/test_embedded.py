"""The embedded PostgreSQL: starts, is reused by a second process, keeps data, stops cleanly."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil
import pytest

SCRIPT = textwrap.dedent(
    """
    import json, sys, asyncio, asyncpg
    from pathlib import Path
    from kernelindex.db.embedded import EmbeddedPostgres
    pg = EmbeddedPostgres(Path(sys.argv[1]))
    async def main():
        conn = await asyncpg.connect(pg.url)
        await conn.execute("CREATE TABLE IF NOT EXISTS marks (n int)")
        if sys.argv[2] == "write":
            await conn.execute("INSERT INTO marks VALUES (1)")
        count = await conn.fetchval("SELECT count(*) FROM marks")
        await conn.close()
        return count
    count = asyncio.run(main())
    print(json.dumps({"pid": pg.pid, "count": count}), flush=True)
    if len(sys.argv) > 3:
        sys.stdin.readline()  # hold the server until told to go
    """
)


def _run(data_dir, mode, hold=False):
    args = [sys.executable, "-c", SCRIPT, str(data_dir), mode] + (["hold"] if hold else [])
    return subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


@pytest.fixture
def data_dir():
    # Not pytest's tmp_path: its base folder is 0700 and the server runs as another user.
    path = Path(tempfile.mkdtemp(prefix="kernelindex-test-embedded-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_embedded_server_lifecycle(data_dir):
    tmp_path = data_dir
    holder = _run(tmp_path, "write", hold=True)
    first = json.loads(holder.stdout.readline())
    assert first["count"] == 1
    assert psutil.pid_exists(first["pid"])

    # A second process on the same data directory reuses the running server.
    second = _run(tmp_path, "read")
    out, _ = second.communicate(timeout=60)
    reused = json.loads(out)
    assert reused["pid"] == first["pid"]
    assert reused["count"] == 1
    assert psutil.pid_exists(first["pid"]), "the second process must not stop a server another one holds"

    # When the last holder exits the server stops, cleanly.
    holder.communicate(input="\n", timeout=60)
    deadline = time.monotonic() + 20
    while psutil.pid_exists(first["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not psutil.pid_exists(first["pid"])
    assert not (tmp_path / "pgdata" / "postmaster.pid").exists()

    # The data survives a restart.
    again = _run(tmp_path, "read")
    out, _ = again.communicate(timeout=60)
    assert json.loads(out)["count"] == 1
