"""`kernelindex ingest runs FILE` and `kernelindex ingest kernelbench PATH`."""

from __future__ import annotations


def add_ingest_commands(sub) -> None:
    ingest = sub.add_parser("ingest", help="ingest run records or a KernelBench checkout")
    kinds = ingest.add_subparsers(dest="ingest_kind", required=True)
    from kernelindex.ingest.commands import configure_kernelbench, configure_runs

    configure_runs(kinds.add_parser("runs", help="ingest run records (JSON Lines; '-' for stdin)"))
    configure_kernelbench(kinds.add_parser("kernelbench", help="import a KernelBench checkout: problems and timing files"))
