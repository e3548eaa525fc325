"""Measure a submitted implementation (a KernelBench ``ModelNew`` module) honestly, inside the sandbox.

``measure_job(payload)`` is what a worker runs through ``Sandbox.run("benchmarks.candidate:measure_job",
payload)``: a JSON payload in (the reference problem, the candidate's source or a built-in
implementation, the configuration and timing settings), run records out. A candidate that fails any
check is a failed record with a one-line reason; only a malformed payload raises (PayloadError).

The processes, and why (the threat model is in README.md, "Measuring a submitted kernel"):

- The sandbox (benchmarks.sandbox) is the boundary to the rest of the machine: a fresh confined process
  per job, no network, an unprivileged uid, rlimits.
- Inside it, ``measure_job`` is the **coordinator**. It never loads candidate code and never touches the
  device; it makes itself undumpable (no process of its uid may read its memory or open its descriptors)
  and forks, with only a pipe pair each (benchmarks.channel): the **reference process** (trusted code:
  the environment, the reference model, the reference output for any seed asked) and, one after the
  other, an **executor** per implementation (the baseline's, then the candidate's). The candidate runs
  only in its executor, which holds neither the sandbox's result pipe nor anyone's secrets. The
  coordinator writes every record; what the executor sends are answers to its questions, checked as
  untrusted input: a message the protocol does not allow fails the job ("the candidate forged results").
- Figures: trials are requests from the coordinator, in blocks, with fresh inputs every trial
  (TrialInputs: seeds and noise offsets drawn from the OS's randomness), and answers (the executor's
  samples: perf_counter_ns on the CPU, CUDA events on a GPU). The coordinator times every block with a
  second clock (the executor's CPU time from the kernel on the CPU, its own wall clock on a GPU); a
  do-nothing block timed the same way before the candidate was loaded gives the harness's own cost, and
  samples that leave more of a trial unexplained than the tolerance fail the job. The stopping rule runs
  in the coordinator.
- Correctness: the executor sends its output's bytes; the reference process computes the reference from
  the same seed in its own process (where no candidate ever ran), and the coordinator compares. Which
  timed trials' outputs are checked is decided after each trial, from the OS's randomness, in the
  coordinator. Floating inputs that a workload makes constant or seed-independent are freshened by
  seeded noise, so no check or trial sees uniform or repeated inputs; a constant output never passes
  where the reference varies.
- Inside the executor (defence in depth, no barrier to code that rewrites that process's memory): the
  functions the harness calls are recorded before the candidate is imported, checked after every step
  (identity and code object) and put back, the clocks after every timed trial, the whole set at trials
  the coordinator picks in secret; outputs must be plain, dense tensors of the reference's dtype, shape
  and device, aliasing neither the inputs nor the harness's tensors; a decoy shaped like the reference
  output lies where a reader of the harness's memory would look.
"""

from __future__ import annotations

import gc
import math
import os
import secrets
import statistics
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from . import channel as channel_module
from . import problems as problems_module
from . import runners, timing
from .channel import Channel, ChannelClosed, Child, ProtocolViolation, fork_role, make_undumpable
from .environment import capture_environment
from .problems import SEED, Instance, Problem, ProblemError
from .records import build_record
from .runners import (
    IMPLEMENTATIONS,
    TORCH_EAGER,
    compare_outputs,
    describe_exception,
    detach_output,
    flatten_outputs,
    merge_correctness,
    tolerance_for,
)

_monotonic_ns = timing._monotonic_ns  # bound at timing's import, before any candidate ran

DEFAULT_CORRECTNESS_SETS = 5  # as KernelBench
MAX_CORRECTNESS_SETS = 100
# Timed trials whose outputs are checked at random, besides the first and the last: each with chance
# The time budget ends the timing only once this many trials are kept (the first of all is discarded).
MIN_KEPT_TRIALS = 2
# max(TIMED_OUTPUT_SAMPLES / max_trials, MIN_TIMED_CHECK_PROBABILITY), at most twice TIMED_OUTPUT_SAMPLES.
TIMED_OUTPUT_SAMPLES = 6
MIN_TIMED_CHECK_PROBABILITY = 0.02
INTEGRITY_CHECK_PROBABILITY = 0.2  # of a full integrity walk after a block (the clocks: after every trial)
# Trials run per request: about BLOCK_TARGET_MS of calls, at most MAX_BLOCK, and their outputs (kept for
# the coordinator to pick from) within KEPT_OUTPUT_BYTES.
BLOCK_TARGET_MS = 50.0
MAX_BLOCK = 128
# A block's first call comes right after the executor slept waiting for "go": on a machine whose idle CPUs lose
# their caches (a VM's halted vCPU, measured on the 2-core CI machine) it takes 5-30x a 5 us call's time and the
# second still 1.2-1.5x, and once per block that raised an honest tiny candidate's mean by 12% (its median not at
# all). In blocks of at least timing.LEAD_MIN_BLOCK trials (calls under BLOCK_TARGET_MS / LEAD_MIN_BLOCK) the first
# timing.LEAD_CALLS trials are leads: run and timed like the others, on fresh inputs, but not kept. Their samples
# count against the second clock up to LEAD_FACTOR x the block's slowest kept sample each + LEAD_WAKE_MS; beyond
# that it is unexplained time, held against the clock's tolerance, so samples nobody keeps cannot hide a block's time.
LEAD_FACTOR = 2.0
LEAD_WAKE_MS = 0.2
WAIT_SLACK_MS = 0.001  # schedstat counts nanoseconds; the executor's reports are rounded floats of ms
KEPT_OUTPUT_BYTES = 256 * 1024**2
# CPU outputs of at most this many bytes are checked and copied after every timed trial (_Executor.copies), not
# kept as the candidate returned them.
COPIED_OUTPUT_BYTES = 64 * 1024
# Heap touched before the first timed block (_Executor.reserve): a block's outputs and RESERVE_EXTRA_FACTOR
# times as much again (at most RESERVE_EXTRA_BYTES) for what calls allocate besides; at most RESERVE_MAX_BYTES.
RESERVE_EXTRA_FACTOR = 2
RESERVE_EXTRA_BYTES = 4 * 1024**2
RESERVE_MAX_BYTES = 64 * 1024**2
# Do-nothing blocks of 1 and of CALIBRATION_BLOCK trials, CALIBRATION_ROUNDS of each, timed through the same
# messages before the candidate is loaded: the harness's own cost per block and per trial.
CALIBRATION_BLOCK = 32
CALIBRATION_ROUNDS = 3
# Timed trials' inputs (TrialInputs): relative noise, the number of offsets into a pool, the pool's seed.
TRIAL_NOISE = 0.1
TRIAL_OFFSETS = 1 << 16
NOISE_POOL_SEED = 20_260_428
# The coordinator's clock against the samples: the median per-trial time left unexplained by the sample
# and the harness's own overhead may not exceed max(absolute, relative x median sample).
CLOCK_TOLERANCE_MS = 0.1
CLOCK_TOLERANCE_FRACTION = 0.5
HARNESS_TOLERANCE_FRACTION = 1.0
# A sample longer than the coordinator's interval around it by more than this is impossible honestly.
CLOCK_SLACK_MS = 0.02
# CPU time the executor may use during the timed loop while not answering a request (the process total
# is read in clock ticks): max(absolute, relative x the CPU time it used answering).
BACKGROUND_CPU_MS = 50.0
BACKGROUND_CPU_FRACTION = 0.1
# CPU time the executor may spend making a block's inputs (before the calls; the noise offsets are not yet
# known then): READY_FACTOR x what it cost before the candidate was loaded, + READY_SLACK_MS.
READY_FACTOR = 3.0
READY_SLACK_MS = 20.0
# CUDA: the median untimed tail above the tail of a call that does nothing, beyond which work was left on
# another stream: max(absolute, relative x median sample).
SIDE_STREAM_TAIL_MS = 0.05
SIDE_STREAM_TAIL_FRACTION = 0.1

ROLES = ("candidate", "baseline")
AVAILABILITY = ("mirrored", "upstream", "none")
DEVICES = ("cpu", "cuda")


class PayloadError(ValueError):
    """The payload is malformed: not the candidate's fault, so it raises rather than making a record."""


class CandidateFailure(Exception):
    """A check failed; the message is the record's failure_reason."""


class ClockDisagreement(CandidateFailure):
    """The timed samples left more of the trials unexplained than the second clock allows."""


# ---------------------------------------------------------------- integrity of what the harness relies on

_TORCH_ROOT = os.path.dirname(os.path.abspath(torch.__file__))


def _members(owner: Any) -> dict[str, Any]:
    """The callables and descriptors of a module or class (modules inside a module left out: torch adds
    its submodules lazily)."""
    found = {}
    for name, value in list(vars(owner).items()):
        if isinstance(value, types.ModuleType):
            continue
        if callable(value) or isinstance(value, (property, staticmethod, classmethod, types.MethodDescriptorType)):
            found[name] = value
    return found


def _library_owners() -> list[tuple[str, Any]]:
    return [
        ("time", timing.time),
        ("torch", torch),
        ("torch.Tensor", torch.Tensor),
        ("torch.nn.Module", torch.nn.Module),
        ("torch.nn.functional", torch.nn.functional),
        ("torch.cuda", torch.cuda),
        ("torch.cuda.Event", torch.cuda.Event),
        ("torch.cuda.Stream", torch.cuda.Stream),
        ("benchmarks.timing", timing),
        ("benchmarks.runners", runners),
    ]


def _wraps_original(new: Any, original: Any) -> bool:
    """A wrapper torch itself installs around the original: its code is under torch/ and it calls the
    original, reached through ``__wrapped__`` (functools.wraps: torch._dynamo wraps torch.manual_seed) or
    held in its closure (torch._dynamo's generation tagging of nn.Module.__init__ and __setstate__)."""
    code = getattr(new, "__code__", None)
    if code is None or not os.path.abspath(code.co_filename).startswith(_TORCH_ROOT + os.sep):
        return False
    if any(_cell_contents(cell) is original for cell in getattr(new, "__closure__", None) or ()):
        return True
    current = new
    for _ in range(8):
        current = getattr(current, "__wrapped__", None)
        if current is None:
            return False
        if current is original:
            return True
    return False


def _cell_contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _MISSING


