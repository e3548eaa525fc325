"""How a command ends: its exit status, the error it reports in one line, and SIGTERM turned into an
exception. The standard library only: the entry point and the parser use these before any command's
modules are loaded (`kernelindex --help` loads nothing else of ours but the parser).

Exit status:

- 0 everything landed;
- 1 some input was rejected (the rest landed; with --strict nothing did);
- 2 a fatal error: bad arguments, no such file, the database unavailable (unreachable, its disk full,
  out of memory, too many connections), a full disk here, an internal error;
- 130 interrupted (SIGINT, Ctrl+C), 143 terminated (SIGTERM), 141 the reader of stdout went away;
  `serve` stopped by SIGINT or SIGTERM after it started serving exits 0 (a normal stop).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

EXIT_OK = 0
EXIT_SOME_REJECTED = 1
EXIT_FATAL = 2
# --strict found a problem: nothing was written (not "some lines rejected, the rest landed").
EXIT_NOTHING_WRITTEN = 3
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
EXIT_TERMINATED = 128 + signal.SIGTERM

TRACEBACK_VARIABLE = "KERNELINDEX_TRACEBACK"


class CommandError(Exception):
    """An error to report in one line, without a traceback (exit status 2)."""


class Terminated(BaseException):
    """SIGTERM (how systemd and docker stop a process), raised in the main thread like SIGINT's
    KeyboardInterrupt, so that the way out runs: finally blocks stop what the command started (the
    embedded PostgreSQL above all) and the command exits 143 instead of dying where it stood."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    # Once: a second SIGTERM while the first one's way out runs must not cut that way out short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises Terminated; the handler before is put back after (the
    commands also run in-process, in the tests). Signal handlers belong to the main thread: from
    another thread this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def tracebacks_wanted() -> bool:
    return os.environ.get(TRACEBACK_VARIABLE, "") not in ("", "0")
