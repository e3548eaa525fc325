"""How long does `submitRuns` take for a full call (1,000 records)?

    python -m perf.submit_runs                 # 5 calls of 1,000 new records, then the same again
    python -m perf.submit_runs --records 200 --calls 10

Starts an embedded PostgreSQL in a temporary folder, migrates and seeds it, makes a `runs:write`
token, and posts the mutation to the application in this process (httpx's ASGI transport: the
whole request path, without a socket). Prints each call's wall time and the median, for calls whose
records are all new and for the same records again (all unchanged).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from perf.ingest_speed import synthetic_lines

SUBMIT = """
mutation Submit($records: [JSON!]!) {
  submitRuns(records: $records) { ok inserted unchanged superseded problems { index key reason } }
}
"""


async def measure(url: str, records: int, calls: int) -> dict[str, list[float]]:
    import httpx

    from kernelindex.db.engine import in_own_transaction
    from kernelindex.ingest.seed import seed_database
    from kernelindex.services import tokens as auth
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    await seed_database(url)

    async def make(session) -> str:
        _, token = await auth.create_token(session, scopes=("runs:write",), name="perf")
        return token

    token = await in_own_transaction(url, make)
    workloads = [("kernelbench-l3-p9-resnet18", {"batch_size": 2}, "fp32", 1.67)]
    lines = list(synthetic_lines(records * calls, workloads, environments=records * calls, samples=0))
    batches = [[json.loads(line) for line in lines[i * records:(i + 1) * records]] for i in range(calls)]
    app = create_app(Settings(), database_url=url)
    times: dict[str, list[float]] = {"new": [], "unchanged": []}
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://perf", timeout=60) as client:
            for kind in ("new", "unchanged"):
                for batch in batches:
                    start = time.perf_counter()
                    response = await client.post(
                        "/graphql", json={"query": SUBMIT, "variables": {"records": batch}},
                        headers={"authorization": f"Bearer {token}"},
                    )
                    elapsed = time.perf_counter() - start
                    result = response.json()["data"]["submitRuns"]
                    expected = (len(batch), 0) if kind == "new" else (0, len(batch))
                    if (result["inserted"], result["unchanged"]) != expected or result["problems"]:
                        raise SystemExit(f"unexpected answer for {kind} records: {result}")
                    times[kind].append(elapsed * 1000)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.submit_runs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1000, help="records per call (default 1,000, the most a call takes)")
    parser.add_argument("--calls", type=int, default=5, help="calls of each kind (default 5)")
    args = parser.parse_args(argv)

    from kernelindex.db.embedded import EmbeddedPostgres
    from kernelindex.db.migrate import upgrade

    tmp = Path(tempfile.mkdtemp(prefix="kernelindex-submit-runs-"))
    tmp.chmod(0o755)  # the server may run as another user
    server = None
    try:
        server = EmbeddedPostgres(tmp / "db", delete_on_stop=True)
        upgrade(server.url)
        times = asyncio.run(measure(server.url, args.records, args.calls))
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    for kind, values in times.items():
        each = ", ".join(f"{v:.0f}" for v in values)
        print(f"submitRuns, {args.records:,} {kind} records per call: median {statistics.median(values):.0f} ms ({each} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
