"""What the read model holds in memory (not a test): bytes per workload kept, after the list and every
listed workload's page were read once.

    python -m perf.read_model_memory [--runs 20000] [--workloads 100]

Starts an embedded PostgreSQL in a temporary folder, migrates, builds perf.dataset's dataset, then, in
this process, runs the ASGI app (response cache off) and, with tracemalloc on, reads the list of 100
workloads (perf.dataset.LIST_QUERY) and each listed workload's page (the JSON twin's query): the
memory still allocated afterwards, over the workloads the read model keeps, is what one workload
costs (its page values: page figures, comparison rows, latest measurements, revisions).
`READ_MODEL_WORKLOADS` (kernelindex.settings) is sized from it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tracemalloc

os.environ["KERNELINDEX_RESPONSE_CACHE_ENTRIES"] = "0"


async def measure(url: str) -> dict[str, int]:
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
    from perf.dataset import LIST_QUERY

    app = create_app(Settings(), database_url=url)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://memory", timeout=120) as client:
            await client.post("/graphql", json={"query": "{ policy { version } }"})  # pools, schema, caches warm
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
            listed = (await client.post("/graphql", json={"query": LIST_QUERY})).json()["data"]["workloads"]["nodes"]
            for node in listed:
                response = await client.post("/graphql", json={"query": WORKLOAD_PAGE_QUERY, "variables": {"slug": node["slug"]}})
                assert response.status_code == 200 and "errors" not in response.json(), response.text[:300]
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
            kept = len(app.state.read_model)
    return {"workloads_kept": kept, "bytes_held": held, "bytes_per_workload": held // max(1, kept)}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.read_model_memory", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--workloads", type=int, default=100)
    args = parser.parse_args()

    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade
    from perf.dataset import build_dataset

    with temporary_embedded("kernelindex-memory-") as pg:
        upgrade(pg.url)
        asyncio.run(build_dataset(pg.url, args.workloads, args.runs))
        figures = asyncio.run(measure(pg.url))
    print(f"read model: {figures['workloads_kept']} workloads kept, {figures['bytes_held'] / 2**20:.1f} MiB held, "
          f"{figures['bytes_per_workload'] / 1000:.0f} kB a workload ({args.runs:,} runs over {args.workloads} workloads)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
