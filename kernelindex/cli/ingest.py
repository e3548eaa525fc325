"""`kernelindex ingest runs FILE` and `kernelindex ingest kernelbench PATH`: the command lines around
the ingest pipelines (kernelindex.ingest.runs, kernelindex.ingest.kernelbench), and `report`, how every
ingest's summary (kernelindex.ingest.summary) is told, these and the source imports' (kernelindex.cli.sources).

Exit status: 0 everything landed, 1 some input was rejected (the rest landed), 2 a fatal error (no
such file, no database, an internal error), 3 --strict found a problem and nothing was written.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernelindex.cli.common import EXIT_FATAL, EXIT_OK, EXIT_SOME_REJECTED, CommandError, database_url, say
from kernelindex.db.errors import describe_failure, shortage
from kernelindex.gc_tuning import tune_gc
from kernelindex.ingest.errors import IngestAborted, IngestFatal
from kernelindex.ingest.formats import sniff
from kernelindex.ingest.progress import print_table
from kernelindex.ingest.runs import check_input_file, ingest_runs_file
from kernelindex.ingest.summary import IngestSummary
from kernelindex.settings import get_settings

MAX_PRINTED_PROBLEMS = 100


@contextmanager
def readable_copy(path: str) -> Iterator[Path]:
    """A path that can be read twice: stdin is spooled to a temporary file."""
    if path != "-":
        p = Path(path)
        # stat() only, before any open: opening a FIFO would block forever, /dev/zero never ends.
        check_input_file(p, path)
        try:
            with p.open("rb"):
                pass
        except OSError as exc:
            raise IngestFatal(f"{path}: cannot read it: {exc.strerror or exc}") from exc
        yield p
        return
    stdin = getattr(sys.stdin, "buffer", None) or sys.stdin
    limit = get_settings().ingest_max_file_bytes  # before the spool file exists: nothing to clean up if it fails
    try:
        tmp = tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False)
    except OSError as exc:
        raise IngestFatal(f"<stdin>: cannot keep a copy of it in {tempfile.gettempdir()}: {exc.strerror or exc}") from exc
    spooled = 0
    try:
        with tmp:
            while True:
                chunk = stdin.read(1 << 20)
                if not chunk:
                    break
                data = chunk.encode("utf-8", "surrogateescape") if isinstance(chunk, str) else chunk
                spooled += len(data)
                if spooled > limit:  # the same bound as a file's: stdin may be endless (`cat /dev/zero |`)
                    raise IngestFatal(
                        f"<stdin>: more than the maximum input size of {limit:,} bytes "
                        "(KERNELINDEX_INGEST_MAX_FILE_BYTES); split it, or raise the limit"
                    )
                tmp.write(data)
    except OSError as exc:
        os.unlink(tmp.name)
        why = shortage(exc) or exc.strerror or str(exc)
        raise IngestFatal(f"<stdin>: cannot keep a copy of it in {tmp.name}: {why}") from exc
    except BaseException:  # interrupted or terminated while reading: leave no spool file behind
        os.unlink(tmp.name)
        raise
    try:
        yield Path(tmp.name)
    finally:
        os.unlink(tmp.name)




def report(summary: IngestSummary, *, dry_run: bool) -> int:
    """Tell what an ingest did, the same way for every way in (kernelindex.ingest.summary): what was imported
    and its notes, the warnings, what was skipped (by reason, with examples) and rejected (each problem),
    what a dry run would do, the closing table on stdout, and the identity `found = inserted + … + rejected`.
    Returns the exit status: 1 when some input was rejected (the rest landed), else 0."""
    if summary.imported is not None:
        say(f"{'would import' if dry_run else 'imported'} {summary.imported}")
    for note in summary.notes:
        say(note)
    for warning in summary.warnings:
        say(f"warning: {warning}")
    unit = summary.unit or "records"
    for reason, count in sorted(summary.skipped.items()):
        examples = summary.skipped_examples.get(reason, [])
        more = f" (and {count - len(examples):,} more)" if examples and count > len(examples) else ""
        shown = f": {'; '.join(examples)}{more}" if examples else ""
        say(f"skipped {count:,} {unit}: {reason}{shown}")
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
    print_table(summary.table(dry_run=dry_run))
    say(summary.identity())
    if (lines := summary.lines_identity()) is not None:
        say(lines)
    return EXIT_SOME_REJECTED if summary.rejected else EXIT_OK


def cmd_ingest_runs(args: argparse.Namespace) -> int:
    if args.batch_size < 1:
        say(f"error: --batch-size must be at least 1, got {args.batch_size}")
        return EXIT_FATAL
    label = "<stdin>" if args.file == "-" else args.file
    try:
        with readable_copy(args.file) as path:
            # Another source's file (a KernelBench timing file, a catalogue export) is refused whole, naming
            # what it is, before any database is started: not thousands of per-line JSON errors.
            foreign = sniff(path)
            if foreign is not None:
                raise IngestFatal(foreign.message(label))
            url = database_url()
            tune_gc()  # decoded records are garbage by the thousand: see kernelindex.gc_tuning
            summary = asyncio.run(
                ingest_runs_file(url, path, label, strict=args.strict, dry_run=args.dry_run, batch_size=args.batch_size)
            )
    except IngestFatal as exc:
        say(f"error: {exc}")
        return EXIT_FATAL
    except (IngestAborted, CommandError):
        raise  # the command line reports these (exit 1 and 2)
    except Exception as exc:
        if os.environ.get("KERNELINDEX_TRACEBACK"):
            raise
        say(f"error: {describe_failure(exc)}")
        if args.strict or args.dry_run:
            say("nothing was written")
        else:
            say("batches committed before the error stay; run the same input again to finish (ingest is idempotent)")
        return EXIT_FATAL
    return report(summary, dry_run=args.dry_run)


def cmd_ingest_kernelbench(args: argparse.Namespace) -> int:
    try:
        levels = [int(x) for x in args.levels.split(",") if x.strip()]
    except ValueError:
        raise CommandError(f"--levels {args.levels!r}: expected comma-separated level numbers, e.g. 1,2,3") from None
    if not levels:
        raise CommandError(f"--levels {args.levels!r}: no level named")
    # Here, not at the top: `ingest runs` needs none of it (the problem tracer's cache, psycopg).
    from kernelindex.ingest.kernelbench import import_kernelbench

    url = database_url()
    tune_gc()
    summary = import_kernelbench(
        url, Path(args.path), revision=args.revision, observed=args.observed, levels=levels,
        strict=args.strict, dry_run=args.dry_run, batch_size=args.batch_size, timeout_s=args.timeout,
    )
    return report(summary, dry_run=args.dry_run)