def _settings() -> dict[str, Any]:
    """torch's global settings that change what the reference computes or how fast anything runs."""
    values: dict[str, Any] = {
        "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
        "torch.get_default_dtype()": str(torch.get_default_dtype()),
        "torch.are_deterministic_algorithms_enabled()": torch.are_deterministic_algorithms_enabled(),
        "torch.get_num_threads()": torch.get_num_threads(),
        "torch.backends.cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "torch.backends.cudnn.benchmark": bool(torch.backends.cudnn.benchmark),
        "torch.backends.cudnn.deterministic": bool(torch.backends.cudnn.deterministic),
        "torch.backends.cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
            bool(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
            bool(torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
        "active torch function modes": torch._C._len_torch_function_stack(),
        # A profile or trace function runs its code inside every call the harness makes.
        "sys.getprofile()": sys.getprofile(),
        "sys.gettrace()": sys.gettrace(),
        "active torch dispatch modes": torch._C._len_torch_dispatch_stack(),
    }
    module_hooks = torch.nn.modules.module
    for name in ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                 "_global_backward_pre_hooks"):
        hooks = getattr(module_hooks, name, None)
        if hooks is not None:
            values[f"torch.nn.modules.module.{name} (global module hooks)"] = len(hooks)
    return values


def _restore_settings(original: Mapping[str, Any]) -> None:
    sys.setprofile(original["sys.getprofile()"])
    sys.settrace(original["sys.gettrace()"])
    torch.set_float32_matmul_precision(original["torch.get_float32_matmul_precision()"])
    torch.set_num_threads(original["torch.get_num_threads()"])
    torch.backends.cudnn.allow_tf32 = original["torch.backends.cudnn.allow_tf32"]
    torch.backends.cudnn.benchmark = original["torch.backends.cudnn.benchmark"]
    torch.backends.cudnn.deterministic = original["torch.backends.cudnn.deterministic"]
    torch.backends.cuda.matmul.allow_tf32 = original["torch.backends.cuda.matmul.allow_tf32"]


class Integrity:
    """What candidate code must leave as it found it: recorded before it runs, checked after each step."""

    def __init__(self, base: Mapping[str, tuple[Any, dict[str, Any]]], extra: Iterable[tuple[str, Any]] = ()):
        self.snapshot: dict[str, tuple[Any, dict[str, Any]]] = {label: (owner, dict(members)) for label, (owner, members) in base.items()}
        for label, owner in extra:
            self.snapshot[label] = (owner, _members(owner))
        # A function's code can be swapped while the function object stays the same (f.__code__ = ...).
        self.codes = {(label, name): value.__code__ for label, (_, members) in self.snapshot.items()
                      for name, value in members.items() if isinstance(value, types.FunctionType)}
        self.settings = _settings()

    def violations(self) -> list[str]:
        """What changed, each put back where it can be; empty when nothing did."""
        found: list[str] = []
        for label, (owner, members) in self.snapshot.items():
            current = vars(owner)
            for name, original in members.items():
                value = current.get(name, _MISSING)
                if value is original:
                    code = self.codes.get((label, name))
                    if code is not None and original.__code__ is not code:
                        found.append(f"the candidate replaced the code of {label}.{name}")
                        original.__code__ = code
                    continue
                if value is not _MISSING and _wraps_original(value, original):
                    # torch's own wrapper: accepted from now on, its code too. Keeping the original's code as
                    # the one to hold it to flagged the wrapper at the next check and wrote that code into
                    # it (ValueError: "manual_seed() requires a code object with 2 free vars"): every
                    # inductor job failed so, once torch._dynamo had wrapped torch.manual_seed.
                    members[name] = value
                    if isinstance(value, types.FunctionType):
                        self.codes[(label, name)] = value.__code__
                    else:
                        self.codes.pop((label, name), None)
                    continue
                found.append(f"the candidate replaced {label}.{name}")
                _put_back(owner, name, original)
            if isinstance(owner, type):
                for name in [n for n in current if n not in members]:
                    value = current[name]
                    if callable(value) or isinstance(value, (property, staticmethod, classmethod)):
                        found.append(f"the candidate replaced {label}.{name}")
                        _put_back(owner, name, _MISSING)
        now = _settings()
        changed = [f"{name} ({self.settings[name]!r} -> {now[name]!r})" for name in self.settings if now.get(name) != self.settings[name]]
        if changed:
            found.append("the candidate changed torch's global settings: " + ", ".join(changed))
            try:
                _restore_settings(self.settings)
            except Exception:  # a setting that cannot be put back still failed the run
                pass
        return found

    def check(self) -> None:
        found = self.violations()
        if found:
            raise CandidateFailure("; ".join(found))


_MISSING = object()


def _put_back(owner: Any, name: str, original: Any) -> None:
    try:
        if original is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
    except (AttributeError, TypeError):
        pass


# Recorded at import, before any candidate code can run in this process.
_LIBRARY_SNAPSHOT: dict[str, tuple[Any, dict[str, Any]]] = {}


def _record_library() -> None:
    own = sys.modules[__name__]
    harness: list[tuple[str, Any]] = [("benchmarks.candidate", own)]
    harness += [(f"benchmarks.candidate.{cls.__name__}", cls) for cls in (Integrity, _Context, _Executor, _Remote, TrialInputs)]
    harness += [("benchmarks.channel", channel_module), ("benchmarks.channel.Channel", Channel)]
    harness += [(f"benchmarks.timing.{cls.__name__}", cls)
                for cls in (timing.AdaptiveTimer, timing.CpuAdaptiveTimer, timing.CudaAdaptiveTimer)]
    for label, owner in [*_library_owners(), *harness]:
        _LIBRARY_SNAPSHOT[label] = (owner, _members(owner))


# ---------------------------------------------------------------- the payload


@dataclass(frozen=True)
class Job:
    workload_slug: str
    source_sha256: str | None
    reference_source: str
    reference_filename: str
    implementation: dict[str, Any]
    builtin: str | None
    candidate_source: str | None
    candidate_filename: str | None
    bindings: dict[str, int]
    device: str
    baseline: bool
    correctness_sets: int
    tolerance: float | None
    timing: timing.AdaptiveSettings
    provider: str | None
    label: str | None


def _take(payload: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], *, optional: bool = False, default: Any = None) -> Any:
    if key not in payload or payload[key] is None:
        if optional:
            return default
        raise PayloadError(f"payload: {key} is required")
    value = payload[key]
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise PayloadError(f"payload: {key} must be {_kind_name(kinds)}, not a boolean")
    if not isinstance(value, kinds):
        raise PayloadError(f"payload: {key} must be {_kind_name(kinds)}, not {type(value).__name__}")
    return value


def _kind_name(kinds: type | tuple[type, ...]) -> str:
    names = [k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,))]
    return " or ".join({"str": "a string", "int": "an integer", "float": "a number", "dict": "an object",
                        "bool": "a boolean"}.get(n, n) for n in names)


def parse_payload(payload: Any) -> Job:
    """The payload checked field by field; PayloadError names the key that is wrong."""
    if not isinstance(payload, Mapping):
        raise PayloadError(f"payload must be an object, not {type(payload).__name__}")
    implementation = dict(_take(payload, "implementation", dict))
    slug = implementation.get("slug")
    if not isinstance(slug, str) or not runners.SLUG_PATTERN.match(slug):
        raise PayloadError(f"payload: implementation.slug must match {runners.SLUG_PATTERN.pattern}, got {slug!r}")
    if implementation.get("role", "candidate") not in ROLES:
        raise PayloadError(f"payload: implementation.role must be one of {', '.join(ROLES)}")
    if implementation.get("source_availability", "none") not in AVAILABILITY:
        raise PayloadError(f"payload: implementation.source_availability must be one of {', '.join(AVAILABILITY)}")
    allowed = {"slug", "title", "role", "framework", "language", "licence", "source_url", "source_availability",
               "runtime_id", "install_recipe", "compile_mode"}
    unknown = sorted(set(implementation) - allowed)
    if unknown:
        raise PayloadError(f"payload: implementation has unknown keys: {', '.join(unknown)}")

    builtin = _take(payload, "builtin", str, optional=True)
    candidate_source = _take(payload, "candidate_source", str, optional=True)
    if builtin is not None and builtin not in IMPLEMENTATIONS:
        raise PayloadError(f"payload: builtin {builtin!r} is not one of {', '.join(IMPLEMENTATIONS)}")
    if (builtin is None) == (candidate_source is None):
        raise PayloadError("payload: exactly one of builtin and candidate_source must be set")

    bindings = dict(_take(payload, "bindings", dict, optional=True, default={}))
    for name, value in bindings.items():
        if type(value) is not int:
            raise PayloadError(f"payload: bindings.{name} must be an integer, got {value!r}")
    device = _take(payload, "device", str)
    if device not in DEVICES:
        raise PayloadError(f"payload: device must be one of {', '.join(DEVICES)}, got {device!r}")
    sets = _take(payload, "correctness_sets", int, optional=True, default=DEFAULT_CORRECTNESS_SETS)
    if not 1 <= sets <= MAX_CORRECTNESS_SETS:
        raise PayloadError(f"payload: correctness_sets must be between 1 and {MAX_CORRECTNESS_SETS}, got {sets}")
    tolerance = _take(payload, "tolerance", (int, float), optional=True)
    if tolerance is not None and not (math.isfinite(tolerance) and tolerance >= 0):
        raise PayloadError(f"payload: tolerance must be a finite number >= 0, got {tolerance!r}")
    timing_fields = dict(_take(payload, "timing", dict, optional=True, default={}))
    known = {"warmup", "min_trials", "max_trials", "target_half_width", "budget_s"}
    unknown = sorted(set(timing_fields) - known)
    if unknown:
        raise PayloadError(f"payload: timing has unknown keys: {', '.join(unknown)}")
    for key in ("warmup", "min_trials", "max_trials"):
        if key in timing_fields and type(timing_fields[key]) is not int:
            raise PayloadError(f"payload: timing.{key} must be an integer")
    for key in ("target_half_width", "budget_s"):
        if key in timing_fields and (isinstance(timing_fields[key], bool) or not isinstance(timing_fields[key], (int, float))):
            raise PayloadError(f"payload: timing.{key} must be a number")
    try:
        settings = timing.AdaptiveSettings(**timing_fields)
    except ValueError as exc:
        raise PayloadError(f"payload: {exc}") from None

    reference_source = _take(payload, "reference_source", str)
    source_sha256 = _take(payload, "source_sha256", str, optional=True)
    if source_sha256 is not None and source_sha256 != problems_module.source_sha256(reference_source):
        raise PayloadError("payload: source_sha256 is not the sha256 of reference_source")
    return Job(
        workload_slug=_take(payload, "workload_slug", str),
        source_sha256=source_sha256,
        reference_source=reference_source,
        reference_filename=_take(payload, "reference_filename", str),
        implementation=implementation,
        builtin=builtin,
        candidate_source=candidate_source,
        candidate_filename=_take(payload, "candidate_filename", str, optional=True, default="<candidate>"),
        bindings=bindings,
        device=device,
        baseline=bool(_take(payload, "baseline", bool, optional=True, default=False)),
        correctness_sets=sets,
        tolerance=float(tolerance) if tolerance is not None else None,
        timing=settings,
        provider=_take(payload, "provider", str, optional=True),
        label=_take(payload, "label", str, optional=True),
    )


# ---------------------------------------------------------------- outputs


def _storage_span(tensor: torch.Tensor) -> tuple[int, int]:
    """[start, end) byte addresses a strided tensor can touch."""
    if tensor.numel() == 0:
        return (0, 0)
    start = tensor.untyped_storage().data_ptr() + int(tensor.storage_offset()) * tensor.element_size()
    last = sum(int(size - 1) * int(stride) for size, stride in zip(tensor.shape, tensor.stride()) if size > 1)
    return (start, start + (last + 1) * tensor.element_size())


def _tensors(value: Any) -> list[torch.Tensor]:
    return [leaf for leaf in flatten_outputs(value) if isinstance(leaf, torch.Tensor)]


def _overlaps(tensor: torch.Tensor, others: Iterable[torch.Tensor]) -> bool:
    start, end = _storage_span(tensor)
    if start == end:
        return False
    for other in others:
        other_start, other_end = _storage_span(other)
        if other_start < end and start < other_end:
            return True
    return False


@dataclass(frozen=True)
class Leaf:
    """What one output value of the reference is: a tensor's dtype, shape and device, or a plain value."""

    is_tensor: bool
    dtype: torch.dtype | None = None
    shape: tuple[int, ...] = ()
    device: torch.device | None = None


def describe_leaves(output: Any) -> list[Leaf]:
    return [
        Leaf(True, leaf.dtype, tuple(leaf.shape), leaf.device) if isinstance(leaf, torch.Tensor) else Leaf(False)
        for leaf in flatten_outputs(output)
    ]


def check_output(output: Any, expected: list[Leaf], inputs: Any, harness: Iterable[torch.Tensor]) -> str | None:
    """Why this output cannot be accepted as computed (structure only; values are compared apart)."""
    leaves = flatten_outputs(output)
    if len(leaves) != len(expected):
        return f"returned {len(leaves)} values, the reference returns {len(expected)}"
    input_tensors = _tensors(inputs)
    harness_tensors = list(harness)
    for position, (leaf, want) in enumerate(zip(leaves, expected)):
        name = f"output {position}"
        if not want.is_tensor:
            continue
        if not isinstance(leaf, torch.Tensor):
            return f"{name} is a {type(leaf).__name__}, the reference returns a tensor"
        if type(leaf) is not torch.Tensor:
            return f"{name} is a tensor subclass ({type(leaf).__module__}.{type(leaf).__qualname__}), not a computed torch.Tensor"
        if _overlaps(leaf, input_tensors):
            return f"{name} aliases an input (shares its storage): return a new tensor, not an input or a view of one"
        if _overlaps(leaf, harness_tensors):
            return f"{name} shares storage with the harness's own tensors: the candidate read the harness's memory"
        if leaf.layout != torch.strided or leaf.is_meta:
            return f"{name} is not a computed dense tensor (layout {leaf.layout}, device {leaf.device})"
        if leaf.dtype != want.dtype:
            return f"{name} has dtype {leaf.dtype}, the reference {want.dtype} (the dtype must match exactly)"
        if tuple(leaf.shape) != want.shape:
            return f"{name} has shape {tuple(leaf.shape)}, the reference {want.shape}"
        if want.device is not None and leaf.device != want.device:
            return f"{name} is on {leaf.device}, the reference on {want.device}"
        if leaf.numel() > 1:
            start, end = _storage_span(leaf)
            shown = leaf.numel() * leaf.element_size()
            if end - start < shown or leaf.untyped_storage().nbytes() < shown:
                return (f"{name} is a lazy view, not a computed result: its storage holds fewer elements than it "
                        f"shows (strides {tuple(leaf.stride())}, e.g. expand or stride 0)")
    return None


def _fingerprint(value: Any) -> tuple[Any, ...]:
    """Equal for equal outputs; different outputs differ in it with overwhelming likelihood."""
    parts: list[Any] = []
    for leaf in flatten_outputs(value):
        if isinstance(leaf, torch.Tensor):
            flat = leaf.detach().reshape(-1)
            wide = flat.to(torch.float64) if flat.dtype != torch.bool else flat.to(torch.float64)
            weights = torch.arange(1, wide.numel() + 1, dtype=torch.float64, device=wide.device).remainder_(9973)
            parts.append((tuple(leaf.shape), str(leaf.dtype), wide.sum().item(), (wide * weights).sum().item()))
        else:
            parts.append(repr(leaf))
    return tuple(parts)


# ---------------------------------------------------------------- inputs


