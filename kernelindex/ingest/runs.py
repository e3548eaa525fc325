"""The run-records pipeline: validate everything first, then write in transactional batches.

`kernelindex ingest runs FILE` (kernelindex.cli.ingest) first checks the input is a regular file no
larger than the maximum file size (check_input_file: a FIFO, a device such as /dev/zero, a directory
or a socket is refused at once, never read), then reads it three times, streaming each time (memory
does not grow with the file, apart from one small entry per distinct run to find a run stated twice;
no line is held beyond the maximum line length):

0. catalogue lines (kernelindex.ingest.catalog): checked; applied at once, in a transaction of
   their own, only by a default ingest. --strict and --dry-run lay them over the database in memory
   instead, so the runs that name their hardware and workloads resolve without a write.
1. validation: every line is parsed, checked against the run-record schema and resolved against the
   database's workloads, revisions and hardware catalogue (loaded once); a run whose natural key an
   earlier line already stated is refused. Nothing is written.
2. writing: the lines that passed, in batches of --batch-size. By default each batch is its own
   transaction and a bad line costs only itself; with --strict any problem in any line, catalogue
   lines included, stops everything before a row is written, and the catalogue and the batches share
   one transaction; with --dry-run nothing is written, and the figures are those the real run gives.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from kernelindex.db.engine import make_engine, make_sessionmaker, transaction
from kernelindex.db.errors import refusal_reason
from kernelindex.ingest.catalog import apply_catalog, catalog_lines, overlay_catalog
from kernelindex.ingest.errors import IngestAborted, IngestFatal, InputProblem
from kernelindex.ingest.progress import Progress
from kernelindex.ingest.records import RunRecord, raw_lines, read_line
from kernelindex.ingest.writer import (
    HardwareIndex,
    HardwareRefusal,
    IngestSummary,
    RunWriter,
    WorkloadRef,
    WorkloadTriple,
    configuration_key_memo,
    environment_fingerprint_memo,
    load_hardware_index,
    load_workload_refs,
    resolve_workload_ref,
)
from kernelindex.rules.identity import canonical_json
from kernelindex.settings import get_settings

# Opens one unit of work (a transaction or a savepoint) and yields the session to write with.
UnitOfWork = Callable[[], AbstractAsyncContextManager[AsyncSession]]

# Problems kept (and so printable) per ingest; the rest are counted.
MAX_KEPT_PROBLEMS = 1000


# -- the input itself -------------------------------------------------------------------------

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"),
)


def check_input_file(path: Path, label: str, max_bytes: int | None = None) -> int:
    """The size of a file fit to ingest, or IngestFatal at once: it must be a regular file (a FIFO
    would block the first read forever, /dev/zero would never end) no larger than max_bytes (default:
    the ingest_max_file_bytes setting). Only stat(), which never blocks, looks at it."""
    limit = get_settings().ingest_max_file_bytes if max_bytes is None else max_bytes
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise IngestFatal(f"{label}: no such file") from None
    except OSError as exc:
        raise IngestFatal(f"{label}: cannot read it: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(info.st_mode):
        kind = next((words for test, words in _KINDS if test(info.st_mode)), "not a regular file")
        raise IngestFatal(f"{label}: is {kind}, not a file of run records: only regular files are read (pipe stdin with '-')")
    if info.st_size > limit:
        raise IngestFatal(
            f"{label}: is {info.st_size:,} bytes, over the maximum file size of {limit:,} "
            "(KERNELINDEX_INGEST_MAX_FILE_BYTES); split it, or raise the limit"
        )
    return info.st_size


# -- pass 1: validation -------------------------------------------------------------------------


@dataclass
class References:
    """What records name, from the database: every workload (with its revisions) and the hardware catalogue."""

    by_slug: dict[str, WorkloadRef]
    by_triple: dict[WorkloadTriple, WorkloadRef]
    hardware: HardwareIndex

    @classmethod
    async def load(cls, session: AsyncSession) -> References:
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


def validate_lines(
    lines: Any, label: str, refs: References, progress: Progress | None = None, *, catalogue_lines: int = 0
) -> Validation:
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
        resolved = resolve_workload_ref(data["workload"], refs.by_slug, refs.by_triple, data["source"].get("revision"))
        if isinstance(resolved[0], str):
            result.add(number, InputProblem(label, item.where, resolved[1], key=resolved[0]))
            continue
        matched = hardware.match(data["environment"]["hardware"])
        if isinstance(matched, HardwareRefusal):
            result.add(number, InputProblem(label, item.where, matched.reason, key=matched.key))
            continue
        key = natural_key(data, resolved[1], matched[1])
        first = first_line.get(key)
        if first is not None:
            result.add(number, InputProblem(label, item.where, f"the same run as line {first} (same natural key)"))
            continue
        first_line[key] = number
        result.good += 1
    if not seen_any and not catalogue_lines:  # a file of catalogue lines alone (new hardware) is not empty
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


async def _write_halving(unit_of_work: UnitOfWork, writer: RunWriter, batch: list[RunRecord]) -> IngestSummary:
    """One batch in a unit of work (`unit_of_work()` opens it and yields the session to write with).
    When the database refuses the batch, it is halved, each half in a unit of its own, until the
    records it refuses are alone: those come back rejected with its reason, the others are written."""
    try:
        async with unit_of_work() as session:
            writer.session = session
            return await writer.write(batch)
    except Exception as exc:
        reason = refusal_reason(exc)
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


def _own_transactions(sessionmaker: async_sessionmaker[AsyncSession]) -> UnitOfWork:
    """Units of work for the default mode: each batch (or half) in a transaction of its own."""
    return lambda: transaction(sessionmaker)


def _savepoints(session: AsyncSession) -> UnitOfWork:
    """Units of work for --strict: savepoints in the caller's one transaction, which the caller
    aborts when any record was refused."""

    @asynccontextmanager
    async def savepoint() -> AsyncIterator[AsyncSession]:
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
    max_file_bytes: int | None = None,
) -> IngestSummary:
    check_input_file(path, label, max_file_bytes)
    engine = make_engine(database_url, pool_size=2, max_overflow=0)
    sessionmaker = make_sessionmaker(engine)
    summary = IngestSummary()
    try:
        catalog, catalog_problems = catalog_lines(path, label)
        if catalog and not (strict or dry_run):
            # Hardware and workload revisions first, in a transaction of their own: the runs refer to them.
            async with transaction(sessionmaker) as session:
                await apply_catalog(session, catalog)
        async with sessionmaker() as session:
            refs = await References.load(session)
        if catalog and (strict or dry_run):
            # Nothing written yet: the lines' hardware and workloads are laid over the database in memory.
            overlay_catalog(catalog, refs.by_slug, refs.by_triple, refs.hardware)
        bar = Progress("validate", stream=sys.stderr) if progress else None
        with path.open("rb") as stream:
            checked = validate_lines(stream, label, refs, bar, catalogue_lines=len(catalog) + len(catalog_problems))
        if bar:
            bar.close()
        summary.problems = catalog_problems + checked.problems
        summary.problems_not_kept = checked.problems_not_kept
        if strict and summary.problems:
            raise IngestAborted(summary.problems, total=checked.problem_count + len(catalog_problems))
        late: list[InputProblem] = []
        bar = Progress("ingest runs", total=checked.good) if progress else None
        with path.open("rb") as stream:
            batches = iter_good_batches(stream, label, batch_size, checked.bad_lines, late)
            if dry_run:
                async with sessionmaker() as session:
                    writer = RunWriter(session, now=now, dry_run=True, known=(refs.by_slug, refs.by_triple, refs.hardware))
                    for batch in batches:
                        summary.merge(await writer.write(batch))
                        if bar:
                            bar.advance(len(batch))
                    await session.rollback()
            elif strict:
                # All or nothing: the catalogue lines and the batches share one transaction, the index
                # write lock first (apply_catalog and the writer take it before their first write).
                async with transaction(sessionmaker) as session:
                    if catalog:
                        await apply_catalog(session, catalog)
                    writer = RunWriter(session, now=now, defer_events=True)
                    for batch in batches:
                        part = await _write_halving(_savepoints(session), writer, batch)
                        if part.problems or late:
                            raise IngestAborted(part.problems + late)
                        summary.merge(part)
                        if bar:
                            bar.advance(len(batch))
                    if late:
                        raise IngestAborted(late)
                    await writer.record_events(session)
            else:
                # Events once, after the last batch: the same file in batches of 1 or of 5,000 makes the same history.
                writer = RunWriter(now=now, defer_events=True)  # each batch gives it a session
                for batch in batches:
                    summary.merge(await _write_halving(_own_transactions(sessionmaker), writer, batch))
                    if bar:
                        bar.advance(len(batch))
                async with transaction(sessionmaker) as session:
                    await writer.record_events(session)
        summary.problems += late
        if bar:
            bar.close()
    finally:
        await engine.dispose()
    # Lines refused by validation (catalogue lines included), by the writer (merged per batch) and
    # lines that changed in between.
    refused_catalogue = {p.where for p in catalog_problems}
    summary.rejected += len(checked.bad_lines) + len(refused_catalogue) + len({(p.file, p.where) for p in late})
    return summary
