"""What the sandbox costs per job: N small problems run on the meta device in one process (the old
worker pool's steady state: one process traced problem after problem) against N jobs of
benchmarks.sandbox (a fresh confined fork of a warm zygote each), and what a fresh interpreter per
problem would cost instead.

    python -m benchmarks.sandbox_overhead [N]

Torch only (it never imports kernelindex); prints one line per figure.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import torch

from benchmarks import sandbox
from benchmarks.problems import PinToMeta, load_module

PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.relu(self.proj(x))

batch_size = {n}
dim = 128

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return [dim]
"""


def run_problem(payload: dict[str, Any]) -> list[int]:
    """Load, construct and run one problem on the meta device; its output shape."""
    with torch.device("meta"), PinToMeta(), torch.no_grad():
        module = load_module(payload["source"], payload["filename"], {})
        model = module.Model(*module.get_init_inputs())
        return list(model(*module.get_inputs()).shape)


def warm_up() -> None:
    torch.set_num_threads(1)
    run_problem({"source": PROBLEM.format(n=1), "filename": "warm_up.py"})


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else 50
    payloads = [{"source": PROBLEM.format(n=n + 1), "filename": f"{n + 1}_P.py"} for n in range(count)]

    warm_up()
    started = time.perf_counter()
    shapes = [run_problem(p) for p in payloads]
    in_process = time.perf_counter() - started

    started = time.perf_counter()
    with sandbox.Sandbox(["benchmarks.sandbox_overhead"],
                         "benchmarks.sandbox_overhead:warm_up", workers=1) as box:
        start_s = time.perf_counter() - started
        level = box.describe()
        started = time.perf_counter()
        outcomes = box.map("benchmarks.sandbox_overhead:run_problem", payloads)
        sandboxed = time.perf_counter() - started
    if [o.value for o in outcomes] != shapes:
        print("sandboxed results differ from in-process ones", [o for o in outcomes if not o.ok][:3], file=sys.stderr)
        return 1

    fresh = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True, capture_output=True)
        fresh.append(time.perf_counter() - started)

    print(level)
    print(f"problems: {count}")
    print(f"in one process (old pool, steady state): {in_process:.3f} s, {1000 * in_process / count:.1f} ms/problem")
    print(f"sandbox zygote start (import torch, warm up): {start_s:.2f} s, once per import")
    print(f"sandboxed (fresh confined fork per problem): {sandboxed:.3f} s, {1000 * sandboxed / count:.1f} ms/problem")
    print(f"sandbox overhead: {1000 * (sandboxed - in_process) / count:.1f} ms/problem")
    print(f"fresh interpreter per problem (python -c 'import torch'): {min(fresh):.2f} s each, best of 3")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
