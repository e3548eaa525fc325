"""Implementations (eager, torch.compile modes, injected ones) and the measurement of one problem.

Every implementation is checked against the eager reference before it is timed; a wrong
answer, an exception or an out-of-memory becomes a failed run record, never a crash.
"""

from __future__ import annotations

import contextlib
import gc
import re
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from . import problems as problems_module
from .problems import Instance, Problem, ProblemError
from .records import build_record, utc_now_iso
from .timing import Timer

SLUG_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
REFERENCE_SLUG = "torch_eager"
MAX_REASON_CHARS = 2000

BuildFn = Callable[[torch.nn.Module], Callable[..., Any]]

_TORCH_METADATA = {
    "framework": "PyTorch",
    "language": "python",
    "licence": "BSD-3-Clause",
    "source_availability": "upstream",
    "source_url": "https://github.com/pytorch/pytorch",
}


@dataclass(frozen=True)
class Implementation:
    """A way to run a model: ``build(model)`` returns the callable that is checked and timed.

    ``metadata`` fills the record's implementation object (title, framework, role...).
    When ``reports_compile_time`` is set, the first call's wall time is reported apart as
    compile_time_ms.
    """

    slug: str
    build: BuildFn
    metadata: Mapping[str, Any] = field(default_factory=dict)
    reports_compile_time: bool = False

    def __post_init__(self) -> None:
        if not SLUG_PATTERN.match(self.slug):
            raise ValueError(f"implementation slug {self.slug!r} does not match {SLUG_PATTERN.pattern}")

    def record_fields(self) -> dict[str, Any]:
        return {"slug": self.slug, **self.metadata}


def _eager(model: torch.nn.Module) -> Callable[..., Any]:
    return model


def _compiler(mode: str) -> BuildFn:
    def build(model: torch.nn.Module) -> Callable[..., Any]:
        # Compiled code and guards from the previous model would otherwise be reused or
        # count against the recompile limit.
        torch._dynamo.reset()
        return torch.compile(model, backend="inductor", mode=mode)

    return build


def torch_compile_implementation(mode: str = "default") -> Implementation:
    slug = "torch_compile_inductor" if mode == "default" else f"torch_compile_inductor_{mode}"
    title = "torch.compile (inductor)" if mode == "default" else f"torch.compile (inductor, {mode})"
    return Implementation(
        slug=slug,
        build=_compiler(mode),
        metadata={
            "title": title,
            **_TORCH_METADATA,
            "runtime_id": "torch_compile_inductor",
            "role": "candidate",
            "compile_mode": mode,
        },
        reports_compile_time=True,
    )


TORCH_EAGER = Implementation(
    slug="torch_eager",
    build=_eager,
    metadata={"title": "PyTorch eager", **_TORCH_METADATA, "runtime_id": "torch_eager", "role": "baseline"},
)

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

IMPLEMENTATIONS: dict[str, Implementation] = {TORCH_EAGER.slug: TORCH_EAGER}
for _mode in COMPILE_MODES:
    _implementation = torch_compile_implementation(_mode)
    IMPLEMENTATIONS[_implementation.slug] = _implementation


def get_implementation(choice: str | Implementation) -> Implementation:
    if isinstance(choice, Implementation):
        return choice
    try:
        return IMPLEMENTATIONS[choice]
    except KeyError:
        raise KeyError(f"unknown implementation {choice!r}; known: {', '.join(IMPLEMENTATIONS)}") from None


def custom_implementation(
    slug: str,
    build: BuildFn,
    *,
    title: str | None = None,
    role: str = "candidate",
    reports_compile_time: bool = False,
    **metadata: Any,
) -> Implementation:
    """An injected implementation: ``build(model)`` returns the callable to check and time."""
    fields = {"title": title or slug, "role": role, **metadata}
    return Implementation(slug=slug, build=build, metadata=fields, reports_compile_time=reports_compile_time)


# ---------------------------------------------------------------- correctness


def tolerance_for(dtype: str) -> float:
    """atol = rtol used against the eager reference."""
    if dtype in ("fp16", "bf16"):
        return 1e-2
    if dtype in ("fp32", "fp64"):
        return 1e-4
    return 0.0


