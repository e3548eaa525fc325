"""runs.parquet against runs.csv: export time and the server's peak memory for N runs.

    python -m perf.parquet_export [--runs 1000000] [--workloads 250] [--formats runs.csv,runs.parquet]

Builds the synthetic dataset (perf.dataset) in a temporary embedded PostgreSQL, then, for each format,
starts a fresh `kernelindex serve` on it (so one export's leftovers are not the next one's memory),
reads the whole export over HTTP as fast as the client can (writing it to a temporary file), and
reports: the time from request to last byte, the bytes, the rows (runs.csv's lines, runs.parquet's
footer), the server process's resident memory once started, before the export (after an export of no
runs in the same format, so what a format loads once per process, pyarrow for Parquet, is counted
there), and its peak during it (VmHWM of /proc/PID/status: the kernel's high-water mark, so no
sample misses the peak; a fresh server's start-up peak is far below). The export time limit is raised to --export-timeout, so a large export
is measured, not cut off. The figures are printed, and written as JSON with --out.

A script, not a test: what it measures is asserted by tests/api/test_runs_parquet.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from perf.dataset import build_dataset
from perf.server import Server

FORMATS = ("runs.csv", "runs.parquet")


def memory_mib(pid: int) -> dict[str, float]:
    """The process's resident memory now (VmRSS) and its peak so far (VmHWM), in MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {name: int(fields[name].split()[0]) / 1024 for name in ("VmRSS", "VmHWM")}


def rows_in(path: Path, name: str) -> int:
    if name == "runs.parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    with path.open("rb") as f:
        return sum(1 for _ in f) - 1  # the header; no value of the synthetic runs spans lines


def measure(url: str, pid: int, name: str, out_dir: Path, timeout_s: float) -> dict:
    path = out_dir / name
    started_mib = memory_mib(pid)["VmRSS"]
    # An export of no runs first (the synthetic runs all passed): what the format loads once per
    # process (pyarrow, for runs.parquet) is then in the "before" figure, not in the export's own.
    httpx.get(f"{url}/exports/{name}?status=failed", timeout=60).raise_for_status()
    before = memory_mib(pid)
    started = time.perf_counter()
    first_byte = None
    size = 0
    with httpx.stream("GET", f"{url}/exports/{name}", timeout=timeout_s) as response, path.open("wb") as f:
        if response.status_code != 200:
            raise SystemExit(f"{name}: {response.status_code} {response.read()[:500]!r}")
        for chunk in response.iter_raw(1 << 20):
            first_byte = first_byte or time.perf_counter() - started
            size += len(chunk)
            f.write(chunk)
    seconds = time.perf_counter() - started
    after = memory_mib(pid)
    rows = rows_in(path, name)
    path.unlink()
    return {"format": name, "rows": rows, "seconds": round(seconds, 2), "first_byte_s": round(first_byte or seconds, 2),
            "rows_per_s": round(rows / seconds), "mb": round(size / 1e6, 1),
            "rss_started_mib": round(started_mib, 1), "rss_before_mib": round(before["VmRSS"], 1), "peak_rss_mib": round(after["VmHWM"], 1),
            "peak_over_before_mib": round(after["VmHWM"] - before["VmRSS"], 1), "rss_after_mib": round(after["VmRSS"], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--workloads", type=int, default=250, help="at most 8,000 runs a workload (perf.dataset)")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--export-timeout", type=float, default=3600.0, help="the server's EXPORT_TIMEOUT_S, seconds")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    if set(formats) - set(FORMATS):
        raise SystemExit(f"--formats: {', '.join(FORMATS)}")

    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade

    figures: list[dict] = []
    with temporary_embedded("kernelindex-parquet-") as pg, tempfile.TemporaryDirectory(prefix="kernelindex-exports-") as out:
        upgrade(pg.url)
        asyncio.run(build_dataset(pg.url, args.workloads, args.runs))
        env = {"KERNELINDEX_EXPORT_TIMEOUT_S": str(args.export_timeout), "KERNELINDEX_ENVIRONMENT": "production"}
        for name in formats:
            with Server(database_url=pg.url, migrate_and_seed=False, extra_env=env) as server:
                result = measure(server.url, server.pid, name, Path(out), args.export_timeout + 60)
            print(json.dumps(result), file=sys.stderr)
            figures.append(result)
    print(f"{'format':<14}{'rows':>10}{'seconds':>9}{'rows/s':>9}{'MB':>8}{'RSS started':>13}{'before':>9}{'peak RSS':>10}"
          f"{'peak-before':>13}")
    for f in figures:
        print(f"{f['format']:<14}{f['rows']:>10,}{f['seconds']:>9}{f['rows_per_s']:>9,}{f['mb']:>8}{f['rss_started_mib']:>12} M"
              f"{f['rss_before_mib']:>8} M{f['peak_rss_mib']:>9} M{f['peak_over_before_mib']:>12} M")
    if args.out:
        Path(args.out).write_text(json.dumps({"runs": args.runs, "workloads": args.workloads, "figures": figures}, indent=2))


if __name__ == "__main__":
    main()