def _flat_inputs(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def degenerate_positions(first: list[Any], second: list[Any]) -> list[int]:
    """The top-level floating inputs (more than one element) that are constant, or the same for two seeds:
    a candidate could recognise them (do less work on uniform inputs, cache on their values), so every
    check and trial replaces them by seeded values (``freshen``)."""
    found = []
    for position, (a, b) in enumerate(zip(first, second)):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or not a.is_floating_point() or a.numel() < 2:
            continue
        flat = a.detach().reshape(-1)
        if bool((flat == flat[0]).all()) or (a.shape == b.shape and torch.equal(a, b)):
            found.append(position)
    return found


def freshen(inputs: list[Any], positions: Iterable[int], seed: int) -> list[Any]:
    """``inputs`` with the tensors at ``positions`` moved by seeded noise (a tenth of their mean magnitude,
    or of 1 for zeros): deterministic in the seed, so the reference process and an executor make the same
    values from it. Applied on the CPU, before the inputs move to the device."""
    for position in positions:
        tensor = inputs[position]
        generator = torch.Generator().manual_seed((seed * 1_000_003 + position) % (2**63 - 1))
        wide = tensor.detach().to("cpu", torch.float64)
        scale = wide.abs().mean().item() or 1.0
        noise = torch.randn(tuple(tensor.shape), generator=generator, dtype=torch.float64)
        inputs[position] = (wide + 0.1 * scale * noise).to(device=tensor.device, dtype=tensor.dtype)
    return inputs


def _seeded_inputs(module: types.ModuleType, seed: int, fresh: Iterable[int], device: torch.device) -> list[Any]:
    problems_module.seed_everything(seed)
    raw = _flat_inputs(module.get_inputs())
    return problems_module.move_to_device(freshen(raw, fresh, seed), device)


class TrialInputs:
    """Every timed trial's inputs, fresh and cheap: the workload's ``get_inputs`` under a seed (once per
    block of trials, or once per trial when an input cannot take noise), then every floating tensor times
    (1 + TRIAL_NOISE x a slice, at an offset drawn in secret per trial, of a noise pool made once). No
    two trials' inputs are equal, none is a fixed transform of another, and making one costs about what
    copying it does (a get_inputs per trial costs as much as the call for large inputs). The pools are
    public (a fixed seed); the same arithmetic on the same device gives every process the same values."""

    def __init__(self, module: types.ModuleType, fresh: list[int], device: torch.device):
        self.module = module
        self.fresh = fresh
        self.device = device
        self.base_seed: int | None = None
        self.base: list[Any] = []
        self.pools: dict[int, torch.Tensor] = {}

    def noisable(self) -> bool:
        """Whether every tensor input is floating (else each trial needs a get_inputs of its own)."""
        sample = _seeded_inputs(self.module, SEED, self.fresh, torch.device("cpu"))
        return all(t.is_floating_point() for t in _tensors(sample))

    def prepare(self, seed: int) -> None:
        """The block's base set (the workload's generator) and the factor pools, before any timed call."""
        if seed != self.base_seed:
            self.base = []
            self.base = _seeded_inputs(self.module, seed, self.fresh, self.device)
            self.base_seed = seed
        for position, value in enumerate(self.base):
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
                pool = self.pools.get(position)
                if pool is None or pool.numel() < value.numel() + TRIAL_OFFSETS or pool.dtype != value.dtype:
                    generator = torch.Generator().manual_seed(NOISE_POOL_SEED + position)
                    noise = torch.randn(value.numel() + TRIAL_OFFSETS, generator=generator).clamp_(-5, 5)
                    self.pools[position] = (noise * TRIAL_NOISE + 1).to(device=self.device, dtype=value.dtype)

    def make(self, seed: int, offset: int | None) -> list[Any]:
        """One trial's inputs: one multiplication per floating tensor (as cheap as the copy it replaces)."""
        self.prepare(seed)
        if offset is None:
            return detach_output(self.base)
        made = []
        for position, value in enumerate(self.base):
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
                made.append(value * self.pools[position][offset: offset + value.numel()].view(value.shape))
            else:
                made.append(detach_output(value))
        return made

    def writer(self, buffers: InputBuffers, seed: int) -> Callable[[int | None], list[Any]]:
        """``make(seed, offset)`` as a function of the offset, written into ``buffers`` (see InputBuffers), for
        the trials of one block. Everything but the multiplications is worked out here, once per block: a
        trial's Python between two calls disturbs a microsecond candidate's caches and branch history (making
        each trial's set element by element cost such a call 15% more)."""
        self.prepare(seed)
        base = self.base
        steps: list[tuple[Any, torch.Tensor | None, torch.Tensor | None, tuple[int, ...], tuple[int, ...], int]] = []
        for position, value in enumerate(base):
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
                pool = self.pools[position]
                dense = pool[: value.numel()].view(value.shape)  # the slice's layout, at every offset
                steps.append((value, pool, buffers.slot(position, value), tuple(value.shape), dense.stride(),
                              int(pool.storage_offset())))
            else:
                steps.append((value, None, None, (), (), 0))

        def write(offset: int | None) -> list[Any]:
            if offset is None:
                return detach_output(base)
            return [torch.mul(value, pool.as_strided(shape, strides, start + offset), out=buffer).detach()
                    if pool is not None and buffer is not None else detach_output(value)
                    for value, pool, buffer, shape, strides, start in steps]

        return write


class InputBuffers:
    """Where an executor writes every timed trial's inputs: a buffer per position, made once (and again only
    when a set's shape or dtype differs, or candidate code replaced a buffer's storage: looked at once per
    block). A block keeps every trial's output until the coordinator has picked the ones it checks; inputs
    allocated per trial would be kept with them, and each trial's inputs would land in memory not touched for
    a block (out of the cache), where before issue 28 one set's memory was freed and reused by the next.
    Values stay fresh every trial; the candidate gets a new tensor object each trial (``detach``), so what it
    does to that object (``set_``, ``resize_``) never reaches the buffer."""

    def __init__(self) -> None:
        self.tensors: dict[int, tuple[torch.Tensor, int, int]] = {}  # position: (buffer, data_ptr, nbytes)

    def slot(self, position: int, like: torch.Tensor) -> torch.Tensor:
        held = self.tensors.get(position)
        if held is not None:
            buffer, address, size = held
            storage = buffer.untyped_storage()
            if (buffer.shape == like.shape and buffer.dtype == like.dtype and buffer.device == like.device
                    and storage.data_ptr() == address and storage.nbytes() == size):
                return buffer
        buffer = torch.empty_like(like)
        storage = buffer.untyped_storage()
        self.tensors[position] = (buffer, storage.data_ptr(), storage.nbytes())
        return buffer

    def fill(self, values: list[Any]) -> list[Any]:
        """A set made ahead (a ``get_inputs`` per trial), copied in."""
        filled = []
        for position, value in enumerate(values):
            if isinstance(value, torch.Tensor) and value.numel():
                buffer = self.slot(position, value)
                buffer.copy_(value)
                filled.append(buffer.detach())
            else:
                filled.append(detach_output(value))
        return filled


# ---------------------------------------------------------------- outputs between processes


def pack_output(output: Any) -> tuple[list[dict[str, Any]], list[bytes]]:
    """An output's leaves as (headers, blobs): a tensor's dtype, shape and bytes (contiguous, on the CPU),
    any other value's repr."""
    headers: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for leaf in flatten_outputs(output):
        if isinstance(leaf, torch.Tensor):
            flat = leaf.detach().to("cpu").contiguous().reshape(-1)
            headers.append({"dtype": str(flat.dtype).removeprefix("torch."), "shape": list(leaf.shape)})
            blobs.append(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
        else:
            headers.append({"repr": repr(leaf)[:10_000]})
    return headers, blobs


def _dtype_named(name: Any) -> torch.dtype | None:
    value = getattr(torch, name, None) if isinstance(name, str) and name.isidentifier() else None
    return value if isinstance(value, torch.dtype) else None


def unpack_output(headers: Any, blobs: list[bytes], expected: list[Leaf]) -> list[Any]:
    """The leaves ``pack_output`` sent, checked against the reference's structure (its dtypes and shapes,
    exactly): ProtocolViolation for anything else, since the executor's own checks stop such an output."""
    if not isinstance(headers, list) or len(headers) != len(expected):
        raise ProtocolViolation(f"an output of {len(headers) if isinstance(headers, list) else 'no'} values where the reference has {len(expected)}")
    leaves: list[Any] = []
    tensors = iter(blobs)
    for position, (header, want) in enumerate(zip(headers, expected)):
        if not isinstance(header, dict):
            raise ProtocolViolation(f"output {position} is not described")
        if not want.is_tensor:
            if set(header) != {"repr"} or not isinstance(header["repr"], str):
                raise ProtocolViolation(f"output {position} is not the plain value the reference returns")
            leaves.append(header["repr"])
            continue
        dtype = _dtype_named(header.get("dtype"))
        shape = header.get("shape")
        if dtype is None or dtype != want.dtype or not isinstance(shape, list) or tuple(shape) != want.shape:
            raise ProtocolViolation(f"output {position} arrived as {header.get('dtype')!r} {shape!r}, not the "
                                    f"reference's {want.dtype} {want.shape}")
        blob = next(tensors, None)
        count = math.prod(want.shape)
        size = count * torch.empty((), dtype=dtype).element_size()
        if blob is None or len(blob) != size:
            raise ProtocolViolation(f"output {position} arrived with {len(blob) if blob is not None else 0:,} bytes, not {size:,}")
        if count == 0:
            leaves.append(torch.empty(want.shape, dtype=dtype))
        else:
            leaves.append(torch.frombuffer(bytearray(blob), dtype=torch.uint8).view(dtype).reshape(want.shape))
    if next(tensors, None) is not None:
        raise ProtocolViolation("an output with more tensors than it describes")
    return leaves


def split_outputs(described: Any, blobs: list[bytes], expected: list[Leaf], count: int) -> list[list[Any]]:
    """``count`` outputs sent in one message ({"outputs": [headers, ...]}, each output's blobs in turn: one per
    tensor leaf), each checked by unpack_output; ProtocolViolation for any other shape."""
    if not isinstance(described, list) or len(described) != count:
        raise ProtocolViolation(f"{len(described) if isinstance(described, list) else 'no'} outputs where {count} were asked")
    per_output = sum(1 for leaf in expected if leaf.is_tensor)
    if len(blobs) != per_output * count:
        raise ProtocolViolation(f"{len(blobs)} tensors for {count} outputs of {per_output} each")
    return [unpack_output(headers, blobs[n * per_output:(n + 1) * per_output], expected) for n, headers in enumerate(described)]


def _input_bytes(inputs: list[Any]) -> int:
    return sum(t.numel() * t.element_size() for t in _tensors(inputs))


def _output_bytes(expected: list[Leaf]) -> int:
    return sum(math.prod(leaf.shape) * torch.empty((), dtype=leaf.dtype).element_size()
               for leaf in expected if leaf.is_tensor and leaf.dtype is not None)


def _leaf_json(leaf: Leaf) -> dict[str, Any]:
    return {"tensor": leaf.is_tensor, "dtype": str(leaf.dtype).removeprefix("torch.") if leaf.dtype else None,
            "shape": list(leaf.shape), "device": str(leaf.device) if leaf.device is not None else None}


def _leaf_from_json(data: dict[str, Any]) -> Leaf:
    if not data["tensor"]:
        return Leaf(False)
    dtype = _dtype_named(data["dtype"])
    if dtype is None:
        raise ValueError(f"unknown dtype {data['dtype']!r}")
    return Leaf(True, dtype, tuple(int(n) for n in data["shape"]), torch.device(data["device"]))


def _constant_value(value: Any) -> float | None:
    """The one value every element of a (single-tensor) output has, else None."""
    tensors = _tensors(value)
    if len(tensors) != 1 or tensors[0].numel() < 2:
        return None
    tensor = tensors[0].detach()
    first = tensor.reshape(-1)[0]
    if bool((tensor == first).all()):
        return float(first.item())
    return None


# ---------------------------------------------------------------- the reference (its own process)


# The runners' outcome of measuring one implementation, with kept_trials set (the adaptive count).
Result = runners.Outcome


def _module_state(module: torch.nn.Module) -> tuple[Any, ...]:
    """What a module computes with besides its tensors: its class and that class's code, the callables
    set on the instance (a forward replaced there), and its plain attributes (a dim, an eps)."""
    klass = type(module)
    code = []
    for owner in klass.__mro__:
        if owner in (torch.nn.Module, object):
            break
        for name, value in sorted(vars(owner).items()):
            function = getattr(value, "__func__", value)
            if callable(function):
                code.append((owner.__qualname__, name, id(function), id(getattr(function, "__code__", None))))
    own: list[tuple[Any, ...]] = []
    for name, value in sorted(vars(module).items()):
        if name in ("_parameters", "_buffers", "_modules") or isinstance(value, torch.Tensor):
            continue
        if isinstance(value, (bool, int, float, str, type(None))) or (
                isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str, type(None))) for v in value)):
            own.append((name, value))
        elif isinstance(value, dict):
            own.append((name, "dict", len(value)))
        else:
            own.append((name, id(value), id(getattr(value, "__code__", None))))
    return (id(klass), tuple(code), tuple(own))


