"""The run-records pipeline: one pass over the file, in transactional batches.

`kernelindex ingest runs FILE` (kernelindex.cli.ingest) first checks the input is a regular file no
larger than the maximum file size (check_input_file: a FIFO, a device such as /dev/zero, a directory
or a socket is refused at once, never read), then reads it once, streaming:

    read → decode → validate (kernelindex.ingest.records) → resolve references → stage → merge
    (kernelindex.ingest.writer)

Each line is read once, in a worker thread that reads the next part while the database merges
this one: a line whose very bytes made a live run already is found by its digest and the few keys
that name its workload revision (RunWriter.skip_known), and every other line is decoded and checked
once. While the parts are mostly new lines, the worker thread checks them too as it reads (a check
depends on the line's bytes alone), so checking overlaps the merge; which lines are live runs is
still asked in order, after the merge before, and the checks of those are dropped.

Memory does not grow with the file: a batch of records at a time (two, with the one read ahead;
where the lines are live runs already, a part of at most KNOWN_PART_LINES lines and about
KNOWN_PART_BYTES), the first problems, and nothing per run (the natural keys already staged, to
refuse a run stated twice however far apart, are kept by the database in a temporary table of the
import's one connection).

Catalogue lines (kernelindex.ingest.catalog: hardware and workload revisions, which an export
writes before its runs) are checked as they come and take effect before the runs after them (the
pipeline's catalogue step: a dry run lays them over the database in memory).

Modes, batches, halving, record events, progress, the summary and the strict abort are the one
pipeline's (kernelindex.ingest.pipeline, which says what default, --strict and --dry-run mean); this
module reads the file into parts and settles the lines that are live runs already.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.ingest.catalog import apply_catalog, check_catalogue_line, overlay_catalog
from kernelindex.ingest.digests import content_digest
from kernelindex.ingest.errors import IngestAborted as IngestAborted  # what --strict raises (from the pipeline)
from kernelindex.ingest.errors import IngestFatal, InputProblem
from kernelindex.ingest.pipeline import Mode, Pipeline
from kernelindex.ingest.records import CatalogueLine, PendingLine, RunRecord, check_pending, raw_lines, read_pending
from kernelindex.ingest.stage import in_stated_form
from kernelindex.ingest.summary import IngestSummary
from kernelindex.ingest.writer import RunWriter
from kernelindex.settings import get_settings

READ_BUFFER_BYTES = 1 << 20
# A part of lines mostly found to be live runs already grows (PartReader.settled), up to this many
# lines and about this many bytes: a lookup costs a few round trips whatever its size.
KNOWN_PART_LINES = 20_000
KNOWN_PART_BYTES = 16 << 20

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


# -- reading: decode and validate, a part at a time ------------------------------------------------


@dataclass
class Part:
    """What the reader found in a stretch of the input: catalogue lines first (they take effect
    before the records after them), then up to a batch of records; and the problems of its lines."""

    catalogue: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    records: list[RunRecord] = field(default_factory=list)
    # Lines decoded but not checked yet: those whose very bytes are a live run are not checked at all.
    pending: list[PendingLine] = field(default_factory=list)
    # check_pending of each pending line, by line number, where the reader checked them ahead
    # (PartReader.check_ahead); the lines that turn out live runs already drop theirs.
    checked: dict[int, RunRecord | list[InputProblem]] = field(default_factory=dict)
    problems: list[InputProblem] = field(default_factory=list)
    bad_lines: int = 0
    catalogue_refused: int = 0
    bytes_read: int = 0


class PartReader:
    """Reads a stream of lines into Parts of at most batch_size lines (records and pending lines). A
    catalogue line after records ends the part before it, so catalogue lines always precede the
    records they serve. Where the lines turn out to be live runs already (an unchanged file), parts
    grow (`settled`), since the lookup of a part costs the same few round trips whatever its size;
    its records are then written in batches of batch_size all the same (the pipeline's `write`)."""

    def __init__(self, lines: Any, label: str, batch_size: int):
        self._lines = raw_lines(lines)
        self.label = label
        self.batch_size = batch_size
        self.part_lines = batch_size  # the most lines the next part holds (settled grows it)
        self._held: tuple[int, Any] | None = None  # a catalogue line that ended the previous part
        self.saw_any = False  # a record or a catalogue line (a file of catalogue lines alone is not empty)
        self.lines_read = 0
        # Whether the reader thread checks a part's pending lines as it reads them: once a part was
        # found mostly new lines (settled), not before (an unchanged file's lines are never checked).
        self.check_ahead = False

    def next_part(self) -> Part | None:
        part = Part()
        seen = False
        limit = self.part_lines
        while len(part.records) < self.batch_size and len(part.records) + len(part.pending) < limit:
            if self._held is not None:
                number, raw = self._held
                self._held = None
            else:
                try:
                    number, raw = next(self._lines)
                except StopIteration:
                    break
                except UnicodeDecodeError as exc:  # a text stream decodes before we see the line
                    part.problems.append(
                        InputProblem(self.label, f"line {self.lines_read + 1}",
                                     f"not UTF-8 text: {exc.reason}; the rest of the input was not read")
                    )
                    part.bad_lines += 1
                    seen = True
                    break
                self.lines_read = number
                part.bytes_read += len(raw) if isinstance(raw, (bytes, str)) else raw.size
            seen = True
            item = read_pending(number, raw, self.label)
            if item is None:
                continue
            self.saw_any = True
            if isinstance(item, PendingLine):
                part.pending.append(item)
            elif isinstance(item, CatalogueLine):
                if part.records or part.pending:
                    self._held = (number, raw)
                    break
                checked = check_catalogue_line(item, self.label)
                if isinstance(checked, InputProblem):
                    part.problems.append(checked)
                    part.catalogue_refused += 1
                else:
                    part.catalogue.append(checked)
            elif isinstance(item, list):
                part.problems.extend(item)
                part.bad_lines += 1
            else:
                part.records.append(item)
        if self.check_ahead:
            self.check(part)
        return part if seen else None

    def check(self, part: Part) -> None:
        """Check the part's pending lines ahead, in the reader's thread, while the database merges the part
        before (a check is a function of the line's bytes alone): which of them are live runs already is
        still decided in order, after that merge (_settle_pending), and theirs are dropped."""
        part.checked = {line.number: _checked_ahead(line, self.label) for line in part.pending}

    def settled(self, pending: int, known: int, size: int) -> None:
        """A part's `pending` lines (`size` bytes in all) were looked up and `known` of them were live
        runs already: where nearly all were, the next part the reader starts holds up to
        KNOWN_PART_LINES lines (about KNOWN_PART_BYTES), else batch_size again. Memory stays bounded:
        a part's lines, or a batch of records, whatever the file's size."""
        if pending and known >= pending * 0.9:
            fit = KNOWN_PART_BYTES * pending // max(size, 1)
            self.part_lines = max(self.batch_size, min(KNOWN_PART_LINES, fit))
            self.check_ahead = False  # the next part's lines are likely live runs too: checked only if not
        else:
            self.part_lines = self.batch_size
            self.check_ahead = True


def _checked_ahead(line: PendingLine, label: str) -> RunRecord | list[InputProblem]:
    """check_pending, and the content digest of a run record the stage would work out (a function of
    the record alone): in the reader's thread, so that the merge's thread need not."""
    found = check_pending(line, label)
    if isinstance(found, RunRecord) and not in_stated_form(found.data):
        return replace(found, content_sha=content_digest(found.data))
    return found


async def _read_ahead(reader: PartReader, handle: Callable[[Part, Callable[[], None]], Awaitable[None]]) -> None:
    """handle(part, read_next) for every part, in order, the next part read in a worker thread while the
    current one is handled (the database merges a batch while Python decodes the next).

    When the next read starts decides what it overlaps. Where the lines are mostly new (the reader
    checks them as it reads: check_ahead), it starts when handle calls read_next, which the writer does
    as PostgreSQL starts merging the batch (RunWriter.write's `merging`): begun with the part, the
    reader's Python ran beside the writer's own (resolving, staging), the two taking turns at the GIL,
    and was done before the database's long work, which then had nothing beside it (100,000 new runs:
    17.7 -> 14.7 s, the same CPU). Where the lines are live runs already (an unchanged file: no merge),
    it starts with the part, as the lookup is the database's work. read_next is called after handle
    in any case, and more than once is once.

    A part read with the part before it, before anything was known of that one's lines (the second part
    of an import, or the part after one found known), is read unchecked; when those lines turn out new,
    it is checked in a worker thread as the database starts merging them, as a part read then would have
    been (else its 5,000 lines were checked in this thread, between two batches, the database idle)."""
    part = await asyncio.to_thread(reader.next_part)
    while part is not None:
        pending: asyncio.Future[Part | None] | None = None
        checking = False

        def read_next() -> None:
            nonlocal pending, checking
            if pending is None:
                pending = asyncio.ensure_future(asyncio.to_thread(reader.next_part))
                checking = reader.check_ahead  # read from now on, the part follows the verdict itself
            elif reader.check_ahead and not checking:
                checking = True
                pending = asyncio.ensure_future(_checked_late(reader, pending))

        if not reader.check_ahead:
            read_next()
        try:
            await handle(part, read_next)
            read_next()
            assert pending is not None
            part = await pending
        finally:
            if pending is not None and not pending.done():
                # A thread cannot be cancelled: let it finish its part before the file is closed under it.
                await asyncio.wait([pending])


async def _checked_late(reader: PartReader, reading: asyncio.Future[Part | None]) -> Part | None:
    """The part being read, its pending lines checked in a worker thread unless the reader checked them."""
    part = await reading
    if part is not None and part.pending and not part.checked:
        await asyncio.to_thread(reader.check, part)
    return part


# -- writing: through the one pipeline (kernelindex.ingest.pipeline) -----------------------------


async def _settle_pending(session: AsyncSession, writer: RunWriter, part: Part, tally: IngestSummary, reader: PartReader) -> None:
    """Count the part's pending lines whose bytes are live runs already as unchanged, and check the
    others into the part's records (in line order), their problems into the tally. In the session's
    transaction."""
    if not part.pending:
        return
    label = reader.label
    known, unknown = await writer.skip_known(session, part.pending, label)
    reader.settled(len(part.pending), len(part.pending) - len(unknown), sum(len(line.raw) for line in part.pending))
    tally.add_part(known)
    bad = 0
    for line in unknown:
        checked = part.checked.get(line.number)
        if checked is None:
            checked = check_pending(line, label)
        if isinstance(checked, RunRecord):
            part.records.append(checked)
        else:
            tally.add_problems(checked)
            bad += 1
    tally.found += bad
    tally.rejected += bad
    part.pending = []
    part.checked = {}
    part.records.sort(key=lambda record: record.line or 0)


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
    size = check_input_file(path, label, max_file_bytes)
    mode = Mode.of(strict=strict, dry_run=dry_run)
    tally = IngestSummary()
    # A large buffer: the reader thread refills it (releasing and taking back the interpreter lock,
    # which the thread merging the previous part may hold) a hundred times a gigabyte, not 100,000.
    with path.open("rb", buffering=READ_BUFFER_BYTES) as stream:
        reader = PartReader(stream, label, batch_size)
        async with Pipeline.open(
            database_url, mode, tally, now=now, batch_size=batch_size, overlay=True,
            progress=("ingest runs (bytes)", size) if progress else None,
        ) as pipeline:

            async def handle(part: Part, read_next: Callable[[], None]) -> None:
                pipeline.problems(part.problems, entries=part.bad_lines + part.catalogue_refused)
                if part.catalogue:
                    # Hardware and workload revisions first: the runs after them refer to them.
                    catalogue = part.catalogue
                    await pipeline.catalogue(
                        lambda session: apply_catalog(session, catalogue),
                        lambda refs: overlay_catalog(catalogue, refs.by_slug, refs.by_triple, refs.hardware, refs.by_key),
                    )
                if part.pending:
                    async with pipeline.unit() as session:
                        await _settle_pending(session, pipeline.writer, part, tally, reader)
                await pipeline.write(part.records, merging=read_next)
                pipeline.advance(part.bytes_read)

            await _read_ahead(reader, handle)
            if not reader.saw_any:
                # The input has been read to its end: one without a record or a catalogue line is refused.
                pipeline.problems([InputProblem(label, "line 1", "the file holds no run records (it is empty)")])
            await pipeline.finish()
    return tally.check()
