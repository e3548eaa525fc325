"""The one ingest pipeline: what happens to a source's parts after its adapter read them.

An adapter (a verb's reader: `ingest runs`'s PartReader, `ingest kernelbench`'s checkout reader, the
source files' adapters under kernelindex.ingest.sources) only reads, and hands the pipeline what it
read, each part with its file and line (or entry):

    async with Pipeline.open(database_url, Mode.of(strict=…, dry_run=…), summary) as pipeline:
        await pipeline.catalogue(apply)              # workloads, hardware, snapshots: before the runs
        pipeline.problems(read_problems)             # what the reader refused (found and rejected)
        await pipeline.write(records)                # run records, in batches
        await pipeline.finish()                      # the strict abort, the record events
    # the summary, checked to add up: pipeline.summary.check()

A route that writes inside a transaction of its own caller (submitRuns in its request, the fleet
worker's results in the job's transaction, `seed` in its one transaction) writes its records with
`write_within(session, records)` (`Pipeline.within`, written and finished): STRICT, its one
transaction a savepoint of the caller's, so a problem anywhere leaves the caller's transaction as it
was, and the outcome says whether it was refused.

The pipeline owns, once for every source:

- the mode (`Mode`), with one meaning everywhere:
  - DEFAULT: each batch is a transaction of its own and a bad record costs only itself; when the
    database refuses a batch it is halved, each half in a unit of its own, until the records it
    refuses are alone (`write_halving`). The catalogue step is a transaction of its own, first.
    An input that lands whole or not at all (a source file: `open(..., whole=True)`, or `within`
    in DEFAULT mode) has one transaction instead, each batch a savepoint in it, halved the same way.
  - STRICT: the catalogue step and every batch share one transaction; any problem anywhere (read,
    checked or refused by the database) means it is rolled back and nothing is written
    (IngestAborted, exit 3). Once a problem is found nothing more is written, but every batch is
    still checked against the database (not merged), so the refusal lists every problem.
  - DRY_RUN: nothing is written: the catalogue step is laid over the database in memory (a source
    that offers an overlay) or applied in the one transaction, the batches are staged and compared
    there, and the transaction is rolled back; the figures are those the real run gives.
- batching (`batch_size` records a unit of work) and halving;
- the record events, once after the last batch (the same input in batches of 1 or 5,000 makes the
  same history);
- progress (kernelindex.ingest.progress: a rich bar on a terminal, plain lines elsewhere);
- the one summary (kernelindex.ingest.summary.IngestSummary) every batch is added to, and the
  strict abort.

One connection (pool of one): the stage and the natural keys staged so far are temporary tables of it.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Self

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from kernelindex.db.engine import make_engine, make_sessionmaker, transaction
from kernelindex.db.errors import refusal_reason
from kernelindex.ingest.errors import IngestAborted, InputProblem
from kernelindex.ingest.progress import Progress
from kernelindex.ingest.records import RunRecord
from kernelindex.ingest.resolve import References
from kernelindex.ingest.summary import IngestSummary
from kernelindex.ingest.writer import RunWriter

DEFAULT_BATCH_SIZE = 5000

# Opens one unit of work (a transaction or a savepoint) and yields the session to write with.
UnitOfWork = Callable[[], AbstractAsyncContextManager[AsyncSession]]


class Mode(enum.Enum):
    """How an ingest writes (the module says what each means)."""

    DEFAULT = "default"
    STRICT = "strict"
    DRY_RUN = "dry_run"

    @classmethod
    def of(cls, *, strict: bool = False, dry_run: bool = False) -> Mode:
        """The mode of a verb's flags (--dry-run writes nothing, whatever else is asked)."""
        return cls.DRY_RUN if dry_run else cls.STRICT if strict else cls.DEFAULT