class _Context:
    """The problem made concrete once per job, in the reference process: the reference model, its
    output's structure, the inputs that need freshening, the tolerance."""

    def __init__(self, job: Job, device: torch.device):
        self.job = job
        self.device = device
        self.problem = Problem(slug=job.workload_slug, source_text=job.reference_source, filename=job.reference_filename)
        self.module: types.ModuleType | None = None
        self.instance: Instance | None = None
        self.reference_model: torch.nn.Module | None = None
        self.expected: list[Leaf] = []
        self.fresh: list[int] = []
        self.trial_inputs: TrialInputs | None = None
        self.weights_fingerprint: tuple[Any, ...] = ()
        self.atol = self.rtol = 0.0

    def prepare(self) -> None:
        """Load the problem, build the reference model, learn its output's structure from a probe set."""
        job = self.job
        phase = "importing the problem module"
        try:
            self.module = problems_module.load_module(self.problem.source_text, self.problem.code_filename, job.bindings)
            phase = "get_init_inputs/get_inputs"
            self.instance = problems_module.instantiate(self.problem, self.device, job.bindings, module=self.module)
            problems_module.seed_everything(SEED + 1)
            self.fresh = degenerate_positions(_flat_inputs(self.module.get_inputs()),
                                              _flat_inputs(self._raw_inputs(SEED + 2)))
            phase = "the reference run"
            with torch.no_grad():
                self.reference_model = self.instance.new_model()
                self.instance.dtype = problems_module.infer_dtype(self.instance.inputs, self.reference_model)
                probe = detach_output(self.reference_model(*self.instance.inputs))
            self.expected = describe_leaves(probe)
            probe = None
            self.instance.inputs = []  # every check draws its own sets
            self.weights_fingerprint = self._weights()
        except ProblemError as exc:
            raise _ProblemFailure(str(exc)) from None
        except (Exception, SystemExit) as exc:
            raise _ProblemFailure(describe_exception(phase, exc, self.problem.code_filename)) from None
        tolerance = job.tolerance if job.tolerance is not None else tolerance_for(self.instance.dtype)
        self.atol = self.rtol = tolerance

    def _raw_inputs(self, seed: int) -> list[Any]:
        assert self.module is not None
        problems_module.seed_everything(seed)
        return _flat_inputs(self.module.get_inputs())

    def _weights(self) -> tuple[Any, ...]:
        assert self.reference_model is not None
        model = self.reference_model
        hooks = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
        code = tuple(_module_state(m) for m in model.modules())
        return (hooks, code, _fingerprint([t for t in (*model.parameters(), *model.buffers())]))

    def inputs(self, seed: int, offset: int | None = None) -> list[Any]:
        assert self.module is not None
        if offset is None:
            return _seeded_inputs(self.module, seed, self.fresh, self.device)
        if self.trial_inputs is None:
            self.trial_inputs = TrialInputs(self.module, self.fresh, self.device)
        return self.trial_inputs.make(seed, offset)

    def reference(self, inputs: list[Any]) -> Any:
        """The reference output for inputs, from a model checked unchanged since it was built."""
        assert self.reference_model is not None
        if self._weights() != self.weights_fingerprint:
            raise CandidateFailure("the reference model was modified (its weights, buffers, hooks, code or attributes)")
        with torch.no_grad():
            output = detach_output(self.reference_model(*inputs))
        _synchronize(self.device)
        # Its own call may change its buffers (a BatchNorm in training mode, as KernelBench models run, updates
        # its running statistics): what must not change is the state as the reference left it.
        self.weights_fingerprint = self._weights()
        return output


class _ProblemFailure(Exception):
    """The reference problem itself cannot be run: every record fails with this reason."""


def _decoys(expected: list[Leaf], seed: int, device: torch.device) -> list[torch.Tensor]:
    """Tensors shaped like the reference's outputs, random from ``seed``: the same values in every process."""
    generator = torch.Generator().manual_seed(seed)
    found = []
    for leaf in expected:
        if not leaf.is_tensor or leaf.dtype is None:
            continue
        if leaf.dtype.is_floating_point or leaf.dtype.is_complex:
            values = torch.randn(leaf.shape, generator=generator, dtype=torch.float64)
        else:
            values = torch.randint(0, 2 if leaf.dtype == torch.bool else 97, leaf.shape, generator=generator)
        found.append(values.to(device=device, dtype=leaf.dtype))
    return found


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        with torch.cuda.device(device):
            timing._cuda_synchronize()


def _reference_role(job: Job) -> Callable[[Channel], None]:
    """The reference process: trusted code only (it never loads a candidate). It describes the machine and
    the problem, then computes the reference output for each seed asked, until told to stop."""

    def role(channel: Channel) -> None:
        channel.receive()  # {"op": "prepare"}
        try:
            if job.device == "cuda" and not torch.cuda.is_available():
                raise RuntimeError("the job asks for CUDA but torch.cuda.is_available() is false on this machine")
            device = torch.device(job.device)
            if device.type == "cuda":
                device = torch.device("cuda", torch.cuda.current_device())
            environment = capture_environment(device, provider=job.provider, label=job.label)
            timer = timing.make_adaptive_timer(device)
            protocol = timer.protocol(job.timing, None)
            if isinstance(timer, timing.CudaAdaptiveTimer):
                timer.release()
        except Exception as exc:
            channel.send({"error": f"{type(exc).__name__}: {exc}"})
            return
        context = _Context(job, device)
        try:
            context.prepare()
        except _ProblemFailure as failure:
            channel.send({"problem": str(failure), "environment": environment, "protocol": protocol})
            return
        assert context.instance is not None
        channel.send({
            "environment": environment, "protocol": protocol, "device": str(device),
            "expected": [_leaf_json(leaf) for leaf in context.expected], "fresh": context.fresh,
            "bindings": context.instance.bindings, "dtype": context.instance.dtype, "atol": context.atol,
            "input_bytes": _input_bytes(context.inputs(SEED)),
            "noisable": TrialInputs(context.module, context.fresh, device).noisable(),  # type: ignore[arg-type]
        })
        while True:
            message, _ = channel.receive()
            if message.get("op") != "reference":
                return
            try:
                if "trials" in message:  # the picked trials of a timed block: [[seed, offset], ...], one answer
                    described: list[list[dict[str, Any]]] = []
                    data: list[bytes] = []
                    for seed, offset in message["trials"]:
                        inputs = context.inputs(int(seed), None if offset is None else int(offset))
                        headers, blobs = pack_output(context.reference(inputs))
                        described.append(headers)
                        data += blobs
                    channel.send({"outputs": described}, data)
                    continue
                offset = message.get("offset")
                inputs = context.inputs(int(message["seed"]), None if offset is None else int(offset))
                headers, blobs = pack_output(context.reference(inputs))
                channel.send({"output": headers}, blobs)
            except CandidateFailure as failure:
                channel.send({"failed": str(failure)})
            except (Exception, SystemExit) as exc:
                channel.send({"failed": describe_exception("the reference run", exc, context.problem.code_filename)})

    return role


# ---------------------------------------------------------------- an executor (its own process per implementation)


# What the timed loop reads the time and waits with, checked after every trial (the full Integrity walk
# runs after each step and at trials the coordinator picks in secret): (owner, name, label).
_TIMED_LOOP_WATCH: list[tuple[Any, str, str]] = [
    (timing, "_perf_counter_ns", "benchmarks.timing._perf_counter_ns"),
    (timing, "_monotonic_ns", "benchmarks.timing._monotonic_ns"),
    (timing, "_cuda_synchronize", "benchmarks.timing._cuda_synchronize"),
    (timing, "_CudaEvent", "benchmarks.timing._CudaEvent"),
    (timing, "_event_record", "benchmarks.timing._event_record"),
    (timing, "_event_elapsed_time", "benchmarks.timing._event_elapsed_time"),
    (timing, "_event_synchronize", "benchmarks.timing._event_synchronize"),
    (timing.CpuAdaptiveTimer, "_trial", "benchmarks.timing.CpuAdaptiveTimer._trial"),
    (timing.CudaAdaptiveTimer, "_trial", "benchmarks.timing.CudaAdaptiveTimer._trial"),
    (timing.time, "perf_counter_ns", "time.perf_counter_ns"),
    (timing.time, "monotonic_ns", "time.monotonic_ns"),
    (torch.cuda, "synchronize", "torch.cuda.synchronize"),
    (torch.cuda.Event, "record", "torch.cuda.Event.record"),
    (torch.cuda.Event, "elapsed_time", "torch.cuda.Event.elapsed_time"),
]
_TIMED_LOOP_ORIGINALS = [(vars(owner).get(name), getattr(vars(owner).get(name), "__code__", None))
                         for owner, name, _ in _TIMED_LOOP_WATCH]


# The same watch as the timed loop reads it after every trial (_timed_loop_intact): each owner's namespace (a
# module's dict, a class's live mappingproxy) held, so a trial costs a dict lookup and an identity test per entry;
# _timed_loop_violations then names what changed and puts it back.
_TIMED_LOOP_FAST = tuple((vars(owner), name, original, code)
                         for (owner, name, _), (original, code) in zip(_TIMED_LOOP_WATCH, _TIMED_LOOP_ORIGINALS))


def _timed_loop_intact() -> bool:
    """Whether every watched name still holds its original (and a function its original code)."""
    for namespace, name, original, code in _TIMED_LOOP_FAST:
        value = namespace.get(name)
        if value is not original or (code is not None and value.__code__ is not code):
            return False
    return True


def _timed_loop_violations() -> list[str]:
    found = []
    for (owner, name, label), (original, code) in zip(_TIMED_LOOP_WATCH, _TIMED_LOOP_ORIGINALS):
        value = vars(owner).get(name)
        if value is not original or getattr(value, "__code__", None) is not code:
            found.append(f"the candidate replaced {label} during the timed loop")
            _put_back(owner, name, original)
            if code is not None and getattr(original, "__code__", None) is not code:
                original.__code__ = code
    return found


@dataclass(frozen=True)
class _Target:
    """One implementation a job measures: its record fields, a built-in's slug or None for the candidate,
    whether its first call is reported as compile time, and the file name its errors name."""

    fields: dict[str, Any]
    builtin: str | None
    reports_compile_time: bool
    filename: str


