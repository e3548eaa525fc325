"""`kernelindex serve` on the embedded PostgreSQL keeps it alive and takes it down with itself.

Each test starts the real command in a subprocess, on a data folder of its own (KERNELINDEX_DATA_DIR)
and no KERNELINDEX_DATABASE_URL, as an operator would run it:

- the postmaster killed with SIGKILL: /healthz answers 503 while it is down, then 200 again within
  RECOVERY_LIMIT_S, and a GraphQL query works (the supervisor restarted it, and said so);
- the serve process stopped with SIGTERM (systemd, docker) or SIGINT (Ctrl+C), with one worker or
  several: it exits 0 and no PostgreSQL process of its folder is left (no orphan).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.serving import free_port, server_data_dir

REPO = Path(__file__).resolve().parents[2]
RECOVERY_LIMIT_S = 10.0
STOP_LIMIT_S = 10.0
QUERY = {"query": "{ workloads(first: 1) { totalCount } }"}


@pytest.fixture
def data_dir():
    with server_data_dir("kernelindex-test-healing-") as path:
        yield path


def live_postgres(pid: int) -> bool:
    """A killed process nobody reaps stays a zombie: it is gone all the same."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def postmaster_pid(data_dir: Path) -> int | None:
    try:
        return int((data_dir / "pgdata" / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def servers_on(data_dir: Path) -> list[psutil.Process]:
    """Live postgres processes whose command line names this folder (the postmaster does)."""
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            if process.info["name"] == "postgres" and str(data_dir) in " ".join(process.info["cmdline"] or []) \
                    and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            pass
    return found


class Serve:
    """`kernelindex serve --migrate` in a subprocess; its output goes to a log file the failures show."""

    def __init__(self, data_dir: Path, workers: int = 1):
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
        env["KERNELINDEX_DATA_DIR"] = str(data_dir)
        self.log_path = data_dir / "serve.log"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelindex.cli", "serve", "--migrate", "--port", str(self.port),
             "--workers", str(workers), "--log-level", "warning"],
            env=env, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text()

    def health(self) -> int | None:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=3).status_code
        except httpx.HTTPError:
            return None

    def wait_healthy(self, limit_s: float) -> float:
        started = time.monotonic()
        while time.monotonic() - started < limit_s:
            assert self.proc.poll() is None, self.log()
            if self.health() == 200:
                return time.monotonic() - started
            time.sleep(0.1)
        raise AssertionError(f"/healthz not 200 within {limit_s} s:\n{self.log()}")

    def stop(self, sig: int) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=STOP_LIMIT_S)
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
        for process in servers_on(self.data_dir):  # whatever a failed test left: never an orphan
            process.kill()


def assert_stopped_cleanly(serve: Serve, sig: int, postmaster: int) -> None:
    children = psutil.Process(postmaster).children()
    started = time.monotonic()
    code = serve.stop(sig)
    took = time.monotonic() - started
    assert code == 0, serve.log()
    deadline = time.monotonic() + STOP_LIMIT_S
    while (live_postgres(postmaster) or servers_on(serve.data_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not live_postgres(postmaster), f"the postmaster outlived `serve` stopped by {sig!r}:\n{serve.log()}"
    assert servers_on(serve.data_dir) == []
    assert not any(live_postgres(c.pid) for c in children), "a PostgreSQL backend outlived its server"
    assert not (serve.data_dir / "pgdata" / "postmaster.pid").exists(), "not a clean shutdown"
    print(f"serve stopped by {signal.Signals(sig).name} in {took:.2f} s, its PostgreSQL with it")


def test_a_killed_postmaster_is_restarted_and_sigterm_stops_it(data_dir):
    serve = Serve(data_dir)
    try:
        serve.wait_healthy(90)
        first = postmaster_pid(data_dir)
        assert first is not None and live_postgres(first)

        os.kill(first, signal.SIGKILL)
        killed = time.monotonic()
        statuses = []
        while time.monotonic() - killed < RECOVERY_LIMIT_S:
            statuses.append(serve.health())
            if statuses[-1] == 200:
                break
            time.sleep(0.1)
        recovered = time.monotonic() - killed
        assert statuses[-1] == 200, f"not healthy {RECOVERY_LIMIT_S} s after the kill: {statuses}\n{serve.log()}"
        assert 503 in statuses, f"the outage was never seen as a 503: {statuses}"
        assert set(statuses) <= {503, 200}, statuses  # a 503, never a 500 or a dropped connection

        second = postmaster_pid(data_dir)
        assert second is not None and second != first and live_postgres(second)
        response = httpx.post(f"{serve.url}/graphql", json=QUERY, timeout=10)
        assert response.status_code == 200 and "errors" not in response.json(), response.text
        assert response.json()["data"]["workloads"]["totalCount"] == 0  # migrated, not seeded
        # The supervisor says so once start() returns, which may be just after the server first answers.
        deadline = time.monotonic() + 10
        while f"embedded PostgreSQL restarted (pid {second})" not in serve.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        log = serve.log()
        assert f"is not running (it was pid {first}); restarting it" in log
        assert f"embedded PostgreSQL restarted (pid {second})" in log
        print(f"healthy again {recovered:.2f} s after SIGKILL of the postmaster")

        assert_stopped_cleanly(serve, signal.SIGTERM, second)
        assert "stopped (SIGTERM)" in serve.log()
    finally:
        serve.close()


@pytest.mark.parametrize(("sig", "workers"), [(signal.SIGINT, 1), (signal.SIGTERM, 2), (signal.SIGINT, 2)],
                         ids=["SIGINT-1-worker", "SIGTERM-2-workers", "SIGINT-2-workers"])
def test_stopping_serve_stops_its_postgres(data_dir, sig, workers):
    serve = Serve(data_dir, workers=workers)
    try:
        serve.wait_healthy(90)
        postmaster = postmaster_pid(data_dir)
        assert postmaster is not None and live_postgres(postmaster)
        assert_stopped_cleanly(serve, sig, postmaster)
    finally:
        serve.close()
