"""How long the public sources take to import, as ops run them: each command a fresh process, timed
from start to exit, on a database of its own (embedded PostgreSQL under a temporary data dir).

    python -m perf.source_imports [--shared ../shared] [--json OUT]

For each kernelindex.com export: cold (a fresh database with the seed), then unchanged (the same file
again); then the other export on top, in both orders. The same for the two Liger-Kernel files. Issue 25
asks for under 30 s cold and under 5 s unchanged for each export. A script, not a test: the figures
depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXPORTS = ("catalog-2026-08-15-167a1d6d.jsonl.zst", "catalog-2026-08-16-94af2ae7.jsonl.zst")
LIGER = (("all_benchmark_data-27fe47e2.csv", "27fe47e2", "2026-06-10"), ("all_benchmark_data-2120862b.csv", "2120862b", "2026-08-10"))


def _run(env: dict[str, str], *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kernelindex.cli", *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"kernelindex {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    last = [line for line in done.stderr.splitlines() if line.startswith("kernelindex: runs:")]
    return elapsed, last[-1].removeprefix("kernelindex: ") if last else ""


def _fresh(root: Path, name: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KERNELINDEX_DATABASE_URL"}
    env["KERNELINDEX_DATA_DIR"] = str(root / name)
    for command in (("migrate",), ("seed",)):
        subprocess.run([sys.executable, "-m", "kernelindex.cli", *command], env=env, check=True, capture_output=True)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m perf.source_imports", description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    exports = Path(args.shared) / "sources" / "kernelindex-export"
    liger = Path(args.shared) / "sources" / "liger-kernel"
    figures: list[dict[str, object]] = []

    def step(env: dict[str, str], label: str, *command: str) -> None:
        seconds, said = _run(env, *command)
        figures.append({"step": label, "seconds": round(seconds, 2), "summary": said})
        print(f"{label:<58} {seconds:6.2f} s   {said}", flush=True)

    with tempfile.TemporaryDirectory(prefix="kernelindex-perf-") as tmp:
        root = Path(tmp)
        for order in (EXPORTS, EXPORTS[::-1]):
            env = _fresh(root, f"exports-{order[0][8:18]}")
            first, second = (str(exports / name) for name in order)
            step(env, f"export {order[0][8:18]} cold", "ingest", "kernelindex-export", first)
            step(env, f"export {order[0][8:18]} unchanged", "ingest", "kernelindex-export", first)
            step(env, f"export {order[1][8:18]} on top", "ingest", "kernelindex-export", second)
            step(env, f"export {order[1][8:18]} unchanged", "ingest", "kernelindex-export", second)
        env = _fresh(root, "liger")
        for name, revision, observed in (*LIGER, *LIGER):
            step(env, f"liger {revision}", "ingest", "liger", str(liger / name), "--revision", revision, "--observed", observed)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
