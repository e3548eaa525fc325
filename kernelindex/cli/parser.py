"""The `kernelindex` command line's words: every command, its arguments and options, and help that says
each option's default.

Built with nothing heavy loaded (the standard library, kernelindex.cli.exits and benchmarks.bindings), so
that `kernelindex --help` and `kernelindex COMMAND --help` answer at once: each command's module (the
database, the ingest pipelines, the web stack, torch) is imported by its handler below, when it runs.
tests/unit/test_cli_imports.py holds this.

The parser class passes itself on to every subcommand (argparse's add_subparsers makes subparsers of
the parent's class), so a command added anywhere under `kernelindex` gets the same help without asking.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from benchmarks.bindings import parse_binding  # torch-free, and light
from kernelindex.cli.exits import TRACEBACK_VARIABLE

DISTRIBUTION = "kernelindex"

# Named here rather than imported, because their homes load the database's models (SQLAlchemy) or the
# fleet's queue: tests/unit/test_cli_imports.py holds each equal to its source.
FLEET_JOB_STATES = ("queued", "running", "passed", "failed", "cancelled")  # kernelindex.db.models
DEFAULT_MAX_ATTEMPTS = 3  # kernelindex.fleet.jobs
KNOWN_SCOPES = {  # kernelindex.services.tokens
    "runs:review": "review a run held as suspicious (reviewRun)",
    "runs:write": "submit run records (submitRuns)",
    "runs:retract": "retract a run or a suite snapshot with its runs (retractRun, retractSnapshot)",
    "implementations:submit": "submit an implementation to be measured by the fleet (submitImplementation), and "
                              "cancel the jobs it queued (cancelJob)",
    "jobs:cancel": "cancel any fleet job, queued or running (cancelJob): the fleet operator's",
}


def version() -> str:
    # importlib.metadata only when the version is asked for: it costs tens of milliseconds to import.
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed: pip install -e .)"


class VersionAction(argparse._VersionAction):
    """`--version`, with the installed distribution's version looked up when it is asked for, not when the
    parser is built."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, default: str = argparse.SUPPRESS,
                 help: str = "show program's version number and exit") -> None:
        super().__init__(option_strings, dest=dest, default=default, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: str | Sequence[Any] | None,
                 option_string: str | None = None) -> None:
        self.version = f"%(prog)s {version()}"
        super().__call__(parser, namespace, values, option_string)  # prints it and exits


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's "(default: …)" after each option's help, but only where it tells something: not for
    flags (off unless given), options with no default (None), repeatable ones that start empty, or help
    that already states its default in its own words."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        if action.default in (None, False, [], "", argparse.SUPPRESS) or "default" in help_text.lower():
            return help_text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


# What each command runs. Its module is imported here, when the command runs, never when the parser is built.

def _serve(args: argparse.Namespace) -> int:
    from kernelindex.cli import server

    return server.cmd_serve(args)


def _mcp(args: argparse.Namespace) -> int:
    from kernelindex.cli import mcp

    return mcp.cmd_mcp(args)


def _migrate(args: argparse.Namespace) -> int:
    from kernelindex.cli import server

    return server.cmd_migrate(args)


def _seed(args: argparse.Namespace) -> int:
    from kernelindex.cli import server

    return server.cmd_seed(args)


def _export_schema(args: argparse.Namespace) -> int:
    from kernelindex.cli import server

    return server.cmd_export_schema(args)


def _ingest_runs(args: argparse.Namespace) -> int:
    from kernelindex.cli import ingest

    return ingest.cmd_ingest_runs(args)


def _ingest_kernelbench(args: argparse.Namespace) -> int:
    from kernelindex.cli import ingest

    return ingest.cmd_ingest_kernelbench(args)


def _ingest_kernelindex_export(args: argparse.Namespace) -> int:
    from kernelindex.cli import sources

    return sources.cmd_ingest_kernelindex_export(args)


def _ingest_liger(args: argparse.Namespace) -> int:
    from kernelindex.cli import sources

    return sources.cmd_ingest_liger(args)


def _bench(args: argparse.Namespace) -> int:
    from kernelindex.cli import bench

    return bench.cmd_bench(args)


