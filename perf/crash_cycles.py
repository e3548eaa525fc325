"""Crash drill: cycles of page load, idle, list load against `kernelindex serve`, until the server dies.

    python -m perf.crash_cycles [--cycles 6] [--page-s 10] [--idle-s 5] [--list-s 5]

On Python 3.11 the server used to die with SIGSEGV within 1–3 such cycles while read-only
requests committed their sessions (see kernelindex/web/middleware.py, _read_only). This replays
that load: an embedded PostgreSQL with perf.dataset's synthetic dataset (the one perf.api_speed
measures on), the server in a child process with faulthandler on, 16 clients on the workload page,
a pause, 8 clients on the list of 100 (closed loops of perf.loadgen), with the response cache off
unless --with-cache. Each cycle prints the requests, errors and the server's exit status (-11 is a
segfault); exit status 1 if the server died or any request failed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from perf.dataset import LIST_QUERY, PAGE_SLUG, build_dataset
from perf.loadgen import measure, write_mix
from perf.server import REPO, free_port, wait_for


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.crash_cycles", description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=6)
    parser.add_argument("--page-s", type=float, default=10)
    parser.add_argument("--idle-s", type=float, default=5)
    parser.add_argument("--list-s", type=float, default=5)
    parser.add_argument("--workloads", type=int, default=120)
    parser.add_argument("--runs", type=int, default=30_000)
    parser.add_argument("--with-cache", action="store_true",
                        help="keep the response cache on (default off: every request executes, the path that crashed)")
    args = parser.parse_args()

    from kernelindex.db.embedded import temporary_embedded
    from kernelindex.db.migrate import upgrade
    from kernelindex.web.twins import WORKLOAD_PAGE_QUERY

    log_path = Path(tempfile.mkstemp(prefix="kernelindex-crash-", suffix=".log")[1])
    failed = False
    with temporary_embedded("kernelindex-crash-") as pg:
        upgrade(pg.url)
        asyncio.run(build_dataset(pg.url, args.workloads, args.runs))
        port = free_port()
        env = {**os.environ, "KERNELINDEX_DATABASE_URL": pg.url, "KERNELINDEX_ENVIRONMENT": "production",
               "PYTHONFAULTHANDLER": "1", "KERNELINDEX_REQUEST_TIMEOUT_S": "0"}
        if not args.with_cache:
            env["KERNELINDEX_RESPONSE_CACHE_ENTRIES"] = "0"
        with open(log_path, "w") as log:
            server = subprocess.Popen([sys.executable, "-m", "kernelindex.cli", "serve", "--port", str(port),
                                       "--log-level", "warning"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        wait_for(f"http://127.0.0.1:{port}/healthz")
        url = f"http://127.0.0.1:{port}"
        page = {"query": WORKLOAD_PAGE_QUERY, "variables": {"slug": PAGE_SLUG}}
        mixes = {}
        for name, body in (("page", page), ("list", {"query": LIST_QUERY})):
            # The load generator sees HTTP statuses only: one request first, checked for GraphQL errors.
            answer = httpx.post(f"{url}/graphql", json=body, timeout=60).json()
            if answer.get("errors") or not answer.get("data"):
                raise SystemExit(f"the {name} query fails before any load: {answer}")
            mixes[name] = log_path.with_suffix(f".{name}.json")
            write_mix(mixes[name], [(name, 1, "POST", "/graphql", body)])
        out = log_path.with_suffix(".requests.csv")
        started = time.monotonic()
        for cycle in range(args.cycles):
            pages = measure(url, mixes["page"], out, "--closed", "16", "--seconds", str(args.page_s))
            time.sleep(args.idle_s)
            lists = measure(url, mixes["list"], out, "--closed", "8", "--seconds", str(args.list_s)) if server.poll() is None else None
            status = server.poll()
            errors = pages["errors"] + (lists["errors"] if lists else 0)
            failed = failed or errors > 0 or status is not None
            print(f"cycle {cycle}: page {pages['requests']} requests | list {lists['requests'] if lists else '-'} requests"
                  f" | errors {errors} | server exit {status} | {time.monotonic() - started:.0f} s", flush=True)
            if status is not None:
                print(f"the server died; its log: {log_path}", flush=True)
                break
        if server.poll() is None:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=15)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
