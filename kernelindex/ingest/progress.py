"""What long work tells the operator, on stderr: `kernelindex: …` lines, a progress bar with count, rate
and ETA on a terminal (drawn by rich), plain lines every few seconds otherwise (a log, CI), and the
closing table on stdout."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress


def say(message: str) -> None:
    print(f"kernelindex: {message}", file=sys.stderr, flush=True)


class Progress:
    """Progress of one step: ``advance(n, note)`` as work finishes, ``close()`` at the end.

    On a terminal, a bar (count, rate, time left, the last note) redrawn in place; anywhere else one
    line every ``every_s`` seconds and one at the end, each with the count, the rate so far and the
    time left at that rate. ``advance`` may be called from another thread (the tracer's callbacks)."""

    def __init__(
        self, label: str, total: int | None = None, stream: TextIO | None = None, every_s: float = 2.0,
        *, clock: Callable[[], float] = time.monotonic,
    ):
        self.label = label
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = _isatty(self.stream)
        self.done = 0
        self.every_s = every_s
        self._clock = clock
        self._started = clock()
        self._last = self._started
        self._printed = -1  # the count the last plain line showed
        self._closed = False
        self._lock = threading.Lock()
        self._bar: RichProgress | None = None
        if self.tty:
            self._bar = _rich_bar(self.stream)
            self._task = self._bar.add_task(label, total=total, note="")
            self._bar.start()

    def advance(self, n: int = 1, note: str = "") -> None:
        with self._lock:
            if self._closed:
                return
            self.done += n
            if self._bar is not None:
                self._bar.update(self._task, advance=n, note=note[:40])
                return
            now = self._clock()
            finished = self.total is not None and self.done >= self.total
            if now - self._last < self.every_s and not finished:
                return
            self._last = now
            self._line(now, note)

    def advance_one(self, note: str = "") -> None:
        """One item done (a callback's shape: ``on_traced=bar.advance_one``)."""
        self.advance(1, note)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._bar is not None:
                self._bar.stop()
                return
            if self._printed != self.done:
                self._line(self._clock(), "")

    def _line(self, now: float, note: str) -> None:
        elapsed = max(now - self._started, 1e-9)
        rate = self.done / elapsed
        of = f"/{self.total:,} ({100 * self.done / self.total:.0f}%)" if self.total else ""
        if self.total is not None and self.done >= self.total:
            timing = f"in {_duration(elapsed)}, {_rate(rate)}"
        elif self.total is not None and self.done > 0:
            timing = f"{_rate(rate)}, ETA {_duration((self.total - self.done) / rate)}"
        else:
            timing = _rate(rate)
        self.stream.write(f"{self.label}: {self.done:,}{of}, {timing}{' ' + note if note else ''}\n")
        self.stream.flush()
        self._printed = self.done


def _rich_bar(stream: TextIO) -> RichProgress:
    """The bar on a terminal. rich is loaded here, for a terminal only: a command whose stderr is a
    log or a pipe never loads it (about 40 ms of its start-up)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, Task, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as RichProgress
    from rich.text import Text

    class RateColumn(ProgressColumn):
        """Items per second, over rich's recent window."""

        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("?/s" if speed is None else _rate(speed))

    columns: list[Any] = [
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(),
        TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[note]}"),
    ]
    return RichProgress(
        *columns, console=Console(file=stream), transient=False,
        # `say` lines printed meanwhile go above the bar instead of through it.
        redirect_stdout=False, redirect_stderr=stream is sys.stderr,
    )


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or odd stream: plain lines
        return False


def _rate(per_second: float) -> str:
    return f"{per_second:,.0f}/s" if per_second >= 100 else f"{per_second:.1f}/s"


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{rest:02d}" if hours else f"{minutes}:{rest:02d}"


def print_table(rows: list[tuple[str, int]], stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        stream.write(f"{name:<{width}}  {value:>9,}\n")
    stream.flush()
