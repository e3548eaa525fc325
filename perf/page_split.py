"""Where an executed request's time goes (not a test): the split of one uncached request between SQL,
SQLAlchemy row processing, rules and read model, GraphQL execution and JSON encoding, and µs per field
next to graphql-core executing the same selection over plain dicts.

    python -m perf.page_split [--runs 20000] [--workloads 100] [--requests 20] [--rounds 3]
    python -m perf.page_split --runs 1000000 --workloads 250          # the issue's dataset (minutes to build)
    python -m perf.page_split --database-url postgresql://…           # a database perf.dataset already built

Starts an embedded PostgreSQL in a temporary folder, migrates, builds perf.dataset's dataset (the seed,
`--workloads` synthetic workloads, `--runs` runs), then, in this process, runs the whole ASGI app over
httpx's ASGITransport with the response cache off (KERNELINDEX_RESPONSE_CACHE_ENTRIES=0: every request
executes; over the read model, which keeps each workload's page values until that workload is
written; `--cold` turns it off too: the first request after a write) and POSTs two queries to /graphql: the workload page (web/twins.WORKLOAD_PAGE_QUERY of
perf.dataset.PAGE_SLUG) and the list of 100 workloads (perf.dataset.LIST_QUERY). Each round: two
warm-up requests, then `--requests` timed requests one after another; the table gives, per slice, the
median over the rounds of each round's median. The same number of requests is also timed without any
timer installed, so the timers' own cost is visible (the "uninstrumented" line).

How each slice is measured (perf_counter_ns around the call, no profiler, no sampling). Every timed
call records an interval; afterwards each instant of the request's wall time is given to ONE slice,
the innermost by this priority: SQL > SQLAlchemy > rules/read model > JSON > GraphQL > other. So the
slices add up to the request's wall time exactly, nested calls are never counted twice, and a slice is
the time its code was on top (e.g. SQLAlchemy is its own work, without the SQL inside it).
- SQL: inside asyncpg's Connection.prepare/execute/executemany/fetch/fetchrow/fetchval, its
  PreparedStatement.fetch/fetchrow/fetchval/executemany/cursor and Transaction.start/commit/rollback:
  the round trip to PostgreSQL (planning, execution, the socket) and asyncpg's decoding of the rows
  into Records. The event loop's idle time (its selector's select()) is shown under it: the part of
  the round trips spent waiting with nothing else to do. Caveat: while one task awaits a round trip,
  another task's code may run; that time is SQL here when it is no timed call (strawberry resolvers
  are mostly waiting on the same loaders, so this is small; "loop idle" bounds it from below).
- SQLAlchemy: inside AsyncSession.execute/scalars/scalar/get/commit/rollback (statement compilation or
  its cache, the greenlet hop, the asyncpg adapter, its mutex) and inside the consumption of results
  (Result/ScalarResult/MappingResult all/first/one/scalar/iteration: Row making and ORM loading).
- rules/read model: inside every function and method defined in kernelindex.services.* and
  kernelindex.rules.* (patched in every kernelindex module that imported it), minus the SQL and
  SQLAlchemy they call. A function only kept in a data structure at import time escapes the patch.
- JSON: the view's encode_json (the response dict to text).
- GraphQL: inside the schema's execute (strawberry and graphql-core: parse, validation, our
  extensions, the resolvers in kernelindex.graphql, result completion), minus all of the above.
- other: the rest of the request (ASGI, Starlette, the session middleware, strawberry's view
  around execute, the httpx transport).
The timers cost about a third of a microsecond per timed call; the count of timed calls and the
estimate are printed, and the uninstrumented request time is printed next to the instrumented one.

graphql-core's share: before any timer is installed, `--requests` more requests of each query run
under cProfile, and the self time of graphql-core's own functions (with the built-ins they call) is
divided by the self time of everything the request ran in this process (graphql_core_share): parse and
validation where strawberry's caches miss, and what a planned request still asks of graphql-core's
executor (building it, the resolve infos of resolvers that take `info`, leaf serialization, gathering,
the response); with KERNELINDEX_PLANNED_EXECUTION=false, all of execution. The line "requests planned"
says how many of those requests a plan answered (kernelindex.graphql.plan.STATS). cProfile makes each
call dearer, the many small ones most, so its milliseconds are the profiled request's; read the share.

µs per field: the fields of the response (every key of every object at every depth, list elements
each counted) divided into: the whole request; the GraphQL slice alone; and graphql-core 3 alone
(graphql.execute with its default resolvers, over a schema built from our SDL, of the same document,
with the page's own JSON result as plain dicts for root value: no resolvers of ours, no I/O).
Figures depend on the machine and on what else runs on it: run several rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

SLICES = ("SQL", "SQLAlchemy", "rules/read model", "JSON", "GraphQL", "other")
PRIORITY = {name: i for i, name in enumerate(SLICES)}  # lower wins an instant

_now = time.perf_counter_ns


class Recorder:
    """The intervals of timed calls while `on`; the loop's idle time; how many calls were timed."""

    def __init__(self) -> None:
        self.on = False
        # Appended to by every timer, on or off (a check would cost each call more); emptied per request.
        self.intervals: list[tuple[int, int, str]] = []
        self.idle_ns = 0

    def reset(self) -> None:
        self.intervals.clear()
        self.idle_ns = 0

    @property
    def calls(self) -> int:
        return len(self.intervals)

    def split(self, start: int, end: int) -> dict[str, float]:
        """Milliseconds per slice of the wall time [start, end]: each instant to the highest-priority
        slice with a timed call open at that instant, "other" where none is."""
        events: list[tuple[int, int, str]] = []
        for s, e, name in self.intervals:
            events.append((max(s, start), 1, name))
            events.append((min(e, end), -1, name))
        events.sort(key=lambda ev: (ev[0], ev[1]))
        open_: dict[str, int] = defaultdict(int)
        out = dict.fromkeys(SLICES, 0)
        last = start
        for t, delta, name in events:
            if t > last:
                top = min((n for n, c in open_.items() if c > 0), key=PRIORITY.__getitem__, default="other")
                out[top] += t - last
                last = t
            open_[name] += delta
        if end > last:
            out["other"] += end - last
        return {k: v / 1e6 for k, v in out.items()}


