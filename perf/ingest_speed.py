"""How fast does `kernelindex ingest runs` go? A synthetic runs file into a fresh embedded database.

    python -m perf.ingest_speed                      # 100,000 runs, then the same file again
    python -m perf.ingest_speed --lines 1500000      # about 1 GB of JSON Lines
    python -m perf.ingest_speed --lines 50000 --samples 100 --environments 5000
    python -m perf.ingest_speed --generate-only runs.jsonl --lines 2000000   # just write the file
    python -m perf.ingest_speed --lines 50000 --workloads 1 --environments 200 --implementations 2 --skip-kernelbench
    python -m perf.ingest_speed --lines 20000 --own-revisions --skip-kernelbench   # every run its own source revision
    python -m perf.ingest_speed --skip-kernelbench --without-foreign-keys   # what-if: runs' foreign keys dropped
    python -m perf.ingest_speed --skip-kernelbench --repeat 5   # five rounds, each ratio and their median

It starts an embedded PostgreSQL in a temporary folder, migrates and seeds it, writes N run records
spread over the seeded workloads (with --all-workloads: every workload in the database, after the
checkout's problems are imported) and many environments, then times the command
`kernelindex ingest runs FILE` in a child process: wall time (start-up included), runs per
second and the child's peak RSS. A second ingest of the same file (every run unchanged) is timed
the same way. Before them, in the same run and on the same server, it measures the floor
(perf.ingest_floor: decode, COPY into a staging table, INSERT … SELECT into a table of the runs
table's shape; twice, the second time every row present) and a --dry-run of the file, and prints
each time next to its floor. Beside each time it prints CPU time: the command's own and the
PostgreSQL server's meanwhile (perf.server_cpu), which say how much of the wall time is which side's,
and what no change on the other side can remove; and the least wall time the two allow together
on this machine's cores (each side its own CPU time at least, both together no more than every core).
Last, unless --skip-kernelbench, it times `kernelindex ingest kernelbench` on a checkout made of a
few synthetic problems under KernelBench's file names, the two seeded reference modules and, when
present, the shared timing files (../shared/kernelbench/results/timing).

Needs no GPU and no torch (problems are traced on the meta device when torch is there; without it
they are imported without semantics, which times the same database work).

--repeat N measures the floors and the imports N times, each round on its own copy of the prepared
database (made before anything is timed, so every round starts from the same state), and prints each
round's ratios and their median. A floor and its import are timed back to back, so a machine whose
speed drifts (a shared VM's does, by 10-40% over minutes) moves both of a pair alike, where one pair
taken in a slow stretch and compared with a floor taken in a fast one would not.

--without-foreign-keys is a what-if, not a figure of the product: it drops the foreign keys of runs,
record_events and cohort_bests in the test database before anything is timed, so the import runs
without their per-row checks, as the floor's table does. The difference is what those checks cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelindex.ingest.records import RECORD_FORMAT
from perf.dataset import reference_source
from perf.server_cpu import server_cpu, spent

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_TIMING = REPO_ROOT.parent / "shared" / "kernelbench" / "results" / "timing"
SEEDS_DIR = REPO_ROOT / "seeds"

# SKU → how much slower than an H100 SXM a run on it is (so no run is faster than its roofline floor).
SKUS = {
    "NVIDIA H100 SXM5 80GB": 1.0, "NVIDIA H100 PCIe 80GB": 1.4, "NVIDIA H200 SXM 141GB": 1.0, "NVIDIA B200 180GB": 0.8,
    "NVIDIA A100 SXM4 80GB": 2.2, "NVIDIA L40S 48GB": 2.5, "NVIDIA L4 24GB": 8.0, "NVIDIA A10G 24GB": 6.0,
}
SKU_NAMES = list(SKUS)
IMPLEMENTATIONS = (
    {"slug": "torch_eager"},
    {"slug": "torch_compile_inductor"},
    {"slug": "bench_triton_fused", "title": "Fused Triton kernel (benchmark)", "framework": "Triton", "language": "python",
     "role": "candidate", "source_availability": "none"},
    {"slug": "bench_cuda_handwritten", "title": "Hand-written CUDA (benchmark)", "framework": "CUDA", "language": "cuda",
     "role": "candidate", "source_availability": "none"},
)


def synthetic_lines(count: int, workloads: list[tuple], environments: int, samples: int, seed: int = 0,
                    implementations: int = len(IMPLEMENTATIONS), own_revisions: bool = False, first_environment: int = 0):
    """`count` distinct run records (one JSON line each). A run's natural key is spread in mixed radix
    over environments, implementations, workloads and then batch sizes, so every line is a new run.
    workloads: (slug, canonical bindings, dtype[, typical mean in ms]); means fall within 1–1.5× the
    typical one, so no run looks implausibly fast (below its roofline floor). own_revisions: each run
    names a source revision of its own (bench-<i>), so every line brings a new source snapshot.
    first_environment: the number of the first machine (bench-pool-<n>): another number, other machines,
    so a database that holds a run of these lines already gets new runs."""
    impls = IMPLEMENTATIONS[:implementations]
    per_round = environments * len(impls) * len(workloads)
    for i in range(count):
        env = i % environments
        impl = impls[(i // environments) % len(impls)]
        slug, bindings, dtype, *typical = workloads[(i // (environments * len(impls))) % len(workloads)]
        variant = i // per_round
        bound = dict(bindings)
        scale = 1.0
        if bound:
            first = sorted(bound)[0]
            bound[first] = bound[first] + variant  # another configuration per round
            scale = bound[first] / max(bindings[first], 1)  # latency grows with the batch
        else:
            bound = {"variant": variant}
        sku = SKU_NAMES[env % len(SKU_NAMES)]
        base = (typical[0] if typical and typical[0] else 1.0) * scale * SKUS[sku]
        mean = round(base * (1 + ((i * 7919 + seed) % 10007) / 20014), 4)
        std = round(mean * 0.02, 5)
        record: dict[str, Any] = {
            "format": RECORD_FORMAT,
            "workload": {"slug": slug},
            "configuration": {"bindings": bound, "dtype": dtype},
            "implementation": impl,
            "environment": {
                "hardware": {"sku": sku},
                "provider": f"BenchCloud {(first_environment + env) % 17}",
                "label": f"bench-pool-{first_environment + env}",
                "software": {"torch": "2.13.0", "cuda": "12.8", "driver": "570.86", "python": "3.11.7"},
                "details": {"sm_count": 132, "cpu": "bench cpu", "node": first_environment + env},
            },
            "protocol": {"name": "kernelindex-cuda-events", "version": "1", "timer": "cuda_events", "warmup": 3,
                         "trials": 100, "statistic": "mean", "l2_flush": True},
            "status": "passed",
            "statistics": {"mean": mean, "std": std, "min": round(mean * 0.97, 4), "max": round(mean * 1.04, 4),
                           "median": mean, "p5": round(mean * 0.98, 4), "p95": round(mean * 1.03, 4), "num_trials": 100},
            "observed_at": "2026-06-01T12:00:00Z",
            "evidence": "reported",  # an outside file is stored reported whatever it says (rungs: 74b35d6)
            "source": {"name": "KernelIndex benchmark runner", "revision": f"bench-{i}" if own_revisions else "bench-1"},
        }
        if samples:
            record["statistics"]["num_trials"] = samples
            record["samples_ms"] = [round(mean * (0.97 + 0.07 * ((k * 37) % samples) / samples), 5) for k in range(samples)]
        yield json.dumps(record, separators=(",", ":")) + "\n"


def write_file(path: Path, lines) -> int:
    size = 0
    with path.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(line)
            size += len(line)
    return size


def run_command(args: list[str], env: dict[str, str], label: str, server: Callable[[], float | None] = lambda: None) -> dict:
    """Run `kernelindex …` as a child; wall time, the child's peak RSS and CPU time (from wait4), and the
    CPU time the database server spent meanwhile (`server`: perf.server_cpu's reader)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        server_before = server()
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from kernelindex.cli.main import main; sys.exit(main())", *args],
            env=env, stdout=out, stderr=err, text=True,
        )
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS, not the max over all children
        wall = time.perf_counter() - start
        server_s = spent(server_before, server())
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        out_text, err_text = out.read(), err.read()
    rss_kb = usage.ru_maxrss
    table = {}
    for line in out_text.splitlines():
        if line.strip():
            name, _, value = line.rpartition(" ")
            try:
                table[name.strip()] = int(value.replace(",", ""))
            except ValueError:
                pass
    result = {"label": label, "exit": proc.returncode, "wall_s": round(wall, 3), "peak_rss_mb": round(rss_kb / 1024, 1),
              "cpu_s": round(usage.ru_utime + usage.ru_stime, 3), "server_cpu_s": server_s, "table": table}
    if proc.returncode not in (0,):
        result["stderr_tail"] = err_text[-2000:]
    return result


