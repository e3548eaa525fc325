"""The CPU time a PostgreSQL server spends, beside the wall time of what a perf script times.

On this 2-core machine a command's wall time is, at best, the larger of its own CPU time and the
server's (each on a core of its own) and, at worst, their sum (one waits for the other). Printed
beside each other they say which bound a figure is near, and what it cannot go below: a command
whose server CPU alone exceeds a target's wall time cannot reach it by any change to the Python.

Read from /proc (Linux; elsewhere the figures are None): the postmaster's own CPU, the CPU of its
children that have exited (their backends: one per connection, gone when the command's connection
closes, added by the kernel to the postmaster's cutime/cstime when it reaps them) and that of its
children still alive (the checkpointer, the WAL writer, the backends still connected).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

PROC = Path("/proc")


def _stat_fields(pid: int, proc: Path) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses)."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def tree_cpu_ticks(pid: int, proc: Path = PROC) -> int | None:
    """CPU clock ticks of process `pid`, its reaped children and its live children (see the module);
    None when it cannot be read."""
    own = _stat_fields(pid, proc)
    if own is None:
        return None
    # After the name: state ppid … utime (index 11), stime, cutime, cstime (proc(5), fields 14–17).
    ticks = sum(int(value) for value in own[11:15])
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == pid:
            continue
        fields = _stat_fields(int(entry.name), proc)
        if fields is not None and int(fields[1]) == pid:
            ticks += int(fields[11]) + int(fields[12])
    return ticks


def postmaster_of(backend_pid: int, proc: Path = PROC) -> int | None:
    """The server process of a backend (its parent), from the backend's pid (`SELECT pg_backend_pid()`):
    how a script finds a server it did not start, when it runs on this machine; None otherwise."""
    fields = _stat_fields(backend_pid, proc)
    return None if fields is None else int(fields[1])


def server_cpu(pid: int | None, proc: Path = PROC) -> Callable[[], float | None]:
    """A reader of the server's CPU seconds so far (postmaster `pid`): call it before and after a command
    and subtract. Reads None where /proc or the pid is not there."""

    def read() -> float | None:
        if pid is None or not proc.is_dir():
            return None
        ticks = tree_cpu_ticks(pid, proc)
        return None if ticks is None else ticks / os.sysconf("SC_CLK_TCK")

    return read


def spent(before: float | None, after: float | None) -> float | None:
    """after − before, rounded to ms; None when either is unknown."""
    return None if before is None or after is None else round(after - before, 3)
