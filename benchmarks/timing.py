"""Timers: CUDA events on the GPU, perf_counter_ns on the CPU, behind one interface.

Both follow the same flow: warm-up calls (which absorb any remaining compilation and
autotuning), then ``trials + 1`` timed calls of which the first is discarded, because the
first timed call still pays for allocator growth and lazy initialisation that warm-up
does not always reach. Samples come back in milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

PROTOCOL_VERSION = "1"

# Used only when the device properties do not say how big the L2 is; larger than the L2 of
# every current NVIDIA part (B200: 126 MiB), so the flush still evicts everything.
FALLBACK_L2_FLUSH_BYTES = 256 * 1024 * 1024


class Timer:
    """Common interface. Subclasses set the class attributes and implement the hooks."""

    protocol_name: str = ""
    timer_name: str = ""
    l2_flush: bool = False

    def __init__(self, device: torch.device):
        self.device = device

    def synchronize(self) -> None:
        """Wait for all queued work on the device."""

    def before_trial(self) -> None:
        """Runs before each timed trial (cache flush, synchronization)."""

    def describe(self) -> str:
        """What exactly this timer does, for the protocol's ``timer`` field."""
        return self.timer_name

    def protocol(self, warmup: int, trials: int) -> dict:
        return {
            "name": self.protocol_name,
            "version": PROTOCOL_VERSION,
            "timer": self.describe(),
            "warmup": warmup,
            "trials": trials,
            "statistic": "mean",
            "l2_flush": self.l2_flush,
        }

    def wall_time_ms(self, fn: Callable[[], Any]) -> tuple[Any, float]:
        """One call of fn and its wall time, synchronized on both sides (used for compile time)."""
        self.synchronize()
        start = time.perf_counter_ns()
        result = fn()
        self.synchronize()
        return result, (time.perf_counter_ns() - start) / 1e6

    def measure(self, fn: Callable[[], Any], warmup: int, trials: int) -> list[float]:
        """Run ``warmup`` untimed calls, then ``trials + 1`` timed ones; return the last ``trials`` in ms."""
        if trials < 1:
            raise ValueError("trials must be at least 1")
        if warmup < 0:
            raise ValueError("warmup must not be negative")
        for _ in range(warmup):
            fn()
        self.synchronize()
        samples = self._timed_trials(fn, trials + 1)
        return samples[1:]

    def _timed_trials(self, fn: Callable[[], Any], count: int) -> list[float]:
        raise NotImplementedError


class CpuTimer(Timer):
    """perf_counter_ns around each call.

    No cache flush: a CPU's last-level cache can be hundreds of MiB, and evicting it
    before every trial would cost more than most problems; the protocol records that
    (l2_flush false) so these runs are never compared with flushed ones.
    """

    protocol_name = "kernelindex-cpu-perf-counter"
    timer_name = "time.perf_counter_ns"
    l2_flush = False

    def describe(self) -> str:
        return "time.perf_counter_ns around each call; no cache flush; first timed trial discarded"

    def _timed_trials(self, fn: Callable[[], Any], count: int) -> list[float]:
        samples = []
        clock = time.perf_counter_ns
        for _ in range(count):
            self.before_trial()
            start = clock()
            fn()
            samples.append((clock() - start) / 1e6)
        return samples


class CudaEventTimer(Timer):
    """CUDA events around each call, L2 flushed and the device synchronized before each trial."""

    protocol_name = "kernelindex-cuda-events"
    timer_name = "torch.cuda.Event"
    l2_flush = True

    def __init__(self, device: torch.device):
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        super().__init__(device)
        properties = torch.cuda.get_device_properties(device)
        l2_bytes = getattr(properties, "L2_cache_size", None)
        if l2_bytes:
            self.l2_bytes: int | None = int(l2_bytes)
            # Twice the L2 so that no line of the previous trial's working set can survive.
            self.flush_bytes = 2 * self.l2_bytes
            self.flush_source = "2 x L2_cache_size from device properties"
        else:
            self.l2_bytes = None
            self.flush_bytes = FALLBACK_L2_FLUSH_BYTES
            self.flush_source = "L2_cache_size missing from device properties; fixed fallback size"
        self._flush_buffer: torch.Tensor | None = None

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)

    def describe(self) -> str:
        return (
            f"torch.cuda.Event around each call; before each trial zero_() of a "
            f"{self.flush_bytes / 2**20:.1f} MiB buffer ({self.flush_source}) then "
            f"torch.cuda.synchronize(); first timed trial discarded"
        )

    def before_trial(self) -> None:
        if self._flush_buffer is None:
            self._flush_buffer = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=self.device)
        self._flush_buffer.zero_()
        self.synchronize()

    def release(self) -> None:
        self._flush_buffer = None

    def _timed_trials(self, fn: Callable[[], Any], count: int) -> list[float]:
        with torch.cuda.device(self.device):
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
            for start, end in zip(starts, ends):
                self.before_trial()
                start.record()
                fn()
                end.record()
            # Reading the events only at the end keeps host work out of the trials.
            self.synchronize()
            return [start.elapsed_time(end) for start, end in zip(starts, ends)]


def resolve_device(device: str | torch.device | None) -> torch.device:
    """The requested device, or CUDA when available and the CPU otherwise."""
    if device is None or str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("CUDA was requested but torch.cuda.is_available() is false")
    return device


def make_timer(device: str | torch.device) -> Timer:
    device = torch.device(device)
    if device.type == "cuda":
        return CudaEventTimer(device)
    if device.type == "cpu":
        return CpuTimer(device)
    raise ValueError(f"no timer for device type {device.type!r}")