async def write_halving(
    unit_of_work: UnitOfWork, writer: RunWriter, batch: list[RunRecord], merging: Callable[[], None] | None = None,
) -> IngestSummary:
    """One batch in a unit of work (`unit_of_work()` opens it and yields the session to write with).
    When the database refuses the batch, it is halved, each half in a unit of its own, until the
    records it refuses are alone: those come back rejected with its reason, the others are written.
    merging: RunWriter.write's (called as the database starts merging; more than once when halved)."""
    try:
        async with unit_of_work() as session:
            return await writer.write(session, batch, merging=merging)
    except Exception as exc:
        reason = refusal_reason(exc)
        if reason is None:
            raise
        writer.forget()
        if len(batch) == 1:
            rec = batch[0]
            return IngestSummary(found=1, rejected=1, problems=[InputProblem(rec.file, rec.where, f"the database refused it: {reason}")])
    summary = IngestSummary()
    middle = len(batch) // 2
    for half in (batch[:middle], batch[middle:]):
        summary.merge(await write_halving(unit_of_work, writer, half, merging))
    return summary


async def checked_only(session: AsyncSession, writer: RunWriter, records: list[RunRecord]) -> IngestSummary:
    """A batch of a --strict ingest that already failed: resolved and staged, never merged, so its
    problems are reported; its counts are not (nothing will be written)."""
    async with _savepoint(session, keep=False):
        part = await writer.write(session, records, dry_run=True)
    return IngestSummary(found=part.rejected, rejected=part.rejected, problems=part.problems)


@asynccontextmanager
async def _savepoint(session: AsyncSession, *, keep: bool = True) -> AsyncIterator[None]:
    """A savepoint: released when the block ends (rolled back when keep is False), rolled back when it
    raises. Begun by awaiting begin_nested(), which the request's serialized session
    (kernelindex.graphql.session.SerializedSession) offers as AsyncSession does."""
    savepoint = await session.begin_nested()
    try:
        yield
    except BaseException:
        await savepoint.rollback()
        raise
    if keep:
        await savepoint.commit()
    else:
        await savepoint.rollback()


