"""The long schema-fuzzing run: schemathesis against a KernelIndex server this script starts itself.

    python -m perf.fuzz_graphql                      # 200 examples per operation, positive and negative
    python -m perf.fuzz_graphql --max-examples 50 --modes positive

It serves a fresh database (`kernelindex serve --migrate --seed`, a temporary KERNELINDEX_DATA_DIR,
a free loopback port), creates a token with every scope so the mutations' resolvers are reached,
and runs `st run … --max-examples N` once per mode with the hooks and fuzz dictionaries of
tests/reliability (fuzz_hooks.py, schemathesis.toml). A case fails on a 5xx, a non-JSON body, or a
GraphQL error with code INTERNAL_SERVER_ERROR or message 'Unexpected error.'. It prints the cases
tried and the failures per mode, and scans the server log for unexpected errors.

Exit status: 0 when nothing failed, 1 otherwise. Every run is bounded (--timeout-min per mode).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perf.server import REPO, Server

HOOKS = REPO / "tests" / "reliability" / "fuzz_hooks.py"
CONFIG = REPO / "tests" / "reliability" / "schemathesis.toml"


def create_token(server: Server) -> str:
    out = server.kernelindex("token", "create", "--scope", "runs:write", "--scope", "runs:retract", "--scope", "runs:review",
                             "--name", "fuzz")
    match = re.search(r"ki_[A-Za-z0-9_-]{20,}", out)
    if not match:
        raise RuntimeError(f"no token in: {out!r}")
    return match.group(0)


def run_mode(server: Server, token: str, mode: str, args, report_dir: Path) -> dict:
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "run", f"{server.url}/graphql",
        "--mode", mode, "--max-examples", str(args.max_examples), "--seed", str(args.seed), "--workers", str(args.workers),
        "--phases", args.phases, "--checks", "no_internal_error", "--generation-database", "none",
        "--header", f"Authorization: Bearer {token}", "--request-timeout", "30",
        "--report", "json", "--report-dir", str(report_dir),
    ]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS)}
    print(f"\n=== {mode}: st run … --max-examples {args.max_examples} --seed {args.seed} ===", flush=True)
    started = time.monotonic()
    exit_code: int | str
    try:
        done = subprocess.run(command, env=env, cwd=report_dir, timeout=args.timeout_min * 60)
        exit_code = done.returncode
    except subprocess.TimeoutExpired:
        exit_code = "timeout"
    elapsed = time.monotonic() - started
    reports = sorted(report_dir.glob("json-*.json"))
    report = json.loads(reports[-1].read_text()) if reports else {}
    return {"mode": mode, "exit": exit_code, "elapsed_s": elapsed, "report": report}


def summarise(result: dict) -> tuple[str, int]:
    report = result["report"]
    if not report:
        return f"{result['mode']}: no report (exit {result['exit']})", 1
    cases = report["test_cases"]
    ops = report["operations"]
    failures = len(report["failures"]) + len(report["errors"])
    line = (f"{result['mode']:>8}: {cases['generated']:>6} cases on {ops['tested']}/{ops['total']} operations, "
            f"{cases['with_failures']} with failures ({cases['unique_failures']} unique), {len(report['errors'])} errors, "
            f"{result['elapsed_s']:.0f} s, st exit {result['exit']}")
    return line, failures


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.fuzz_graphql", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-examples", type=int, default=200, help="cases per operation and mode (default 200)")
    parser.add_argument("--modes", default="positive,negative")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--phases", default="fuzzing,stateful")
    parser.add_argument("--timeout-min", type=float, default=30, help="hard stop for each mode (default 30)")
    args = parser.parse_args()

    results = []
    with tempfile.TemporaryDirectory(prefix="kernelindex-fuzz-") as tmp, Server() as server:
        print(f"server {server.url} (pid {server.pid}, log {server.log_path})", flush=True)
        token = create_token(server)
        for mode in args.modes.split(","):
            report_dir = Path(tmp) / mode
            report_dir.mkdir()
            results.append(run_mode(server, token, mode.strip(), args, report_dir))
        log = server.log_path.read_text()

    print("\n=== summary ===")
    total_failures = 0
    for result in results:
        line, failures = summarise(result)
        total_failures += failures
        print(line)
        for failure in result["report"].get("failures", [])[:20]:
            print("   failure:", json.dumps(failure)[:600])
        for error in result["report"].get("errors", [])[:20]:
            print("   error:", json.dumps(error)[:600])
    unexpected = log.count("unexpected error (request")
    unavailable = log.count("database unavailable (request")
    print(f"server log: {unexpected} unexpected errors, {unavailable} database-unavailable reports, "
          f"{log.count('Traceback')} tracebacks (strawberry logs every GraphQL error, user errors included)")
    print(f"seed {args.seed}; reproduce a mode with the same --seed and --max-examples")
    return 1 if total_failures or unexpected or unavailable else 0


if __name__ == "__main__":
    sys.exit(main())
