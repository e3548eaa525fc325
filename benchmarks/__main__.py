"""python -m benchmarks: measure KernelBench-format problem files, write run records as JSON Lines.

Example:
    python -m benchmarks --file problem.py --slug my-slug --impl torch_eager \\
        --impl torch_compile_inductor --device cuda --trials 100 --warmup 3 \\
        --set batch_size=8 --out runs.jsonl

The table goes to stderr, so records can go to stdout (--out -, the default). The exit
status is 0 when every run passed, 1 when any failed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .bindings import parse_binding
from .problems import Problem
from .records import JsonlWriter
from .runners import IMPLEMENTATIONS
from .sweep import TablePrinter, run_sweep
from .timing import resolve_device


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Measure KernelBench-format workloads and write KernelIndex run records (JSON Lines).",
    )
    parser.add_argument("--file", action="append", default=[], metavar="PATH",
                        help="problem module (repeatable)")
    parser.add_argument("--slug", action="append", default=[],
                        help="workload slug of the matching --file (default: from the file name)")
    parser.add_argument("--impl", action="append", default=[], metavar="SLUG",
                        help=f"implementation (repeatable; default torch_eager and torch_compile_inductor). "
                             f"Known: {', '.join(IMPLEMENTATIONS)}")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="default: cuda when available, else cpu")
    parser.add_argument("--trials", type=int, default=100, help="timed trials kept (default 100)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up calls after the first call (default 3)")
    parser.add_argument("--set", dest="bindings", action="append", default=[], type=parse_binding,
                        metavar="NAME=INT", help="override a module-level integer constant (repeatable)")
    parser.add_argument("--out", default="-", help="JSON Lines output file, '-' for stdout (default)")
    parser.add_argument("--provider", default=None, help="cloud/provider name (default $KERNELINDEX_PROVIDER)")
    parser.add_argument("--label", default=None, help="machine or pool label (default $KERNELINDEX_LABEL)")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="atol = rtol against eager (default 1e-4 fp32, 1e-2 fp16/bf16)")
    parser.add_argument("--list-impls", action="store_true", help="list the implementations and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list_impls:
        for slug, implementation in IMPLEMENTATIONS.items():
            print(f"{slug:<48} {implementation.metadata.get('title', '')}")
        return 0
    if not args.file:
        parser.error("give at least one --file")
    if len(args.slug) > len(args.file):
        parser.error("more --slug than --file")
    if args.trials < 1 or args.warmup < 0:
        parser.error("--trials must be >= 1 and --warmup >= 0")
    try:
        device = resolve_device(None if args.device == "auto" else args.device)
    except RuntimeError as exc:
        parser.error(str(exc))

    problems = []
    for position, path in enumerate(args.file):
        given_slug = args.slug[position] if position < len(args.slug) else None
        try:
            problems.append(Problem.from_file(path, given_slug))
        except OSError as exc:
            parser.error(f"cannot read {path}: {exc}")

    overrides = dict(args.bindings)
    impls = args.impl or ["torch_eager", "torch_compile_inductor"]
    unknown = [slug for slug in impls if slug not in IMPLEMENTATIONS]
    if unknown:
        parser.error(f"unknown implementation(s) {', '.join(unknown)}; known: {', '.join(IMPLEMENTATIONS)}")

    failed = 0
    output = sys.stdout if args.out == "-" else args.out
    with JsonlWriter(output) as writer:
        for record in run_sweep(
            problems,
            impls,
            device=device,
            trials=args.trials,
            warmup=args.warmup,
            overrides=overrides,
            progress_callback=TablePrinter(sys.stderr),
            provider=args.provider,
            label=args.label,
            tolerance=args.tolerance,
        ):
            writer.write(record)
            failed += record["status"] == "failed"
    print(f"{writer.count} run records ({failed} failed) written to {args.out if args.out != '-' else 'stdout'}",
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
