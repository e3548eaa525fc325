"""KernelIndex next to PostGraphile on the same database and question (not a test): the N fastest
eligible runs of a workload with implementation, environment and hardware, at N = 16 and 100.

    python -m perf.postgraphile_compare [--runs 4000] [--seconds 10] [--clients 16] [--repeat 3]

Needs Node.js and npm: PostGraphile 4.14.1 is pinned in perf/postgraphile/package.json and its
lockfile; the first run installs it there with `npm ci` (the npm registry must be reachable then, or
run `npm ci --prefix perf/postgraphile` beforehand). Without node or npm the script says so and
exits 0 without measuring.

What it does: an embedded PostgreSQL in a temporary folder, migrated to head, with perf.dataset's
seed plus ONE synthetic workload of `--runs` runs (perf.runs_connection's dataset: 160 eligible at
the canonical configuration, the rest a batch-size sweep). On that database, each in its own
process on 127.0.0.1:
  kernelindex  `kernelindex serve` of this checkout, one worker, the response cache off
               (KERNELINDEX_RESPONSE_CACHE_ENTRIES=0: every request executes), asked
               `runs(workload:, first: N, orderBy: FASTEST, eligibleOnly: true)`;
  postgraphile `postgraphile -c <db> -s public` (one Node process, its defaults), asked
               `allRuns(first: N, orderBy: [MEAN_MS_ASC, ID_ASC], condition: {…})` with the
               workload's id, current revision and canonical configuration, status passed, not
               superseded, not retracted (the eligible runs: every flagged run of the synthetic
               workload is approved first, so none is held), the same fields and the same nested objects.
Both answers are checked to name the same runs in the same order. Each target is driven with
perf.loadgen (perf.runs_connection's drive: a warm-up, `--sequential` requests one after another for
the unloaded p50, `--clients` connections in a closed loop for `--seconds`), `--repeat` times, in
turn; the table gives medians and the ratio KernelIndex / PostGraphile (issue 27's target: ≥ 1.0).
Client and servers share the machine's cores: on a small, busy machine the figures are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

from perf.runs_connection import SIZES, SLUG, _drive, _grow, _serve, _stop, graphql_query
from perf.server import REPO, free_port, wait_for

PACKAGE = REPO / "perf" / "postgraphile"
BIN = PACKAGE / "node_modules" / ".bin" / "postgraphile"


def postgraphile_query(workload: dict, first: int) -> str:
    condition = (f'{{workloadId: {workload["id"]}, workloadRevisionId: {workload["revision"]}, '
                 f'configurationKey: {json.dumps(workload["key"])}, status: "passed", supersededAt: null, retractedAt: null}}')
    return (f"{{ allRuns(first: {first}, orderBy: [MEAN_MS_ASC, ID_ASC], condition: {condition}) {{ "
            "edges { cursor node { id meanMs stdMs numTrials observedAt evidence "
            "implementationByImplementationId { slug title } "
            "environmentByEnvironmentId { label hardwareByHardwareId { sku } } } } "
            "pageInfo { hasNextPage endCursor } } }")


def ensure_postgraphile() -> str | None:
    """None when PostGraphile is ready to start; else why it cannot be."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are needed for PostGraphile (Node.js 18+); not found on PATH"
    if not BIN.exists():
        print("installing PostGraphile (npm ci in perf/postgraphile)…", file=sys.stderr, flush=True)
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PACKAGE, capture_output=True, text=True)
        if done.returncode != 0 or not BIN.exists():
            return f"npm ci in {PACKAGE} failed (is the npm registry reachable?): {done.stderr.strip()[-500:]}"
    return None


async def _approve_flagged(url: str, workload_id: int) -> int:
    """Approve every flagged run of the workload (a review, as an operator would): perf.dataset flags
    some runs implausible, and a held run is not eligible, which PostGraphile's column condition cannot
    say. Then the workload's eligible runs are exactly those the peer's condition names. The count."""
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        return len(await conn.fetch(
            "INSERT INTO run_reviews (run_id, decision, reviewer, note) SELECT DISTINCT f.run_id, 'approved', "
            "'perf.postgraphile_compare', 'the same question for both servers' FROM run_flags f JOIN runs r ON r.id = f.run_id "
            "WHERE r.workload_id = $1 RETURNING run_id", workload_id))
    finally:
        await conn.close()


async def _workload(url: str) -> dict:
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        row = await conn.fetchrow(
            "SELECT w.id, w.current_revision_id AS revision, r.canonical_configuration_key AS key FROM workloads w "
            "JOIN workload_revisions r ON r.id = w.current_revision_id WHERE w.slug = $1", SLUG)
    finally:
        await conn.close()
    if row is None:
        raise SystemExit(f"postgraphile_compare: the dataset has no workload {SLUG!r}")
    return dict(row)


def _ours_ids(body: bytes) -> list[int]:
    edges = json.loads(body)["data"]["runs"]["edges"]
    return [int(base64.b64decode(e["node"]["id"]).decode().split(":", 1)[1]) for e in edges]