def flatten_outputs(value: Any) -> list[Any]:
    """The leaves of an output (lists, tuples and dicts walked, dict keys in sorted order), in the order
    compare_outputs pairs them with the reference's."""
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in flatten_outputs(item)]
    if isinstance(value, dict):
        return [leaf for key in sorted(value, key=str) for leaf in flatten_outputs(value[key])]
    return [value]


_flatten = flatten_outputs


def _finite_or_none(value: float | None) -> float | None:
    if value is None or value != value or value in (float("inf"), float("-inf")):
        return None
    return value


def detach_output(value: Any) -> Any:
    """A private copy of an output; compiled graphs (CUDA graphs) may overwrite theirs on the next call."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, list):
        return [detach_output(item) for item in value]
    if isinstance(value, tuple):
        return tuple(detach_output(item) for item in value)
    if isinstance(value, dict):
        return {key: detach_output(item) for key, item in value.items()}
    return value


def compare_outputs(actual: Any, expected: Any, atol: float, rtol: float) -> tuple[dict[str, Any], str | None]:
    """torch.allclose of every output tensor against the reference.

    Returns the record's correctness object and, when it failed, why. max_rel_diff is
    |actual - expected| / |expected| over the elements where the reference is non-zero
    (elements where it is zero are judged by the absolute difference alone).
    """
    actual_leaves, expected_leaves = _flatten(actual), _flatten(expected)
    correctness: dict[str, Any] = {
        "passed": False,
        "max_abs_diff": None,
        "max_rel_diff": None,
        "atol": atol,
        "rtol": rtol,
        "reference": REFERENCE_SLUG,
    }
    if len(actual_leaves) != len(expected_leaves):
        return correctness, f"output has {len(actual_leaves)} values, reference has {len(expected_leaves)}"

    max_abs, max_rel = 0.0, 0.0
    all_close, non_finite = True, False
    for position, (got, want) in enumerate(zip(actual_leaves, expected_leaves)):
        if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
            if got != want:
                return correctness, f"output {position} is {got!r}, reference is {want!r}"
            continue
        if got.shape != want.shape:
            return correctness, f"output {position} has shape {tuple(got.shape)}, reference {tuple(want.shape)}"
        if got.numel() == 0:
            continue
        got64 = got.detach().to(device=want.device, dtype=torch.float64)
        want64 = want.detach().to(torch.float64)
        # Equal values (matching infinities included) differ by zero, not by inf - inf = nan.
        diff = torch.where(got64 == want64, torch.zeros_like(got64), (got64 - want64).abs())
        if not torch.isfinite(diff).all():
            non_finite = True
            all_close = False
            continue
        max_abs = max(max_abs, diff.max().item())
        nonzero = want64 != 0
        if nonzero.any():
            max_rel = max(max_rel, (diff[nonzero] / want64[nonzero].abs()).max().item())
        all_close = all_close and torch.allclose(got64, want64, atol=atol, rtol=rtol)

    correctness["passed"] = all_close
    if non_finite:
        # A NaN or an infinity where the reference has none makes the size of the error meaningless.
        return correctness, f"output has NaN or infinite values where the reference does not (atol={atol}, rtol={rtol})"
    correctness["max_abs_diff"] = _finite_or_none(max_abs)
    correctness["max_rel_diff"] = _finite_or_none(max_rel)
    if all_close:
        return correctness, None
    return correctness, (
        f"incorrect output: max_abs_diff={max_abs:.3e}, max_rel_diff={max_rel:.3e} "
        f"(atol={atol:g}, rtol={rtol:g}, reference {REFERENCE_SLUG})"
    )


# ---------------------------------------------------------------- measurement


def is_out_of_memory(exc: BaseException) -> bool:
    """A CUDA out-of-memory, a MemoryError (an address-space limit), or the CPU allocator's refusal
    (a RuntimeError from torch, worded \"can't allocate memory\")."""
    if isinstance(exc, (torch.cuda.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc)


def describe_exception(phase: str, exc: BaseException, source_filename: str | None = None) -> str:
    """'<phase> failed: Type: message (at file:line)'.

    The location is the innermost frame in the problem's own source when there is one
    (that is the line its author has to fix), else the innermost frame.
    """
    if is_out_of_memory(exc):
        head = f"out of memory during {phase}"
    else:
        head = f"{phase} failed"
    message = str(exc).strip().splitlines()
    text = f"{head}: {type(exc).__name__}"
    if message:
        text += f": {' '.join(line.strip() for line in message[:20])}"
    frames = traceback.extract_tb(exc.__traceback__)
    own_frames = [frame for frame in frames if source_filename and frame.filename == source_filename]
    candidates = own_frames or list(frames)
    location = candidates[-1] if candidates else None
    if location is not None:
        text += f" (at {location.filename}:{location.lineno})"
    if len(text) > MAX_REASON_CHARS:
        text = text[: MAX_REASON_CHARS - 3] + "..."
    return text


def release_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


@dataclass
class Outcome:
    """What measuring one implementation produced, before it becomes a record."""

    status: str
    failure_reason: str | None = None
    samples_ms: list[float] | None = None
    compile_time_ms: float | None = None
    correctness: dict[str, Any] | None = None
    kept_trials: int | None = None  # set by an adaptive count (benchmarks.candidate); None: the trials asked
    observed_at: str = field(default_factory=utc_now_iso)


def merge_correctness(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Two checks of one implementation as one correctness object: passed when both passed, the larger
    differences."""
    return _merge_correctness(first, second)


def _merge_correctness(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    merged = dict(first)
    merged["passed"] = first["passed"] and second["passed"]
    for key in ("max_abs_diff", "max_rel_diff"):
        values = [v for v in (first.get(key), second.get(key)) if v is not None]
        merged[key] = max(values) if values else None
    return merged


def measure_implementation(
    instance: Instance,
    implementation: Implementation,
    reference_output: Any,
    timer: Timer,
    *,
    warmup: int,
    trials: int,
    atol: float,
    rtol: float,
) -> Outcome:
    """Build, check, time. The first call is checked (and reported as compile time when the
    implementation compiles); then warm-up and timed trials; then one more call is checked,
    since the timed steady-state path (CUDA-graph replay, autotuned kernels) is not
    necessarily the one the first call took."""
    phase = "building the model"
    model: torch.nn.Module | None = None
    compiled: Callable[..., Any] | None = None
    output: Any = None
    compile_time_ms: float | None = None
    correctness: dict[str, Any] | None = None
    try:
        with torch.no_grad():
            model = instance.new_model()
            phase = f"building {implementation.slug}"
            compiled = implementation.build(model)
            inputs = instance.inputs

            def call() -> Any:
                # `compiled` is set just above and cleared only in the finally below, after the last call; no
                # narrowing assert here, as this is the timed call.
                return compiled(*inputs)  # type: ignore[misc]

            phase = "the first (compiling) call" if implementation.reports_compile_time else "the first call"
            output, first_call_ms = timer.wall_time_ms(call)
            compile_time_ms = first_call_ms if implementation.reports_compile_time else None

            phase = "the correctness check"
            correctness, problem = compare_outputs(output, reference_output, atol, rtol)
            output = None
            if problem:
                return Outcome("failed", problem, compile_time_ms=compile_time_ms, correctness=correctness)

            phase = "timing"
            samples = timer.measure(call, warmup=warmup, trials=trials)

            phase = "the check after timing"
            output = detach_output(call())
            after, problem = compare_outputs(output, reference_output, atol, rtol)
            output = None
            correctness = _merge_correctness(correctness, after)
            if problem:
                return Outcome(
                    "failed",
                    f"after timing, {problem}",
                    compile_time_ms=compile_time_ms,
                    correctness=correctness,
                )

        non_positive = [s for s in samples if not s > 0]
        if non_positive:
            return Outcome(
                "failed",
                f"timer returned {len(non_positive)} non-positive samples (below its resolution)",
                compile_time_ms=compile_time_ms,
                correctness=correctness,
            )
        return Outcome("passed", samples_ms=samples, compile_time_ms=compile_time_ms, correctness=correctness)
    except Exception as exc:
        reason = describe_exception(phase, exc, instance.problem.code_filename)
        return Outcome("failed", reason, compile_time_ms=compile_time_ms, correctness=correctness)
    finally:
        # Drop the references so the next implementation does not share memory with this one. Rebound rather
        # than deleted: `call` closes over `compiled`, and emptying its cell frees the compiled model just the same.
        model = compiled = output = None
        if implementation.reports_compile_time:
            # Drops compiled graphs and CUDA-graph pools before the next implementation runs.
            with contextlib.suppress(Exception):
                torch._dynamo.reset()
        release_memory(instance.device)


def _known_bindings(module: Any, overrides: Mapping[str, int]) -> dict[str, int]:
    """Bindings for a run that failed before its inputs existed: what was asked, plus batch_size."""
    bindings = {}
    if module is not None:
        batch_size = problems_module.int_constants(module).get("batch_size")
        if batch_size is not None:
            bindings["batch_size"] = batch_size
    bindings.update(overrides)
    return bindings


def run_problem(
    problem: Problem,
    implementations: Sequence[Implementation],
    *,
    device: torch.device,
    timer: Timer,
    environment: Mapping[str, Any],
    warmup: int,
    trials: int,
    overrides: Mapping[str, int] | None = None,
    tolerance: float | None = None,
    on_start: Callable[[Implementation], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield one run record per implementation for one problem.

    When the problem itself cannot be run (import error, get_inputs raises, the eager
    reference fails) every implementation gets a failed record with that reason.
    """
    overrides = dict(overrides or {})
    protocol = timer.protocol(warmup=warmup, trials=trials)

    def record(implementation: Implementation, outcome: Outcome, bindings: Mapping[str, int], dtype: str) -> dict:
        return build_record(
            workload_slug=problem.slug,
            source_sha256=problem.source_sha256,
            bindings=bindings,
            dtype=dtype,
            implementation=implementation.record_fields(),
            environment=environment,
            protocol=protocol,
            status=outcome.status,
            failure_reason=outcome.failure_reason,
            samples_ms=outcome.samples_ms,
            compile_time_ms=outcome.compile_time_ms,
            correctness=outcome.correctness,
            observed_at=outcome.observed_at,
        )

    module = instance = reference_output = None
    phase = "importing the problem module"
    failure: str | None = None
    try:
        module = problems_module.load_module(problem.source_text, problem.code_filename, overrides)
        phase = "get_init_inputs/get_inputs"
        instance = problems_module.instantiate(problem, device, overrides, module=module)
        phase = "the eager reference run"
        with torch.no_grad():
            reference_model = instance.new_model()
            instance.dtype = problems_module.infer_dtype(instance.inputs, reference_model)
            reference_output = detach_output(reference_model(*instance.inputs))
            del reference_model
    except ProblemError as exc:
        failure = str(exc)
    except (Exception, SystemExit) as exc:
        failure = describe_exception(phase, exc, problem.code_filename)

    if failure is not None:
        if instance is not None:
            bindings, dtype = instance.bindings, instance.dtype
        else:
            bindings, dtype = _known_bindings(module, overrides), problems_module.FALLBACK_DTYPE
        instance = reference_output = None
        release_memory(device)
        for implementation in implementations:
            if on_start is not None:
                on_start(implementation)
            yield record(implementation, Outcome("failed", failure), bindings, dtype)
        return

    assert instance is not None  # no failure: the try block above set it
    atol = rtol = tolerance if tolerance is not None else tolerance_for(instance.dtype)
    try:
        for implementation in implementations:
            if on_start is not None:
                on_start(implementation)
            outcome = measure_implementation(
                instance,
                implementation,
                reference_output,
                timer,
                warmup=warmup,
                trials=trials,
                atol=atol,
                rtol=rtol,
            )
            yield record(implementation, outcome, instance.bindings, instance.dtype)
    finally:
        del instance, reference_output
        release_memory(device)
