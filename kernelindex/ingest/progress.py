"""What long work tells the operator, on stderr: `kernelindex: …` lines, a progress bar on a terminal
(plain lines otherwise), and the closing table on stdout."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def say(message: str) -> None:
    print(f"kernelindex: {message}", file=sys.stderr, flush=True)


class Progress:
    def __init__(self, label: str, total: int | None = None, stream: TextIO | None = None, every_s: float = 2.0):
        self.label = label
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.done = 0
        self.every_s = every_s
        self._last = 0.0

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last < (0.1 if self.tty else self.every_s) and (self.total is None or self.done < self.total):
            return
        self._last = now
        if self.tty and self.total:
            width = 30
            filled = int(width * self.done / self.total)
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {note[:40]:<40}")
        else:
            of = f"/{self.total}" if self.total else ""
            self.stream.write(f"{self.label}: {self.done}{of} {note}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def print_table(rows: list[tuple[str, int]], stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        stream.write(f"{name:<{width}}  {value:>9,}\n")
    stream.flush()
