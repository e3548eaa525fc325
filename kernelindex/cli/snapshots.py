"""`kernelindex snapshot list|retract`: the imported snapshots of every suite and source, and
retracting one that should not count (kernelindex.ingest.snapshots says what that does).

`list` prints two tables on stdout (suite snapshots, then source snapshots), retracted ones marked
with when and why. `retract SUITE REVISION --reason …` exits 0 when it retracted the snapshot or
found it retracted before (saying so), 2 when no such snapshot exists or the reason is empty."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

from kernelindex.cli.common import CommandError, database_url, say, write_stdout
from kernelindex.db.engine import in_own_transaction
from kernelindex.ingest import snapshots


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ") if value is not None else "-"


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n" for row in table)


def _retracted(at: datetime | None, reason: str | None) -> str:
    return f"retracted {_when(at)}: {reason}" if at is not None else "-"


def cmd_snapshot_list(args: argparse.Namespace) -> int:
    suites, sources = asyncio.run(in_own_transaction(database_url(), snapshots.list_snapshots))
    suite_rows = [
        (s.suite, s.revision, str(s.revision_date or "-"), "complete" if s.complete else "partial", f"{s.workloads:,}",
         _when(s.created_at), _retracted(s.retracted_at, s.retraction_reason))
        for s in suites
    ]
    source_rows = [
        (s.source, s.revision or "-", str(s.revision_date or "-"), f"{s.runs:,}", f"{s.live_runs:,}", _when(s.created_at),
         _retracted(s.retracted_at, s.retraction_reason))
        for s in sources
    ]
    write_stdout(
        "suite snapshots\n"
        + _table(("suite", "revision", "date", "reading", "workloads", "imported", "retracted"), suite_rows)
        + "\nsource snapshots\n"
        + _table(("source", "revision", "date", "runs", "live runs", "imported", "retracted"), source_rows)
    )
    if not suites and not sources:
        say("no snapshots yet: `kernelindex seed` or `kernelindex ingest kernelbench PATH` imports one")
    return 0


def cmd_snapshot_retract(args: argparse.Namespace) -> int:
    url = database_url()

    async def work(session):
        try:
            return await snapshots.retract_suite_snapshot(
                session, args.suite, args.revision, args.reason, now=datetime.now(UTC)
            )
        except snapshots.SnapshotError as exc:
            raise CommandError(str(exc)) from exc

    done = asyncio.run(in_own_transaction(url, work))
    if done.already_retracted:
        say(f"the {done.suite} snapshot {done.revision} was already retracted at {_when(done.retracted_at)} "
            f"({done.reason}); nothing changed")
        return 0
    held = ", ".join(done.source_snapshots) or "no source snapshot"
    say(
        f"retracted the {done.suite} snapshot {done.revision} ({done.reason}): source snapshots {held}; "
        f"{done.runs_retracted:,} runs retracted (kept, counting for nothing); {done.workloads_touched:,} workloads "
        f"recomputed; {done.record_events:,} record events appended"
    )
    return 0
