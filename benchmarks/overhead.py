"""Figures about the runner itself (a script, not a test).

1. Overhead: a trivial workload (a + b on two small tensors) timed by the runner, against
   a bare loop of the same calls timed once around the whole loop. The difference is what
   the runner adds per trial (timer calls, synchronization, L2 flush on CUDA).
2. Run-to-run spread: one small workload measured several times in a row; the spread of
   the means is the noise floor below which two runs cannot be told apart.

    python -m benchmarks.overhead --device cpu
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence

import torch

from .problems import Problem, instantiate
from .stats import summarize
from .sweep import run_sweep
from .timing import resolve_device

TRIVIAL_SOURCE = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a + b


size = 1024


def get_inputs():
    return [torch.randn(size), torch.randn(size)]


def get_init_inputs():
    return []
'''

SMALL_MLP_SOURCE = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(features, features), nn.ReLU(), nn.Linear(features, features))

    def forward(self, x):
        return self.layers(x)


batch_size = 64
features = 512


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
'''


def _measure_once(problem: Problem, device: torch.device, trials: int, warmup: int, environment=None) -> dict:
    records = list(run_sweep([problem], ["torch_eager"], device=device, trials=trials, warmup=warmup,
                             environment=environment))
    record = records[0]
    if record["status"] != "passed":
        raise RuntimeError(f"{problem.slug}: {record['failure_reason']}")
    return record


def bare_loop_ms_per_call(problem: Problem, device: torch.device, calls: int, warmup: int) -> float:
    instance = instantiate(problem, device)
    with torch.no_grad():
        model = instance.new_model()
        inputs = instance.inputs
        for _ in range(warmup):
            model(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter_ns()
        for _ in range(calls):
            model(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elapsed_ns = time.perf_counter_ns() - start
    return elapsed_ns / calls / 1e6


def runner_overhead(device: torch.device, trials: int, warmup: int) -> dict:
    problem = Problem("overhead-elementwise-add", TRIVIAL_SOURCE)
    record = _measure_once(problem, device, trials, warmup)
    bare_ms = bare_loop_ms_per_call(problem, device, trials, warmup)
    statistics = record["statistics"]
    return {
        "runner_mean_ms": statistics["mean"],
        "runner_median_ms": statistics["median"],
        "bare_loop_ms": bare_ms,
        "environment": record["environment"],
        "protocol": record["protocol"],
    }


def run_to_run_spread(device: torch.device, trials: int, warmup: int, repeats: int, environment=None) -> dict:
    problem = Problem("overhead-small-mlp", SMALL_MLP_SOURCE)
    means = [_measure_once(problem, device, trials, warmup, environment)["statistics"]["mean"]
             for _ in range(repeats)]
    summary = summarize(means)
    return {
        "means_ms": means,
        "spread": (summary["max"] - summary["min"]) / summary["mean"],
        "cv": summary["std"] / summary["mean"],
    }


def _us(ms: float) -> str:
    return f"{ms * 1000:9.2f} us"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.overhead", description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--trials", type=int, default=1000, help="trials (and bare-loop calls) for the overhead figure")
    parser.add_argument("--spread-trials", type=int, default=100, help="trials per measurement for the spread")
    parser.add_argument("--repeats", type=int, default=5, help="measurements in a row for the spread")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads on the CPU")
    args = parser.parse_args(argv)

    device = resolve_device(None if args.device == "auto" else args.device)
    if args.threads:
        torch.set_num_threads(args.threads)

    overhead = runner_overhead(device, args.trials, args.warmup)
    hardware = overhead["environment"]["hardware"]
    print(f"device: {device} ({hardware.get('sku') or hardware['product_name']}), "
          f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    print(f"protocol: {overhead['protocol']['name']}: {overhead['protocol']['timer']}")
    print()
    print(f"1. Runner overhead, elementwise add of two {1024}-element fp32 tensors, {args.trials} calls")
    print(f"   runner, mean per trial     {_us(overhead['runner_mean_ms'])}")
    print(f"   runner, median per trial   {_us(overhead['runner_median_ms'])}")
    print(f"   bare loop, per call        {_us(overhead['bare_loop_ms'])}")
    print(f"   difference (mean - bare)   {_us(overhead['runner_mean_ms'] - overhead['bare_loop_ms'])}")
    print(f"   difference (median - bare) {_us(overhead['runner_median_ms'] - overhead['bare_loop_ms'])}")

    spread = run_to_run_spread(device, args.spread_trials, args.warmup, args.repeats, overhead["environment"])
    print()
    print(f"2. Run-to-run spread, MLP 64x512 -> 512 -> 512, {args.repeats} measurements of "
          f"{args.spread_trials} trials")
    for number, mean in enumerate(spread["means_ms"], 1):
        print(f"   run {number}: mean {mean:.4f} ms")
    print(f"   spread (max - min) / mean  {spread['spread'] * 100:.2f} %")
    print(f"   coefficient of variation   {spread['cv'] * 100:.2f} %")
    if not math.isfinite(spread["cv"]):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