async def _prepare(url: str) -> list[tuple[str, dict, str, float | None]]:
    from kernelindex.ingest.seed import seed_database

    await seed_database(url)
    return await _workloads(url)


async def _workloads(url: str) -> list[tuple[str, dict, str, float | None]]:
    from sqlalchemy import text

    from kernelindex.db.engine import make_engine

    engine = make_engine(url, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    text(
                        "SELECT w.slug, r.canonical_bindings, r.canonical_dtype, "
                        "(SELECT max(mean_ms) FROM runs WHERE runs.workload_id = w.id AND superseded_at IS NULL) "
                        "FROM workloads w JOIN workload_revisions r ON r.id = w.current_revision_id ORDER BY w.id"
                    )
                )
            ).all()
    finally:
        await engine.dispose()
    return [(slug, dict(bindings or {}), dtype, typical) for slug, bindings, dtype, typical in rows]


# Problem files under the names KernelBench uses, so the shared timing files' entries for them land as runs.
# Their modules are synthetic (perf.dataset): what is timed is the import's database work and tracing.
CHECKOUT_PROBLEMS = ((1, "1_Square_matrix_multiplication_.py"), (1, "2_ReLU.py"), (2, "1_Conv2d_ReLU_BiasAdd.py"), (3, "1_MLP.py"))