def _submit(args: argparse.Namespace) -> int:
    from kernelindex.cli import fleet

    return fleet.cmd_submit(args)


def _worker(args: argparse.Namespace) -> int:
    from kernelindex.cli import fleet

    return fleet.cmd_worker(args)


def _jobs(args: argparse.Namespace) -> int:
    from kernelindex.cli import fleet

    return fleet.cmd_jobs(args)


def _jobs_cancel(args: argparse.Namespace) -> int:
    from kernelindex.cli import fleet

    return fleet.cmd_jobs_cancel(args)


def _token_create(args: argparse.Namespace) -> int:
    from kernelindex.cli import tokens

    return tokens.cmd_token_create(args)


def _token_list(args: argparse.Namespace) -> int:
    from kernelindex.cli import tokens

    return tokens.cmd_token_list(args)


def _token_revoke(args: argparse.Namespace) -> int:
    from kernelindex.cli import tokens

    return tokens.cmd_token_revoke(args)


def _snapshot_list(args: argparse.Namespace) -> int:
    from kernelindex.cli import snapshots

    return snapshots.cmd_snapshot_list(args)


def _snapshot_retract(args: argparse.Namespace) -> int:
    from kernelindex.cli import snapshots

    return snapshots.cmd_snapshot_retract(args)


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
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve", help="serve the GraphQL API (and GraphiQL at /graphql outside production)",
        description="Serve the API with uvicorn: POST or GET /graphql, /mcp (the MCP server, streamable HTTP), /healthz, /workloads/SLUG.json, /exports/…, "
        "/policy. GraphiQL answers a browser on /graphql in development (KERNELINDEX_GRAPHIQL=true serves it in "
        "production too; `make graphiql` installs its assets).")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    serve.add_argument("--port", type=int, default=8000, help="TCP port to listen on")
    serve.add_argument("--migrate", action="store_true", help="apply migrations first")
    serve.add_argument("--seed", action="store_true", help="load the seed dataset first (idempotent)")
    serve.add_argument("--log-level", default="info", choices=LOG_LEVELS, help="uvicorn's log level")
    serve.add_argument("--workers", type=int, default=1,
                       help="worker processes; each has its own event loop, connection pool and response cache")
    serve.set_defaults(func=_serve)

    mcp = sub.add_parser(
        "mcp", help="serve the MCP server over stdio (for an agent that starts it; `serve` has it at /mcp)",
        description="Serve KernelIndex's MCP tools (find workloads, the fastest implementation on a hardware, "
        "comparisons, semantics and floors, sources and terms, submit a kernel, follow a job) over stdin and stdout, "
        "answered through the GraphQL API's schema. submit_kernel needs a token with implementations:submit in "
        "KERNELINDEX_TOKEN.")
    mcp.add_argument("--migrate", action="store_true", help="apply migrations first")
    mcp.set_defaults(func=_mcp)

    migrate = sub.add_parser("migrate", help="apply database migrations (Alembic, migrations/)")
    migrate.set_defaults(func=_migrate)

    seed = sub.add_parser("seed", help="load the seed dataset (idempotent)")
    seed.add_argument("--migrate", action="store_true", help="apply migrations first")
    seed.set_defaults(func=_seed)

    export = sub.add_parser("export-schema", help="print the GraphQL SDL (schema.graphql is kept equal to it)")
    export.set_defaults(func=_export_schema)

    add_ingest_commands(sub)
    add_token_commands(sub)
    add_bench_command(sub)
    add_fleet_commands(sub)
    add_snapshot_commands(sub)
    return parser


