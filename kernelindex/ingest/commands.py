"""The ingest commands: validate everything first, then write in transactional batches.

`kernelindex ingest runs FILE` reads its input twice, streaming both times (memory does not grow
with the file, apart from one small entry per distinct run to find a run stated twice):

1. validation: every line is parsed, checked against the run-record schema and resolved against the
   database's workloads, revisions and hardware catalogue (loaded once); a run whose natural key an
   earlier line already stated is refused. Nothing is written.
2. writing: the lines that passed, in batches of --batch-size. By default each batch is its own
   transaction and a bad line costs only itself; with --strict any problem stops everything before
   a row is written, and the batches share one transaction; with --dry-run nothing is written.

Exit status: 0 everything landed, 1 some input was rejected (the rest landed; with --strict nothing
did), 2 a fatal error (no such file, no database, an internal error).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from kernelindex.ingest.errors import IngestAborted, IngestFatal, InputProblem
from kernelindex.ingest.progress import Progress, print_table
from kernelindex.ingest.records import RunRecord, raw_lines, read_line
from kernelindex.ingest.writer import (
    HardwareIndex,
    IngestSummary,
    RunWriter,
    WorkloadRef,
    configuration_key_memo,
    environment_fingerprint_memo,
    load_hardware_index,
    load_workload_refs,
    resolve_workload_ref,
)
from kernelindex.rules.identity import canonical_json

EXIT_OK = 0
EXIT_SOME_REJECTED = 1
EXIT_FATAL = 2

# Problems kept (and so printable) per ingest; the rest are counted.
MAX_KEPT_PROBLEMS = 1000
MAX_PRINTED_PROBLEMS = 100


def say(message: str) -> None:
    print(f"kernelindex: {message}", file=sys.stderr, flush=True)


@contextmanager
def readable_copy(path: str) -> Iterator[Path]:
    """A path that can be read twice: stdin is spooled to a temporary file."""
    if path != "-":
        p = Path(path)
        if not p.exists():
            raise IngestFatal(f"{path}: no such file")
        if p.is_dir():
            raise IngestFatal(f"{path}: is a directory, not a file of run records")
        try:
            with p.open("rb"):
                pass
        except OSError as exc:
            raise IngestFatal(f"{path}: cannot read it: {exc.strerror or exc}") from exc
        yield p
        return
    stdin = getattr(sys.stdin, "buffer", None) or sys.stdin
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as tmp:
        while True:
            chunk = stdin.read(1 << 20)
            if not chunk:
                break
            tmp.write(chunk.encode("utf-8", "surrogateescape") if isinstance(chunk, str) else chunk)
    try:
        yield Path(tmp.name)
    finally:
        os.unlink(tmp.name)


# -- pass 1: validation -------------------------------------------------------------------------


@dataclass
class References:
    """What records name, from the database: every workload (with its revisions) and the hardware catalogue."""

    by_slug: dict[str, WorkloadRef]
    by_triple: dict[tuple, WorkloadRef]
    hardware: HardwareIndex

    @classmethod
    async def load(cls, session) -> References:
        by_slug, by_triple = await load_workload_refs(session)
        return cls(by_slug, by_triple, await load_hardware_index(session))


@dataclass
class Validation:
    good: int = 0
    bad_lines: set[int] = field(default_factory=set)
    problems: list[InputProblem] = field(default_factory=list)
    problems_not_kept: int = 0
    lines_read: int = 0

    def add(self, line: int | None, problem: InputProblem) -> None:
        if line is not None:
            self.bad_lines.add(line)
        if len(self.problems) < MAX_KEPT_PROBLEMS:
            self.problems.append(problem)
        else:
            self.problems_not_kept += 1

    @property
    def problem_count(self) -> int:
        return len(self.problems) + self.problems_not_kept


def natural_key(data: dict[str, Any], revision_id: int, sku: str) -> int:
    """The run's natural key as the writer will see it (workload revision, configuration,
    implementation, environment, protocol, source revision), as a 128-bit digest."""
    config = data["configuration"]
    text = canonical_json(
        [
            revision_id,
            configuration_key_memo(config["bindings"], config["dtype"]),
            data["implementation"]["slug"],
            environment_fingerprint_memo(sku, data["environment"]),
            data["protocol"]["name"],
            data["protocol"]["version"],
            data["source"]["name"],
            data["source"].get("revision") or "",
        ]
    )
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), "big")


def validate_lines(lines: Any, label: str, refs: References, progress: Progress | None = None) -> Validation:
    """Pass 1 over a binary file (or any iterable of lines): every problem, the set of bad lines and
    the count of good records. Memory: the bad line numbers, the first MAX_KEPT_PROBLEMS problems,
    and one entry (a 128-bit key and a line number) per distinct run."""
    result = Validation()
    first_line: dict[int, int] = {}
    hardware = refs.hardware
    seen_any = False
    for number, raw in raw_lines(lines):
        result.lines_read = number
        if progress is not None and number % 10_000 == 0:
            progress.advance(10_000)
        item = read_line(number, raw, label)
        if item is None:
            continue
        seen_any = True
        if isinstance(item, list):
            for problem in item:
                result.add(number, problem)
            continue
        data = item.data
        resolved = resolve_workload_ref(data["workload"], refs.by_slug, refs.by_triple)
        if isinstance(resolved[0], str):
            result.add(number, InputProblem(label, item.where, resolved[1], key=resolved[0]))
            continue
        matched = hardware.match(data["environment"]["hardware"])
        if isinstance(matched, str):
            result.add(number, InputProblem(label, item.where, matched, key="environment.hardware.sku"))
            continue
        if matched[0] is None:
            hardware.add(None, matched[1], [matched[1]])  # a product to add: its other spellings are the same
        key = natural_key(data, resolved[1], matched[1])
        first = first_line.get(key)
        if first is not None:
            result.add(number, InputProblem(label, item.where, f"the same run as line {first} (same natural key)"))
            continue
        first_line[key] = number
        result.good += 1
    if not seen_any:
        result.add(1, InputProblem(label, "line 1", "the file holds no run records (it is empty)"))
    return result


def iter_good_batches(
    stream: BinaryIO, label: str, batch_size: int, skip: set[int], late_problems: list[InputProblem]
) -> Iterator[list[RunRecord]]:
    """Pass 2: the records of the lines that passed validation, batch by batch. A line that fails now
    but passed before (the file changed in between) goes to late_problems."""
    batch: list[RunRecord] = []
    for number, raw in raw_lines(stream):
        if number in skip:
            continue
        item = read_line(number, raw, label)
        if item is None:
            continue
        if isinstance(item, list):
            late_problems.extend(item)
            continue
        batch.append(item)
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


# -- pass 2: writing ----------------------------------------------------------------------------


def _database_refusal(exc: BaseException) -> str | None:
    """The database's reason when it refused data (a constraint, a value); None for anything else
    (a lost connection, a bug), which is fatal."""
    from sqlalchemy.exc import DataError, IntegrityError, StatementError

    if isinstance(exc, (IntegrityError, DataError)):
        orig = getattr(exc, "orig", None) or exc
        return str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    if isinstance(exc, StatementError) and isinstance(getattr(exc, "orig", None), (ValueError, TypeError, OverflowError)):
        return f"{type(exc.orig).__name__}: {exc.orig}"
    return None


async def _write_halving(unit_of_work, writer: RunWriter, batch: list[RunRecord]) -> IngestSummary:
    """One batch in a unit of work (`unit_of_work()` opens it and yields the session to write with).
    When the database refuses the batch, it is halved, each half in a unit of its own, until the
    records it refuses are alone: those come back rejected with its reason, the others are written."""
    try:
        async with unit_of_work() as session:
            writer.session = session
            return await writer.write(batch)
    except Exception as exc:
        reason = _database_refusal(exc)
        if reason is None:
            raise
        writer.forget()
        if len(batch) == 1:
            rec = batch[0]
            return IngestSummary(rejected=1, problems=[InputProblem(rec.file, rec.where, f"the database refused it: {reason}")])
    summary = IngestSummary()
    middle = len(batch) // 2
    for half in (batch[:middle], batch[middle:]):
        summary.merge(await _write_halving(unit_of_work, writer, half))
    return summary


def _own_transactions(sessionmaker):
    """Units of work for the default mode: each batch (or half) in a transaction of its own."""
    from kernelindex.db.engine import transaction

    return lambda: transaction(sessionmaker)


def _savepoints(session):
    """Units of work for --strict: savepoints in the caller's one transaction, which the caller
    aborts when any record was refused."""

    @asynccontextmanager
    async def savepoint():
        async with session.begin_nested():
            yield session

    return savepoint


async def ingest_runs_file(
    database_url: str,
    path: Path,
    label: str,
    *,
    strict: bool = False,
    dry_run: bool = False,
    batch_size: int = 5000,
    now: datetime | None = None,
    progress: bool = True,
) -> IngestSummary:
    from kernelindex.db.engine import make_engine, make_sessionmaker, transaction

    engine = make_engine(database_url, pool_size=2, max_overflow=0)
    sessionmaker = make_sessionmaker(engine)
    summary = IngestSummary()
    try:
        from kernelindex.ingest.catalog import apply_catalog, catalog_lines

        catalog, catalog_problems = catalog_lines(path, label)
        if catalog_problems and strict:
            raise IngestAborted(catalog_problems)
        if catalog and not dry_run:
            # Hardware and workload revisions first, in a transaction of their own: the runs refer to them.
            async with transaction(sessionmaker) as session:
                await apply_catalog(session, catalog)
        async with sessionmaker() as session:
            refs = await References.load(session)
        bar = Progress("validate", stream=sys.stderr) if progress else None
        with path.open("rb") as stream:
            checked = validate_lines(stream, label, refs, bar)
        if bar:
            bar.close()
        summary.problems = catalog_problems + checked.problems
        summary.problems_not_kept = checked.problems_not_kept
        if checked.problems and strict:
            raise IngestAborted(checked.problems, total=checked.problem_count)
        late: list[InputProblem] = []
        bar = Progress("ingest runs", total=checked.good) if progress else None
        with path.open("rb") as stream:
            batches = iter_good_batches(stream, label, batch_size, checked.bad_lines, late)
            if dry_run:
                async with sessionmaker() as session:
                    writer = RunWriter(session, now=now, dry_run=True)
                    for batch in batches:
                        summary.merge(await writer.write(batch))
                        if bar:
                            bar.advance(len(batch))
                    await session.rollback()
            elif strict:
                # All or nothing: the batches share one transaction.
                async with transaction(sessionmaker) as session:
                    writer = RunWriter(session, now=now)
                    for batch in batches:
                        part = await _write_halving(_savepoints(session), writer, batch)
                        if part.problems or late:
                            raise IngestAborted(part.problems + late)
                        summary.merge(part)
                        if bar:
                            bar.advance(len(batch))
                    if late:
                        raise IngestAborted(late)
            else:
                writer = RunWriter(None, now=now)  # type: ignore[arg-type]  # each batch gives it a session
                for batch in batches:
                    summary.merge(await _write_halving(_own_transactions(sessionmaker), writer, batch))
                    if bar:
                        bar.advance(len(batch))
        summary.problems += late
        if bar:
            bar.close()
    finally:
        await engine.dispose()
    # Lines refused by validation, by the writer (merged per batch) and lines that changed in between.
    summary.rejected += len(checked.bad_lines) + len({(p.file, p.where) for p in late})
    return summary


def report(summary: IngestSummary, *, dry_run: bool) -> int:
    for warning in summary.warnings:
        say(f"warning: {warning}")
    for problem in summary.problems[:MAX_PRINTED_PROBLEMS]:
        say(f"rejected: {problem}")
    if summary.problem_count > MAX_PRINTED_PROBLEMS:
        say(f"… and {summary.problem_count - MAX_PRINTED_PROBLEMS:,} more problems")
    if dry_run:
        say("dry run: nothing was written; this is what would happen")
        say(
            f"would insert {summary.inserted:,} runs, supersede {summary.superseded:,}, "
            f"skip {summary.unchanged:,} unchanged and reject {summary.rejected:,}"
        )
    elif summary.inserted == 0 and summary.superseded == 0:
        say("nothing new: every record is already stored" if not summary.rejected else "nothing new was written")
    print_table(summary.table())
    return EXIT_SOME_REJECTED if summary.rejected else EXIT_OK


def _fatal_reason(exc: BaseException) -> str:
    from sqlalchemy.exc import DBAPIError

    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    orig = getattr(exc, "orig", None)
    if isinstance(exc, OSError) and exc.filename:
        return f"cannot read {exc.filename}: {exc.strerror or first}"
    unreachable = isinstance(exc, (OSError, ConnectionError)) or isinstance(orig, (OSError, ConnectionError))
    if unreachable or (isinstance(exc, DBAPIError) and exc.connection_invalidated) or "connection" in type(orig or exc).__name__.lower():
        return f"cannot reach PostgreSQL: {first}"
    if isinstance(exc, MemoryError):
        return "out of memory"
    if isinstance(exc, DBAPIError):
        return f"the database failed: {first}"
    return f"unexpected {type(exc).__name__}: {first} (set KERNELINDEX_TRACEBACK=1 to see where)"


def cmd_ingest_runs(args: argparse.Namespace) -> int:
    from kernelindex.cli import CommandError, database_url

    if args.batch_size < 1:
        say(f"error: --batch-size must be at least 1, got {args.batch_size}")
        return EXIT_FATAL
    label = "<stdin>" if args.file == "-" else args.file
    try:
        with readable_copy(args.file) as path:
            url = database_url()
            summary = asyncio.run(
                ingest_runs_file(url, path, label, strict=args.strict, dry_run=args.dry_run, batch_size=args.batch_size)
            )
    except IngestFatal as exc:
        say(f"error: {exc}")
        return EXIT_FATAL
    except (IngestAborted, CommandError):
        raise  # the command line reports these (exit 1 and 2)
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback
        if os.environ.get("KERNELINDEX_TRACEBACK"):
            raise
        say(f"error: {_fatal_reason(exc)}")
        if args.strict or args.dry_run:
            say("nothing was written")
        else:
            say("batches committed before the error stay; run the same input again to finish (ingest is idempotent)")
        return EXIT_FATAL
    return report(summary, dry_run=args.dry_run)


def configure_runs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="JSON Lines file of run records (schemas/run-record.schema.json), or - for stdin")
    _common_options(parser)
    parser.set_defaults(func=cmd_ingest_runs)


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strict", action="store_true", help="any problem aborts with nothing written")
    parser.add_argument("--dry-run", action="store_true", help="print what would be inserted, superseded and skipped; write nothing")
    parser.add_argument("--batch-size", type=int, default=5000, help="runs per transaction (default 5000)")


def configure_kernelbench(parser: argparse.ArgumentParser) -> None:
    from kernelindex.ingest.kernelbench import cmd_ingest_kernelbench

    parser.add_argument("path", help="a checkout of the KernelBench repository")
    parser.add_argument("--revision", help="source revision when PATH is not a git checkout")
    parser.add_argument("--observed", help="observation date (YYYY-MM-DD) when PATH is not a git checkout")
    parser.add_argument("--levels", default="1,2,3,4", help="levels to import (default 1,2,3,4)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds allowed to trace one problem")
    _common_options(parser)
    parser.set_defaults(func=cmd_ingest_kernelbench)