def kernelbench_checkout(dest: Path) -> Path:
    root = dest / "KernelBench-checkout"
    for variant, (level, filename) in enumerate(CHECKOUT_PROBLEMS):
        folder = root / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / filename).write_text(reference_source(level, variant), encoding="utf-8")
    level3 = root / "KernelBench" / "level3"
    shutil.copy(SEEDS_DIR / "reference" / "resnet18.py", level3 / "9_ResNet18.py")
    shutil.copy(SEEDS_DIR / "reference" / "vgg19.py", level3 / "12_VGG19.py")
    if SHARED_TIMING.is_dir():
        shutil.copytree(SHARED_TIMING, root / "results" / "timing")
    return root


def run_floor(url: str, runs_file: Path, env: dict[str, str], label: str, server: Callable[[], float | None] = lambda: None) -> dict:
    """perf.ingest_floor in a child process: its wall time (start-up included), its parts, its CPU time and
    the database server's meanwhile."""
    from kernelindex.db.urls import to_libpq_url

    server_before = server()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "perf.ingest_floor", to_libpq_url(url), str(runs_file)],
        env=env, capture_output=True, text=True, check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"label": label, "wall_s": round(wall, 3), "parts": json.loads(done.stdout.strip().splitlines()[-1]),
            "cpu_s": round(cpu, 3), "server_cpu_s": spent(server_before, server())}


async def _drop_floor_table(url: str) -> None:
    from sqlalchemy import text

    from kernelindex.db.engine import make_engine

    engine = make_engine(url, pool_size=1, max_overflow=0)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("DROP TABLE IF EXISTS floor_runs"))
    finally:
        await engine.dispose()


# The tables every new run writes a row of (the run, its cohort's best, its record event).
_RUN_TABLES = ("runs", "record_events", "cohort_bests")


