"""`kernelindex bench`: measure workloads with the benchmarks package and, with --ingest, store the
runs through the same path as `kernelindex ingest runs`.

The benchmarks package imports with torch alone; this command adds the database around it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
from pathlib import Path

from sqlalchemy import select

from benchmarks.naming import slug_for_path  # torch-free
from benchmarks.records import cpu_hardware_line  # torch-free
from kernelindex.cli.common import CommandError, database_url, say
from kernelindex.cli.fleet import in_transaction, report_enqueued, with_subjects
from kernelindex.cli.ingest import report
from kernelindex.db.engine import make_engine, make_sessionmaker
from kernelindex.db.errors import shortage
from kernelindex.db.models import Workload, WorkloadRevision
from kernelindex.fleet.jobs import enqueue_sweep
from kernelindex.ingest.runs import ingest_runs_file


async def load_problems(database_url: str, slugs: list[str], level: int | None, everything: bool) -> list[tuple[str, str, str]]:
    """(slug, source, filename) for the current revision of each workload asked for."""
    engine = make_engine(database_url, pool_size=1, max_overflow=0)
    try:
        async with make_sessionmaker(engine)() as session:
            statement = select(Workload.slug, WorkloadRevision.reference_source, WorkloadRevision.source_filename).join(
                WorkloadRevision, WorkloadRevision.id == Workload.current_revision_id
            )
            if not everything:
                statement = statement.where(Workload.slug.in_(slugs))
            if level is not None:
                statement = statement.where(Workload.level == level)
            rows = (await session.execute(statement.order_by(Workload.level, Workload.problem_number))).all()
    finally:
        await engine.dispose()
    found = {r[0] for r in rows}
    missing = [s for s in slugs if s not in found]
    if missing:
        raise CommandError(f"unknown workload(s): {', '.join(missing)}")
    return [(slug, source, filename or f"{slug}.py") for slug, source, filename in rows]


def cmd_enqueue(args: argparse.Namespace) -> int:
    """`bench --enqueue`: one fleet job per workload × implementation × hardware, measured by the workers."""
    if args.file:
        raise CommandError("--enqueue measures workloads of the index (--workload, --all): a --file is measured here only")
    if not (args.workload or args.all):
        raise CommandError("name what to queue: --workload SLUG, or --all [--level N]")
    url = database_url()

    async def work(session):
        return await with_subjects(session, await enqueue_sweep(
            session, workload_slugs=args.workload, level=args.level, everything=args.all,
            implementations=args.impl or ["torch_eager", "torch_compile_inductor"], hardware=args.hardware,
            bindings=dict(args.bindings), replicas=args.replicas,
        ))

    report_enqueued(*asyncio.run(in_transaction(url, work)))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.enqueue:
        return cmd_enqueue(args)
    if args.hardware:
        raise CommandError("--hardware names where queued jobs run: use it with --enqueue")
    from benchmarks.sweep import TablePrinter, run_sweep


    if not (args.workload or args.all or args.file):
        raise CommandError("name what to measure: --workload SLUG, --all [--level N], or --file PATH")
    problems: list[tuple[str, str, str]] = []
    url = None
    if args.workload or args.all:
        url = database_url()
        problems += asyncio.run(load_problems(url, args.workload, args.level, args.all))
    for path in args.file:
        p = Path(path)
        if not p.is_file():
            raise CommandError(f"no such problem file: {path}")
        # …/levelN/NN_Name.py is a checkout's problem: the importer's slug, so `ingest runs` knows it.
        slug = args.slug or slug_for_path(p) or p.stem.lower().replace("_", "-")
        problems.append((slug, p.read_text(encoding="utf-8"), p.name))
    if not problems:
        raise CommandError("no workload matched")
    overrides = dict(args.bindings)
    out_path = Path(args.out) if args.out and args.out != "-" else None
    spool = None
    if args.ingest and out_path is None:
        spool = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        out_path = Path(spool.name)
        spool.close()
    try:
        out = out_path.open("w", encoding="utf-8") if out_path else sys.stdout
    except OSError as exc:
        raise CommandError(f"cannot write run records to {out_path}: {exc.strerror or exc}") from exc
    failed = 0
    declared: set[str] = set()
    try:
        for record in run_sweep(
            problems, args.impl or ["torch_eager", "torch_compile_inductor"],
            device=None if args.device == "auto" else args.device, trials=args.trials, warmup=args.warmup,
            overrides=overrides or None, progress_callback=TablePrinter(), provider=args.provider, label=args.label,
        ):
            lines = [record]
            hardware = cpu_hardware_line(record["environment"])
            if hardware is not None and hardware["sku"] not in declared:
                # A CPU is not in the GPU catalogue: its catalogue line goes first (`ingest runs` reads it first).
                declared.add(hardware["sku"])
                lines.insert(0, hardware)
            try:
                out.write("".join(json.dumps(line, sort_keys=True) + "\n" for line in lines))
                out.flush()
            except OSError as exc:
                if isinstance(exc, BrokenPipeError):
                    raise  # the reader went away (`| head`): the command line ends quietly
                why = shortage(exc) or exc.strerror or str(exc)
                where = "standard output" if out is sys.stdout else str(out_path)
                raise CommandError(f"cannot write run records to {where}: {why} "
                                   "(the records before this one were written)") from exc
            failed += record["status"] == "failed"
    finally:
        if out is not sys.stdout:
            with contextlib.suppress(OSError):  # its error, if any, was the one reported
                out.close()
    status = 1 if failed else 0
    if args.ingest:
        assert out_path is not None  # with --ingest it is --out or the spool file
        url = url or database_url()
        summary = asyncio.run(ingest_runs_file(url, out_path, str(out_path), progress=False))
        status = max(status, report(summary, dry_run=False))
        if spool is not None:
            out_path.unlink()
    if failed:
        say(f"{failed} run(s) failed; they are recorded as failed runs with their reason")
    return status