def _theirs_ids(body: bytes) -> list[int]:
    return [int(e["node"]["id"]) for e in json.loads(body)["data"]["allRuns"]["edges"]]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.postgraphile_compare", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000, help="runs in the one workload")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--sequential", type=int, default=300, help="requests for the unloaded p50")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    why = ensure_postgraphile()
    if why:
        print(f"perf.postgraphile_compare: skipped: {why}", file=sys.stderr)
        return 0

    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade
    from kernelindex.db.urls import to_libpq_url
    from perf.dataset import build_dataset

    tmp = Path(tempfile.mkdtemp(prefix="kernelindex-postgraphile-"))
    runs: dict[str, list[dict]] = {}
    procs: list[subprocess.Popen] = []
    failed = 0
    try:
        with temporary_embedded("kernelindex-postgraphile-") as server:
            upgrade(server.url)
            asyncio.run(build_dataset(server.url, 1, args.runs))
            asyncio.run(_grow(server.url, args.runs))
            workload = asyncio.run(_workload(server.url))
            approved = asyncio.run(_approve_flagged(server.url, workload["id"]))
            print(f"{approved} flagged runs of the workload approved (held runs are not eligible)", file=sys.stderr)
            ours_port, theirs_port = free_port(), free_port()
            procs.append(_serve(REPO, server.url, ours_port, tmp / "kernelindex.log"))
            with open(tmp / "postgraphile.log", "w") as log:
                procs.append(subprocess.Popen(
                    [str(BIN), "-c", to_libpq_url(server.url), "-s", "public", "--host", "127.0.0.1",
                     "--port", str(theirs_port), "--disable-query-log"],
                    cwd=PACKAGE, stdout=log, stderr=subprocess.STDOUT))
            wait_for(f"http://127.0.0.1:{ours_port}/healthz", timeout=120)
            _wait_postgraphile(theirs_port)
            for first in SIZES:  # a query the peer refuses says why, before any load
                answer = httpx.post(f"http://127.0.0.1:{theirs_port}/graphql",
                                    json={"query": postgraphile_query(workload, first)}, timeout=60)
                if answer.status_code != 200 or b'"errors"' in answer.content:
                    raise SystemExit(f"PostGraphile refused the query ({answer.status_code}): {answer.text[:500]}")
            for round_ in range(args.repeat):
                for first in SIZES:
                    ours = _drive(tmp, ours_port, "POST", "/graphql", {"query": graphql_query(first)}, args)
                    theirs = _drive(tmp, theirs_port, "POST", "/graphql", {"query": postgraphile_query(workload, first)}, args)
                    if round_ == 0 and _ours_ids(ours["body"]) != _theirs_ids(theirs["body"]):
                        mine, peer = _ours_ids(ours["body"]), _theirs_ids(theirs["body"])
                        print(f"N = {first}: the two answers name different runs: KernelIndex {mine[:8]}…, "
                              f"PostGraphile {peer[:8]}… ({len(set(mine) ^ set(peer))} named by one only)", file=sys.stderr)
                        failed += 1
                    for label, r in (("kernelindex", ours), ("postgraphile", theirs)):
                        r.pop("body")
                        failed += r["errors"]
                        runs.setdefault(f"{label}/{first}", []).append(r)
                        print(f"round {round_ + 1} N = {first:3} {label:12} {r['rps']:8.0f} req/s  "
                              f"unloaded p50 {r['p50_ms']:6.2f} ms", file=sys.stderr, flush=True)
    finally:
        for p in procs:
            _stop(p)
        shutil.rmtree(tmp, ignore_errors=True)
    figures = {key: {"rps": statistics.median(r["rps"] for r in rs), "p50_ms": statistics.median(r["p50_ms"] for r in rs),
                     "rounds": rs} for key, rs in runs.items()}
    print(f"{args.runs:,} runs in the workload, 160 eligible; medians of {args.repeat} rounds, "
          f"{args.clients} clients, {args.seconds:g} s each")
    print(f"{'N':>4} {'KernelIndex req/s':>18} {'p50':>9} {'PostGraphile req/s':>19} {'p50':>9} {'ratio':>6}")
    for first in SIZES:
        ours, theirs = figures[f"kernelindex/{first}"], figures[f"postgraphile/{first}"]
        print(f"{first:>4} {ours['rps']:>18.0f} {ours['p50_ms']:>6.2f} ms {theirs['rps']:>19.0f} {theirs['p50_ms']:>6.2f} ms "
              f"{ours['rps'] / theirs['rps']:>6.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=2))
    return 1 if failed else 0


def _wait_postgraphile(port: int, timeout: float = 120) -> None:
    """PostGraphile answers GraphQL on POST only: wait until a trivial query gets an answer."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": "{ __typename }"}, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"PostGraphile did not answer on port {port} within {timeout:g} s")
        time.sleep(0.2)


if __name__ == "__main__":
    raise SystemExit(main())
