"""A sweep: every implementation on every problem, one run record at a time."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import IO, Any

import torch

from .environment import capture_environment
from .problems import Problem, as_problem
from .runners import Implementation, get_implementation, run_problem
from .timing import make_timer, resolve_device


@dataclass(frozen=True)
class SweepEvent:
    """Progress of a sweep: a measurement has ``started``, or has ``finished`` with its record."""

    kind: str
    index: int
    total: int | None
    workload: str
    implementation: str
    record: dict[str, Any] | None = None


def run_sweep(
    problems: Iterable[Problem | tuple[str, str, str | None]],
    impls: Sequence[str | Implementation],
    device: str | torch.device | None = None,
    trials: int = 100,
    warmup: int = 3,
    overrides: Mapping[str, int] | None = None,
    progress_callback: Callable[[SweepEvent], None] | None = None,
    *,
    environment: Mapping[str, Any] | None = None,
    provider: str | None = None,
    label: str | None = None,
    tolerance: float | None = None,
) -> Iterator[dict[str, Any]]:
    """Measure each implementation on each problem; yield one run record per measurement.

    problems: Problem objects or (slug, source_text, filename) tuples; filename may be None
        and only names the source in tracebacks.
    impls: implementation slugs from runners.IMPLEMENTATIONS (torch_eager,
        torch_compile_inductor, torch_compile_inductor_<mode>) or Implementation objects.
    device: "cuda", "cuda:1", "cpu", or None for CUDA when available and the CPU otherwise.
    trials / warmup: timed trials kept per measurement (one more is run and discarded) and
        untimed warm-up calls after the first call.
    overrides: module-level integer constants to replace, e.g. {"batch_size": 8}; applied to
        every problem, and a problem without such a constant gets a failed record.
    progress_callback: called with a SweepEvent when each measurement starts and finishes
        (TablePrinter prints the table).
    environment: a captured environment object to reuse; by default captured once per sweep
        (provider/label passed to the capture, else $KERNELINDEX_PROVIDER / $KERNELINDEX_LABEL).
    tolerance: atol = rtol against the eager reference; default 1e-4 for fp32/fp64 and 1e-2
        for fp16/bf16.

    Records are schema-valid dicts (schemas/run-record.schema.json). A failure of any kind
    (import, get_inputs, compile, out of memory, wrong output) is a failed record and the
    sweep goes on. Nothing runs until the iterator is consumed.
    """
    if trials < 1:
        raise ValueError("trials must be at least 1")
    if warmup < 0:
        raise ValueError("warmup must not be negative")
    implementations = [get_implementation(choice) for choice in impls]
    if not implementations:
        raise ValueError("no implementations to run")
    resolved_device = resolve_device(device)
    total = len(problems) * len(implementations) if isinstance(problems, Sized) else None
    overrides = dict(overrides or {})

    if environment is None:
        environment = capture_environment(resolved_device, provider=provider, label=label)
    timer = make_timer(resolved_device)

    index = 0
    for item in problems:
        problem = as_problem(item)

        def announce(implementation: Implementation, problem: Problem = problem) -> None:
            nonlocal index
            index += 1
            if progress_callback is not None:
                progress_callback(SweepEvent("started", index, total, problem.slug, implementation.slug))

        for record in run_problem(
            problem,
            implementations,
            device=resolved_device,
            timer=timer,
            environment=environment,
            warmup=warmup,
            trials=trials,
            overrides=overrides,
            tolerance=tolerance,
            on_start=announce,
        ):
            if progress_callback is not None:
                progress_callback(
                    SweepEvent("finished", index, total, problem.slug, record["implementation"]["slug"], record)
                )
            yield record


def _format_ms(value: float) -> str:
    if value >= 100:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.3f}"
    return f"{value:.4f}"


def format_row(record: Mapping[str, Any]) -> str:
    """workload, implementation, status, mean ± std ms, compile time; the reason when failed."""
    workload = record["workload"].get("slug", "?")
    implementation = record["implementation"]["slug"]
    statistics = record.get("statistics")
    latency = f"{_format_ms(statistics['mean'])} ± {_format_ms(statistics['std'] or 0.0)} ms" if statistics else "-"
    compile_ms = record.get("compile_time_ms")
    compile_text = f"{compile_ms / 1000:.1f} s" if compile_ms is not None else "-"
    row = f"{workload:<32.32} {implementation:<36.36} {record['status']:<6} {latency:>24} {compile_text:>10}"
    if record["status"] == "failed" and record.get("failure_reason"):
        row += f"  {record['failure_reason'][:120]}"
    return row


TABLE_HEADER = f"{'workload':<32} {'implementation':<36} {'status':<6} {'mean ± std':>24} {'compile':>10}"


class TablePrinter:
    """A progress callback printing one line per measurement.

    On a terminal a transient progress line shows what is running; elsewhere (logs, CI)
    only the finished lines are written.
    """

    def __init__(self, stream: IO[str] | None = None, is_tty: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.is_tty = is_tty if is_tty is not None else bool(getattr(self.stream, "isatty", lambda: False)())
        self._header_done = False

    def __call__(self, event: SweepEvent) -> None:
        if not self._header_done:
            self.stream.write(TABLE_HEADER + "\n")
            self._header_done = True
        position = f"[{event.index}/{event.total}]" if event.total else f"[{event.index}]"
        if event.kind == "started":
            if self.is_tty:
                self.stream.write(f"\r\x1b[2K{position} {event.workload} {event.implementation} running...")
                self.stream.flush()
            return
        prefix = "\r\x1b[2K" if self.is_tty else ""
        self.stream.write(prefix + format_row(event.record or {}) + "\n")
        self.stream.flush()