def add_ingest_commands(sub: argparse._SubParsersAction) -> None:
    ingest = sub.add_parser("ingest", help="ingest run records, a KernelBench checkout or another public source")
    kinds = ingest.add_subparsers(dest="ingest_kind", required=True)
    configure_runs(kinds.add_parser("runs", help="ingest run records (JSON Lines; '-' for stdin)"))
    configure_kernelbench(kinds.add_parser("kernelbench", help="import a KernelBench checkout: problems and timing files"))
    export = kinds.add_parser("kernelindex-export", help="import a kernelindex.com catalogue export (.jsonl.zst or .jsonl)")
    export.add_argument("path", help="catalog-YYYY-MM-DD-<revision>.jsonl.zst: a snapshot of the whole catalogue at that date")
    _strict_dry_run(export)
    export.set_defaults(func=_ingest_kernelindex_export)
    liger = kinds.add_parser("liger", help="import Liger-Kernel's benchmark results (all_benchmark_data.csv)")
    liger.add_argument("path", help="benchmark/data/all_benchmark_data.csv at one upstream revision")
    liger.add_argument("--revision", required=True, metavar="SHA", help="the Liger-Kernel commit the file is from")
    liger.add_argument("--observed", required=True, metavar="DATE", help="that commit's date, YYYY-MM-DD")
    _strict_dry_run(liger)
    liger.set_defaults(func=_ingest_liger)


def configure_runs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="JSON Lines file of run records (schemas/run-record.schema.json), or - for stdin")
    _common_options(parser)
    parser.set_defaults(func=_ingest_runs)


def _strict_dry_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strict", action="store_true", help="any problem aborts with nothing written (exit status 3)")
    parser.add_argument("--dry-run", action="store_true", help="print what would be inserted, superseded and skipped; write nothing")


def _common_options(parser: argparse.ArgumentParser) -> None:
    _strict_dry_run(parser)
    parser.add_argument("--batch-size", type=int, default=5000, metavar="N", help="runs per transaction")


def configure_kernelbench(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a checkout of the KernelBench repository")
    parser.add_argument("--revision", metavar="SHA",
                        help="the checkout's upstream revision (default: PATH's git HEAD; required when PATH is not a git checkout)")
    parser.add_argument("--observed", metavar="DATE",
                        help="when the timings were observed, YYYY-MM-DD (default: the date of PATH's git HEAD; required "
                             "when PATH is not a git checkout)")
    parser.add_argument("--levels", default="1,2,3,4", metavar="LIST", help="levels to import, comma-separated")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="seconds allowed to trace one problem")
    _common_options(parser)
    parser.set_defaults(func=_ingest_kernelbench)


def add_bench_command(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser("bench", help="measure workloads (eager, torch.compile) and write or ingest run records")
    bench.add_argument("--workload", action="append", default=[], metavar="SLUG", help="workload slug (repeatable)")
    bench.add_argument("--all", action="store_true", help="every workload (narrow with --level)")
    bench.add_argument("--level", type=int, metavar="N", help="with --all: only this level (default: every level)")
    bench.add_argument("--file", action="append", default=[], metavar="PATH", help="a KernelBench-format problem file")
    bench.add_argument("--slug", help="workload slug for --file (default: the importer's slug for a …/levelN/NN_Name.py path, "
                       "else from the file name)")
    bench.add_argument("--impl", action="append", default=[], metavar="SLUG",
                       help="implementation (repeatable; default torch_eager and torch_compile_inductor)")
    bench.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                       help="where to measure; auto: cuda when available, else cpu")
    bench.add_argument("--trials", type=int, default=100, metavar="N", help="timed trials per implementation")
    bench.add_argument("--warmup", type=int, default=3, metavar="N",
                       help="untimed calls before the trials, to absorb compilation and cold caches")
    bench.add_argument("--set", dest="bindings", action="append", default=[], type=parse_binding, metavar="NAME=INT",
                       help="measure at another configuration, e.g. batch_size=8 (recorded as that configuration)")
    bench.add_argument("--out", metavar="PATH", help="write run records here (JSON Lines; default stdout)")
    bench.add_argument("--ingest", action="store_true", help="also write the runs to the database")
    bench.add_argument("--provider", help="provider name recorded with the environment (default: none)")
    bench.add_argument("--label", help="machine or pool label recorded with the environment (default: none)")
    bench.add_argument("--enqueue", action="store_true",
                       help="queue the measurements for the fleet's workers instead of measuring here")
    bench.add_argument("--hardware", action="append", default=[], metavar="NAME",
                       help="with --enqueue: the hardware to queue for, 'cpu' or a GPU of the catalogue (repeatable)")
    bench.add_argument("--replicas", type=int, default=1, metavar="N",
                       help="with --enqueue: measure each on N distinct machines of that hardware")
    bench.set_defaults(func=_bench)