class Pipeline:
    """One ingest of one source: its mode, its writer, its one session (strict, dry run), its
    summary and its progress. Opened with `Pipeline.open(...)` (an async context manager): leaving
    it commits (default: each unit already has; strict: the one transaction) or rolls back (a dry
    run, an error, a strict ingest that found a problem)."""

    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession] | None, mode: Mode, summary: IngestSummary, *,
        now: datetime | None = None, batch_size: int = DEFAULT_BATCH_SIZE, track_keys: bool = True,
        progress: Progress | None = None, fleet_worker: tuple[int, str] | None = None, defer_events: bool = True,
        keep_run_ids: bool = False,
    ):
        self.sessionmaker = sessionmaker
        self.mode = mode
        self.summary = summary
        self.batch_size = batch_size
        self.progress = progress
        self.now = now
        self.track_keys = track_keys
        self.defer_events = defer_events
        self.keep_run_ids = keep_run_ids
        self.writer = RunWriter(now=now, dry_run=mode is Mode.DRY_RUN, defer_events=defer_events, track_keys=track_keys,
                                fleet_worker=fleet_worker)
        # strict and dry run: the one session every unit of work is in
        self.session: AsyncSession | None = None
        # a dry run whose source lays its catalogue over the database in memory: what records resolve against
        self.known: References | None = None

    @classmethod
    @asynccontextmanager
    async def open(
        cls, database_url: str, mode: Mode, summary: IngestSummary, *, now: datetime | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE, track_keys: bool = True, overlay: bool = False,
        progress: tuple[str, int | None] | None = None, whole: bool = False,
    ) -> AsyncIterator[Self]:
        """The pipeline of one ingest, on an engine of its own (one connection). overlay: in a dry
        run, the source lays its catalogue over the database in memory (`catalogue(..., overlay=)`),
        and records resolve against that. progress: (label, total) of the bar the pipeline draws
        (advanced by `advance`), or None for none. whole: the input lands whole or not at all (a source
        file: kernelindex.ingest.source_import) — by default too its catalogue step and every batch share
        one transaction, each batch a savepoint in it (a batch the database refuses is halved as ever)."""
        engine = make_engine(database_url, pool_size=1, max_overflow=0)
        bar = Progress(progress[0], total=progress[1]) if progress is not None else None
        try:
            pipeline = cls(make_sessionmaker(engine), mode, summary, now=now, batch_size=batch_size,
                           track_keys=track_keys, progress=bar)
            async with pipeline._opened(overlay=overlay, whole=whole):
                yield pipeline
        finally:
            if bar is not None:
                bar.close()
            await engine.dispose()

    @classmethod
    @asynccontextmanager
    async def within(
        cls, session: AsyncSession, summary: IngestSummary, *, now: datetime | None = None,
        fleet_worker: tuple[int, str] | None = None, mode: Mode = Mode.STRICT,
    ) -> AsyncIterator[Self]:
        """A pipeline in the caller's transaction (see the module): its one transaction is a savepoint
        of the caller's, rolled back when anything raises (IngestAborted from `finish` among them) or
        in a dry run, released otherwise.

        STRICT (submitRuns, the fleet worker, seed): its records are written as one batch (a
        request's or a job's: a few thousand at most), so their record events are made with it, as a
        deferred pass would make them; the summary keeps the inserted runs' ids (the callers answer
        with them). DEFAULT or DRY_RUN (a source file in its caller's transaction:
        source_import.import_source): as `open(..., whole=True)` would, in batches (each a savepoint),
        the natural keys tracked across them, the record events made by `finish`."""
        if mode is Mode.STRICT:
            pipeline = cls(None, mode, summary, now=now, batch_size=sys.maxsize, track_keys=False,
                           fleet_worker=fleet_worker, defer_events=False, keep_run_ids=True)
        else:
            pipeline = cls(None, mode, summary, now=now, fleet_worker=fleet_worker)
        pipeline.session = session
        async with _savepoint(session, keep=mode is not Mode.DRY_RUN):
            yield pipeline

    @asynccontextmanager
    async def _opened(self, *, overlay: bool, whole: bool) -> AsyncIterator[None]:
        sessionmaker = self.sessionmaker
        assert sessionmaker is not None  # `open` made one
        async with AsyncExitStack() as stack:
            if self.mode is Mode.STRICT or (whole and self.mode is Mode.DEFAULT):
                # All or nothing: one transaction, the index write lock first (the catalogue step and
                # the writer take it before their first write).
                self.session = await stack.enter_async_context(transaction(sessionmaker))
            elif self.mode is Mode.DRY_RUN:
                self.session = session = await stack.enter_async_context(sessionmaker())
                stack.push_async_callback(session.rollback)
                if overlay:
                    self.known = await References.load(session)
                self.writer = RunWriter(now=self.now, dry_run=True, track_keys=self.track_keys, known=self.known)
            yield

    # -- the units of work

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[AsyncSession]:
        """One unit of work that is not a batch of records (a lookup, a reader's step): a transaction
        of its own by default, the one session's transaction otherwise."""
        if self.session is None:
            assert self.sessionmaker is not None  # only `within` has none, and it has its session
            async with transaction(self.sessionmaker) as session:
                yield session
        else:
            yield self.session

    def _batch_units(self) -> UnitOfWork:
        """Units of work for a batch: a transaction of its own by default; a savepoint in the one
        transaction in the other modes."""
        session = self.session
        if session is None:
            sessionmaker = self.sessionmaker
            assert sessionmaker is not None
            return lambda: transaction(sessionmaker)

        @asynccontextmanager
        async def savepoint() -> AsyncIterator[AsyncSession]:
            async with _savepoint(session):
                yield session

        return savepoint

    @property
    def failed(self) -> bool:
        """A strict ingest has found a problem: nothing more is written (all is rolled back)."""
        return self.mode is Mode.STRICT and self.summary.problem_count > 0

    # -- the steps

    async def catalogue(
        self, apply: Callable[[AsyncSession], Awaitable[object]], overlay: Callable[[References], None] | None = None,
    ) -> None:
        """A source's catalogue step (hardware, workloads and revisions, snapshots), before the runs
        that name it: by default in a transaction of its own; strict, in the one transaction (not
        once a problem was found); a dry run lays it over the database in memory where the source
        offers `overlay` and the pipeline was opened with overlay, else applies it in the one
        transaction (rolled back)."""
        if self.mode is Mode.DRY_RUN and overlay is not None and self.known is not None:
            overlay(self.known)
            return
        if self.failed:
            return
        async with self.unit() as session:
            await apply(session)

    def problems(self, problems: list[InputProblem], *, entries: int | None = None, counted: bool = False) -> None:
        """What the reader refused: `entries` entries (default: one per problem) found and rejected,
        with their problems (counted: found already, when they were read)."""
        count = len(problems) if entries is None else entries
        self.summary.add_problems(problems)
        if not counted:
            self.summary.found += count
        self.summary.rejected += count

    async def write(
        self, records: list[RunRecord], *, counted: bool = False, failed: bool = False, advance: bool = False,
        merging: Callable[[], None] | None = None,
    ) -> None:
        """Run records, in batches of batch_size, each batch's outcome added to the summary.
        counted: their entries were counted found as they were read; failed: they are entries the
        source timed nothing for, stored as failed runs (IngestSummary.add_part); advance: the
        progress counts records (each batch's, as it is written); merging: called as the database
        starts merging a batch (RunWriter.write), for a reader to overlap its next part with that."""
        for start in range(0, len(records), self.batch_size):
            batch = records[start : start + self.batch_size]
            if self.failed:
                assert self.session is not None
                # Still checked against the database (unknown workloads, hardware), not written.
                written = await checked_only(self.session, self.writer, batch)
            else:
                written = await write_halving(self._batch_units(), self.writer, batch, merging)
            self.summary.add_part(written, counted=counted, failed=failed, keep_run_ids=self.keep_run_ids)
            if advance:
                self.advance(len(batch))

    def advance(self, n: int) -> None:
        if self.progress is not None:
            self.progress.advance(n)

    async def finish(self) -> IngestSummary:
        """After the last batch: a strict ingest that found any problem aborts (IngestAborted:
        nothing written); else the record events of everything written (none in a dry run)."""
        if self.mode is Mode.DRY_RUN:
            return self.summary
        if self.mode is Mode.STRICT and self.summary.problem_count:
            raise IngestAborted(self.summary.problems, total=self.summary.problem_count)
        if not self.defer_events:
            return self.summary  # made with each batch
        async with self.unit() as session:
            await self.writer.record_events(session)
        return self.summary


@dataclass(frozen=True)
class WrittenWithin:
    """What `write_within` did: the summary (the inserted runs' ids kept, the problems found), and the
    abort when any record was refused (then nothing was written: the savepoint rolled back)."""

    summary: IngestSummary
    aborted: IngestAborted | None = None


async def write_within(
    session: AsyncSession, records: list[RunRecord], *, now: datetime | None = None,
    fleet_worker: tuple[int, str] | None = None,
) -> WrittenWithin:
    """Run records through the one pipeline, strict, in the caller's transaction (`Pipeline.within`):
    written and finished, or, when any is refused, nothing written and the refusal returned (the
    caller's transaction is left as it was, to answer or to raise as it chooses)."""
    summary = IngestSummary()
    try:
        async with Pipeline.within(session, summary, now=now, fleet_worker=fleet_worker) as pipeline:
            await pipeline.write(records)
            await pipeline.finish()
    except IngestAborted as aborted:
        return WrittenWithin(summary, aborted)
    return WrittenWithin(summary)
