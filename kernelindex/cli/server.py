"""`kernelindex serve`, and the commands around its database and its API: migrate, seed, export-schema.

Loaded only when one of these runs (the parser names them without it); the web stack, the seed and the
schema load inside the command that needs them.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import socket

from kernelindex.cli.common import EXIT_OK, CommandError, database_url, run_migrations, say, write_stdout
from kernelindex.cli.exits import Terminated
from kernelindex.db.embedded import kept_alive
from kernelindex.settings import get_settings


async def _seed(url: str) -> None:
    from kernelindex.ingest.seed import seed_database  # the ingest pipeline, loaded only by the commands that write

    summary = await seed_database(url)
    say(
        f"seed loaded: {summary.hardware} hardware, {summary.implementations} implementations, "
        f"{summary.workloads} workloads, runs {summary.runs.inserted} inserted / {summary.runs.unchanged} unchanged"
    )
    say(summary.runs.identity())  # the runs as every ingest tells them (kernelindex.ingest.summary)


def cmd_migrate(args: argparse.Namespace) -> int:
    run_migrations(database_url())
    return 0


def cmd_seed(args: argparse.Namespace) -> int:
    url = database_url()
    if args.migrate:
        run_migrations(url)
    asyncio.run(_seed(url))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    # GraphiQLPage by way of the app module, which imports it: the web stack loads only for `serve`.
    from kernelindex.web.app import GraphiQLPage, create_app

    # Request heads bounded in size and time (uvicorn's own protocol bounds neither).
    from kernelindex.web.bounded_http import UVICORN_HTTP
    from kernelindex.web.persisted import PersistedQueryFileError

    if args.workers < 1:
        raise CommandError(f"--workers must be 1 or more, got {args.workers}")
    # Before anything starts or is announced: a busy port is one line and exit 2, not "serving on …" followed
    # by uvicorn's own error and its exit status 3 (which this command reserves for --strict).
    check_port_free(args.host, args.port)
    url = database_url()
    # This process owns the embedded server it started (none with KERNELINDEX_DATABASE_URL): it is
    # restarted if it dies while we serve, and stopped however this block is left.
    with kept_alive():
        if args.migrate:
            run_migrations(url)
        if args.seed:
            asyncio.run(_seed(url))
        try:
            # Built here even for --workers N, so that a bad persisted-query file is one line and exit 2, not an
            # error in every worker uvicorn starts.
            application = create_app(database_url=url)
        except PersistedQueryFileError as exc:
            raise CommandError(f"cannot serve: {exc}") from exc
        say(f"serving on http://{args.host}:{args.port}"
            + (f" with {args.workers} worker processes" if args.workers > 1 else ""))
        if not get_settings().graphiql_enabled:
            say("GraphiQL: not served (production; KERNELINDEX_GRAPHIQL=true serves it)")
        elif (problem := GraphiQLPage().status()) is not None:
            say(f"GraphiQL: {problem}")
        else:
            say(f"GraphiQL at http://{args.host}:{args.port}/graphql")
        try:
            if args.workers > 1:
                # One event loop uses one core; more cores need more processes. Each is started afresh, so it
                # is told where the database is (the embedded server this process started, if any). uvicorn's
                # supervisor handles SIGINT and SIGTERM here: it stops the workers and returns.
                os.environ["KERNELINDEX_DATABASE_URL"] = url
                uvicorn.run("kernelindex.web.app:create_default_app", factory=True, workers=args.workers,
                            host=args.host, port=args.port, log_level=args.log_level, http=UVICORN_HTTP)
            else:
                # uvicorn shuts down gracefully on SIGINT or SIGTERM, then raises the signal again with our
                # handlers back in place: KeyboardInterrupt or Terminated, caught here.
                uvicorn.run(application, host=args.host, port=args.port, log_level=args.log_level, http=UVICORN_HTTP)
        except (KeyboardInterrupt, Terminated) as stop:
            say(f"stopped ({'SIGTERM' if isinstance(stop, Terminated) else 'SIGINT'})")
    return EXIT_OK


def check_port_free(host: str, port: int) -> None:
    """CommandError unless host:port can be listened on now, bound as uvicorn binds it (SO_REUSEADDR, so a
    port in TIME_WAIT after a restart is free, as it is to uvicorn)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise CommandError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from exc
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CommandError(f"port {port} is in use on {host}: stop what listens there, or pass --port") from exc
            raise CommandError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from exc


def cmd_export_schema(args: argparse.Namespace) -> int:
    from kernelindex.graphql.schema import export_sdl

    write_stdout(export_sdl())
    return EXIT_OK
