"""The real KernelBench tree (../shared/kernelbench, upstream 423217d), imported and read as ops and researchers do.

    python -m perf.real_tree                     # ../shared/kernelbench
    python -m perf.real_tree --tree PATH --json

In a fresh embedded PostgreSQL (migrated and seeded), as child processes of `kernelindex`:

- a cold import (`ingest kernelbench TREE --revision 423217d --observed 2026-03-05`): its wall time, its whole
  summary table and what it said of problems it could not trace;
- the same import unchanged: wall time, problems traced (0 expected), rows added (0 expected);
- `seed` twice, then the same import again: the same three figures (a seed between imports must change
  nothing an import redoes);

then, in this process, through the API (GraphQL and runs.csv, as a researcher would):

- the median torch.compile (inductor) speedup over eager per level and GPU, beside the same medians computed
  from the timing files alone (an independent computation: the files' means, paired by problem);
- the eligible runs by the three routes: the sum of Workload.eligibleRunCount, runs(eligibleOnly: true)
  .totalCount and the rows of runs.csv?eligible_only=true.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TREE = REPO_ROOT.parent / "shared" / "kernelbench"
KB_ARGS = ("--revision", "423217d", "--observed", "2026-03-05")
TABLES = ("workloads", "workload_revisions", "runs", "record_events", "environments", "implementations", "source_snapshots",
          "suite_snapshots", "problem_traces")
# The timing folders and the SKUs the importer resolves their entries to (checked against the API's rows).
FOLDERS = {"H100_Modal": "H100 SXM", "H100_PCIe_LambdaLabs": "H100 PCIe"}
EAGER, INDUCTOR = "torch_eager", "torch_compile_inductor"


def run_cli(args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kernelindex.cli", *args], env=env, capture_output=True, text=True)
    return time.perf_counter() - start, proc


def table_of(stdout: str) -> dict[str, int]:
    table = {}
    for line in stdout.splitlines():
        name, _, value = line.rpartition(" ")
        if name.strip() and value.replace(",", "").isdigit():
            table[name.rstrip()] = int(value.replace(",", ""))
    return table


def traced(stderr: str) -> int | None:
    match = re.search(r"tracing (\d+) problems on the meta device", stderr)
    return int(match[1]) if match else None


async def row_counts(url: str) -> dict[str, int]:
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        return {t: await conn.fetchval(f"SELECT count(*) FROM {t}") for t in TABLES}
    finally:
        await conn.close()


def file_medians(tree: Path) -> dict[tuple[int, str], tuple[float, int]]:
    """(level, SKU short name) → (median eager/inductor speedup, problems) from the timing files alone."""
    out: dict[tuple[int, str], tuple[float, int]] = {}
    for folder, sku in FOLDERS.items():
        base = tree / "results" / "timing" / folder
        eager = json.loads((base / "baseline_time_torch.json").read_text())
        inductor = json.loads((base / "baseline_time_torch_compile_inductor_default.json").read_text())
        for level_name, entries in eager.items():
            level = int(level_name.removeprefix("level"))
            ratios = [entry["mean"] / inductor[level_name][name]["mean"] for name, entry in entries.items()
                      if entry and inductor.get(level_name, {}).get(name)]
            if ratios:
                out[(level, sku)] = (statistics.median(ratios), len(ratios))
    return out


async def api_figures(url: str) -> dict:
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    app = create_app(Settings(), database_url=url)
    figures: dict = {}
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://perf", timeout=600) as client:
            async def graphql(query: str, variables: dict | None = None) -> dict:
                body = (await client.post("/graphql", json={"query": query, "variables": variables or {}})).json()
                if "errors" in body:
                    raise RuntimeError(body["errors"])
                return body["data"]

            rows = list(csv.DictReader(io.StringIO((await client.get("/exports/runs.csv?eligible_only=true")).text)))
            figures["eligible_csv"] = len(rows)
            figures["eligible_runs_total"] = (await graphql("{ runs(eligibleOnly: true) { totalCount } }"))["runs"]["totalCount"]
            total, after = 0, None
            while True:
                page = (await graphql(
                    "query($after: String) { workloads(first: 100, after: $after) { pageInfo { hasNextPage endCursor } "
                    "edges { node { eligibleRunCount } } } }", {"after": after}))["workloads"]
                total += sum(edge["node"]["eligibleRunCount"] for edge in page["edges"])
                if not page["pageInfo"]["hasNextPage"]:
                    break
                after = page["pageInfo"]["endCursor"]
            figures["eligible_sum_of_workloads"] = total
            # Medians from the API's eligible runs: each problem's eager mean over its inductor mean, per level and SKU.
            by: dict[tuple[int, str, str], dict[str, float]] = defaultdict(dict)
            family_sku = {}
            for row in rows:
                key = (int(row["level"]), row["hardware_sku"], row["workload"])
                by[key][row["implementation"]] = float(row["mean_ms"])
                family_sku[row["hardware_sku"]] = row["hardware_sku"]
            medians: dict[str, tuple[float, int]] = {}
            grouped: dict[tuple[int, str], list[float]] = defaultdict(list)
            for (level, sku, _), means in by.items():
                if EAGER in means and INDUCTOR in means:
                    grouped[(level, sku)].append(means[EAGER] / means[INDUCTOR])
            for (level, sku), ratios in sorted(grouped.items()):
                medians[f"{level}|{sku}"] = (statistics.median(ratios), len(ratios))
            figures["api_medians"] = medians
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=DEFAULT_TREE, help="a KernelBench tree (default: ../shared/kernelbench)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if not (args.tree / "KernelBench").is_dir():
        print(f"no KernelBench tree at {args.tree}", file=sys.stderr)
        return 2

    from kernelindex.db.embedded import EmbeddedPostgres
    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.seed import seed_database

    tmp = Path(tempfile.mkdtemp(prefix="kernelindex-real-tree-"))
    tmp.chmod(0o755)  # the server may run as another user
    server = None
    figures: dict = {}
    try:
        server = EmbeddedPostgres(tmp / "db", delete_on_stop=True)
        url = server.url
        upgrade(url)
        asyncio.run(seed_database(url))
        env = dict(os.environ, KERNELINDEX_DATABASE_URL=url, PYTHONPATH=str(REPO_ROOT))
        command = ["ingest", "kernelbench", str(args.tree), *KB_ARGS]
        for label in ("cold", "unchanged", "after two seeds"):
            if label == "after two seeds":
                for _ in range(2):
                    _, seeded = run_cli(["seed"], env)
                    assert seeded.returncode == 0, seeded.stderr
            before = asyncio.run(row_counts(url))
            wall, proc = run_cli(command, env)
            after = asyncio.run(row_counts(url))
            figures[label] = {
                "exit": proc.returncode, "wall_s": round(wall, 2), "traced": traced(proc.stderr),
                "rows_added": {t: after[t] - before[t] for t in TABLES if after[t] != before[t]},
                "table": table_of(proc.stdout),
                "said": [line for line in proc.stderr.splitlines()
                         if any(w in line for w in ("imported KernelBench", "without semantics", "pip install", "timings skipped",
                                                    "timing entries:", "error"))],
            }
        figures.update(asyncio.run(api_figures(url)))
        figures["file_medians"] = {f"{level}|{sku}": value for (level, sku), value in sorted(file_medians(args.tree).items())}
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    for label in ("cold", "unchanged", "after two seeds"):
        part = figures[label]
        print(f"{label}: exit {part['exit']}, {part['wall_s']} s, traced {part['traced']}, rows added {part['rows_added'] or 'none'}")
    print("cold import's summary:")
    for name, value in figures["cold"]["table"].items():
        print(f"  {name:<70} {value:>7,}")
    for line in figures["cold"]["said"]:
        print(f"  | {line}")
    print("median inductor speedup over eager (API's eligible runs | timing files alone):")
    for key, (median, count) in figures["file_medians"].items():
        level, short = key.split("|")
        api = next(((m, n) for k, (m, n) in figures["api_medians"].items()
                    if k.split("|")[0] == level and short.replace(" ", "") in k.split("|")[1].replace(" ", "")), None)
        shown = f"{api[0]:.4f} ({api[1]} problems)" if api else "none"
        print(f"  level {level} on {short}: {shown} | {median:.4f} ({count} problems)")
    print(f"eligible runs: sum of eligibleRunCount {figures['eligible_sum_of_workloads']:,}; "
          f"runs(eligibleOnly: true) {figures['eligible_runs_total']:,}; runs.csv?eligible_only=true {figures['eligible_csv']:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