REC = Recorder()
_record = REC.intervals.append


def _timed(fn: Callable[..., Any], slice_: str) -> Callable[..., Any]:
    if getattr(fn, "__page_split__", None):
        return fn
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            start = _now()
            try:
                return await fn(*args, **kwargs)
            finally:
                _record((start, _now(), slice_))
        wrapper: Any = timed_async
    elif inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        return fn  # a generator's body runs at iteration, not at the call: left untimed
    else:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = _now()
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):  # e.g. asyncpg's guarded methods: a plain function returning a coroutine
                return _awaited(result, start, slice_)
            _record((start, _now(), slice_))
            return result
        wrapper = timed
    wrapper.__page_split__ = True
    return wrapper


async def _awaited(awaitable: Any, start: int, slice_: str) -> Any:
    try:
        return await awaitable
    finally:
        _record((start, _now(), slice_))


def _timed_iter(fn: Callable[..., Iterator[Any]], slice_: str) -> Callable[..., Iterator[Any]]:
    """An __iter__ whose every step is timed (the rows are made as they are iterated)."""
    @functools.wraps(fn)
    def timed_iter(self: Any) -> Iterator[Any]:
        start = _now()
        it = iter(fn(self))
        _record((start, _now(), slice_))
        while True:
            start = _now()
            try:
                item = next(it)
            except StopIteration:
                _record((start, _now(), slice_))
                return
            _record((start, _now(), slice_))
            yield item
    timed_iter.__page_split__ = True  # type: ignore[attr-defined]
    return timed_iter


def _patch_class(cls: type, names: tuple[str, ...], slice_: str) -> None:
    for name in names:
        fn = getattr(cls, name, None)
        if fn is None:
            continue
        setattr(cls, name, _timed_iter(fn, slice_) if name == "__iter__" else _timed(fn, slice_))


