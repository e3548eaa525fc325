"""What PostgreSQL's planning costs the server's reads: a cold workload page's statements (and those of the
other documents measured by perf.page_split) timed as the server runs them
(prepared, executed again and again on one connection) with plan_cache_mode = auto (PostgreSQL's own
choice) and force_generic_plan (what the web server's engine sets: db.engine.make_engine's
`generic_plans`). Not a test.

    python -m perf.plan_cache --database-url postgresql://…   # a database perf.dataset built (e.g. 1M runs)
    python -m perf.plan_cache [--runs 20000] [--workloads 100]    # builds one in a temporary embedded PostgreSQL
    python -m perf.plan_cache --queries "page,list of 100,runs 16,runs 100" …

Captures the SQL and parameters of one request of each document (POSTed to /graphql through the whole
ASGI app, response cache and read model off, so every statement runs; `page` is the workload page),
then for each statement, on one asyncpg connection, in alternating rounds of both modes: prepare it,
execute it `--executions` times, keep the median of the later half (the auto mode's first five
executions are custom plans by design; what a long-running server sees is the later ones). Every
execution's rows must be the same in both modes (a kept plan may not change an answer). Prints per
statement the medians (the fastest round) and the sum.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

MODES = ("auto", "force_generic_plan")


async def capture(url: str, query: str, variables: dict[str, Any]) -> list[tuple[str, tuple[Any, ...]]]:
    """The statements of one request of the document, with their parameters as the driver got them."""
    import httpx
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    captured: list[tuple[str, tuple[Any, ...]]] = []
    recording = False

    def before(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if recording:
            captured.append((statement, tuple(parameters or ())))

    event.listen(Engine, "before_cursor_execute", before)
    try:
        app = create_app(Settings(), database_url=url)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://plan") as client:
                for i in range(3):  # the last one recorded: pool and caches warm, the page cold (read model off)
                    recording = i == 2
                    response = await client.post("/graphql", json={"query": query, "variables": variables})
                    assert response.status_code == 200 and "errors" not in response.json(), response.text[:300]
    finally:
        event.remove(Engine, "before_cursor_execute", before)
    return captured


async def time_statements(url: str, statements: list[tuple[str, tuple[Any, ...]]], executions: int,
                          rounds: int) -> list[dict[str, Any]]:
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    connection = await asyncpg.connect(to_libpq_url(url))
    figures = []
    try:
        for sql, parameters in statements:
            medians: dict[str, list[float]] = {mode: [] for mode in MODES}
            answers: dict[str, list[Any]] = {}
            for _ in range(rounds):
                for mode in MODES:
                    await connection.execute(f"SET plan_cache_mode = {mode}")
                    prepared = await connection.prepare(sql)
                    times = []
                    rows: list[Any] = []
                    for _ in range(executions):
                        started = time.perf_counter()
                        rows = await prepared.fetch(*parameters)
                        times.append((time.perf_counter() - started) * 1000)
                    answers.setdefault(mode, [tuple(r) for r in rows])
                    if [tuple(r) for r in rows] != answers[mode]:
                        raise SystemExit(f"the rows of one statement changed between executions ({mode}): {sql[:80]}")
                    medians[mode].append(statistics.median(times[executions // 2:]))
            if sorted(map(repr, answers["auto"])) != sorted(map(repr, answers["force_generic_plan"])):
                raise SystemExit(f"a kept plan changed the answer: {' '.join(sql.split())[:120]}")
            figures.append({"sql": " ".join(sql.split())[:100], "rows": len(answers["auto"]),
                            **{mode: min(medians[mode]) for mode in MODES}})
    finally:
        await connection.close()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.plan_cache", description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="a database perf.dataset built; without it, a temporary one is built")
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--executions", type=int, default=12, help="executions of each prepared statement a round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", default="page", help="comma-separated, of perf.page_split's: page, list of 100, runs 16, runs 100")
    args = parser.parse_args()
    os.environ["KERNELINDEX_RESPONSE_CACHE_ENTRIES"] = "0"
    os.environ["KERNELINDEX_READ_MODEL_WORKLOADS"] = "0"

    from perf.page_split import queries_of

    queries = queries_of([q.strip() for q in args.queries.split(",")])

    def run(url: str) -> dict[str, list[dict[str, Any]]]:
        return {name: asyncio.run(time_statements(url, asyncio.run(capture(url, query, variables)), args.executions, args.rounds))
                for name, (query, variables) in queries.items()}

    if args.database_url:
        by_query, dataset = run(args.database_url), "the database at --database-url"
    else:
        from kernelindex.db.embedded import temporary_embedded
        from kernelindex.db.migrate import upgrade
        from perf.dataset import build_dataset

        with temporary_embedded("kernelindex-plans-") as pg:
            upgrade(pg.url)
            asyncio.run(build_dataset(pg.url, args.workloads, args.runs))
            by_query = run(pg.url)
        dataset = f"perf.dataset: {args.workloads} synthetic workloads, {args.runs:,} runs"
    for name, figures in by_query.items():
        print(f"{name}: its statements, {dataset}: ms an execution (median of the later "
              f"{args.executions - args.executions // 2} of {args.executions}, fastest of {args.rounds} rounds)")
        if not figures:
            # graphql.runs_page runs its one statement on the driver's connection, past SQLAlchemy's events.
            print("   no statement went through SQLAlchemy (a runs page written from rows runs its own on the driver)")
            continue
        print(f"{'#':>2} {'rows':>5} {'auto':>8} {'generic':>8}  statement")
        for i, f in enumerate(figures):
            print(f"{i:>2} {f['rows']:>5} {f['auto']:>8.2f} {f['force_generic_plan']:>8.2f}  {f['sql']}")
        print(f"{'':>2} {'sum':>5} {sum(f['auto'] for f in figures):>8.2f} {sum(f['force_generic_plan'] for f in figures):>8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