def add_fleet_commands(sub: argparse._SubParsersAction) -> None:
    submit = sub.add_parser(
        "submit", help="submit an implementation (a KernelBench ModelNew module) to be measured by the fleet",
        description="Record a KernelBench-format candidate (a module defining ModelNew with the reference Model's "
        "constructor arguments) for a workload's current revision, and queue its measurement on the hardware named. "
        "The same file for the same workload, hardware and configuration is the same job.")
    submit.add_argument("--workload", required=True, metavar="SLUG", help="the workload it implements")
    submit.add_argument("--file", required=True, metavar="PATH", help="the candidate module (Python source)")
    submit.add_argument("--hardware", required=True, metavar="NAME",
                        help="where to measure: 'cpu', or a GPU of the catalogue by SKU, short name or product name "
                        "(e.g. 'NVIDIA H200')")
    submit.add_argument("--title", help="what it is, in a few words (default: the file name)")
    submit.add_argument("--licence", metavar="SPDX", help="its licence, e.g. MIT (default: none stated)")
    submit.add_argument("--source-url", metavar="URL", help="where its source lives (default: none)")
    submit.add_argument("--set", dest="bindings", action="append", default=[], type=parse_binding, metavar="NAME=INT",
                        help="measure at another configuration, e.g. batch_size=8")
    submit.add_argument("--max-attempts", type=int, default=DEFAULT_MAX_ATTEMPTS, metavar="N",
                        help="times a worker may start it before it is failed")
    submit.add_argument("--replicas", type=int, default=1, metavar="N",
                        help="measure it on N distinct machines of that hardware (two that agree: Replicated)")
    submit.add_argument("--json", action="store_true", help="print the job(s) as JSON on stdout, one a line")
    submit.set_defaults(func=_submit)

    worker = sub.add_parser(
        "worker", help="measure queued jobs for this machine's hardware",
        description="Take the jobs queued for this machine's hardware (its GPU's catalogue SKU, detected; or 'cpu' "
        "with --device cpu), measure each in the sandbox, and store the runs. Needs only the database "
        "(KERNELINDEX_DATABASE_URL). Stops on SIGINT/SIGTERM, or with --until-idle when the queue is empty.")
    worker.add_argument("--device", default="cuda", help="cpu, cuda or cuda:N")
    worker.add_argument("--until-idle", action="store_true",
                        help="drain the queue and exit (waits for jobs running elsewhere, and recovers stalled ones)")
    worker.add_argument("--name", help="worker name in jobs and logs (default: host:pid)")
    worker.add_argument("--provider", help="provider recorded with the environment (default: $KERNELINDEX_PROVIDER)")
    worker.add_argument("--label", help="machine or pool label recorded with the environment (default: $KERNELINDEX_LABEL)")
    worker.add_argument("--job-timeout", type=float, default=600.0, metavar="S", help="wall-clock limit of one job")
    worker.add_argument("--memory-gib", type=float, default=16.0, metavar="GIB",
                        help="address-space limit of a CPU job (0: none; CUDA jobs are not limited this way)")
    worker.add_argument("--timing-budget", type=float, default=10.0, metavar="S",
                        help="seconds of timed trials per implementation before the adaptive count stops")
    worker.add_argument("--heartbeat", type=float, default=10.0, metavar="S", help="seconds between heartbeats")
    worker.add_argument("--stalled-after", type=float, default=30.0, metavar="S",
                        help="a worker silent this long is dead: its running job is queued again")
    worker.add_argument("--poll", type=float, default=2.0, metavar="S", help="seconds between polls of the queue")
    worker.set_defaults(func=_worker)

    listing = sub.add_parser("jobs", help="list fleet jobs, newest first, with state and reason")
    listing.add_argument("--state", action="append", choices=FLEET_JOB_STATES, help="only these states (repeatable)")
    listing.add_argument("--hardware", metavar="NAME", help="only jobs for this hardware")
    listing.add_argument("--workload", metavar="SLUG", help="only jobs of this workload")
    listing.add_argument("--limit", type=int, default=50, metavar="N", help="at most this many")
    listing.add_argument("--json", action="store_true", help="one JSON object per job on stdout")
    listing.add_argument("--follow", action="store_true",
                         help="show progress (jobs finished, rate, ETA) until nothing is queued or running")
    listing.add_argument("--every", type=float, default=2.0, metavar="S", help="with --follow: seconds between looks")
    listing.set_defaults(func=_jobs)
    jobs_sub = listing.add_subparsers(dest="jobs_command", metavar="{cancel}")
    cancel = jobs_sub.add_parser(
        "cancel", help="cancel queued or running jobs",
        description="Cancel fleet jobs by id: a queued one never runs; a running one's worker stops its sandbox at "
        "once and stores no run. Who cancelled (this user and host) and why go into the job's reason. A job "
        "already cancelled is left as it is (exit 0); a finished one (passed, failed) cannot be cancelled (exit 1; "
        "the others are cancelled); an unknown id cancels nothing (exit 2).")
    cancel.add_argument("ids", nargs="+", type=_job_id, metavar="ID", help="a job's id (see `kernelindex jobs`)")
    cancel.add_argument("--reason", help="why, in a few words (kept in the job's reason; default: none given)")
    cancel.set_defaults(func=_jobs_cancel)


