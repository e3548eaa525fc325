"""How fast the `kernelindex` command answers: `kernelindex --help` and `kernelindex COMMAND --help` for every
command and subcommand, each run as a child process (the installed console script), wall time, median of N.

    python -m perf.cli_speed              # median of 5 per command
    python -m perf.cli_speed --runs 9 --json

The bar (README, issue 29): every one under 0.5 s. Help is answered from the parser alone, so these figures
are the interpreter's start, the parser's modules and argparse: what every command pays before it does
anything. `python -c pass` is measured the same way, as the floor no command can go under.

What loads is held by a test (tests/unit/test_cli_imports.py: no database, web or torch module for a parser);
this script only says how long it takes, on this machine, now.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

BAR_S = 0.5


def console_script() -> str:
    """The installed `kernelindex` beside this interpreter (a virtual environment's bin/), else on PATH."""
    beside = Path(sys.executable).parent / "kernelindex"
    found = str(beside) if beside.exists() else shutil.which("kernelindex")
    if found is None:
        raise SystemExit("no `kernelindex` console script: pip install -e . first")
    return found


def command_paths() -> Iterator[tuple[str, ...]]:
    """Every command's words, from the parser itself (a command added later is measured without asking)."""
    from kernelindex.cli.main import build_parser

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield from walk(child, (*path, name))

    yield from walk(build_parser(), ())


def wall_s(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return elapsed


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--runs", type=int, default=5, help="runs per command; the median is reported (default: 5)")
    cli.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the table")
    options = cli.parse_args()
    script = console_script()
    cases = [("python -c pass", [sys.executable, "-c", "pass"])]
    cases += [(" ".join(("kernelindex", *path, "--help")), [script, *path, "--help"]) for path in command_paths()]
    medians: dict[str, float] = {}
    for label, argv in cases:
        wall_s(argv)  # once unmeasured: the first run after an install or an edit also writes .pyc files
        medians[label] = statistics.median(wall_s(argv) for _ in range(options.runs))
        if not options.json:
            over = "  OVER the bar" if label != "python -c pass" and medians[label] >= BAR_S else ""
            print(f"{medians[label]:7.3f} s  {label}{over}", flush=True)
    commands = {k: v for k, v in medians.items() if k != "python -c pass"}
    slowest = max(commands, key=commands.__getitem__)
    if options.json:
        print(json.dumps({"runs": options.runs, "bar_s": BAR_S, "median_s": medians, "slowest": slowest}, indent=2))
    else:
        print(f"slowest: {slowest} {commands[slowest]:.3f} s (median of {options.runs}); the bar: {BAR_S} s; "
              f"{sum(v >= BAR_S for v in commands.values())} of {len(commands)} over it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