async def _drop_foreign_keys(url: str) -> list[str]:
    """--without-foreign-keys: the foreign keys of _RUN_TABLES dropped; their names."""
    from sqlalchemy import text

    from kernelindex.db.engine import make_engine

    engine = make_engine(url, pool_size=1, max_overflow=0)
    try:
        async with engine.begin() as conn:
            keys = (await conn.execute(text(
                "SELECT conrelid::regclass::text, conname FROM pg_constraint WHERE contype = 'f' "
                "AND conrelid::regclass::text = ANY(:tables) ORDER BY 1, 2"
            ), {"tables": list(_RUN_TABLES)})).all()
            for table, name in keys:
                await conn.execute(text(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"'))
    finally:
        await engine.dispose()
    return [f"{table}.{name}" for table, name in keys]


def _measure(url: str, runs_file: Path, env: dict[str, str], args: argparse.Namespace,
             server: Callable[[], float | None]) -> dict:
    """One round in the database at `url`: the floors, then the imports (the dry run, the first, the second),
    as main always timed them."""
    env = dict(env, KERNELINDEX_DATABASE_URL=url)
    figures: dict = {}
    if not args.skip_floor:
        figures["floor_first"] = run_floor(url, runs_file, env, "floor: decode, COPY, insert (all new)", server)
        figures["floor_second"] = run_floor(url, runs_file, env, "floor: decode, COPY, compare (all present)", server)
        asyncio.run(_drop_floor_table(url))
    ingest = ["ingest", "runs", str(runs_file), "--batch-size", str(args.batch_size)]
    if not args.skip_dry_run:
        dry = run_command([*ingest, "--dry-run"], env, "ingest runs --dry-run (all new)", server)
        dry["runs_per_s"] = round(args.lines / dry["wall_s"])
        figures["dry_run"] = dry
    first = run_command(ingest, env, "ingest runs (all new)", server)
    first["runs_per_s"] = round(args.lines / first["wall_s"])
    figures["first"] = first
    if not args.skip_second:
        second = run_command(ingest, env, "ingest runs again (all unchanged)", server)
        second["runs_per_s"] = round(args.lines / second["wall_s"])
        figures["second"] = second
    return figures


async def _copies(url: str, count: int) -> list[str]:
    """--repeat: `count` new databases on the server, each a copy of the one at `url` (CREATE DATABASE …
    TEMPLATE: nothing may be connected to it meanwhile), and their URLs."""
    from sqlalchemy import make_url, text

    from kernelindex.db.engine import make_engine

    prepared = make_url(url)
    engine = make_engine(prepared.set(database="postgres").render_as_string(hide_password=False), pool_size=1, max_overflow=0)
    names = [f"{prepared.database}_round_{i + 1}" for i in range(count)]
    try:
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")  # CREATE DATABASE refuses a transaction
            for name in names:
                await conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{prepared.database}"'))
    finally:
        await engine.dispose()
    return [prepared.set(database=name).render_as_string(hide_password=False) for name in names]


# What --repeat sums up: each import beside the floor it is compared with.
_VERSUS = (("dry_run", "floor_first"), ("first", "floor_first"), ("second", "floor_second"))


def repeats_summary(rounds: list[dict]) -> str:
    """Every round's ratio of each import to its floor, and their median: a floor and its import are
    measured back to back in one round, so a machine that slows down between rounds moves both."""
    lines = [f"{len(rounds)} rounds, each on its own copy of the prepared database (floor, then the imports):"]
    for key, floor_key in _VERSUS:
        pairs = [(r[key]["wall_s"], r[floor_key]["wall_s"]) for r in rounds if key in r and floor_key in r]
        if not pairs:
            continue
        ratios = [wall / floor for wall, floor in pairs]
        each = ", ".join(f"{wall:.2f}/{floor:.2f} s {ratio:.2f}×" for (wall, floor), ratio in zip(pairs, ratios, strict=True))
        lines.append(f"  {rounds[0][key]['label']}: median {statistics.median(ratios):.2f}× its floor ({each})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.ingest_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", "--runs", type=int, default=100_000, dest="lines", help="run records to generate (default 100,000)")
    parser.add_argument("--environments", type=int, default=1000, help="distinct environments (default 1000)")
    parser.add_argument("--samples", type=int, default=0, help="raw samples per record (bigger lines; 0: none)")
    parser.add_argument("--batch-size", type=int, default=5000)
    parser.add_argument("--workloads", type=int, default=0, help="spread the runs over only the first N workloads (0: all)")
    parser.add_argument("--implementations", type=int, default=len(IMPLEMENTATIONS), choices=range(1, len(IMPLEMENTATIONS) + 1),
                        help=f"implementations per workload and environment (default {len(IMPLEMENTATIONS)})")
    parser.add_argument("--own-revisions", action="store_true",
                        help="each run names a source revision of its own (a new source snapshot per line)")
    parser.add_argument("--skip-floor", action="store_true", help="do not measure the floor")
    parser.add_argument("--skip-dry-run", action="store_true", help="do not time a --dry-run of the file")
    parser.add_argument("--all-workloads", action="store_true",
                        help="import the synthetic KernelBench checkout first and spread runs over every workload in the database")
    parser.add_argument("--skip-kernelbench", action="store_true", help="do not time `ingest kernelbench`")
    parser.add_argument("--skip-second", action="store_true", help="do not time the second (all unchanged) ingest")
    parser.add_argument("--without-foreign-keys", action="store_true",
                        help="what-if: drop the foreign keys of runs, record_events and cohort_bests first (as the floor's table has none)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="measure the floors and the imports N times, each time on a fresh copy of the prepared database, "
                             "and print every round's ratio and their median (default 1)")
    parser.add_argument("--generate-only", metavar="FILE", help="write the synthetic file (seeded workloads) and stop")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (database and file)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")

    seeded = [("kernelbench-l3-p9-resnet18", {"batch_size": 2}, "fp32", 1.67), ("kernelbench-l3-p12-vgg19", {"batch_size": 10}, "fp32", 2.6)]
    if args.generate_only:
        start = time.perf_counter()
        size = write_file(Path(args.generate_only), synthetic_lines(args.lines, seeded, args.environments, args.samples,
                                                                     implementations=args.implementations,
                                                                     own_revisions=args.own_revisions))
        print(f"wrote {args.lines:,} lines, {size / 1e6:,.1f} MB to {args.generate_only} in {time.perf_counter() - start:.1f} s")
        return 0

    from kernelindex.db.embedded import EmbeddedPostgres
    from kernelindex.db.migrate import upgrade

    tmp = Path(tempfile.mkdtemp(prefix="kernelindex-ingest-speed-"))
    tmp.chmod(0o755)  # the server may run as another user
    server = None
    figures: dict = {"lines": args.lines, "environments": args.environments, "samples": args.samples, "batch_size": args.batch_size}
    try:
        server = EmbeddedPostgres(tmp / "db", delete_on_stop=True)
        url = server.url
        cpu_of_server = server_cpu(server.pid)
        upgrade(url)
        workloads = asyncio.run(_prepare(url))
        if args.without_foreign_keys:
            figures["dropped_foreign_keys"] = asyncio.run(_drop_foreign_keys(url))
        env = dict(os.environ, KERNELINDEX_DATABASE_URL=url, PYTHONPATH=str(REPO_ROOT))
        checkout = None
        if args.all_workloads or not args.skip_kernelbench:
            checkout = kernelbench_checkout(tmp)
        kb_args = ["ingest", "kernelbench", str(checkout), "--revision", "423217d", "--observed", "2026-03-05"] if checkout else []
        if args.all_workloads:
            figures["kernelbench_first"] = run_command(kb_args, env, "ingest kernelbench (before the runs)", cpu_of_server)
            workloads = asyncio.run(_workloads(url))
        if args.workloads:
            workloads = workloads[: args.workloads]
        figures["workloads"] = len(workloads)

        runs_file = tmp / "runs.jsonl"
        start = time.perf_counter()
        size = write_file(
            runs_file, synthetic_lines(args.lines, workloads, args.environments, args.samples, implementations=args.implementations,
                                       own_revisions=args.own_revisions),
        )
        figures["file_mb"] = round(size / 1e6, 1)
        figures["generate_s"] = round(time.perf_counter() - start, 2)

        # One copy of the prepared database per round (--repeat), made before anything is timed, so that
        # every round starts from the same state; a single round runs in the prepared database itself.
        databases = [url] if args.repeat <= 1 else asyncio.run(_copies(url, args.repeat))
        rounds = [_measure(database, runs_file, env, args, cpu_of_server) for database in databases]
        figures.update(rounds[0])
        if len(rounds) > 1:
            figures["repeats"] = rounds
        if not args.skip_kernelbench and kb_args:
            figures["shared_timing_files"] = SHARED_TIMING.is_dir()
            # Into the first round's database, the runs in it (as a single round always did).
            figures["kernelbench"] = run_command(kb_args, dict(env, KERNELINDEX_DATABASE_URL=databases[0]),
                                                 "ingest kernelbench", cpu_of_server)
    finally:
        if server is not None and not args.keep:
            server.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept {tmp}", file=sys.stderr)

    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    if "dropped_foreign_keys" in figures:
        print(f"what-if: {len(figures['dropped_foreign_keys'])} foreign keys dropped first: {', '.join(figures['dropped_foreign_keys'])}")
    print(f"{figures['lines']:,} runs over {figures['workloads']} workloads and {figures['environments']:,} environments; "
          f"file {figures['file_mb']:,} MB (generated in {figures['generate_s']} s)")
    for key in ("floor_first", "floor_second"):
        part = figures.get(key)
        if part:
            parts = part["parts"]
            print(f"{part['label']}: {part['wall_s']} s in all (start-up included): decode {parts['decode_s']} s, "
                  f"rows {parts['rows_s']} s, COPY {parts['copy_s']} s, insert {parts['merge_s']} s "
                  f"({parts['inserted']:,} inserted); {_cpu(part)}")
    floors = {"dry_run": "floor_first", "first": "floor_first", "second": "floor_second"}
    for key in ("kernelbench_first", "dry_run", "first", "second", "kernelbench"):
        part = figures.get(key)
        if not part:
            continue
        rate = f", {part['runs_per_s']:,} runs/s" if "runs_per_s" in part else ""
        floor = figures.get(floors.get(key, ""))
        versus = f", {part['wall_s'] / floor['wall_s']:.2f}× its floor" if floor else ""
        print(f"{part['label']}: exit {part['exit']}, {part['wall_s']} s{rate}{versus}, peak RSS {part['peak_rss_mb']} MB; "
              f"{_cpu(part)}{_least(part, floor)}")
        for name, value in part["table"].items():
            print(f"    {name:<36} {value:>10,}")
        if "stderr_tail" in part:
            print("    stderr: " + part["stderr_tail"].replace("\n", "\n    "))
    if "repeats" in figures:
        print(repeats_summary(figures["repeats"]))
    if "kernelbench" in figures and not figures.get("shared_timing_files"):
        print("(no shared timing files at ../shared/kernelbench/results/timing: the KernelBench import had problems only)")
    return 0


def _cpu(part: dict) -> str:
    """CPU time beside the wall time: the command's own and the database server's (perf.server_cpu)."""
    server = part.get("server_cpu_s")
    return f"CPU: its own {part['cpu_s']} s, PostgreSQL's " + (f"{server} s" if server is not None else "not known")


def _least(part: dict, floor: dict | None) -> str:
    """The least wall time the command's CPU and the server's allow on this machine's cores, however
    well the two overlapped: neither side can go faster than its own CPU time, and together they
    cannot use more than every core. A target below it needs less work, not more overlap."""
    server = part.get("server_cpu_s")
    if server is None:
        return ""
    cores = os.cpu_count() or 1
    least = max(part["cpu_s"], server, (part["cpu_s"] + server) / cores)
    versus = f", {least / floor['wall_s']:.2f}× its floor" if floor else ""
    return f"; at least {least:.2f} s on {cores} cores{versus}"


if __name__ == "__main__":
    sys.exit(main())
