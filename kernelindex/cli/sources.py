"""`kernelindex ingest kernelindex-export PATH` and `kernelindex ingest liger PATH`: a source adapter reads
the file (kernelindex.ingest.sources), kernelindex.ingest.source_import writes it as one snapshot, and
its summary (kernelindex.ingest.summary, told as every ingest's: kernelindex.cli.ingest.report) accounts
for every line by table and every run by outcome.

Exit status as every ingest: 0 everything landed, 1 some lines or runs were refused (the rest landed),
2 a fatal error (no such file, an unreadable .zst, no database), 3 --strict found a problem and nothing
was written.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import date
from pathlib import Path

from kernelindex.cli.common import CommandError, database_url
from kernelindex.cli.ingest import report
from kernelindex.gc_tuning import tune_gc
from kernelindex.ingest.errors import IngestFatal
from kernelindex.ingest.source_import import (
    KnownFile,
    Snapshot,
    SourceRead,
    file_digest,
    import_source_file,
    known_file,
    known_summary,
)
from kernelindex.ingest.sources.parts import SourcePart


def cmd_ingest_kernelindex_export(args: argparse.Namespace) -> int:
    from kernelindex.ingest.sources.kernelindex_export import ExportUnreadable, read_export, route_of

    path = Path(args.path)
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    route_date, revision = route_of(path)  # the date and revision its name states
    if route_date and revision and (known := _known(path, revision, route_date)) is not None:
        return _unchanged(known, f"kernelindex.com catalogue export {path.name}")
    try:
        read = read_export(path)
    except ExportUnreadable as exc:
        raise IngestFatal(str(exc)) from exc
    if not read.revision or not read.route_date:
        raise CommandError(f"{path.name}: an export is named catalog-YYYY-MM-DD-<revision>.jsonl.zst (its date and revision)")
    snapshot = Snapshot(read.revision, read.route_date, read.route)
    return _import(args, read, read.sources, snapshot, f"kernelindex.com catalogue export {read.route}")


def cmd_ingest_liger(args: argparse.Namespace) -> int:
    from kernelindex.ingest.sources.liger import read_liger

    path = Path(args.path)
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    try:
        observed = date.fromisoformat(args.observed)
    except ValueError:
        raise CommandError(f"--observed {args.observed!r}: expected a date, YYYY-MM-DD") from None
    if (known := _known(path, args.revision, observed)) is not None:
        return _unchanged(known, f"Liger-Kernel benchmark results at {args.revision} ({observed})")
    read = read_liger(path, revision=args.revision, observed=observed)
    snapshot = Snapshot(args.revision, observed, path.name)
    return _import(args, read, [read.source], snapshot, f"Liger-Kernel benchmark results at {args.revision} ({observed})")


def _known(path: Path, revision: str, revision_date: date) -> KnownFile | None:
    """The earlier import of these very bytes as this revision and date (known_file), looked up before
    the file is read."""
    return asyncio.run(known_file(database_url(), file_digest(path), revision, revision_date))


def _unchanged(known: KnownFile, what: str) -> int:
    """The same bytes again: every run unchanged, told from what their import found (nothing is read)."""
    summary = known_summary(known)
    summary.notes.append(f"unchanged: {what} is the very file imported on {known.imported_at:%Y-%m-%d %H:%M} UTC "
                         "(same sha256): nothing to do")
    return report(summary, dry_run=False)


def _import(args: argparse.Namespace, read: SourceRead, sources: list[SourcePart], snapshot: Snapshot, what: str) -> int:
    sha256 = file_digest(Path(args.path))
    tune_gc()  # decoded parts are garbage by the thousand: see kernelindex.gc_tuning
    summary = asyncio.run(import_source_file(database_url(), read, sources, snapshot, strict=args.strict, dry_run=args.dry_run,
                                             sha256=sha256))
    summary.imported = what
    return report(summary, dry_run=args.dry_run)
