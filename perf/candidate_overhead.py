"""What the candidate harness's defences cost an honest candidate: its figures and the job's wall time.

    python -m perf.candidate_overhead [--runs 5] [--sizes tiny,ms] [--json]
    python -m perf.candidate_overhead --against TREE [--rounds 5] [--sizes tiny,ms]

Runs the honest fixture (tests/fixtures/candidates/honest.py against problem_matmul_relu.py) as a fleet
worker does: ``benchmarks.candidate:measure_job`` through a Sandbox (a fresh confined fork of a warm
zygote per job), the baseline (torch_eager) asked for, the worker's default timing settings. For each
size, ``--runs`` jobs; prints the median over them of the candidate's mean (ms), the baseline's mean
(ms) and the job's wall time (s, the parent's clock around Sandbox.run), one line per size.

The zygote is warmed as each tree's fleet worker warms it: with ``benchmarks.candidate:load_shape_inference``
(torch's meta-device shape inference, about 0.7 s of imports) where the tree has it, so its jobs do not pay
for it; the harness before issue 28 had none, and each of its jobs paid that import in its own
``instantiate``. ``--no-warm-up`` warms neither (every job of both pays it).

Sizes: ``tiny`` is the fixture as written (32x48 @ 48x40, microseconds: the harness's own per-trial
cost dominates), ``ms`` binds it to 256x512 @ 512x256 (about a millisecond on one CPU thread, the
order of the honest candidate in issue 28). Torch and benchmarks only (never kernelindex).

``--against TREE`` compares this checkout with another (``git worktree add /tmp/before a00802b``: the
harness before issue 28): ``--rounds`` rounds, each one job per size under TREE's ``benchmarks`` and then
one under this checkout's (each in a fresh process with that tree first on PYTHONPATH, the fixtures and
this script from here), so the two see the same machine, load included; it prints the median over the
rounds of each figure for both, the change, and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.sandbox import GiB, Limits, Sandbox

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "candidates"
# kernelindex.fleet.worker.WorkerOptions.timing (copied: benchmarks code never imports kernelindex, and
# this figure must not change when someone tunes the worker without meaning to change it).
WORKER_TIMING = {"warmup": 3, "min_trials": 10, "max_trials": 1000, "target_half_width": 0.01, "budget_s": 10.0}
SIZES = {"tiny": {}, "ms": {"M": 256, "K": 512, "N": 256}}
WARM_UP = "benchmarks.candidate:load_shape_inference"  # kernelindex.fleet.worker's (copied, as WORKER_TIMING)


def payload(bindings: dict[str, int]) -> dict[str, Any]:
    return {
        "workload_slug": "fixture-matmul-relu", "source_sha256": None,
        "reference_source": (FIXTURES / "problem_matmul_relu.py").read_text(),
        "reference_filename": "problem_matmul_relu.py",
        "implementation": {"slug": "fixture-honest", "title": "fixture honest", "role": "candidate",
                           "framework": "PyTorch", "language": "python", "licence": None, "source_url": None,
                           "source_availability": "mirrored"},
        "builtin": None, "candidate_source": (FIXTURES / "honest.py").read_text(), "candidate_filename": "honest.py",
        "bindings": bindings, "device": "cpu", "baseline": True, "correctness_sets": 5, "tolerance": None,
        "timing": dict(WORKER_TIMING), "provider": None, "label": None,
    }


def measure(box: Sandbox, bindings: dict[str, int], runs: int) -> dict[str, Any]:
    candidate_ms, baseline_ms, wall_s, trials = [], [], [], []
    for _ in range(runs):
        started = time.monotonic()
        outcome = box.run("benchmarks.candidate:measure_job", payload(bindings))
        wall_s.append(time.monotonic() - started)
        if not outcome.ok:
            raise SystemExit(f"the honest job did not finish: {outcome.status}: {outcome.detail}")
        baseline, submitted = outcome.value["records"]
        for record in (baseline, submitted):
            if record["status"] != "passed":
                raise SystemExit(f"{record['implementation']['slug']} failed: {record['failure_reason']}")
        candidate_ms.append(submitted["statistics"]["mean"])
        baseline_ms.append(baseline["statistics"]["mean"])
        trials.append(submitted["statistics"]["num_trials"])
    return {
        "candidate_mean_ms": statistics.median(candidate_ms), "baseline_mean_ms": statistics.median(baseline_ms),
        "job_wall_s": statistics.median(wall_s), "candidate_trials": statistics.median(trials),
        "runs": runs, "all_candidate_mean_ms": candidate_ms, "all_job_wall_s": wall_s,
    }


FIGURES = (("candidate_mean_ms", "candidate mean", "ms"), ("baseline_mean_ms", "baseline mean", "ms"),
           ("job_wall_s", "job wall", "s"))


def warm_up_for(warm: bool) -> str | None:
    """The zygote's warm-up this tree's fleet worker passes (kernelindex.fleet.worker), or None."""
    import benchmarks

    source = (Path(benchmarks.__file__).parent / "candidate.py").read_text()
    return WARM_UP if warm and f"def {WARM_UP.split(':')[1]}(" in source else None


def one_round(tree: Path, sizes: list[str], warm: bool = True) -> dict[str, Any]:
    """One job per size with ``tree``'s benchmarks package, in a fresh process (its last line: the JSON)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(Path(__file__).resolve()), "--runs", "1", "--sizes", ",".join(sizes), "--json"]
    done = subprocess.run(command + ([] if warm else ["--no-warm-up"]),
                          cwd=tree, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"the round under {tree} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(against: Path, rounds: int, sizes: list[str], warm: bool = True) -> dict[str, Any]:
    """Rounds alternating ``against`` and this checkout; per size and figure, the rounds' values and medians."""
    trees = {"before": against.resolve(), "after": REPO}
    seen: dict[str, dict[str, dict[str, list[float]]]] = {
        name: {size: {key: [] for key, _, _ in FIGURES} for size in sizes} for name in trees}
    load_before = os.getloadavg()
    for _ in range(rounds):
        for name, tree in trees.items():
            result = one_round(tree, sizes, warm)
            for size in sizes:
                for key, _, _ in FIGURES:
                    seen[name][size][key].append(result[size][key])
    summary: dict[str, Any] = {"rounds": rounds, "before_tree": str(trees["before"]), "after_tree": str(REPO), "warm_up": warm,
                               "load_average_before": load_before, "load_average_after": os.getloadavg(), "sizes": {}}
    for size in sizes:
        summary["sizes"][size] = {}
        for key, _, _ in FIGURES:
            before, after = statistics.median(seen["before"][size][key]), statistics.median(seen["after"][size][key])
            summary["sizes"][size][key] = {"before": before, "after": after, "change": after / before - 1,
                                           "all_before": seen["before"][size][key], "all_after": seen["after"][size][key]}
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="tiny,ms")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    parser.add_argument("--against", type=Path, metavar="TREE", help="another checkout to compare with, round by round")
    parser.add_argument("--rounds", type=int, default=5, help="with --against: alternating rounds (one job per size each)")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="warm neither tree's zygote (every job pays torch's shape-inference imports)")
    args = parser.parse_args()
    sizes = [s for s in args.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown size(s) {', '.join(unknown)}; known: {', '.join(SIZES)}")
    if args.against is not None:
        if not (args.against / "benchmarks" / "candidate.py").is_file():
            parser.error(f"{args.against} holds no benchmarks/candidate.py")
        summary = compare(args.against, args.rounds, sizes, not args.no_warm_up)
        if args.json:
            print(json.dumps(summary))
            return
        print(f"{summary['before_tree']} (before) against {summary['after_tree']} (after), median of {args.rounds} "
              f"alternating rounds; load average {summary['load_average_before'][0]:.2f} at the start, "
              f"{summary['load_average_after'][0]:.2f} at the end; zygotes warmed as each tree's worker does: "
              f"{'yes' if summary['warm_up'] else 'no (--no-warm-up)'}")
        for size in sizes:
            figures = summary["sizes"][size]
            print(f"{size}: " + "; ".join(f"{label} {figures[key]['before']:.4g} -> {figures[key]['after']:.4g} {unit} "
                                          f"({figures[key]['change']:+.1%})" for key, label, unit in FIGURES))
        return
    limits = Limits(wall_s=120, address_space=8 * GiB, processes=256, open_files=1024, scratch_bytes=1 * GiB,
                    result_bytes=16 * 1024**2)
    results = {}
    with Sandbox(["torch", "benchmarks.candidate", "benchmarks.environment"], workers=1, limits=limits,
                 warm_up=warm_up_for(not args.no_warm_up)) as box:
        for size in sizes:
            results[size] = measure(box, SIZES[size], args.runs)
            if not args.json:
                r = results[size]
                print(f"{size}: candidate mean {r['candidate_mean_ms']:.4f} ms, baseline mean {r['baseline_mean_ms']:.4f} ms, "
                      f"job wall {r['job_wall_s']:.3f} s, {r['candidate_trials']:g} trials (median of {r['runs']}; "
                      f"{box.describe()})")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
