"""One prepared GPU check (NVIDIA H200, about 8 minutes): the runner against an independent timer.

Measures ResNet18 (batch 2) and VGG19 (batch 10) from seeds/reference/, in eager and
inductor (default mode), 100 trials each, with the KernelIndex runner; and in the same
process times the same models with a from-scratch implementation of KernelBench's own
protocol (5 warm-ups, 100 trials, CUDA events, a 256 MiB buffer allocated and zeroed
before each trial to flush the L2, the mean) as a cross-check.

Writes, under --out (default $OUT, else the current directory):
  h200_runs.jsonl      the runner's run records
  h200_summary.json    every figure and the runner / cross-check ratio, rewritten after
                       each step so that a run cut short keeps what it measured
  h200_runs_kernelbench_tolerance.jsonl
                       only when a run fails the runner's correctness tolerance (1e-4 for
                       fp32) but not by an exception: the same run again at KernelBench's
                       1e-2, so the session still yields a figure (unless --tolerance is given)

Needs torch only:
    python -m benchmarks.gpu_check
Eager runs for both models come first, inductor second, so the cheap figures exist even
if compilation overruns; --budget-s skips the steps that would start after that time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import torch

from benchmarks.environment import capture_environment
from benchmarks.problems import Problem
from benchmarks.records import JsonlWriter
from benchmarks.sweep import TablePrinter, run_sweep
from benchmarks.timing import resolve_device

REFERENCE_DIR = Path(__file__).resolve().parent.parent / "seeds" / "reference"

DEFAULT_WORKLOADS = (
    ("kernelbench-l3-p9-resnet18", REFERENCE_DIR / "resnet18.py", 2),
    ("kernelbench-l3-p12-vgg19", REFERENCE_DIR / "vgg19.py", 10),
)

CROSSCHECK_WARMUPS = 5
CROSSCHECK_FLUSH_BYTES = 256 * 1024 * 1024
CROSSCHECK_SEED = 42
# KernelBench's atol = rtol for fp32; used only to retry a run that failed the runner's 1e-4.
KERNELBENCH_TOLERANCE = 1e-2

_started = time.monotonic()


def log(message: str) -> None:
    print(f"[{time.monotonic() - _started:7.1f} s] {message}", flush=True)


# ------------------------------------------------------------ cross-check, written apart from the runner


def _seed(seed: int) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def crosscheck_time(
    source_text: str,
    filename: str,
    batch_size: int,
    device: torch.device,
    compile_mode: str | None,
    trials: int,
) -> dict[str, Any]:
    """KernelBench-style timing, sharing no code with the runner: exec the module into a
    plain dict, seed, build on the CPU and move, then 5 warm-ups and ``trials`` trials
    between CUDA events, a large buffer allocated and zeroed before each trial. Returns
    the mean and the raw times in ms. On a CPU (smoke test only) perf_counter replaces
    the events and nothing is flushed."""
    namespace: dict[str, Any] = {"__name__": "kernelbench_crosscheck", "__file__": filename}
    exec(compile(source_text, filename, "exec"), namespace)
    namespace["batch_size"] = batch_size

    _seed(CROSSCHECK_SEED)
    init_inputs = namespace["get_init_inputs"]()
    _seed(CROSSCHECK_SEED)
    model = namespace["Model"](*init_inputs).to(device)
    _seed(CROSSCHECK_SEED)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in namespace["get_inputs"]()]

    if compile_mode is not None:
        torch._dynamo.reset()
        model = torch.compile(model, mode=compile_mode)

    on_gpu = device.type == "cuda"
    times_ms: list[float] = []
    compile_start = time.perf_counter()
    with torch.no_grad():
        for _ in range(CROSSCHECK_WARMUPS):
            model(*inputs)
            if on_gpu:
                torch.cuda.synchronize(device)
        warmup_s = time.perf_counter() - compile_start
        for _ in range(trials):
            if on_gpu:
                scratch = torch.empty(CROSSCHECK_FLUSH_BYTES // 8, dtype=torch.int64, device=device)
                scratch.fill_(0)
                del scratch
                begin = torch.cuda.Event(enable_timing=True)
                finish = torch.cuda.Event(enable_timing=True)
                begin.record()
                model(*inputs)
                finish.record()
                torch.cuda.synchronize(device)
                times_ms.append(begin.elapsed_time(finish))
            else:
                tick = time.perf_counter()
                model(*inputs)
                times_ms.append((time.perf_counter() - tick) * 1000.0)
    del model, inputs
    if compile_mode is not None:
        torch._dynamo.reset()
    if on_gpu:
        torch.cuda.empty_cache()
    mean_ms = sum(times_ms) / len(times_ms)
    ordered = sorted(times_ms)
    middle = len(ordered) // 2
    median_ms = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {
        "mean_ms": mean_ms,
        "median_ms": median_ms,
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
        "trials": len(times_ms),
        "warmups": CROSSCHECK_WARMUPS,
        "warmup_wall_s": warmup_s,
        "flush_bytes": CROSSCHECK_FLUSH_BYTES if on_gpu else 0,
        "timer": "torch.cuda.Event" if on_gpu else "time.perf_counter (CPU smoke test)",
        "samples_ms": times_ms,
    }


# ------------------------------------------------------------ driver


def crosscheck_compile_mode(impl: str) -> str | Literal[False] | None:
    """None for eager, the torch.compile mode for an inductor slug, False when there is no
    independent way to run the implementation."""
    if impl == "torch_eager":
        return None
    if impl == "torch_compile_inductor":
        return "default"
    prefix = "torch_compile_inductor_"
    if impl.startswith(prefix):
        return impl[len(prefix):]
    return False


def _parse_workload(text: str) -> tuple[str, Path, int]:
    try:
        slug, path, batch = text.split(",")
        return slug, Path(path), int(batch)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected SLUG,PATH,BATCH_SIZE, got {text!r}") from None


def _runner_figure(record: dict[str, Any]) -> dict[str, Any]:
    statistics = record.get("statistics") or {}
    return {
        "status": record["status"],
        "failure_reason": record.get("failure_reason"),
        "mean_ms": statistics.get("mean"),
        "median_ms": statistics.get("median"),
        "std_ms": statistics.get("std"),
        "p5_ms": statistics.get("p5"),
        "p95_ms": statistics.get("p95"),
        "num_trials": statistics.get("num_trials"),
        "compile_time_ms": record.get("compile_time_ms"),
        "correctness": record.get("correctness"),
        "bindings": record["configuration"]["bindings"],
        "dtype": record["configuration"]["dtype"],
    }


def _write_summary(path: Path, summary: dict[str, Any]) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    temporary.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or ".", help="output folder (default $OUT or .)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=3, help="runner warm-up calls after the first call")
    parser.add_argument("--impl", action="append", default=[],
                        help="runner implementations (default torch_eager, torch_compile_inductor)")
    parser.add_argument("--workload", action="append", default=[], type=_parse_workload,
                        metavar="SLUG,PATH,BATCH", help="replace the default ResNet18/VGG19 pair (repeatable)")
    parser.add_argument("--tolerance", type=float, default=None, help="atol = rtol for the runner's check")
    parser.add_argument("--budget-s", type=float, default=450.0,
                        help="start no new step after this many seconds (default 450)")
    parser.add_argument("--prefix", default="h200", help="output file name prefix (default h200)")
    args = parser.parse_args(argv)
    global _started
    _started = time.monotonic()

    device = resolve_device(None if args.device == "auto" else args.device)
    if device.type != "cuda":
        log(f"WARNING: running on {device}; the cross-check is a CPU smoke test, not KernelBench's protocol")
    impls = args.impl or ["torch_eager", "torch_compile_inductor"]
    workloads = args.workload or list(DEFAULT_WORKLOADS)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    runs_path = out_dir / f"{args.prefix}_runs.jsonl"
    summary_path = out_dir / f"{args.prefix}_summary.json"
    retry_path = out_dir / f"{args.prefix}_runs_kernelbench_tolerance.jsonl"
    retry_path.unlink(missing_ok=True)  # appended to below, one record per retried run

    environment = capture_environment(device)
    log(f"device {device}: {environment['hardware']}, driver {environment['software']['driver']}, "
        f"torch {environment['software']['torch']}, cuda {environment['software']['cuda']}, "
        f"triton {environment['software']['triton']}")
    log(f"details: {json.dumps(environment['details'], sort_keys=True)}")

    summary: dict[str, Any] = {
        "device": str(device),
        "environment": environment,
        "runner_protocol": None,
        "crosscheck_protocol": (
            f"KernelBench-style, written apart from the runner: {CROSSCHECK_WARMUPS} warm-ups, "
            f"{args.trials} trials, CUDA events, {CROSSCHECK_FLUSH_BYTES // 2**20} MiB buffer allocated and "
            f"zeroed before each trial, mean"
        ),
        "workloads": {},
        "skipped": [],
        "errors": [],
    }
    problems: dict[str, tuple[Problem, int]] = {}
    for slug, path, batch_size in workloads:
        entry = summary["workloads"].setdefault(slug, {"file": str(path), "batch_size": batch_size})
        try:
            problems[slug] = (Problem.from_file(path, slug), batch_size)
            entry["source_sha256"] = problems[slug][0].source_sha256
        except OSError as exc:
            summary["errors"].append(f"{slug}: cannot read {path}: {exc}")
            log(f"ERROR {slug}: cannot read {path}: {exc}")
    _write_summary(summary_path, summary)

    printer = TablePrinter(sys.stdout, is_tty=False)
    exit_status = 0
    with JsonlWriter(runs_path) as writer:
        # All eager figures first: they are cheap, and survive a compile that runs long.
        for impl in impls:
            for slug, (problem, batch_size) in problems.items():
                if time.monotonic() - _started > args.budget_s:
                    summary["skipped"].append(f"{slug} {impl}: past the {args.budget_s:.0f} s budget")
                    log(f"skip {slug} {impl}: past the budget")
                    continue
                figures = summary["workloads"][slug].setdefault(impl, {})

                log(f"runner: {slug} {impl} batch_size={batch_size}, {args.trials} trials")
                records = list(run_sweep(
                    [problem], [impl], device=device, trials=args.trials, warmup=args.warmup,
                    overrides={"batch_size": batch_size}, progress_callback=printer,
                    environment=environment, tolerance=args.tolerance,
                ))
                for record in records:
                    writer.write(record)
                    summary["runner_protocol"] = record["protocol"]
                figures["runner"] = _runner_figure(records[0])
                if records[0]["status"] != "passed":
                    exit_status = 1
                _write_summary(summary_path, summary)

                correctness = records[0].get("correctness") or {}
                if args.tolerance is None and records[0]["status"] == "failed" and correctness.get("passed") is False:
                    # Only the tolerance failed (TF32 convolutions, a different BatchNorm reduction
                    # order...). This session is the only GPU time there is, so time it once more at
                    # KernelBench's own fp32 tolerance, into a file of its own, rather than end with no figure.
                    log(f"runner: {slug} {impl} failed at atol=rtol={correctness.get('atol')}; "
                        f"again at {KERNELBENCH_TOLERANCE}")
                    retry = list(run_sweep(
                        [problem], [impl], device=device, trials=args.trials, warmup=args.warmup,
                        overrides={"batch_size": batch_size}, progress_callback=printer,
                        environment=environment, tolerance=KERNELBENCH_TOLERANCE,
                    ))
                    with JsonlWriter(retry_path, append=True) as retry_writer:
                        for record in retry:
                            retry_writer.write(record)
                    figures["runner_at_kernelbench_tolerance"] = _runner_figure(retry[0])
                    _write_summary(summary_path, summary)

                compile_mode = crosscheck_compile_mode(impl)
                if compile_mode is False:
                    figures["crosscheck"] = {"error": f"no independent timing for {impl}"}
                else:
                    log(f"cross-check: {slug} {impl}")
                    try:
                        crosscheck = crosscheck_time(
                            problem.source_text, problem.filename or slug, batch_size, device,
                            compile_mode=compile_mode, trials=args.trials,
                        )
                        samples = crosscheck.pop("samples_ms")
                        figures["crosscheck"] = crosscheck
                        figures["crosscheck_samples_ms"] = samples
                    except Exception as exc:
                        figures["crosscheck"] = {"error": f"{type(exc).__name__}: {exc}"}
                        summary["errors"].append(f"{slug} {impl} cross-check: {type(exc).__name__}: {exc}")
                        exit_status = 1
                ratio_source = "runner" if figures["runner"]["mean_ms"] else "runner_at_kernelbench_tolerance"
                runner_mean = figures.get(ratio_source, {}).get("mean_ms")
                crosscheck_mean = figures["crosscheck"].get("mean_ms")
                figures["ratio_runner_over_crosscheck"] = (
                    runner_mean / crosscheck_mean if runner_mean and crosscheck_mean else None
                )
                figures["ratio_from"] = ratio_source
                log(f"{slug} {impl}: runner {runner_mean} ms, cross-check {crosscheck_mean} ms, "
                    f"ratio {figures['ratio_runner_over_crosscheck']}")
                _write_summary(summary_path, summary)

    summary["elapsed_s"] = time.monotonic() - _started
    _write_summary(summary_path, summary)
    log(f"wrote {runs_path} and {summary_path}")
    print(json.dumps({slug: {impl: {"runner_ms": v["runner"]["mean_ms"],
                                    "crosscheck_ms": v.get("crosscheck", {}).get("mean_ms"),
                                    "ratio": v.get("ratio_runner_over_crosscheck")}
                             for impl, v in entry.items() if isinstance(v, dict) and "runner" in v}
                      for slug, entry in summary["workloads"].items()}, indent=2))
    return exit_status


if __name__ == "__main__":
    sys.exit(main())