class _Executor:
    """An implementation's process: it runs what the coordinator asks, one message at a time, and answers.

    Until ``load`` it runs trusted code only (the coordinator calibrates its clock on it then); from
    ``load`` on, candidate code runs here, so nothing it sends is believed: its samples are held against
    the coordinator's clock and its outputs against the reference process's."""

    def __init__(self, job: Job, target: _Target, device: torch.device, expected: list[Leaf], fresh: list[int],
                 decoy_seed: int, channel: Channel):
        self.job = job
        self.target = target
        self.device = device
        self.expected = expected
        self.fresh = fresh
        self.channel = channel
        self.problem = Problem(slug=job.workload_slug, source_text=job.reference_source, filename=job.reference_filename)
        self.module = problems_module.load_module(self.problem.source_text, self.problem.code_filename, job.bindings)
        self.instance = problems_module.instantiate(self.problem, device, job.bindings, module=self.module)
        self.instance.inputs = []
        self.decoy = _decoys(expected, decoy_seed, device)
        _keep_freed_memory()
        self.trial_inputs = TrialInputs(self.module, fresh, device)
        self.input_buffers = InputBuffers()
        self.timer = timing.make_adaptive_timer(device)
        self.schedstat = _ThreadSchedstat()
        extra: list[tuple[str, Any]] = [("the problem module", self.module)]
        if isinstance(getattr(self.module, "Model", None), type):
            extra.append(("the problem's Model", self.module.Model))
        self.integrity = Integrity(_LIBRARY_SNAPSHOT, extra)
        self.model: Callable[..., Any] | None = None
        self.kept: list[tuple[Any, list[Any] | None]] = []
        self.reserved = 0  # trials whose outputs' memory reserve() has touched
        # Small CPU outputs: each tensor leaf's copies for the trials of a block (one tensor per leaf, a row per
        # trial, made and touched now; no output-shaped tensor exists outside a timed block).
        self.copies: list[torch.Tensor] = []
        if device.type == "cpu" and 0 < _output_bytes(expected) <= COPIED_OUTPUT_BYTES:
            self.copies = [torch.zeros((MAX_BLOCK, *leaf.shape), dtype=leaf.dtype)
                           for leaf in expected if leaf.is_tensor and leaf.dtype is not None]
        # What a block keeps of each copied output, made once here, not between two calls (a small allocation there
        # fragments the heap the candidate's outputs reuse); the rows' views are made per block (_Executor.block).
        self.copied = [(_Copied(index, [None] * len(expected)), None) for index in range(MAX_BLOCK)]
        # The output a single dense CPU tensor (KernelBench's usual ModelNew): checked after each trial by _quick_copy.
        single = expected[0] if len(expected) == 1 else None
        self.quick: tuple[torch.dtype, torch.Size, int] | None = None
        if self.copies and single is not None and single.is_tensor and single.dtype is not None and (
                single.device is None or single.device.type == "cpu"):
            self.quick = (single.dtype, torch.Size(single.shape), _output_bytes(expected))

    def serve(self) -> None:
        while True:
            message, _ = self.channel.receive()
            op = message.get("op")
            if op == "exit":
                return
            try:
                if op == "check":
                    self.check(int(message["seed"]), str(message["phase"]))
                elif op == "block":
                    self.block([int(seed) for seed in message["seeds"]], str(message["mode"]), str(message["phase"]))
                elif op == "ship":
                    self.ship([int(index) for index in message["indices"]], [str(phase) for phase in message["phases"]])
                elif op == "reserve":
                    self.reserve(int(message["trials"]))
                    self.channel.send({"reserved": True})
                elif op == "load":
                    self.load()
                    self.channel.send({"loaded": True})
                elif op == "integrity":
                    self.integrity.check()
                    self.channel.send({"intact": True})
                else:
                    return
            except CandidateFailure as failure:
                self.channel.send({"failed": str(failure)})
                return
            except (Exception, SystemExit) as exc:
                self.channel.send({"failed": describe_exception(f"ModelNew.forward on {message.get('phase')}", exc, self.target.filename)})
                return

    def load(self) -> None:
        if self.target.builtin is not None:
            implementation = IMPLEMENTATIONS[self.target.builtin]
            try:
                self.model = implementation.build(self.instance.new_model())
            except (Exception, SystemExit) as exc:
                raise CandidateFailure(describe_exception(f"building {implementation.slug}", exc, self.problem.code_filename)) from None
        else:
            self.model = self._build_candidate()
        self.integrity.check()

    def _build_candidate(self) -> Callable[..., Any]:
        job = self.job
        assert job.candidate_source is not None
        filename = self.target.filename
        try:
            module = problems_module.load_module(job.candidate_source, filename)
        except (Exception, SystemExit) as exc:
            raise CandidateFailure(describe_exception("importing the candidate module", exc, filename)) from None
        model_class = getattr(module, "ModelNew", None)
        if model_class is None:
            raise CandidateFailure("the candidate module defines no ModelNew class")
        if not callable(model_class):
            raise CandidateFailure("the candidate's ModelNew is not a class")
        init_inputs = detach_output(list(self.instance.init_inputs))
        try:
            problems_module.seed_everything(SEED)  # the same seed as the reference model's weights
            model = model_class(*init_inputs)
            if isinstance(model, torch.nn.Module):
                model = model.to(self.device)
        except (Exception, SystemExit) as exc:
            raise CandidateFailure(describe_exception("ModelNew.__init__", exc, filename)) from None
        if not callable(model):
            raise CandidateFailure("the candidate's ModelNew instance is not callable")
        return model

    def call_for(self, mode: str) -> Callable[[Any], Any]:
        if mode == "noop":
            if self.model is not None:
                raise CandidateFailure("the harness's calibration runs before the candidate is loaded")
            return _noop
        if self.model is None:
            raise CandidateFailure("the implementation was never loaded")
        return _caller(self.model)

    def check(self, seed: int, phase: str) -> None:
        """One call on the inputs of ``seed``, its output sent whole."""
        self.kept = []
        call = self.call_for("check")
        inputs = _seeded_inputs(self.module, seed, self.fresh, self.device)
        reference_output = self.decoy  # noqa: F841  (the decoy, where a reader of the harness's frames looks)
        try:
            with torch.no_grad():
                output = call(inputs)
            _synchronize(self.device)
        except CandidateFailure:
            raise
        except (Exception, SystemExit) as exc:
            raise CandidateFailure(describe_exception(f"ModelNew.forward on {phase}", exc, self.target.filename)) from None
        self.integrity.check()
        self.send_output(output, inputs, phase)

    def block(self, seeds: list[int], mode: str, phase: str) -> None:
        """Timed trials back to back, one per seed (fresh inputs each, made outside the timed region): their
        samples and tails are the answer; a timed block's outputs (small CPU ones as copies, checked when
        returned: copy_output) are kept until the next request, for the coordinator to ask for the ones it picks."""
        self.kept = []
        call = self.call_for(mode)
        samples: list[float] = []
        tails: list[float | None] = []
        waits: list[float | None] = []
        reference_output = self.decoy  # noqa: F841
        # Every trial's inputs first, then the calls: the coordinator's second clock times the calls alone (and a
        # copy of each set made just before its call), not the workload's generator, whose cost is large and as
        # variable as the machine's load.
        # The secret noise offsets arrive only with "go": while it makes the base set, nothing here knows
        # what any trial's inputs will be.
        write: Callable[[int | None], list[Any]] | None = None
        prepared: list[list[Any]] = []
        if len(set(seeds)) == 1:
            write = self.trial_inputs.writer(self.input_buffers, seeds[0])
        else:
            prepared = [self.trial_inputs.make(seed, None) for seed in seeds]
        # The copies' rows as views, made now and not between two calls; only while the block runs (outside a timed
        # block no output-shaped tensor but the decoy exists here, for a reader of this process's memory to find).
        rows = [[copy[index] for index in range(len(seeds))] for copy in self.copies] if mode in ("time", "noop") else []
        _synchronize(self.device)
        self.channel.send({"ready": len(seeds)})
        go, _ = self.channel.receive()
        if go.get("op") != "go":
            return
        offsets = [None if o is None else int(o) for o in go["offsets"]]
        # No collection mid-block (as timeit): a candidate that keeps many objects would otherwise make the
        # harness's untimed moments slow, and its honest samples look short beside the second clock.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self.timed_calls(offsets, write, prepared, call, samples, tails, waits, mode, phase, rows)
        finally:
            del rows
            if collecting:
                gc.enable()
        self.channel.send({"samples": samples, "tails": tails, "waits": waits})

    def timed_calls(self, offsets: list[int | None], write: Callable[[int | None], list[Any]] | None,
                    prepared: list[list[Any]], call: Callable[[Any], Any], samples: list[float],
                    tails: list[float | None], waits: list[float | None], mode: str, phase: str,
                    rows: list[list[torch.Tensor]]) -> None:
        copying = bool(self.copies) and mode in ("time", "noop") and len(offsets) <= MAX_BLOCK
        harness = [*self.decoy, *self.copies]
        # A do-nothing trial checks and copies an output of the reference's structure as a timed one does its
        # output, so the calibration counts that work as the harness's own (the candidate is not loaded then).
        stand_in: Any = [torch.zeros(leaf.shape, dtype=leaf.dtype) if leaf.is_tensor and leaf.dtype is not None else None
                         for leaf in self.expected] if copying and mode == "noop" else None
        if stand_in is not None and self.quick is not None:
            stand_in = stand_in[0]  # a single tensor, as a ModelNew returns it
        # Between two calls only what must be per trial runs: a microsecond candidate's next call pays for every line
        # of Python here in its caches (the full check_output and an attribute walk of the watched clocks after each
        # trial cost an honest 5 us call 10-25% of its mean). What does not change in a block is worked out now.
        quick = self.quick_check() if copying and write is not None else None
        trial_call = self.timer._trial  # bound once: a class attribute replaced mid-block is not called (and is caught)
        copied_entries = self.copied
        keeping = mode == "time"
        kept = self.kept
        # Each trial's run-queue wait: from the end of the one before (the first: from "go") to the end of its
        # own, read after the call and its checks (a read just before the call would cost the call its caches).
        wait_ns = self.schedstat.wait_ns
        waited = wait_ns()
        index = 0
        with torch.no_grad():
            for index, offset in enumerate(offsets):
                # Made just before the call (one multiplication, or a copy of a set made ahead), as every trial's
                # inputs always were: fresh values, in memory warm in the cache (InputBuffers), outside the timed region.
                if write is not None:
                    inputs = write(offset)
                else:
                    inputs = self.input_buffers.fill(prepared[index])
                    prepared[index] = []
                _set_grad_enabled(False)  # whatever the last call left (a context manager per trial costs 1.4 us)
                try:
                    sample, tail, output = trial_call(call, inputs)
                except CandidateFailure:
                    raise
                except (Exception, SystemExit) as exc:
                    raise CandidateFailure(describe_exception(f"ModelNew.forward while timed ({phase}, trial {index} of the block)",
                                                              exc, self.target.filename)) from None
                if not _timed_loop_intact():
                    raise CandidateFailure("; ".join(_timed_loop_violations()) or "the candidate replaced the harness's clock "
                                           "during the timed loop")
                samples.append(sample)
                tails.append(tail)
                if copying:
                    # Checked now (as a picked output is) and copied, so the candidate's own memory is freed for its next
                    # call, as before issue 28: keeping every small output for the picks made each call allocate fresh
                    # memory, 12% of an honest 5 us call. What is shipped if picked is the copy of what it returned then.
                    checked = output if stand_in is None else stand_in
                    if quick is not None and _quick_copy(checked, inputs, quick, rows, index):
                        if keeping:
                            kept.append(copied_entries[index])
                    else:
                        copied = self.copy_output(checked if stand_in is None or self.quick is None else [checked],
                                                  inputs, harness, index, phase)
                        if keeping:
                            kept.append((copied, None))
                        del copied
                    del checked
                elif keeping:
                    kept.append((output, inputs))
                del output, inputs
                now = wait_ns()
                waits.append(None if now is None or waited is None else (now - waited) / 1e6)
                waited = now
        if quick is not None:
            changed = quick.changed()
            if changed:
                raise CandidateFailure(f"{changed} during the timed loop ({phase}, by trial {index} of the block)")

    def quick_check(self) -> _QuickCheck | None:
        """What _quick_copy needs for this block, or None where each trial takes copy_output's full check."""
        if self.quick is None:
            return None
        inputs = [(position, buffer) for position, (buffer, _, _) in sorted(self.input_buffers.tensors.items())]
        if any(isinstance(value, torch.Tensor) and value.numel() and position not in self.input_buffers.tensors
               for position, value in enumerate(self.trial_inputs.base)):
            return None  # an input made anew each trial (not in a buffer): its memory is not known ahead
        return _QuickCheck(self.quick, inputs, [*self.decoy, *self.copies])

    def copy_output(self, output: Any, inputs: list[Any], harness: list[torch.Tensor], index: int, phase: str) -> _Copied:
        """A timed trial's output checked (check_output: its structure, no aliasing of the inputs or the harness's
        tensors, no lazy view) and its tensors copied into row ``index`` of the block's copies."""
        problem = check_output(output, self.expected, inputs, harness)
        if problem:
            raise CandidateFailure(f"{problem} ({phase}, trial {index} of the block)")
        copies = iter(self.copies)
        others: list[Any] = []
        for leaf, want in zip(flatten_outputs(output), self.expected):
            if want.is_tensor and want.dtype is not None:
                next(copies)[index].copy_(leaf)
                others.append(None)
            else:
                others.append(leaf)
        return _Copied(index, others)

    def copied_output(self, copied: _Copied) -> list[Any]:
        """The leaves ``copy_output`` kept: each tensor a view of its row (made only now: a view kept per trial
        would be a small allocation between the candidate's calls, and those fragment the heap its outputs
        reuse: an honest microsecond candidate's calls then faulted new pages in again)."""
        copies = iter(self.copies)
        return [next(copies)[copied.index] if want.is_tensor and want.dtype is not None else other
                for other, want in zip(copied.others, self.expected)]

    def reserve(self, trials: int) -> None:
        """The heap a timed block's kept outputs will take, grown and touched before the first block (untimed):
        a block keeps every output until the coordinator has picked, so the first block's calls would grow
        the heap and fault its pages in inside their samples, where before issue 28 each trial's output
        reused the last one's freed memory (an honest 5 us candidate's first block took 12 us a call, 3 new
        pages a trial; a 0.7 ms one's 19% more than its later blocks). What is reserved: the outputs of
        ``trials`` trials and as much again twice over for what a call allocates besides (its temporaries,
        the tensors' own records, the allocator's alignment), that extra at most RESERVE_EXTRA_BYTES, all at
        most RESERVE_MAX_BYTES, in chunks the size of an output (the holes a small output fills first), one
        byte a page written. Freed, glibc keeps them (_keep_freed_memory) and the outputs take them; each
        later block reuses what the one before freed. CPU outputs too large to copy only (copied ones leave
        the candidate's memory free for its next call); CUDA's caching allocator keeps its own."""
        if self.device.type != "cpu" or trials <= self.reserved or self.copies:
            return  # copied outputs free the candidate's memory every trial
        size = max(1, _output_bytes(self.expected))
        total = trials * size + min(RESERVE_EXTRA_FACTOR * trials * size, RESERVE_EXTRA_BYTES)
        held: list[torch.Tensor] = []
        for _ in range(max(1, min(total, RESERVE_MAX_BYTES) // size)):
            chunk = torch.empty(size, dtype=torch.uint8)
            chunk[::4096].fill_(0)
            held.append(chunk)
        del held
        self.reserved = trials

    def ship(self, indices: list[int], phases: list[str]) -> None:
        """The picked outputs of the last timed block, in one message (one wake-up per block, not per pick)."""
        if len(indices) != len(phases):
            raise CandidateFailure("no timed output to check")
        described: list[list[dict[str, Any]]] = []
        data: list[bytes] = []
        for index, phase in zip(indices, phases):
            if not 0 <= index < len(self.kept):
                raise CandidateFailure("no timed output to check")
            output, inputs = self.kept[index]
            if inputs is None:  # copied by the harness (never what a candidate returned: that is kept with its inputs)
                output, inputs = self.copied_output(output), []
            headers, blobs = self.packed_output(output, inputs, phase)
            described.append(headers)
            data += blobs
        self.channel.send({"outputs": described}, data)

    def send_output(self, output: Any, inputs: list[Any], phase: str) -> None:
        headers, blobs = self.packed_output(output, inputs, phase)
        self.channel.send({"output": headers}, blobs)

    def packed_output(self, output: Any, inputs: list[Any], phase: str) -> tuple[list[dict[str, Any]], list[bytes]]:
        problem = check_output(output, self.expected, inputs, self.decoy)
        if problem:
            raise CandidateFailure(f"{problem} ({phase})")
        return pack_output(output)


_set_grad_enabled = torch._C._set_grad_enabled  # bound at import, before any candidate code runs


class _QuickCheck:
    """check_output for one block's single-tensor outputs in a few attribute reads: an exact torch.Tensor, dense,
    contiguous, on the CPU, of the reference's dtype and shape, with storage for all it shows, whose bytes overlap
    neither the trial's inputs nor the harness's tensors (the decoy, the copies). Their memory is taken before the
    block's first call: each trial's inputs must still start where their buffers did (a call that resized an
    input's storage moved it: that trial and the block's later ones take the full check), and the buffers' layout
    and the harness tensors' memory and layout (reachable only by reading the harness's memory) are held against
    the same after the block's last call (``changed``). Any output that does not pass goes through copy_output's
    full check, which gives the reason."""

    def __init__(self, quick: tuple[torch.dtype, torch.Size, int], inputs: list[tuple[int, torch.Tensor]],
                 harness: list[torch.Tensor]):
        self.dtype, self.shape, self.nbytes = quick
        self.inputs = [(position, buffer.data_ptr()) for position, buffer in inputs if buffer.numel()]
        self.buffers = [(buffer, _layout(buffer)) for _, buffer in inputs]
        self.harness = [(tensor, _memory(tensor), _layout(tensor)) for tensor in harness]
        spans = [_storage_span(tensor) for tensor in (*(buffer for _, buffer in inputs), *harness)]
        self.spans = [span for span in spans if span[0] != span[1]]

    def changed(self) -> str | None:
        """What a call changed of what the block's checks rested on, or None."""
        if any(_layout(buffer) != layout for buffer, layout in self.buffers):
            return "the candidate changed the layout of the harness's input buffers (it read the harness's memory)"
        if any(_memory(tensor) != memory or _layout(tensor) != layout for tensor, memory, layout in self.harness):
            return "the candidate changed the harness's own tensors (it read the harness's memory)"
        return None


def _layout(tensor: torch.Tensor) -> tuple[Any, ...]:
    return (int(tensor.storage_offset()), tuple(tensor.shape), tuple(tensor.stride()))


def _memory(tensor: torch.Tensor) -> tuple[int, int]:
    storage = tensor.untyped_storage()
    return (storage.data_ptr(), storage.nbytes())


def _quick_copy(output: Any, inputs: list[Any], check: _QuickCheck, rows: list[list[torch.Tensor]], index: int) -> bool:
    """The output checked as check_output would pass it and copied into row ``index``; False (nothing copied)
    for any output this cannot vouch for, which then takes the full check."""
    if not (type(output) is torch.Tensor and output.layout is torch.strided and output.is_cpu
            and output.dtype is check.dtype and output.shape == check.shape and output.is_contiguous()):
        return False
    nbytes = check.nbytes
    if output.untyped_storage().nbytes() < nbytes:
        return False
    for position, start in check.inputs:
        if inputs[position].data_ptr() != start:
            return False
    start = output.data_ptr()
    end = start + nbytes
    for low, high in check.spans:
        if low < end and start < high:
            return False
    rows[0][index].copy_(output)
    return True


@dataclass(frozen=True)
class _Copied:
    """A timed output copied by _Executor.copy_output: its row in the block's copies and its non-tensor leaves
    (None where a tensor leaf is)."""

    index: int
    others: list[Any]


def _keep_freed_memory() -> None:
    """glibc keeps what a block freed for the next (no trimming, no mmap per large tensor): a block keeps its
    trials' outputs and inputs until the next, and memory handed back to the kernel between blocks would be
    faulted in again by the next block's input copies, outside the samples, where the second clock sees it
    as the candidate's (an honest 1 ms candidate ran 50-60% over)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def _noop(inputs: Any) -> None:
    return None


def _caller(model: Callable[..., Any]) -> Callable[[Any], Any]:
    def call(inputs: Any) -> Any:
        return model(*inputs)

    return call


def _executor_role(job: Job, target: _Target, device: torch.device, expected: list[Leaf], fresh: list[int],
                   decoy_seed: int) -> Callable[[Channel], None]:
    def role(channel: Channel) -> None:
        try:
            executor = _Executor(job, target, device, expected, fresh, decoy_seed, channel)
        except (Exception, SystemExit) as exc:
            channel.send({"failed": describe_exception("setting up the implementation's process", exc, job.reference_filename)})
            return
        executor.serve()
        if isinstance(executor.timer, timing.CudaAdaptiveTimer):
            executor.timer.release()

    return role


# ---------------------------------------------------------------- the coordinator (trusted; holds the secrets)


def clock_disagreement(unexplained_per_trial_ms: list[float], median_sample_ms: float,
                       harness_ms_per_trial: float = 0.0) -> tuple[float, float, str | None]:
    """The timed samples against the second clock: (unexplained ms per trial, tolerance ms, why they disagree
    or None). For each block of trials, the second clock's time (the executor's CPU time on the CPU, the
    coordinator's wall clock on a GPU) minus the samples and minus what the harness's own work costs (a
    do-nothing block, timed the same way before any candidate code ran) is time the samples do not explain;
    its lower quartile over the blocks (a cheat's shortfall is in every block; a loaded machine's hiccups
    are in some) is allowed up to max(CLOCK_TOLERANCE_MS, CLOCK_TOLERANCE_FRACTION x median sample,
    HARNESS_TOLERANCE_FRACTION x the harness's own time per trial): the harness's own work varies too."""
    tolerance = max(CLOCK_TOLERANCE_MS, CLOCK_TOLERANCE_FRACTION * median_sample_ms,
                    HARNESS_TOLERANCE_FRACTION * harness_ms_per_trial)
    ordered = sorted(unexplained_per_trial_ms)
    unexplained = ordered[(len(ordered) - 1) // 4] if ordered else None
    if unexplained is None:
        return 0.0, tolerance, None
    if unexplained > tolerance:
        return unexplained, tolerance, (
            f"the timed samples disagree with the harness's own clock: each trial took {unexplained:.3f} ms more than "
            f"its sample ({median_sample_ms:.3f} ms, median) and the harness's own work explain (tolerance "
            f"{tolerance:.3f} ms): the clock was tampered with or work ran outside the timed region"
        )
    return unexplained, tolerance, None


def preempted(sample_ms: float, wait_ms: float, block_median_ms: float) -> bool:
    """A trial that waited for the CPU for at least timing.PREEMPTED_EXPLAINS of how much slower than its block's median
    it was: the machine's time, not the call's (its wait is the kernel's, verified per block: _Remote.verified_waits)."""
    excess = sample_ms - block_median_ms
    # Only an outlier (over twice the median): a trial that waited while its inputs were made, and then ran as
    # the others did, is kept, so excusing waits never trims the ordinary spread above the median.
    return wait_ms > 0 and excess > block_median_ms and wait_ms >= timing.PREEMPTED_EXPLAINS * excess


def lead_beyond_cap(block_samples: list[float], leads: int) -> float:
    """The part of a block's `leads` first samples that the second clock does not accept as explained: beyond
    LEAD_FACTOR x the block's slowest other sample for each + LEAD_WAKE_MS. 0.0 without leads (the first block is
    passed 0: its first call may honestly be far slower, lazy compilation) or without other samples."""
    rest = block_samples[leads:]
    if leads <= 0 or not rest:
        return 0.0
    return max(0.0, sum(block_samples[:leads]) - (leads * LEAD_FACTOR * max(rest) + LEAD_WAKE_MS))


def side_stream_problem(tails_ms: list[float], noop_tail_ms: float | None, median_sample_ms: float) -> str | None:
    """CUDA: the median untimed tail beyond a do-nothing call's is work left on a stream not joined to the
    timed one."""
    tail = _median(tails_ms)
    if tail is None:
        return None
    baseline = noop_tail_ms or 0.0
    if tail - baseline > max(SIDE_STREAM_TAIL_MS, SIDE_STREAM_TAIL_FRACTION * median_sample_ms):
        return (
            f"work continued on the device after the timed stream's end event (median {tail - baseline:.3f} ms "
            f"per trial, against {median_sample_ms:.3f} ms timed): it ran on a side stream not joined to the "
            f"current stream, so it would not have been counted"
        )
    return None


def _raise_failed(reply: dict[str, Any]) -> None:
    """An executor's own verdict that the implementation failed: believed (failing is never a cheat's gain)."""
    if set(reply) == {"failed"} and isinstance(reply["failed"], str):
        raise CandidateFailure(" ".join(reply["failed"].split())[:2000] or "the implementation failed")


@dataclass(frozen=True)
class _Calibration:
    """The harness's own cost of a block of trials on the second clock: ``fixed`` + ``per_trial`` x trials
    (ms); ``by_cpu``: the second clock is the executor's CPU time; ``tail``: a do-nothing call's CUDA tail."""

    by_cpu: bool
    fixed: float
    per_trial: float
    tail: float | None
    ready_fixed: float = 0.0  # the same for making a block's inputs, before its calls
    ready_per_trial: float = 0.0


def block_size(sample_ms: float, output_bytes: int) -> int:
    """Trials per request: enough for BLOCK_TARGET_MS of calls (fewer messages, fewer wake-ups), at most
    MAX_BLOCK, and no more outputs kept for checking than KEPT_OUTPUT_BYTES."""
    by_time = MAX_BLOCK if sample_ms <= 0 else math.ceil(BLOCK_TARGET_MS / sample_ms)
    by_memory = max(1, KEPT_OUTPUT_BYTES // max(1, output_bytes))
    return max(1, min(MAX_BLOCK, by_time, by_memory))


def _secret_chance(probability: float) -> bool:
    """True with ``probability``, from the OS's randomness: no generator state exists in any process that
    a candidate could copy to predict it."""
    return secrets.randbelow(1_000_000) < probability * 1_000_000


def _fresh_seed() -> int:
    return secrets.randbits(62) + 3_000_000


def _is_duration(value: Any) -> bool:
    """A finite, non-negative number of ms as JSON decodes one (a bool is not one, though Python says it is
    an int)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


def _read_schedstat(fd: int | None) -> tuple[int, int, int] | None:
    """A schedstat file's three fields, read again from an fd kept open: (CPU ns, run-queue wait ns,
    timeslices); None where the file is not there or does not parse. The executor reads its own thread's,
    the coordinator the executor's main thread's: the same format, so one reader (the two must agree for
    the wait check to hold)."""
    if fd is None:
        return None
    try:
        run, wait, slices = os.pread(fd, 128, 0).split()[:3]
        return int(run), int(wait), int(slices)
    except (OSError, ValueError):
        return None


class _ThreadSchedstat:
    """The calling thread's run-queue wait as the kernel counts it (/proc/thread-self/schedstat's second field,
    ns), opened once before any candidate code runs; None where /proc does not give it."""

    def __init__(self) -> None:
        try:
            self.fd: int | None = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            self.fd = None

    def wait_ns(self) -> int | None:
        stat = _read_schedstat(self.fd)
        return None if stat is None else stat[1]


class _CpuAccount:
    """The kernel's account of the executor's CPU time, which no code in it can change: its main thread's in
    ns (/proc/PID/schedstat, read before and after each request: the thread that runs every call), and
    the whole process's, every thread it ever had included (/proc/PID/stat, in clock ticks). Either is
    None where /proc does not give it."""

    def __init__(self, pid: int):
        try:
            self.fd: int | None = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY)
        except OSError:
            self.fd = None
        self.stat_path = f"/proc/{pid}/stat"
        self.tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10.0
        if self.thread_ms() is None:
            self.close()

    def thread_ms(self) -> float | None:
        stat = self.schedstat()
        return None if stat is None else stat[0]

    def schedstat(self) -> tuple[float, float, int] | None:
        """The main thread's (CPU ms, run-queue wait ms, timeslices), or None."""
        stat = _read_schedstat(self.fd)
        return None if stat is None else (stat[0] / 1e6, stat[1] / 1e6, stat[2])

    def process_ms(self) -> float | None:
        try:
            with open(self.stat_path, "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) * self.tick_ms  # utime + stime
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _Reference:
    """The coordinator's side of the reference process."""

    def __init__(self, child: Child, expected: list[Leaf]):
        self.child = child
        self.expected = expected
        self.limit = _output_bytes(expected)
        self.pending: int | None = None  # outputs asked for and not yet read

    def request(self, trials: list[tuple[int, int | None]]) -> None:
        """Ask for the reference outputs of ``trials`` (seed, offset; offset None for a check's set), without
        waiting: the reference process computes them while the executor answers its own request. Every
        request is answered by ``answer`` (or ``drop``) before the next."""
        if self.pending is not None:
            raise RuntimeError("a reference request is still unanswered")
        message: dict[str, Any] = ({"op": "reference", "seed": trials[0][0], "offset": trials[0][1]} if len(trials) == 1
                                   else {"op": "reference", "trials": [list(trial) for trial in trials]})
        try:
            self.child.channel.send(message)
        except (ChannelClosed, OSError) as exc:
            raise CandidateFailure(f"the reference process stopped answering while the candidate ran ({exc}; "
                                   f"{self.child.describe_end()})") from None
        self.pending = len(trials)

    def answer(self) -> list[list[Any]]:
        """The outputs the last request asked for, in its order."""
        count, self.pending = self.pending, None
        if count is None:
            raise RuntimeError("no reference request to answer")
        try:
            reply, blobs = self.child.channel.receive(self.limit * count, len(self.expected) * count)
        except (ChannelClosed, ProtocolViolation) as exc:
            raise CandidateFailure(f"the reference process stopped answering while the candidate ran ({exc}; "
                                   f"{self.child.describe_end()})") from None
        if "failed" in reply:
            raise CandidateFailure(str(reply["failed"]))
        if count == 1:
            return [unpack_output(reply.get("output"), blobs, self.expected)]
        return split_outputs(reply.get("outputs"), blobs, self.expected, count)

    def drop(self) -> None:
        """Read and drop the answer to a pending request (the executor failed meanwhile: its reason stands)."""
        if self.pending is not None:
            try:
                self.answer()
            except CandidateFailure:
                pass


class _Remote:
    """One implementation measured from the coordinator: every check, then timing, each step a message
    to its executor process. The samples it keeps are the executor's, each held against this process's
    clock; every output it compares came from the executor and is compared with the reference process's."""

    def __init__(self, job: Job, executor: Child, reference: _Reference, expected: list[Leaf], atol: float,
                 decoy_seed: int, filename: str, input_bytes: int = 0, noisable: bool = True):
        self.job = job
        self.executor = executor
        self.reference = reference
        self.expected = expected
        self.atol = self.rtol = atol
        self.decoy = _decoys(expected, decoy_seed, torch.device("cpu"))
        self.filename = filename
        self.output_limit = _output_bytes(expected)
        self.input_bytes = input_bytes
        self.noisable = noisable
        self.checks: dict[str, Any] = {"correctness_sets": [], "timed_outputs": []}
        self.correctness: dict[str, Any] | None = None
        self.seen: list[tuple[str, tuple[Any, ...], tuple[Any, ...]]] = []  # (set, candidate fp, reference fp)
        self.step = "starting"
        self.cpu = _CpuAccount(executor.pid)
        self.observed_cpu_ms = 0.0  # the executor's main-thread CPU time while it answered requests
        self.last_ready_cpu_ms = 0.0  # of the last block, while it made its inputs

    # -- messages --

    def ask(self, message: dict[str, Any], answer: str, blobs: bool = False, outputs: int = 1) -> tuple[dict[str, Any], list[bytes]]:
        """Send a request; the answer, which must be exactly ``{answer: ...}`` (or ``{"failed": reason}``), with
        blobs for at most ``outputs`` outputs when ``blobs``."""
        channel = self.executor.channel
        before = self.cpu.thread_ms()
        channel.send(message)
        reply, data = channel.receive(self.output_limit * outputs if blobs else 0, len(self.expected) * outputs if blobs else 0)
        after = self.cpu.thread_ms()
        if before is not None and after is not None:
            self.observed_cpu_ms += after - before
        _raise_failed(reply)
        if set(reply) != {answer}:
            raise ProtocolViolation(f"an unexpected message ({', '.join(sorted(map(str, reply))) or 'empty'}) "
                                    f"where the harness waited for {answer!r}")
        return reply, data

    def seeds_and_offsets(self, count: int) -> tuple[list[int], list[int | None]]:
        """A block's inputs: one fresh seed for it and a secret noise offset per trial (distinct within the
        block), or, when an input cannot take noise, a fresh seed per trial."""
        if not self.noisable:
            return [_fresh_seed() for _ in range(count)], [None] * count
        return [_fresh_seed()] * count, list(secrets.SystemRandom().sample(range(TRIAL_OFFSETS), count))

    def block(self, seeds: list[int], offsets: list[int | None], mode: str,
              phase: str) -> tuple[list[float], list[float | None], float, float | None, list[float]]:
        """Timed (or calibration, or warm-up) trials, one per seed, in one request: (samples ms, tails ms,
        this process's interval ms from the request sent to the answer read, the executor's main-thread
        CPU ms meanwhile or None, each trial's run-queue wait ms: all 0.0 where the kernel's account of the
        block cannot be read to hold them against)."""
        channel = self.executor.channel
        observed = self.observed_cpu_ms
        ready, _ = self.ask({"op": "block", "seeds": seeds, "mode": mode, "phase": phase}, "ready")
        self.last_ready_cpu_ms = self.observed_cpu_ms - observed
        if ready["ready"] != len(seeds):
            raise ProtocolViolation(f"inputs for {ready['ready']!r} trials where {len(seeds)} were asked ({phase})")
        stat_before = self.cpu.schedstat()
        started = _monotonic_ns()
        channel.send({"op": "go", "offsets": offsets})
        reply, _ = channel.receive()
        interval = (_monotonic_ns() - started) / 1e6
        stat_after = self.cpu.schedstat()
        cpu = stat_after[0] - stat_before[0] if stat_before is not None and stat_after is not None else None
        if cpu is not None:
            self.observed_cpu_ms += cpu
        _raise_failed(reply)
        if set(reply) != {"samples", "tails", "waits"}:
            raise ProtocolViolation(f"an unexpected message ({', '.join(sorted(map(str, reply))) or 'empty'}) where the "
                                    f"harness waited for the samples of {phase}")
        samples, tails, waits = reply["samples"], reply["tails"], reply["waits"]
        if (not isinstance(samples, list) or not isinstance(tails, list) or not isinstance(waits, list)
                or len(samples) != len(seeds) or len(tails) != len(seeds) or len(waits) != len(seeds)):
            raise ProtocolViolation(f"{len(samples) if isinstance(samples, list) else 'no'} samples for the {len(seeds)} trials of {phase}")
        # Samples are required; a tail or a wait may be None (no pipeline tail; no /proc in the executor).
        for what, values, optional in (("sample", samples, False), ("tail", tails, True), ("run-queue wait", waits, True)):
            for value in values:
                if not (optional and value is None) and not _is_duration(value):
                    raise ProtocolViolation(f"a {what} that is not a duration ({value!r})")
        if sum(samples) > interval + CLOCK_SLACK_MS:
            raise ProtocolViolation(f"samples adding up to {sum(samples):.3f} ms for trials the harness's own clock saw "
                                    f"take {interval:.3f} ms ({phase})")
        return ([float(x) for x in samples], [None if t is None else float(t) for t in tails], interval, cpu,
                self.verified_waits(waits, stat_before, stat_after, phase))

    @staticmethod
    def verified_waits(waits: list[Any], before: tuple[float, float, int] | None,
                       after: tuple[float, float, int] | None, phase: str) -> list[float]:
        """The executor's per-trial run-queue waits, held against the kernel's account of its main thread over
        the whole block: they may not add up to more wait, nor name more waiting trials than it had timeslices.
        All 0.0 (no trial excused) where either side cannot be read."""
        reported = [float(w) if w is not None else 0.0 for w in waits]
        if before is None or after is None or any(w is None for w in waits):
            return [0.0] * len(waits)
        waited, slices = after[1] - before[1], after[2] - before[2]
        if sum(reported) > waited + WAIT_SLACK_MS:
            raise ProtocolViolation(f"trials said to have waited {sum(reported):.3f} ms for the CPU where the kernel "
                                    f"saw the implementation's thread wait {waited:.3f} ms ({phase})")
        if sum(1 for w in reported if w > 0) > slices:
            raise ProtocolViolation(f"{sum(1 for w in reported if w > 0)} trials said to have waited for the CPU where "
                                    f"the kernel saw the implementation's thread scheduled {slices} times ({phase})")
        return reported

    # -- the whole flow --

    def run(self, trusted_compile: bool) -> Result:
        job = self.job
        compile_time_ms: float | None = None
        try:
            self.step = "calibrating the harness's clock"
            noop = self.calibrate()
            self.step = "loading the implementation"
            started = _monotonic_ns()
            self.ask({"op": "load"}, "loaded")
            for index in range(job.correctness_sets):
                self.step = f"correctness set {index}"
                self.checked(SEED + index, f"correctness set {index} (seed {SEED + index})", f"correctness set {index}")
                if index == 0:
                    compile_time_ms = (_monotonic_ns() - started) / 1e6
            self.step = "timing"
            try:
                samples = self.time(noop)
            except ClockDisagreement as first:
                # A cheat's shortfall is in every timing loop; a loaded machine's hiccup (another process taking
                # the core for a stretch) seldom lands in two: time once more, with the calibration taken before
                # any candidate code ran, and fail only if the samples disagree again.
                self.checks["clock_retry"] = {"first": str(first), "timing": self.checks.get("timing")}
                samples = self.time(noop)
            held_out = secrets.randbits(31) + 1_000_000
            self.checks["held_out_seed"] = held_out
            self.step = "the held-out set"
            self.checked(held_out, f"the held-out set (seed {held_out})", "the held-out set checked after timing")
            self.step = "the final integrity check"
            self.ask({"op": "integrity"}, "intact")
        except CandidateFailure as failure:
            return Result("failed", str(failure), compile_time_ms=compile_time_ms if trusted_compile else None,
                          correctness=self.correctness)
        except ProtocolViolation as violation:
            return Result("failed", f"the candidate forged results: {violation} ({self.step})", correctness=self.correctness)
        except ChannelClosed:
            return Result("failed", f"crashed: the implementation's process {self.executor.describe_end()} ({self.step})",
                          correctness=self.correctness)
        return Result("passed", samples_ms=samples, compile_time_ms=compile_time_ms if trusted_compile else None,
                      correctness=self.correctness, kept_trials=len(samples))

    def checked(self, seed: int, label: str, phase: str) -> None:
        # The reference process computes its output while the executor runs the call (two processes, two cores).
        self.reference.request([(seed, None)])
        try:
            reply, blobs = self.ask({"op": "check", "seed": seed, "phase": phase}, "output", blobs=True)
        except BaseException:
            self.reference.drop()
            raise
        output = unpack_output(reply["output"], blobs, self.expected)
        self.compare(output, self.reference.answer()[0], label, phase)

    def compare(self, output: Any, expected: Any, label: str, phase: str) -> None:
        correctness, problem = compare_outputs(output, expected, self.atol, self.rtol)
        self.correctness = correctness if self.correctness is None else merge_correctness(self.correctness, correctness)
        mine, theirs = _fingerprint(output), _fingerprint(expected)
        constant, varies = _constant_value(output), _constant_value(expected) is None
        if problem is None and constant is not None and varies and _tensors(expected) and _tensors(expected)[0].numel() > 1:
            # Within tolerance only because the reference's values are all small: a constant cannot be the
            # computation of an output that varies (KernelBench's all-zeros class).
            problem = (f"returned a constant output (every element {constant:g}) where the reference varies; it "
                       f"passed the tolerance only because the reference's values are small")
            correctness = {**correctness, "passed": False}
            self.correctness = merge_correctness(self.correctness, correctness)
        entry = {"set": label, "passed": problem is None, "max_abs_diff": correctness.get("max_abs_diff")}
        self.checks["correctness_sets" if not label.startswith("timed") else "timed_outputs"].append(entry)
        if problem:
            raise CandidateFailure(self.diagnose(output, expected, mine, theirs, problem, phase))
        self.seen.append((label, mine, theirs))

    def diagnose(self, output: Any, expected: Any, mine: tuple[Any, ...], theirs: tuple[Any, ...], problem: str, phase: str) -> str:
        """The failed comparison in words that name the likely cheat."""
        for got, fake in zip(_tensors(output), self.decoy):
            if got.shape == fake.shape and got.dtype == fake.dtype and torch.equal(got, fake):
                return (f"the candidate returned the harness's decoy reference output ({phase}): it read the "
                        f"harness's memory (a stack or gc walk) instead of computing")
        for label, earlier, reference in self.seen:
            if earlier == mine and reference != theirs:
                return (f"returned the same output for {phase} as for {label} although the inputs differ: "
                        f"a cached or stale result ({problem})")
        if problem.startswith("returned a constant output"):
            return f"{problem} ({phase})"
        constant = _constant_value(output)
        if constant is not None and _constant_value(expected) is None:
            return f"returned a constant output (every element {constant:g}) on {phase} ({problem})"
        return f"{problem} on {phase}"

    def calibrate(self) -> _Calibration:
        """Do-nothing blocks of 1 and of CALIBRATION_BLOCK trials, before the implementation is loaded (only the
        harness's code has run in the executor then): the harness's own cost of a block, fixed + per trial x
        trials, on the second clock."""
        by_cpu = self.job.device == "cpu" and self.cpu.fd is not None
        singles: list[float] = []
        blocks: list[float] = []
        tails: list[float] = []
        ready: dict[int, list[float]] = {1: [], CALIBRATION_BLOCK: []}
        self.block(*self.seeds_and_offsets(1), "noop", "calibration")  # its first answer also waited for the set-up
        for _ in range(CALIBRATION_ROUNDS):
            for size, gaps in ((1, singles), (CALIBRATION_BLOCK, blocks)):
                samples, block_tails, interval, cpu, _ = self.block(*self.seeds_and_offsets(size), "noop", "calibration")
                gaps.append((cpu if by_cpu and cpu is not None else interval) - sum(samples))
                tails += [t for t in block_tails if t is not None]
                ready[size].append(self.last_ready_cpu_ms)
        one, many = _median(singles) or 0.0, _median(blocks) or 0.0
        per_trial = max(0.0, (many - one) / (CALIBRATION_BLOCK - 1))
        ready_one, ready_many = _median(ready[1]) or 0.0, _median(ready[CALIBRATION_BLOCK]) or 0.0
        ready_per_trial = max(0.0, (ready_many - ready_one) / (CALIBRATION_BLOCK - 1))
        return _Calibration(by_cpu, max(0.0, one - per_trial), per_trial, statistics.median(tails) if tails else None,
                            max(0.0, ready_one - ready_per_trial), ready_per_trial)

    def time(self, calibration: _Calibration) -> list[float]:
        settings = self.job.timing
        warm: list[float] = []
        if settings.warmup:
            warm, _, _, _, _ = self.block(*self.seeds_and_offsets(settings.warmup), "warm", "the warm-up calls")
        size = block_size(_median(warm) or 0.0, self.output_limit + self.input_bytes)
        self.ask({"op": "reserve", "trials": size}, "reserved")
        check_chance = max(TIMED_OUTPUT_SAMPLES / settings.max_trials, MIN_TIMED_CHECK_PROBABILITY)
        samples: list[float] = []
        raw_samples: list[float] = []
        tails: list[float] = []
        unexplained_per_trial: list[float] = []
        seeds_used: set[tuple[int, int | None]] = set()
        timed_ms = 0.0
        running = timing.RunningStats()  # for the interval after every trial
        half_width: float | None = None
        stop_reason = ""
        extra_checks = blocks = leads_run = preempted_run = 0
        trial = 0  # timed trials run; the first is discarded
        budget_ns = settings.budget_s * 1e9
        started = _monotonic_ns()
        process_before, observed_before = self.cpu.process_ms(), self.observed_cpu_ms
        leads = timing.LEAD_CALLS if size >= timing.LEAD_MIN_BLOCK else 0
        while not stop_reason:
            want = min(size, settings.max_trials - running.count + (max(1, leads) if trial == 0 else leads))
            seeds, offsets = self.seeds_and_offsets(want)
            seeds_used.update(zip(seeds, offsets))
            phase = f"timed trials {trial}-{trial + want - 1}"
            block_samples, block_tails, interval, cpu, block_waits = self.block(seeds, offsets, "time", phase)
            blocks += 1
            allowed = READY_FACTOR * (calibration.ready_fixed + calibration.ready_per_trial * want) + READY_SLACK_MS
            if self.cpu.fd is not None and self.last_ready_cpu_ms > allowed:
                raise CandidateFailure(
                    f"the implementation's process spent {self.last_ready_cpu_ms:.1f} ms of CPU time making the inputs of "
                    f"{phase}, more than the {allowed:.1f} ms allowed ({READY_FACTOR:g}x what the harness's own making of "
                    f"them costs, + {READY_SLACK_MS:g} ms): work outside the timed region"
                )
            clock = cpu if calibration.by_cpu and cpu is not None else interval
            expected_gap = calibration.fixed + calibration.per_trial * want
            explained = sum(block_samples) - lead_beyond_cap(block_samples, leads if trial > 0 else 0)
            unexplained_per_trial.append((clock - explained - expected_gap) / want)
            picks: list[int] = []
            first = trial  # the block's first trial
            kept = len(block_samples)  # its trials up to the one the stopping rule stopped at
            block_median = _median(block_samples[leads:] or block_samples) or 0.0
            for index, (raw, tail) in enumerate(zip(block_samples, block_tails)):
                sample = raw
                if tail is not None and calibration.tail is not None and tail > calibration.tail + timing.TAIL_ALLOWANCE_MS:
                    sample += tail - calibration.tail  # work the call left on another stream: counted
                timed_ms += sample
                trial += 1
                # The first timed call still pays for allocator growth and lazy set-up; a lead for the wake-up.
                if trial == 1 or index < leads:
                    leads_run += trial != 1
                    continue
                if preempted(raw, block_waits[index], block_median) and preempted_run + 1 <= timing.PREEMPTED_MAX_FRACTION * trial:
                    preempted_run += 1
                    continue
                samples.append(sample)
                raw_samples.append(raw)
                if tail is not None:
                    tails.append(tail)
                running.add(sample)
                # Which outputs are checked is decided here, after the trials ran, from randomness no process
                # a candidate runs in holds: it cannot skip work on the trials it guesses go unchecked.
                if trial == 2 or (extra_checks < 2 * TIMED_OUTPUT_SAMPLES and _secret_chance(check_chance)):
                    extra_checks += trial != 2
                    picks.append(index)
                # The rule after every trial, as the harness before blocks applied it: the samples kept are those
                # up to the first trial at which it is met; the block's later trials ran (the second clock timed
                # them with the rest) but are not kept, so a block's length never decides when the timing ends.
                half_width = running.relative_half_width()
                stop_reason = _stop_rule(running.count, half_width, settings)
                if stop_reason:
                    kept = index + 1
                    timed_ms += sum(block_samples[kept:])
                    trial += len(block_samples) - kept
                    break
            spent = running.count >= MIN_KEPT_TRIALS and _monotonic_ns() - started >= budget_ns
            if spent and stop_reason == "":
                # Never before two kept trials: a slow call (a block of one, its trial discarded) that used the
                # whole budget would otherwise end a passed run with no sample at all, or none to judge it by.
                stop_reason = "budget"
            if stop_reason and kept - 1 not in picks:
                picks.append(kept - 1)  # the last kept trial's output, always
            if picks:
                # All of a block's picks in one request to the executor and one to the reference process.
                labels = [f"timed trial {first + index}" for index in picks]
                try:
                    self.reference.request([(seeds[index], offsets[index]) for index in picks])
                except CandidateFailure as failure:
                    raise CandidateFailure(f"while timed, {failure}") from None
                try:
                    reply, blobs = self.ask({"op": "ship", "indices": picks, "phases": labels}, "outputs", blobs=True,
                                            outputs=len(picks))
                    shipped = split_outputs(reply["outputs"], blobs, self.expected, len(picks))
                except BaseException:
                    self.reference.drop()
                    raise
                try:
                    references = self.reference.answer()
                    for output, expected, label in zip(shipped, references, labels):
                        self.compare(output, expected, label, label)
                except CandidateFailure as failure:
                    raise CandidateFailure(f"while timed, {failure} (a stale or cached result, or work skipped on "
                                           f"trials it guessed would not be checked)") from None
            if not stop_reason and _secret_chance(INTEGRITY_CHECK_PROBABILITY):
                self.ask({"op": "integrity"}, "intact")
        wall_ms = (_monotonic_ns() - started) / 1e6
        process_after = self.cpu.process_ms()
        observed = self.observed_cpu_ms - observed_before
        background = process_after - process_before - observed if process_before is not None and process_after is not None else None
        median_sample = _median(samples) or 0.0
        unexplained, tolerance, disagreement = clock_disagreement(unexplained_per_trial, median_sample, calibration.per_trial)
        self.checks["timing"] = {
            "stop_reason": stop_reason, "trials_run": trial, "kept_trials": len(samples), "blocks": blocks,
            "block_size": size, "lead_trials": leads_run, "preempted_trials": preempted_run, "distinct_inputs": len(seeds_used), "half_width": _finite(half_width), "wall_ms": wall_ms,
            "timed_ms": timed_ms, "second_clock": "executor CPU time (schedstat)" if calibration.by_cpu else "coordinator wall clock",
            "harness_ms_per_block": calibration.fixed, "harness_ms_per_trial": calibration.per_trial,
            "unexplained_ms_per_trial": unexplained, "clock_tolerance_ms": tolerance,
            "background_cpu_ms": background, "median_tail_ms": _finite(_median(tails)), "noop_tail_ms": _finite(calibration.tail),
            "timed_outputs_checked": len(self.checks["timed_outputs"]),
        }
        if disagreement:
            raise ClockDisagreement(disagreement)
        if background is not None and background > max(BACKGROUND_CPU_MS, BACKGROUND_CPU_FRACTION * observed):
            raise CandidateFailure(
                f"the implementation's process used {background:.0f} ms of CPU time during the timed loop while it was "
                f"not answering the harness (against {observed:.0f} ms while answering): work in threads of its own or "
                f"between trials, outside every timed region (the CPU protocol runs one thread)"
            )
        side_stream = side_stream_problem(tails, calibration.tail, median_sample)
        if side_stream:
            raise CandidateFailure(side_stream)
        non_positive = [s for s in samples if not s > 0]
        if non_positive:
            raise CandidateFailure(f"timer returned {len(non_positive)} non-positive samples (below its resolution)")
        return samples


def _stop_rule(kept: int, half_width: float | None, settings: timing.AdaptiveSettings) -> str:
    """Why the timing stops after this many kept trials ("converged", "max_trials"), or "" (the time budget is
    judged after a block)."""
    if kept >= settings.min_trials and half_width is not None and half_width < settings.target_half_width:
        return "converged"
    if kept >= settings.max_trials:
        return "max_trials"
    return ""


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _measure_target(job: Job, target: _Target, reference: _Reference, device: torch.device, fresh: list[int],
                    atol: float, input_bytes: int, noisable: bool) -> tuple[Result, dict[str, Any], int | None]:
    """One implementation in a fresh executor process: (result, checks, kept trials)."""
    decoy_seed = secrets.randbits(63)
    executor = fork_role(_executor_role(job, target, device, reference.expected, fresh, decoy_seed))
    remote = _Remote(job, executor, reference, reference.expected, atol, decoy_seed, target.filename, input_bytes, noisable)
    try:
        result = remote.run(target.reports_compile_time)
    finally:
        try:
            executor.channel.send({"op": "exit"})
        except (ChannelClosed, OSError):
            pass
        executor.kill()
        remote.cpu.close()
    return result, remote.checks, result.kept_trials


def load_shape_inference() -> None:
    """Import what torch's meta device needs (sympy and torch's shape inference: about 0.7 s on first use).
    The reference process and every executor find the problem's axes on the meta device
    (``problems.instantiate``); done once in the coordinator before it forks, they inherit it instead of each
    paying for it, and a zygote that calls this as its warm-up spares every job. Trusted code, no real device."""
    with torch.device("meta"):
        torch.randn(2, 2)


def measure_job(payload: dict[str, Any]) -> dict[str, Any]:
    """Run inside the sandbox (Sandbox.run("benchmarks.candidate:measure_job", payload)).

    This process is the coordinator: it never loads a candidate, initialises no device, and writes the
    records itself. Returns {"records": [run record, ...], "environment": {...}, "checks": {...}}: the
    baseline's record first when ``baseline`` is set. Raises PayloadError for a malformed payload,
    RuntimeError when this machine cannot run the job at all (CUDA asked for, none here); a candidate's
    fault is a failed record.
    """
    job = parse_payload(payload)
    make_undumpable()
    load_shape_inference()
    child = fork_role(_reference_role(job))
    try:
        try:
            child.channel.send({"op": "prepare"})
            prepared, _ = child.channel.receive()
        except (ChannelClosed, ProtocolViolation) as exc:
            raise RuntimeError(f"the reference process failed before any candidate ran: {exc}; {child.describe_end()}") from None
        if "error" in prepared:
            raise RuntimeError(str(prepared["error"]))
        return _measure_prepared(job, prepared, child)
    finally:
        try:
            child.channel.send({"op": "exit"})
        except (ChannelClosed, OSError):
            pass
        child.kill()


def _measure_prepared(job: Job, prepared: dict[str, Any], child: Child) -> dict[str, Any]:
    environment = prepared["environment"]
    unmeasured = prepared["protocol"]
    targets: list[_Target] = []
    if job.baseline:
        targets.append(_Target(TORCH_EAGER.record_fields(), TORCH_EAGER.slug, False, "<torch_eager>"))
    if job.builtin is not None:
        builtin = IMPLEMENTATIONS[job.builtin]
        targets.append(_Target({**builtin.record_fields(), **job.implementation}, builtin.slug,
                               builtin.reports_compile_time, f"<{builtin.slug}>"))
    else:
        targets.append(_Target(job.implementation, None, False, job.candidate_filename or "<candidate>"))
    bindings = prepared.get("bindings") or dict(job.bindings)
    dtype = prepared.get("dtype") or problems_module.FALLBACK_DTYPE
    checks: dict[str, Any] = {"device": prepared.get("device", job.device), "implementations": []}

    def record(fields: Mapping[str, Any], result: Result, protocol: Mapping[str, Any]) -> dict[str, Any]:
        return build_record(
            workload_slug=job.workload_slug,
            source_sha256=job.source_sha256 or problems_module.source_sha256(job.reference_source),
            bindings=bindings, dtype=dtype, implementation=fields, environment=environment, protocol=protocol,
            status=result.status, failure_reason=result.failure_reason, samples_ms=result.samples_ms,
            compile_time_ms=result.compile_time_ms, correctness=result.correctness, observed_at=result.observed_at,
        )

    if "problem" in prepared:
        checks["problem"] = prepared["problem"]
        records = [record(t.fields, Result("failed", str(prepared["problem"])), unmeasured) for t in targets]
        return {"records": records, "environment": environment, "checks": checks}
    expected = [_leaf_from_json(leaf) for leaf in prepared["expected"]]
    fresh = [int(p) for p in prepared["fresh"]]
    checks["freshened_inputs"] = fresh
    reference = _Reference(child, expected)
    device = torch.device(prepared["device"])
    records = []
    for target in targets:
        result, target_checks, kept = _measure_target(job, target, reference, device, fresh, float(prepared["atol"]),
                                                      int(prepared["input_bytes"]), bool(prepared["noisable"]))
        protocol = {**unmeasured, "trials": kept} if result.status == "passed" else unmeasured
        records.append(record(target.fields, result, protocol))
        checks["implementations"].append({"slug": target.fields["slug"], "status": result.status,
                                          "failure_reason": result.failure_reason, **target_checks})
    return {"records": records, "environment": environment, "checks": checks}


_record_library()