def _job_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a job id: {text!r} (see `kernelindex jobs`)") from None
    if not 1 <= value <= 2**63 - 1:
        raise argparse.ArgumentTypeError(f"not a job id: {text!r} (see `kernelindex jobs`)")
    return value


def _token_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a token id: {text!r} (see `kernelindex token list`)") from None
    if not 1 <= value <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"not a token id: {text!r} (see `kernelindex token list`)")
    return value


def add_token_commands(sub: argparse._SubParsersAction) -> None:
    scopes_help = "; ".join(f"{name}: {what}" for name, what in KNOWN_SCOPES.items())
    token = sub.add_parser("token", help="API tokens for writes (create, list, revoke)")
    token_sub = token.add_subparsers(dest="token_command", required=True)

    create = token_sub.add_parser(
        "create", help="create a token and print it once", description=f"Scopes: {scopes_help}."
    )
    create.add_argument(
        "--scope", action="append", required=True, metavar="SCOPE",
        help=f"a scope the token grants; repeat for several ({', '.join(KNOWN_SCOPES)})",
    )
    create.add_argument("--name", default="", help="what the token is for, e.g. 'ci-benchmarks' (default: no name)")
    create.set_defaults(func=_token_create)

    listing = token_sub.add_parser("list", help="list tokens (never the tokens themselves)")
    listing.set_defaults(func=_token_list)

    revoke = token_sub.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("id", type=_token_id, help="the token's id (see `kernelindex token list`)")
    revoke.set_defaults(func=_token_revoke)


def add_snapshot_commands(sub: argparse._SubParsersAction) -> None:
    snapshot = sub.add_parser("snapshot", help="imported snapshots of suites and sources (list, retract)")
    snapshot_sub = snapshot.add_subparsers(dest="snapshot_command", required=True)

    listing = snapshot_sub.add_parser("list", help="list every suite and source snapshot, retracted ones marked")
    listing.set_defaults(func=_snapshot_list)

    retract = snapshot_sub.add_parser(
        "retract", help="retract a suite snapshot, its source snapshots and their runs",
        description="The runs stay stored and queryable but count for nothing; the snapshot no longer decides "
        "current revisions; each workload touched gets a record event with the reason, and its records are "
        "recomputed. An import under a retracted revision is refused.",
    )
    retract.add_argument("suite", help="the suite, e.g. kernelbench (see `kernelindex snapshot list`)")
    retract.add_argument("revision", help="the snapshot's revision; a git hash may be abbreviated (7+ digits)")
    retract.add_argument("--reason", required=True, help="why it should not count, e.g. 'imported under the wrong revision'")
    retract.set_defaults(func=_snapshot_retract)
