"""The suites the index holds workloads of, by the name each is stored under, and how a page titles them."""

from __future__ import annotations

SUITE_TITLES = {
    "kernelbench": "KernelBench",
    "liger-kernel": "Liger-Kernel",
    "flashinfer-bench": "FlashInfer-Bench",
    "gpumode-kernelbot": "GPU MODE KernelBot",
    "sol-execbench": "NVIDIA SOL-ExecBench",
}


def suite_title(suite: str) -> str:
    """'KernelBench'; a suite the index has no title for is shown by its stored name."""
    return SUITE_TITLES.get(suite, suite)
