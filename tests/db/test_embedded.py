"""The embedded PostgreSQL: starts, is reused by a second process, keeps data, stops cleanly."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tests.serving import server_data_dir

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
    with server_data_dir("kernelindex-test-embedded-") as path:
        yield path


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


def test_a_holder_killed_without_letting_go_does_not_keep_the_server_forever(data_dir):
    """The wheel stops the server when its last holder lets go; a holder killed with SIGKILL never
    does, and its pid stays on the list. stop() forgets holders that are gone."""
    from kernelindex.db.embedded import EmbeddedPostgres

    holder = _run(data_dir, "write", hold=True)
    first = json.loads(holder.stdout.readline())
    holder.kill()
    holder.wait()
    assert psutil.pid_exists(first["pid"])  # the server outlives the killed holder, as it must

    ours = EmbeddedPostgres(data_dir)
    assert ours.pid == first["pid"]  # reused
    ours.stop()
    deadline = time.monotonic() + 20
    while ours.is_running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not ours.is_running(), "a dead holder kept the server running"
    assert not (data_dir / "pgdata" / "postmaster.pid").exists()


class FlakyServer:
    """Stands for EmbeddedPostgres in the supervisor: down until `restart` has failed `failures` times."""

    def __init__(self, failures: int):
        self.pgdata = Path("/nowhere/pgdata")
        self.pid = 1234
        self.failures = failures
        self.running = False
        self.attempts: list[float] = []

    def is_running(self) -> bool:
        return self.running

    def restart(self) -> None:
        self.attempts.append(time.monotonic())
        if len(self.attempts) <= self.failures:
            raise RuntimeError("pg_ctl: could not start server")
        self.running = True
        self.pid = 5678


def test_the_supervisor_restarts_with_a_doubling_wait_and_says_so(capsys):
    from kernelindex.db.embedded import Supervisor

    server = FlakyServer(failures=3)
    supervisor = Supervisor(server, interval_s=0.05, max_backoff_s=0.15).start()  # type: ignore[arg-type]
    try:
        deadline = time.monotonic() + 10
        while not server.running and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        supervisor.stop()
    assert server.running and supervisor.restarts == 1
    gaps = [b - a for a, b in zip(server.attempts, server.attempts[1:])]
    # Waits of 0.05, 0.10, then 0.15 (the cap), not a tight loop.
    assert [round(g, 2) >= w for g, w in zip(gaps, (0.05, 0.10, 0.15))] == [True, True, True], gaps
    assert gaps[2] < 0.15 + 0.1, gaps
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "kernelindex: embedded PostgreSQL in /nowhere/pgdata is not running (it was pid 1234); restarting it"
    assert [line.split(":")[1].strip() for line in err[1:4]] == ["restarting embedded PostgreSQL failed (attempt 1)",
                                                                  "restarting embedded PostgreSQL failed (attempt 2)",
                                                                  "restarting embedded PostgreSQL failed (attempt 3)"]
    assert err[4].startswith("kernelindex: embedded PostgreSQL restarted (pid 5678) after ")


def test_a_stopped_supervisor_restarts_nothing():
    """Stopping on purpose: the supervisor is stopped first, so the server it watched stays down."""
    from kernelindex.db.embedded import Supervisor

    server = FlakyServer(failures=0)
    server.running = True
    supervisor = Supervisor(server, interval_s=0.02).start()  # type: ignore[arg-type]
    supervisor.stop()
    server.running = False
    time.sleep(0.1)
    assert server.attempts == [] and supervisor.restarts == 0


def test_the_message_says_whether_it_started_the_server_or_reused_a_running_one(data_dir, monkeypatch, capsys):
    """`kernelindex` on the embedded default says which it did: a server it started stops when it exits; a
    reused one is another process's and keeps running for it."""
    from kernelindex.db import embedded

    pgdata = (data_dir / "pgdata").resolve()
    monkeypatch.setattr(embedded, "_current", None)
    ours = embedded.ensure_embedded(data_dir)
    line = capsys.readouterr().err.strip()
    assert line.startswith(f"kernelindex: started embedded PostgreSQL in {pgdata} (pid {ours.pid}, "), line
    assert not ours.reused
    ours.stop()
    deadline = time.monotonic() + 20
    while ours.is_running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not ours.is_running()

    holder = _run(data_dir, "write", hold=True)
    theirs = json.loads(holder.stdout.readline())
    try:
        monkeypatch.setattr(embedded, "_current", None)
        joined = embedded.ensure_embedded(data_dir)
        assert capsys.readouterr().err.strip() == (
            f"kernelindex: reusing the embedded PostgreSQL already running in {pgdata} (pid {theirs['pid']})")
        assert joined.reused and joined.pid == theirs["pid"]
        joined.stop()
        assert psutil.pid_exists(theirs["pid"]), "letting go of a reused server must not stop it under its holder"
    finally:
        holder.communicate(input="\n", timeout=60)