def install(schema_cls: type, view_cls: type) -> None:
    """Put the timers in place (once per process); REC.on decides whether they record."""
    import asyncpg
    import asyncpg.prepared_stmt
    import asyncpg.transaction
    from sqlalchemy.engine import result as sa_result
    from sqlalchemy.ext.asyncio import AsyncSession

    _patch_class(asyncpg.connection.Connection,
                 ("prepare", "execute", "executemany", "fetch", "fetchrow", "fetchval"), "SQL")
    _patch_class(asyncpg.prepared_stmt.PreparedStatement, ("fetch", "fetchrow", "fetchval", "executemany"), "SQL")
    _patch_class(asyncpg.transaction.Transaction, ("start", "commit", "rollback"), "SQL")
    _patch_class(AsyncSession, ("execute", "scalars", "scalar", "get", "commit", "rollback", "flush"), "SQLAlchemy")
    consume = ("all", "fetchall", "fetchone", "fetchmany", "first", "one", "one_or_none", "scalar", "scalar_one",
               "scalar_one_or_none", "partitions", "__iter__")
    for cls in (sa_result.Result, sa_result.ScalarResult, sa_result.MappingResult):
        _patch_class(cls, consume, "SQLAlchemy")
    for sub in _subclasses(sa_result.Result):  # those that define their own
        _patch_class(sub, tuple(n for n in consume if n in vars(sub)), "SQLAlchemy")
    _patch_kernelindex()
    _patch_class(schema_cls, ("execute",), "GraphQL")
    _patch_class(view_cls, ("encode_json",), "JSON")
    _patch_idle()


def _subclasses(cls: type) -> list[type]:
    out: list[type] = []
    direct: list[type] = cls.__subclasses__()
    for sub in direct:
        out.append(sub)
        out.extend(_subclasses(sub))
    return out


def _patch_kernelindex() -> None:
    """Every function and method of kernelindex.services and kernelindex.rules, wherever it is bound."""
    ours = ("kernelindex.services", "kernelindex.rules")
    wrapped: dict[int, Any] = {}
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("kernelindex") or module is None:
            continue
        for name, obj in list(vars(module).items()):
            if inspect.isfunction(obj) and (obj.__module__ or "").startswith(ours):
                setattr(module, name, wrapped.setdefault(id(obj), _timed(obj, "rules/read model")))
            elif inspect.isclass(obj) and (obj.__module__ or "").startswith(ours) and module_name == obj.__module__:
                for attr, member in list(vars(obj).items()):
                    if attr.startswith("__") and attr != "__call__":
                        continue
                    if inspect.isfunction(member):
                        setattr(obj, attr, _timed(member, "rules/read model"))
                    elif isinstance(member, property) and member.fget is not None:
                        setattr(obj, attr, property(_timed(member.fget, "rules/read model"), member.fset, member.fdel))
                    elif isinstance(member, (staticmethod, classmethod)):
                        setattr(obj, attr, type(member)(_timed(member.__func__, "rules/read model")))
                    elif isinstance(member, functools.cached_property):
                        patched = functools.cached_property(_timed(member.func, "rules/read model"))
                        patched.__set_name__(obj, attr)
                        setattr(obj, attr, patched)


def _patch_idle() -> None:
    import selectors

    if getattr(selectors, "__page_split__", False):
        return
    selectors.__page_split__ = True  # type: ignore[attr-defined]

    classes: set[type[selectors.BaseSelector]] = {selectors.DefaultSelector}
    if hasattr(selectors, "EpollSelector"):
        classes.add(selectors.EpollSelector)
    for cls in classes:
        original = cls.select

        def select(self: Any, timeout: float | None = None, _original: Any = original) -> Any:
            start = _now()
            try:
                return _original(self, timeout)
            finally:
                if REC.on:
                    REC.idle_ns += _now() - start
        cls.select = select  # type: ignore[method-assign]  # the idle timer: the selector waits in it


