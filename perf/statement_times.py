"""Where a program's database time goes: the wall time of every statement it sends, by statement.

    python -m perf.statement_times -m perf.submit_runs --calls 9
    python -m perf.statement_times --top 40 -m kernelindex.cli ingest runs runs.jsonl

Runs the module as `python -m` would (its arguments after it), in this process, and times every
statement the process sends to PostgreSQL: those through SQLAlchemy (its cursor events, before and
after the driver's round trip), those sent on the asyncpg connection itself (the writer's COPYs, its
temporary tables, the driver-row reads), and each COPY by its table. When the program ends it prints
the statements by the wall time spent in them (from sending to having the answer: PostgreSQL's work,
the round trip and the driver's encoding and decoding), with how many times each ran.

Why a tool: the speed issues' notes break an import or a call down by statement, and each time that
took a throwaway script. One process only: `perf.ingest_speed` runs its imports as child processes,
so run the import under this tool instead. Wall times of concurrent statements (several sessions at
once in an event loop) overlap; the programs above send theirs one at a time.
"""

from __future__ import annotations

import argparse
import re
import runpy
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import asyncpg
from sqlalchemy import event
from sqlalchemy.engine import Engine

# The asyncpg Connection methods that send a statement themselves. SQLAlchemy's dialect does not call
# them for its statements (it prepares and runs them on the protocol), so nothing is counted twice.
DRIVER_METHODS = ("execute", "executemany", "fetch", "fetchrow", "fetchval", "copy_records_to_table")


_STARTED = "perf.statement_times started"  # the key of a statement's start in its connection's info


def statement_key(sql: str, width: int = 110) -> str:
    """A statement's text on one line, spaces squeezed, cut to `width`: the key it is counted under."""
    return re.sub(r"\s+", " ", sql).strip()[:width]


class StatementTimes:
    """The wall time and count of each statement sent while `timing()` is open."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)

    def add(self, key: str, seconds: float) -> None:
        self.seconds[key] += seconds
        self.counts[key] += 1

    @contextmanager
    def timing(self) -> Iterator[StatementTimes]:
        # SQLAlchemy's before/after pair of a statement, by its connection (one statement at a time on
        # each, however many sessions an event loop runs at once).
        def before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
            conn.info[_STARTED] = time.perf_counter()

        def after(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
            started = conn.info.pop(_STARTED, None)
            if started is not None:
                self.add(statement_key(statement), time.perf_counter() - started)

        originals: dict[str, Callable[..., Any]] = {name: getattr(asyncpg.Connection, name) for name in DRIVER_METHODS}

        def timed(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
            async def wrapper(connection: Any, *args: Any, **kwargs: Any) -> Any:
                key = f"COPY {args[0]}" if name == "copy_records_to_table" else statement_key(str(args[0]) if args else name)
                start = time.perf_counter()
                try:
                    return await method(connection, *args, **kwargs)
                finally:
                    self.add(key, time.perf_counter() - start)
            return wrapper

        event.listen(Engine, "before_cursor_execute", before)
        event.listen(Engine, "after_cursor_execute", after)
        for name, method in originals.items():
            setattr(asyncpg.Connection, name, timed(name, method))
        try:
            yield self
        finally:
            for name, method in originals.items():
                setattr(asyncpg.Connection, name, method)
            event.remove(Engine, "before_cursor_execute", before)
            event.remove(Engine, "after_cursor_execute", after)

    def report(self, top: int = 25) -> str:
        total = sum(self.seconds.values())
        lines = [f"{sum(self.counts.values()):,} statements, {total * 1000:,.1f} ms in all (wall, from sending to the answer)"]
        for key, seconds in sorted(self.seconds.items(), key=lambda kv: -kv[1])[:top]:
            count = self.counts[key]
            lines.append(f"{seconds * 1000:10.1f} ms {seconds / total * 100 if total else 0:5.1f}% {count:7,}x "
                         f"{seconds / count * 1000:8.2f} ms each  {key}")
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m perf.statement_times", description=__doc__.split("\n\n")[0],
                                     usage="python -m perf.statement_times [--top N] -m MODULE [its arguments]")
    parser.add_argument("--top", type=int, default=25, help="how many statements to print (default 25)")
    # Everything after -m MODULE is the module's own (as with python -m): none of it is read here.
    at = argv.index("-m") if "-m" in argv else len(argv)
    if at + 1 >= len(argv):
        parser.error("name the module to run: -m MODULE")
    args = parser.parse_args(argv[:at])
    if args.top < 1:
        parser.error("--top must be at least 1")
    module, rest = argv[at + 1], argv[at + 2:]
    times = StatementTimes()
    status: object = 0
    sys.argv = [module, *rest]
    with times.timing():
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            status = exc.code
    print(times.report(args.top))
    if status is None or isinstance(status, int):
        return status or 0
    print(status, file=sys.stderr)  # as the interpreter does with SystemExit("why")
    return 1


if __name__ == "__main__":
    sys.exit(main())
