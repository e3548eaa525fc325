"""`kernelindex ingest kernelindex-export PATH` and `kernelindex ingest liger PATH`: a source adapter reads
the file (kernelindex.ingest.sources), kernelindex.ingest.source_import writes it as one snapshot, and
the summary accounts for every line by table and every run by outcome.

Exit status as every ingest: 0 everything landed, 1 some lines or runs were refused (the rest landed),
2 a fatal error (no such file, an unreadable .zst, no database), 3 --strict found a problem and nothing
was written.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import date
from pathlib import Path

from kernelindex.cli.common import EXIT_OK, EXIT_SOME_REJECTED, CommandError, database_url, say
from kernelindex.ingest.errors import IngestFatal
from kernelindex.ingest.progress import print_table
from kernelindex.ingest.source_import import (
    KnownFile,
    Snapshot,
    SourceImportSummary,
    SourceRead,
    file_digest,
    import_source_file,
    known_file,
)
from kernelindex.ingest.sources.parts import SourcePart

MAX_PRINTED_PROBLEMS = 100


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
    say(f"unchanged: {what} is the very file imported on {known.imported_at:%Y-%m-%d %H:%M} UTC (same sha256): nothing to do")
    rows = [(f"lines of {table}", count) for table, count in sorted(known.lines.items())]
    rows += [(f"  skipped ({table}: not modelled)", count) for table, count in sorted(known.skipped.items())]
    rows += [("runs unchanged", known.runs_read)]
    rows += [(f"  runs from {source}", count) for source, count in sorted(known.runs_by_source.items())]
    print_table(rows)
    say(f"runs: {known.runs_read:,} read = 0 inserted + {known.runs_read:,} unchanged + 0 refused (the same bytes as before)")
    say(f"lines: {sum(known.lines.values()):,} = {sum(known.lines.values()) - sum(known.skipped.values()):,} read + "
        f"{sum(known.skipped.values()):,} skipped + 0 refused")
    return EXIT_OK


def _import(args: argparse.Namespace, read: SourceRead, sources: list[SourcePart], snapshot: Snapshot, what: str) -> int:
    sha256 = file_digest(Path(args.path))
    summary = asyncio.run(import_source_file(database_url(), read, sources, snapshot, strict=args.strict, dry_run=args.dry_run,
                                             sha256=sha256))
    _tell(summary, what, dry_run=args.dry_run)
    refused = len(summary.read.refused) + summary.runs.rejected
    return EXIT_SOME_REJECTED if refused else EXIT_OK


def _tell(summary: SourceImportSummary, what: str, *, dry_run: bool) -> None:
    read = summary.read
    say(f"{'would import' if dry_run else 'imported'} {what}")
    if summary.outdated:
        say("a newer snapshot of its sources is stored: its runs are kept and count for nothing")
    problems = [str(r) for r in read.refused] + [str(p) for p in summary.runs.problems]
    for problem in problems[:MAX_PRINTED_PROBLEMS]:
        say(f"refused: {problem}")
    if len(problems) > MAX_PRINTED_PROBLEMS:
        say(f"… and {len(problems) - MAX_PRINTED_PROBLEMS:,} more refused")
    if dry_run:
        say("dry run: nothing was written; this is what would happen")
    rows = [(f"lines of {table}", count) for table, count in sorted(read.lines.items())]
    rows += [(f"  skipped ({table}: not modelled)", count) for table, count in sorted(read.skipped.items())]
    rows += [(f"  refused ({table})", count) for table, count in sorted(read.refused_by_table.items())]
    rows += [
        ("workloads inserted", summary.workloads_inserted), ("workloads with a new revision", summary.workloads_new_revision),
        ("workloads unchanged", summary.workloads_unchanged),
        ("runs inserted", summary.runs.inserted), ("runs unchanged", summary.runs.unchanged),
        ("runs superseded", summary.runs.superseded), ("runs refused", summary.runs.rejected),
    ]
    rows += [(f"  runs from {source}", count) for source, count in sorted(summary.runs_by_source.items())]
    print_table(rows)
    say(f"runs: {summary.runs_read:,} read = {summary.runs.inserted:,} inserted + {summary.runs.unchanged:,} unchanged "
        f"+ {summary.runs.rejected:,} refused (of them {summary.runs.superseded:,} superseded an earlier figure)")
    say(f"lines: {sum(read.lines.values()):,} = {sum(read.read.values()):,} read + {sum(read.skipped.values()):,} skipped "
        f"+ {sum(read.refused_by_table.values()):,} refused")
