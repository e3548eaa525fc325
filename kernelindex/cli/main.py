"""The `kernelindex` command: serve, migrate, seed, export-schema, and the ingest, bench, fleet and token commands.

Progress and errors go to stderr in plain words; exit status 0 means everything landed (the exit
statuses: kernelindex.cli.common). An operational error is one line, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import errno
import os
import socket
import sys
from collections.abc import Sequence

from kernelindex.cli.bench import add_bench_command
from kernelindex.cli.common import (
    EXIT_BROKEN_PIPE,
    EXIT_FATAL,
    EXIT_INTERRUPTED,
    EXIT_NOTHING_WRITTEN,
    EXIT_OK,
    EXIT_SOME_REJECTED,
    EXIT_TERMINATED,
    TRACEBACK_VARIABLE,
    CommandError,
    Terminated,
    database_url,
    run_migrations,
    say,
    sigterm_raises,
    tracebacks_wanted,
    write_stdout,
)
from kernelindex.cli.fleet import add_fleet_commands
from kernelindex.cli.ingest import add_ingest_commands
from kernelindex.cli.parser import Parser, version
from kernelindex.cli.snapshots import add_snapshot_commands
from kernelindex.cli.tokens import add_token_commands
from kernelindex.db.embedded import kept_alive
from kernelindex.db.errors import describe_failure, shortage
from kernelindex.ingest.errors import IngestAborted, IngestFatal
from kernelindex.settings import get_settings


async def _seed(url: str) -> None:
    from kernelindex.ingest.seed import seed_database  # the ingest pipeline, loaded only by the commands that write

    summary = await seed_database(url)
    say(
        f"seed loaded: {summary.hardware} hardware, {summary.implementations} implementations, "
        f"{summary.workloads} workloads, runs {summary.runs.inserted} inserted / {summary.runs.unchanged} unchanged"
    )


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


# uvicorn's --log-level names.
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="kernelindex",
        description="KernelIndex: the fastest known implementation of a workload on a GPU, and how far to trust it. "
        "Uses KERNELINDEX_DATABASE_URL when set (postgresql:// or postgresql+asyncpg://), "
        "otherwise an embedded PostgreSQL under the user's data directory.",
    )
    parser.add_argument("--debug", action="store_true",
                        help=f"show the traceback of an unexpected error (also {TRACEBACK_VARIABLE}=1)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve", help="serve the GraphQL API (and GraphiQL at /graphql outside production)",
        description="Serve the API with uvicorn: POST or GET /graphql, /healthz, /workloads/SLUG.json, /exports/…, "
        "/policy. GraphiQL answers a browser on /graphql in development (KERNELINDEX_GRAPHIQL=true serves it in "
        "production too; `make graphiql` installs its assets).")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    serve.add_argument("--port", type=int, default=8000, help="TCP port to listen on")
    serve.add_argument("--migrate", action="store_true", help="apply migrations first")
    serve.add_argument("--seed", action="store_true", help="load the seed dataset first (idempotent)")
    serve.add_argument("--log-level", default="info", choices=LOG_LEVELS, help="uvicorn's log level")
    serve.add_argument("--workers", type=int, default=1,
                       help="worker processes; each has its own event loop, connection pool and response cache")
    serve.set_defaults(func=cmd_serve)

    migrate = sub.add_parser("migrate", help="apply database migrations (Alembic, migrations/)")
    migrate.set_defaults(func=cmd_migrate)

    seed = sub.add_parser("seed", help="load the seed dataset (idempotent)")
    seed.add_argument("--migrate", action="store_true", help="apply migrations first")
    seed.set_defaults(func=cmd_seed)

    export = sub.add_parser("export-schema", help="print the GraphQL SDL (schema.graphql is kept equal to it)")
    export.set_defaults(func=cmd_export_schema)

    add_ingest_commands(sub)
    add_token_commands(sub)
    add_bench_command(sub)
    add_fleet_commands(sub)
    add_snapshot_commands(sub)
    return parser


def entry() -> None:
    """The `kernelindex` command (console script and `python -m kernelindex.cli`): main(), then its status.

    Interrupted (Ctrl+C) or terminated, the command has already stopped what it started (its finally blocks
    ran), and what is left is the interpreter's teardown of every loaded module, which with torch loaded
    takes seconds on a busy machine: the exit handlers run (the embedded PostgreSQL's among them, which
    stop a server no other process uses), the streams are flushed, and the process ends at once."""
    status = main()
    if status in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # a reader that went away, a closed stream: nothing more to say to it
        os._exit(status)
    sys.exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.debug:
        os.environ[TRACEBACK_VARIABLE] = "1"  # the commands that catch errors themselves read it too
    with sigterm_raises():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """The command, with every way it can fail turned into one line on stderr and an exit status."""
    try:
        status = args.func(args)
        sys.stdout.flush()  # here, not at exit: a full disk or a closed pipe is reported like any error
        return status
    except (CommandError, IngestFatal) as exc:
        say(f"error: {exc}")
        return EXIT_FATAL
    except IngestAborted as exc:
        for problem in exc.problems[:50]:
            say(f"error: {problem}")
        if len(exc.problems) > 50:
            say(f"… and {len(exc.problems) - 50} more")
        say(f"error: {exc}")
        # --strict refused the input whole; without it, an import refused before it began (a checkout
        # that is not one) is input rejected, as before.
        return EXIT_NOTHING_WRITTEN if getattr(args, "strict", False) else EXIT_SOME_REJECTED
    except KeyboardInterrupt:
        say("interrupted")
        return EXIT_INTERRUPTED
    except Terminated:
        say("terminated (SIGTERM)")
        return EXIT_TERMINATED
    except BrokenPipeError:
        # The reader of stdout went away (`| head`): nothing to say to it, and nothing more to write.
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if tracebacks_wanted():
            raise
        if isinstance(exc, OSError) and _stdout_broken():
            say(f"error: cannot write standard output: {shortage(exc) or exc.strerror or describe_failure(exc)}")
        else:
            say(f"error: {describe_failure(exc)}")
        return EXIT_FATAL


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's flush at exit does not fail again and
    print an "Exception ignored" message of its own."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (a test's capture): nothing will be flushed at exit


def _stdout_broken() -> bool:
    """After an error: whether it was stdout that failed (a full disk under `> file`). Then what is
    still buffered can never be written, and is discarded."""
    try:
        sys.stdout.flush()
    except OSError:
        _discard_stdout()
        return True
    return False


if __name__ == "__main__":
    entry()
