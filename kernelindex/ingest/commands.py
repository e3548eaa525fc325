"""The ingest commands: validate everything first, then write in transactional batches."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select, tuple_

from kernelindex.ingest.errors import IngestAborted, InputProblem
from kernelindex.ingest.progress import Progress, print_table
from kernelindex.ingest.records import RunRecord, read_run_records
from kernelindex.ingest.writer import IngestSummary, RunWriter
from kernelindex.rules.identity import configuration_key, digest

EXIT_OK = 0
EXIT_SOME_REJECTED = 1
EXIT_FATAL = 2


def say(message: str) -> None:
    print(f"kernelindex: {message}", file=sys.stderr, flush=True)


@contextmanager
def readable_copy(path: str) -> Iterator[Path]:
    """A path that can be read twice: stdin is spooled to a temporary file."""
    if path != "-":
        p = Path(path)
        if not p.exists():
            raise IngestAborted([InputProblem(path, "file", "no such file")])
        yield p
        return
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as tmp:
        shutil.copyfileobj(sys.stdin.buffer, tmp)
    try:
        yield Path(tmp.name)
    finally:
        os.unlink(tmp.name)


def _record_key(data: dict) -> str:
    """Natural key as the file states it (before resolution), to find duplicates inside one file."""
    w = data["workload"]
    hw = data["environment"]["hardware"]
    return digest(
        [
            w.get("slug") or [w.get("suite"), w.get("level"), w.get("problem")],
            w.get("source_sha256"),
            configuration_key(data["configuration"]["bindings"], data["configuration"]["dtype"]),
            data["implementation"]["slug"],
            hw.get("sku") or hw.get("product_name"),
            {k: v for k, v in data["environment"].items() if k != "hardware"},
            [data["protocol"]["name"], data["protocol"]["version"]],
            [data["source"]["name"], data["source"].get("revision")],
        ]
    )[:32]


async def prevalidate(path: Path, label: str, session) -> tuple[list[InputProblem], int]:
    """Pass 1, streaming: every schema and reference problem in the file, and the count of good records."""
    from kernelindex.db.models import Hardware, Workload

    problems: list[InputProblem] = []
    good = 0
    first_seen: dict[str, str] = {}
    slugs: dict[str, list[str]] = {}
    triples: dict[tuple, list[str]] = {}
    skus: dict[str, list[str]] = {}
    bad_lines: set[str] = set()
    with path.open(encoding="utf-8", errors="strict") as stream:
        for item in read_run_records(stream, label):
            if isinstance(item, InputProblem):
                problems.append(item)
                continue
            key = _record_key(item.data)
            if key in first_seen:
                problems.append(InputProblem(label, item.where, f"the same run as {first_seen[key]} (same natural key)"))
                continue
            first_seen[key] = item.where
            w = item.data["workload"]
            if "slug" in w:
                slugs.setdefault(w["slug"], []).append(item.where)
            else:
                triples.setdefault((w["suite"], w["level"], w["problem"]), []).append(item.where)
            sku = item.data["environment"]["hardware"].get("sku")
            if sku and not item.data["environment"]["hardware"].get("product_name"):
                skus.setdefault(sku.lower(), []).append(item.where)
            good += 1
    if slugs:
        known = set((await session.scalars(select(Workload.slug).where(Workload.slug.in_(list(slugs))))).all())
        for slug, wheres in slugs.items():
            if slug not in known:
                for where in wheres:
                    problems.append(InputProblem(label, where, f"unknown workload {slug!r}", key="workload.slug"))
                    bad_lines.add(where)
    if triples:
        rows = (
            await session.execute(
                select(Workload.suite, Workload.level, Workload.problem_number).where(
                    tuple_(Workload.suite, Workload.level, Workload.problem_number).in_(list(triples))
                )
            )
        ).all()
        known_triples = {tuple(r) for r in rows}
        for triple, wheres in triples.items():
            if triple not in known_triples:
                for where in wheres:
                    problems.append(
                        InputProblem(label, where, f"unknown workload {triple[0]} level {triple[1]} problem {triple[2]}", key="workload")
                    )
                    bad_lines.add(where)
    if skus:
        catalogue = [s.lower() for s in (await session.scalars(select(Hardware.sku))).all()]
        for sku, wheres in skus.items():
            if sku not in catalogue:
                for where in wheres:
                    problems.append(
                        InputProblem(label, where, f"unknown hardware SKU {sku!r} (not in the hardware catalogue)", key="environment.hardware.sku")
                    )
                    bad_lines.add(where)
    good -= len(bad_lines)
    return problems, good


def iter_good_batches(path: Path, label: str, batch_size: int, skip: set[str]) -> Iterator[list[RunRecord]]:
    batch: list[RunRecord] = []
    with path.open(encoding="utf-8", errors="strict") as stream:
        for item in read_run_records(stream, label):
            if isinstance(item, InputProblem) or item.where in skip:
                continue
            batch.append(item)
            if len(batch) >= batch_size:
                yield batch
                batch = []
    if batch:
        yield batch


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
        async with sessionmaker() as session:
            problems, good = await prevalidate(path, label, session)
        summary.problems = problems
        if problems and strict:
            raise IngestAborted(problems)
        skip = {p.where for p in problems}
        bar = Progress("ingest runs", total=good) if progress else None
        batches = iter_good_batches(path, label, batch_size, skip)
        if dry_run:
            async with sessionmaker() as session:
                writer = RunWriter(session, now=now)
                for batch in batches:
                    part = await writer.write(batch, dry_run=True)
                    summary.merge(part)
                    if bar:
                        bar.advance(len(batch))
                await session.rollback()
        else:
            for batch in batches:
                async with transaction(sessionmaker) as session:
                    part = await RunWriter(session, now=now).write(batch)
                    if part.problems and strict:
                        raise IngestAborted(part.problems)
                summary.merge(part)
                if bar:
                    bar.advance(len(batch))
        if bar:
            bar.close()
    finally:
        await engine.dispose()
    summary.rejected = len({(p.file, p.where) for p in summary.problems})
    return summary


def report(summary: IngestSummary, *, dry_run: bool) -> int:
    for warning in summary.warnings:
        say(f"warning: {warning}")
    for problem in summary.problems[:100]:
        say(f"rejected: {problem}")
    if len(summary.problems) > 100:
        say(f"… and {len(summary.problems) - 100} more problems")
    if dry_run:
        say("dry run: nothing was written; this is what would happen")
    elif summary.inserted == 0 and summary.superseded == 0:
        say("nothing new: every record is already stored")
    print_table(summary.table())
    return EXIT_SOME_REJECTED if summary.rejected else EXIT_OK


def cmd_ingest_runs(args: argparse.Namespace) -> int:
    from kernelindex.cli import database_url

    url = database_url()
    with readable_copy(args.file) as path:
        label = "<stdin>" if args.file == "-" else args.file
        try:
            summary = asyncio.run(
                ingest_runs_file(url, path, label, strict=args.strict, dry_run=args.dry_run, batch_size=args.batch_size)
            )
        except UnicodeDecodeError as exc:
            raise IngestAborted([InputProblem(label, "file", f"not UTF-8 text: {exc.reason}")]) from exc
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