def count_fields(value: Any) -> int:
    """Fields in a GraphQL result: every key of every object, at every depth."""
    if isinstance(value, dict):
        return len(value) + sum(count_fields(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_fields(v) for v in value)
    return 0


def timer_cost_ns() -> float:
    """What one timed call costs beyond the call itself (REC on, a no-op function)."""
    def noop() -> None:
        return None
    timed = _timed(noop, "other")
    n = 100_000
    REC.on = True
    start = _now()
    for _ in range(n):
        timed()
    wrapped = _now() - start
    REC.on = False
    REC.reset()
    start = _now()
    for _ in range(n):
        noop()
    return (wrapped - (_now() - start)) / n


def graphql_core_over_dicts(sdl: str, query: str, variables: dict, data: dict, repeat: int) -> dict[str, float]:
    """graphql-core alone: median ms of graphql.execute of the parsed, validated document over `data`."""
    import graphql

    schema = graphql.build_schema(sdl)
    document = graphql.parse(query)
    errors = graphql.validate(schema, document)
    assert not errors, errors[:3]
    times = []
    for i in range(repeat + 2):
        start = _now()
        result = graphql.execute(schema, document, root_value=data, variable_values=variables)
        elapsed = _now() - start
        assert not inspect.isawaitable(result)
        assert result.errors is None, result.errors[:3]
        assert result.data == data, "graphql-core over the page's own result gave another result"
        if i >= 2:
            times.append(elapsed / 1e6)
    return {"execute_ms": statistics.median(times)}


def _graphql_core_files() -> str:
    import graphql

    return os.path.dirname(os.path.abspath(graphql.__file__)) + os.sep


def core_self_time(stats: dict[Any, Any], core_dir: str) -> tuple[float, float, list[tuple[float, str]]]:
    """From cProfile's raw stats: (seconds in all code, seconds in graphql-core's own code, its largest
    functions). graphql-core's own: the self time of every function defined in its package, plus the
    self time of the built-in (C) functions it calls (isinstance, dict methods…) when graphql-core
    called them, as cProfile attributes it per caller."""
    def is_core(func: tuple[str, int, str]) -> bool:
        return os.path.abspath(func[0]).startswith(core_dir) if func[0] not in ("~", "") else False

    total = core = 0.0
    by_function: dict[str, float] = defaultdict(float)
    for func, (_cc, _nc, tottime, _ct, callers) in stats.items():
        total += tottime
        if is_core(func):
            core += tottime
            by_function[f"{os.path.relpath(func[0], core_dir)}:{func[2]}"] += tottime
        elif func[0] == "~":  # a built-in: its time when called from graphql-core's functions
            for caller, caller_stats in callers.items():
                if is_core(caller):
                    core += caller_stats[2]
                    by_function[f"{func[2]} (from graphql-core)"] += caller_stats[2]
    top = sorted(((t, name) for name, t in by_function.items()), reverse=True)[:5]
    return total, core, top


async def graphql_core_share(once: Callable[..., Any], query: str, variables: dict, requests: int) -> dict[str, Any]:
    """graphql-core's share of an executed request, by cProfile (deterministic: every Python call and
    return is seen, nothing sampled) over `requests` requests after two warm-up ones: the self time of
    graphql-core's own code (parse, validation, the executor's steps a plan still takes: Executor.build,
    build_resolve_info, leaf serialization, gather_with_cancel, build_response…; with planning off, all
    of execution) over the self time of all the request's code, in this process (the whole ASGI app and
    the client). cProfile makes every call dearer, most of all the many small ones, so the milliseconds
    are the profiled request's, not the uninstrumented one's; the share is the figure to read. The plan
    counters (kernelindex.graphql.plan.STATS) say how many of the profiled requests a plan answered."""
    import cProfile

    from kernelindex.graphql import plan

    for _ in range(2):
        await once(query, variables)
    planned, unplanned = plan.STATS.planned, plan.STATS.unplanned
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        for _ in range(requests):
            await once(query, variables)
    finally:
        profiler.disable()
    profiler.create_stats()
    total, core, top = core_self_time(profiler.stats, _graphql_core_files())
    return {
        "requests": requests,
        "planned": plan.STATS.planned - planned,
        "unplanned": plan.STATS.unplanned - unplanned,
        "profiled_ms": total * 1000 / requests,
        "graphql_core_ms": core * 1000 / requests,
        "share": core / total if total else 0.0,
        "largest": [(name, t * 1000 / requests) for t, name in top],
    }


async def measure(url: str, queries: dict[str, tuple[str, dict]], requests: int, rounds: int) -> dict[str, Any]:
    import httpx

    from kernelindex.graphql.schema import KernelIndexSchema
    from kernelindex.settings import Settings
    from kernelindex.web.app import KernelIndexGraphQL, create_app

    app = create_app(Settings(), database_url=url)
    results: dict[str, Any] = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://split", timeout=120) as client:
            async def once(query: str, variables: dict) -> tuple[int, int, httpx.Response]:
                start = _now()
                response = await client.post("/graphql", json={"query": query, "variables": variables})
                end = _now()
                assert response.status_code == 200, response.text[:300]
                assert response.headers.get("x-cache") != "hit", "the response cache answered"
                return start, end, response

            plain: dict[str, list[float]] = defaultdict(list)
            for name, (query, variables) in queries.items():  # uninstrumented: before any timer exists
                for i in range(requests + 2):
                    start, end, _ = await once(query, variables)
                    if i >= 2:
                        plain[name].append((end - start) / 1e6)
            core = {name: await graphql_core_share(once, query, variables, requests)
                    for name, (query, variables) in queries.items()}  # before any timer exists
            install(KernelIndexSchema, KernelIndexGraphQL)
            cost = timer_cost_ns()
            for name, (query, variables) in queries.items():
                per_round: list[dict[str, float]] = []
                response: httpx.Response | None = None  # the last one's body is what the figures describe
                for _ in range(rounds):
                    samples: list[dict[str, float]] = []
                    for i in range(requests + 2):
                        REC.reset()
                        REC.on = True
                        start, end, response = await once(query, variables)
                        REC.on = False
                        split = REC.split(start, end)
                        split["total"] = (end - start) / 1e6
                        split["loop idle"] = REC.idle_ns / 1e6
                        split["timed calls"] = REC.calls
                        if i >= 2:
                            samples.append(split)
                    per_round.append({k: statistics.median(s[k] for s in samples) for k in samples[0]})
                assert response is not None, "rounds and requests are at least 1"
                body = response.json()
                assert "errors" not in body, body["errors"][:3]
                fields = count_fields(body["data"])
                results[name] = {
                    "split_ms": {k: statistics.median(r[k] for r in per_round) for k in per_round[0]},
                    "rounds": per_round,
                    "uninstrumented_ms": statistics.median(plain[name]),
                    "graphql_core_share": core[name],
                    "fields": fields, "bytes": len(response.content), "data": body["data"],
                    "query": query, "variables": variables,
                }
    results["timer_cost_ns"] = cost
    return results


def queries_of(names: list[str]) -> dict[str, tuple[str, dict]]:
    """The queries measured, by name: the page, the list, and the runs connection at 16 and 100."""
    from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
    from perf.dataset import LIST_QUERY, PAGE_SLUG
    from perf.runs_connection import graphql_query

    known = {"page": (WORKLOAD_PAGE_QUERY, {"slug": PAGE_SLUG}), "list of 100": (LIST_QUERY, {}),
             "runs 16": (graphql_query(16), {}), "runs 100": (graphql_query(100), {})}
    return {n: known[n] for n in names}


def report(results: dict[str, Any], title: str, requests: int) -> dict[str, Any]:
    """Print the split table and the µs-per-field table; the figures as a JSON-able dict."""
    from kernelindex.graphql.schema import build_schema
    from kernelindex.settings import Settings

    results = dict(results)
    cost = results.pop("timer_cost_ns")
    names = list(results)
    print(f"{title}; timer cost {cost:.0f} ns a call")
    header = f"{'ms per request':<24}" + "".join(f"{name:>14}" for name in names)
    print(header)
    print("-" * len(header))
    for row in (*SLICES, "total", "uninstrumented"):
        cells = []
        for name in names:
            r = results[name]
            value = r["uninstrumented_ms"] if row == "uninstrumented" else r["split_ms"][row]
            share = f" {value / r['split_ms']['total'] * 100:3.0f}%" if row in SLICES else "     "
            cells.append(f"{value:9.2f}{share}")
        print(f"{row:<24}" + "".join(f"{c:>14}" for c in cells))
        if row == "SQL":
            print(f"{'  of which loop idle':<24}" + "".join(f"{results[n]['split_ms']['loop idle']:9.2f}     "
                                                         .rjust(14) for n in names))
    print(f"{'timed calls':<24}" + "".join(f"{results[n]['split_ms']['timed calls']:>9.0f}     ".rjust(14) for n in names))
    print(f"{'  their timer cost (est.)':<24}" + "".join(
        f"{results[n]['split_ms']['timed calls'] * cost / 1e6:9.2f}     ".rjust(14) for n in names))
    print()
    print(f"{'graphql-core (cProfile)':<24}" + "".join(f"{name:>14}" for name in names))
    print("-" * len(header))
    for label, cell in (
        ("requests planned", lambda c: f"{c['planned']}/{c['requests']}"),
        ("profiled ms a request", lambda c: f"{c['profiled_ms']:.2f}"),
        ("graphql-core's own ms", lambda c: f"{c['graphql_core_ms']:.2f}"),
        ("graphql-core's share", lambda c: f"{c['share'] * 100:.1f}%"),
    ):
        print(f"{label:<24}" + "".join(f"{cell(results[n]['graphql_core_share']):>14}" for n in names))
    for n in names:
        largest = ", ".join(f"{name} {ms:.2f}" for name, ms in results[n]["graphql_core_share"]["largest"])
        print(f"  {n}, its largest (ms): {largest}")
    print()
    print(f"{'µs per field':<24}" + "".join(f"{name:>14}" for name in names))
    print("-" * len(header))
    sdl = build_schema(Settings()).as_str()
    core = {n: graphql_core_over_dicts(sdl, results[n]["query"], results[n]["variables"], results[n]["data"], requests)
            for n in names}
    print(f"{'fields in the response':<24}" + "".join(f"{results[n]['fields']:>14,}" for n in names))
    print(f"{'bytes':<24}" + "".join(f"{results[n]['bytes']:>14,}" for n in names))
    for label, value in (
        ("whole request", lambda n: results[n]["uninstrumented_ms"]),
        ("GraphQL slice (ours)", lambda n: results[n]["split_ms"]["GraphQL"]),
        ("graphql-core over dicts", lambda n: core[n]["execute_ms"]),
    ):
        print(f"{label:<24}" + "".join(f"{value(n) * 1000 / results[n]['fields']:>14.2f}" for n in names))
    return {"timer_cost_ns": cost} | {
        n: {k: v for k, v in results[n].items() if k not in ("data", "query")} | {"graphql_core": core[n]} for n in names}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.page_split", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000, help="runs in perf.dataset's dataset")
    parser.add_argument("--workloads", type=int, default=100, help="synthetic workloads (the list shows 100)")
    parser.add_argument("--requests", type=int, default=20, help="timed requests per query per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", default="page,list of 100",
                        help="comma-separated, of: page, list of 100, runs 16, runs 100 (perf.runs_connection's query)")
    parser.add_argument("--database-url", help="measure this database (built by perf.dataset) instead of a new one")
    parser.add_argument("--cold", action="store_true",
                        help="the read model off too: every request computes its page values (the first after a write)")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    # Every request executes (set here, not at import: a test that imports this module's helpers must not
    # turn the response cache off for the rest of its process).
    os.environ["KERNELINDEX_RESPONSE_CACHE_ENTRIES"] = "0"
    if args.cold:
        os.environ["KERNELINDEX_READ_MODEL_WORKLOADS"] = "0"
    queries = queries_of([q.strip() for q in args.queries.split(",")])
    if args.database_url:
        results = asyncio.run(measure(args.database_url, queries, args.requests, args.rounds))
        dataset = "the database at --database-url"
    else:
        from kernelindex.db.embedded import temporary_embedded
        from kernelindex.db.migrate import upgrade
        from perf.dataset import build_dataset

        with temporary_embedded("kernelindex-split-") as pg:
            upgrade(pg.url)
            asyncio.run(build_dataset(pg.url, args.workloads, args.runs))
            results = asyncio.run(measure(pg.url, queries, args.requests, args.rounds))
        dataset = f"perf.dataset: {args.workloads} synthetic workloads, {args.runs:,} runs"
    dataset += ", read model off (cold)" if args.cold else ", over the read model"
    figures = report(results, f"{dataset}; {args.rounds} rounds of {args.requests} requests, medians", args.requests)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
