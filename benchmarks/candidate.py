"""Measure a submitted implementation (a KernelBench ``ModelNew`` module) honestly, inside the sandbox.

``measure_job(payload)`` is what a worker runs through ``Sandbox.run("benchmarks.candidate:measure_job",
payload)``: a JSON payload in (the reference problem, the candidate's source or a built-in
implementation, the configuration and timing settings), run records out. A candidate that fails any
check is a failed record with a one-line reason; only a malformed payload raises (PayloadError).

The honesty model, in the order the checks run:

- The sandbox (benchmarks.sandbox) is the security boundary: the candidate runs in a fresh confined
  process, with no network, as an unprivileged uid, under rlimits. Everything below runs in that same
  process, so it defeats the known cheats and leaves evidence of others; it is no barrier against code
  that rewrites this process's memory with ctypes.
- Before any candidate code is loaded: the clocks and synchronization functions this harness calls are
  bound (benchmarks.timing, at import), the members of ``time``, ``torch``, ``torch.Tensor``,
  ``torch.nn.Module``, ``torch.nn.functional``, ``torch.cuda`` (Event, Stream), this module, timing and
  runners are recorded (at import), and so are the problem module, its ``Model`` class, the reference
  model's weights and torch's global settings (per job). After every step that ran candidate code, a
  member that was replaced fails the run ("the candidate replaced time.perf_counter_ns") and is put
  back; a wrapper torch itself installs (torch._dynamo wraps torch.manual_seed) is accepted when its
  ``__wrapped__`` chain reaches the original and its code lives in torch.
- Correctness before timing: ``correctness_sets`` seeded input sets (``torch.manual_seed(SEED + i)``
  before ``get_inputs``; the same seed before building Model and ModelNew, as KernelBench does). The
  candidate gets a clone of each set; the reference output is computed from the harness's own copy
  AFTER the candidate's call (whose copy is checked unchanged), compared, and dropped, so no reference
  output exists while candidate code runs. A decoy tensor shaped like the reference output lies in the
  harness's frame and memory instead: a candidate that returns it read the harness's memory.
- Each output must be a plain ``torch.Tensor`` (not a subclass), of the reference's exact dtype, shape
  and device, computed (no stride-0/expanded or overlapping view whose storage holds fewer elements
  than it shows), sharing no storage with its inputs or the harness's tensors.
- Timing (benchmarks.timing.AdaptiveTimer): inputs rotate among several pre-generated sets, cloned
  outside the timed region; CUDA events with the L2 flush and a device-wide synchronize around each
  trial (work left on a side stream fails the run), perf_counter_ns on the CPU; adaptive trial count.
  A few trials' outputs (chosen at random, plus the first and last) are copied and checked against the
  reference afterwards, so a stale or cached result returned while timed fails. The samples are checked
  against an independent wall clock around the trial loop.
- After timing, one more input set with a seed drawn at random is checked.
"""

from __future__ import annotations

import math
import os
import random
import secrets
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from . import problems as problems_module
from . import runners, timing
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
    release_memory,
    tolerance_for,
)
from .sandbox import GiB

_perf_counter_ns = timing._perf_counter_ns  # bound at timing's import, before any candidate ran

DEFAULT_CORRECTNESS_SETS = 5  # as KernelBench
MAX_CORRECTNESS_SETS = 100
ROTATION_SETS = 3  # input sets the timed trials rotate among
ROTATION_BYTES_LIMIT = 2 * GiB  # above this, two sets (the rotation still defeats a cache keyed by pointer)
TIMED_OUTPUT_SAMPLES = 6  # timed trials whose outputs are checked, besides the first and the last
# The median sample may not cover less than this fraction of a trial's median wall time beyond a
# do-nothing trial's (when that remainder, in ms, is large enough to measure).
MIN_TIMED_FRACTION = 0.01
MIN_UNEXPLAINED_MS = 0.05
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
    torch.set_float32_matmul_precision(original["torch.get_float32_matmul_precision()"])
    torch.set_num_threads(original["torch.get_num_threads()"])
    torch.backends.cudnn.allow_tf32 = original["torch.backends.cudnn.allow_tf32"]
    torch.backends.cudnn.benchmark = original["torch.backends.cudnn.benchmark"]
    torch.backends.cudnn.deterministic = original["torch.backends.cudnn.deterministic"]
    torch.backends.cuda.matmul.allow_tf32 = original["torch.backends.cuda.matmul.allow_tf32"]


class Integrity:
    """What candidate code must leave as it found it: recorded before it runs, checked after each step."""

    def __init__(self, base: Mapping[str, tuple[Any, dict[str, Any]]], extra: Iterable[tuple[str, Any]] = ()):
        self.snapshot: dict[str, tuple[Any, dict[str, Any]]] = dict(base)
        for label, owner in extra:
            self.snapshot[label] = (owner, _members(owner))
        self.settings = _settings()

    def violations(self) -> list[str]:
        """What changed, each put back where it can be; empty when nothing did."""
        found: list[str] = []
        for label, (owner, members) in self.snapshot.items():
            current = vars(owner)
            for name, original in members.items():
                value = current.get(name, _MISSING)
                if value is original:
                    continue
                if value is not _MISSING and _wraps_original(value, original):
                    members[name] = value  # torch's own wrapper: accepted from now on
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
    harness += [(f"benchmarks.candidate.{cls.__name__}", cls) for cls in (Integrity, _Context, _Measurement)]
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


def _constant_value(value: Any) -> float | None:
    """The one value every element of a (single-tensor, float) output has, else None."""
    tensors = _tensors(value)
    if len(tensors) != 1 or tensors[0].numel() < 2:
        return None
    tensor = tensors[0].detach()
    first = tensor.reshape(-1)[0]
    if bool((tensor == first).all()):
        return float(first.item())
    return None


# ---------------------------------------------------------------- one job


# The runners' outcome of measuring one implementation, with kept_trials set (the adaptive count).
Result = runners.Outcome


class _Context:
    """The problem made concrete once per job, shared by the baseline and the implementation measured."""

    def __init__(self, job: Job, device: torch.device):
        self.job = job
        self.device = device
        self.problem = Problem(slug=job.workload_slug, source_text=job.reference_source, filename=job.reference_filename)
        self.module: types.ModuleType | None = None
        self.instance: Instance | None = None
        self.reference_model: torch.nn.Module | None = None
        self.expected: list[Leaf] = []
        self.decoy: list[torch.Tensor] = []
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
            phase = "the reference run"
            with torch.no_grad():
                self.reference_model = self.instance.new_model()
                self.instance.dtype = problems_module.infer_dtype(self.instance.inputs, self.reference_model)
                probe = detach_output(self.reference_model(*self.instance.inputs))
            self.expected = describe_leaves(probe)
            generator = torch.Generator().manual_seed(secrets.randbits(63))
            self.decoy = [_decoy_like(leaf, generator) for leaf in _tensors(probe)]
            probe = None
            self.instance.inputs = []  # every check draws its own sets
            self.weights_fingerprint = self._weights()
        except ProblemError as exc:
            raise _ProblemFailure(str(exc)) from None
        except (Exception, SystemExit) as exc:
            raise _ProblemFailure(describe_exception(phase, exc, self.problem.code_filename)) from None
        tolerance = job.tolerance if job.tolerance is not None else tolerance_for(self.instance.dtype)
        self.atol = self.rtol = tolerance

    def _weights(self) -> tuple[Any, ...]:
        assert self.reference_model is not None
        model = self.reference_model
        hooks = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
        return (hooks, _fingerprint([t for t in (*model.parameters(), *model.buffers())]))

    def inputs(self, seed: int) -> list[Any]:
        assert self.module is not None
        problems_module.seed_everything(seed)
        return problems_module.move_to_device(list(self.module.get_inputs()), self.device)

    def reference(self, inputs: list[Any]) -> Any:
        """The reference output for inputs, from a model checked unchanged since it was built."""
        assert self.reference_model is not None
        if self._weights() != self.weights_fingerprint:
            raise CandidateFailure("the candidate modified the reference model (its weights, buffers or hooks)")
        with torch.no_grad():
            output = detach_output(self.reference_model(*inputs))
        _synchronize(self.device)
        # Its own call may change its buffers (a BatchNorm in training mode, as KernelBench models run, updates
        # its running statistics): what the candidate must not change is the state as the reference left it.
        self.weights_fingerprint = self._weights()
        return output


class _ProblemFailure(Exception):
    """The reference problem itself cannot be run: every record fails with this reason."""


def _decoy_like(tensor: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    if tensor.is_floating_point() or tensor.is_complex():
        values = torch.randn(tuple(tensor.shape), generator=generator, dtype=torch.float64)
    else:
        values = torch.randint(0, 2 if tensor.dtype == torch.bool else 97, tuple(tensor.shape), generator=generator)
    return values.to(device=tensor.device, dtype=tensor.dtype)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        with torch.cuda.device(device):
            timing._cuda_synchronize()


def _clone_inputs(inputs: list[Any]) -> list[Any]:
    return detach_output(list(inputs))


def _input_bytes(inputs: list[Any]) -> int:
    return sum(t.numel() * t.element_size() for t in _tensors(inputs))


class _Measurement:
    """One implementation through every check, then timing. ``checks`` collects what was checked."""

    def __init__(self, context: _Context, integrity: Integrity, filename: str):
        self.context = context
        self.integrity = integrity
        self.filename = filename
        self.checks: dict[str, Any] = {"correctness_sets": [], "timed_outputs": []}
        self.correctness: dict[str, Any] | None = None
        self.seen: list[tuple[str, tuple[Any, ...], tuple[Any, ...]]] = []  # (set, candidate fp, reference fp)

    # -- one checked call --

    def checked_call(self, model: Callable[..., Any], label: str, seed: int, phase: str) -> None:
        """The candidate on a clone of set ``seed``; then the reference on the harness's copy; compare."""
        context = self.context
        originals = context.inputs(seed)
        before = _fingerprint(originals)
        own = _clone_inputs(originals)
        reference_output = context.decoy  # noqa: F841  (the decoy, where a reader of the harness's frames looks)
        try:
            with torch.no_grad():
                output = model(*own)
            _synchronize(context.device)
        except CandidateFailure:
            raise
        except (Exception, SystemExit) as exc:
            raise CandidateFailure(describe_exception(f"ModelNew.forward on {phase}", exc, self.filename)) from None
        self.integrity.check()
        problem = check_output(output, context.expected, own, [*_tensors(originals), *context.decoy])
        if problem:
            raise CandidateFailure(f"{problem} ({phase})")
        output = detach_output(output)
        del own
        if _fingerprint(originals) != before:
            raise CandidateFailure(f"the candidate modified the harness's inputs, not its own copy ({phase})")
        expected = context.reference(originals)
        del originals
        self.compare(output, expected, label, phase)

    def compare(self, output: Any, expected: Any, label: str, phase: str) -> None:
        context = self.context
        correctness, problem = compare_outputs(output, expected, context.atol, context.rtol)
        self.correctness = correctness if self.correctness is None else merge_correctness(self.correctness, correctness)
        mine, theirs = _fingerprint(output), _fingerprint(expected)
        entry = {"set": label, "passed": problem is None, "max_abs_diff": correctness.get("max_abs_diff")}
        self.checks["correctness_sets" if not label.startswith("timed") else "timed_outputs"].append(entry)
        if problem:
            raise CandidateFailure(self.diagnose(output, expected, mine, theirs, problem, phase))
        self.seen.append((label, mine, theirs))

    def diagnose(self, output: Any, expected: Any, mine: tuple[Any, ...], theirs: tuple[Any, ...], problem: str, phase: str) -> str:
        """The failed comparison in words that name the likely cheat."""
        decoy = self.context.decoy
        for got, fake in zip(_tensors(output), decoy):
            if got.shape == fake.shape and got.dtype == fake.dtype and torch.equal(got.to(fake.device), fake):
                return (f"the candidate returned the harness's decoy reference output ({phase}): it read the "
                        f"harness's memory (a stack or gc walk) instead of computing")
        for label, earlier, reference in self.seen:
            if earlier == mine and reference != theirs:
                return (f"returned the same output for {phase} as for {label} although the inputs differ: "
                        f"a cached or stale result ({problem})")
        constant = _constant_value(output)
        if constant is not None and _constant_value(expected) is None:
            return f"returned a constant output (every element {constant:g}) on {phase} ({problem})"
        return f"{problem} on {phase}"

    # -- the whole flow --

    def run(self, make_model: Callable[[], Callable[..., Any]], trusted_compile: bool) -> Result:
        context = self.context
        job = context.job
        sets = job.correctness_sets
        compile_time_ms: float | None = None
        model: Callable[..., Any] | None = None
        try:
            started = _perf_counter_ns()
            model = make_model()
            self.integrity.check()
            for index in range(sets):
                self.checked_call(model, f"correctness set {index} (seed {SEED + index})", SEED + index,
                                  f"correctness set {index}")
                if index == 0:
                    compile_time_ms = (_perf_counter_ns() - started) / 1e6
            samples, kept = self.time(model)
            held_out = secrets.randbits(31) + 1_000_000
            self.checks["held_out_seed"] = held_out
            self.checked_call(model, f"the held-out set (seed {held_out})", held_out,
                              "the held-out set checked after timing")
            self.integrity.check()
        except CandidateFailure as failure:
            return Result("failed", str(failure), compile_time_ms=compile_time_ms if trusted_compile else None,
                          correctness=self.correctness)
        except (Exception, SystemExit) as exc:  # the harness's own step failed on the candidate's account
            return Result("failed", describe_exception("measuring the candidate", exc, self.filename),
                          correctness=self.correctness)
        finally:
            model = None
            self.integrity.violations()  # put back whatever was replaced, whatever the outcome
            if trusted_compile:
                try:
                    torch._dynamo.reset()
                except Exception:
                    pass
            release_memory(context.device)
        return Result("passed", samples_ms=samples, compile_time_ms=compile_time_ms, correctness=self.correctness,
                      kept_trials=kept)

    def time(self, model: Callable[..., Any]) -> tuple[list[float], int]:
        context = self.context
        job = context.job
        rotation = ROTATION_SETS if _input_bytes(context.inputs(SEED)) * ROTATION_SETS <= ROTATION_BYTES_LIMIT else 2
        base = secrets.randbits(31) + 2_000_000
        seeds = [base + index for index in range(rotation)]
        masters = [context.inputs(seed) for seed in seeds]
        fingerprints = [_fingerprint(m) for m in masters]
        self.checks["rotation_seeds"] = seeds
        chooser = random.Random(secrets.randbits(64))
        sampled: list[tuple[int, Any]] = []
        reference_output = context.decoy  # noqa: F841  (see checked_call)

        def inputs_for(trial: int) -> list[Any]:
            return _clone_inputs(masters[trial % rotation])

        def call(inputs: list[Any]) -> Any:
            return model(*inputs)

        def on_output(trial: int, output: Any, last: bool) -> None:
            extra = len(sampled) < TIMED_OUTPUT_SAMPLES + 1 and chooser.random() < 0.1
            if trial == 1 or last or extra:
                problem = check_output(output, context.expected, [], [*_tensors(masters), *context.decoy])
                if problem:
                    raise CandidateFailure(f"{problem} (timed trial {trial})")
                sampled.append((trial, detach_output(output)))

        timer = timing.make_adaptive_timer(context.device)
        try:
            with torch.no_grad():
                result = timer.run(call, inputs_for, job.timing, on_output)
        except CandidateFailure:
            raise
        except (Exception, SystemExit) as exc:
            raise CandidateFailure(describe_exception("ModelNew.forward while timed", exc, self.filename)) from None
        finally:
            if isinstance(timer, timing.CudaAdaptiveTimer):
                timer.release()
        self.integrity.check()
        self.protocol = timer.protocol(job.timing, len(result.samples_ms), rotation)
        self.checks["timing"] = {
            "stop_reason": result.stop_reason,
            "trials_run": result.trials_run,
            "kept_trials": len(result.samples_ms),
            "half_width": _finite(result.half_width),
            "wall_ms": result.wall_ms,
            "timed_ms": result.timed_ms,
            "overhead_ms_per_trial": result.overhead_ms_per_trial,
            "median_trial_wall_ms": _finite(_median(result.trial_wall_ms)),
            "noop_trial_wall_ms": result.noop_trial_wall_ms,
            "rotation_sets": rotation,
            "median_tail_ms": _finite(_median(result.tail_ms)),
            "noop_tail_ms": _finite(result.noop_tail_ms),
        }
        self.check_clock(result)
        for index, master in enumerate(masters):
            if _fingerprint(master) != fingerprints[index]:
                raise CandidateFailure("the candidate modified the harness's timing inputs, not its own copy")
        by_set: dict[int, list[tuple[int, Any]]] = {}
        for trial, output in sampled:
            by_set.setdefault(trial % rotation, []).append((trial, output))
        sampled.clear()
        for index in sorted(by_set):
            expected = context.reference(masters[index])
            for trial, output in by_set[index]:
                try:
                    self.compare(output, expected, f"timed trial {trial}", f"timed trial {trial}")
                except CandidateFailure as failure:
                    raise CandidateFailure(f"while timed, {failure} (a stale or cached result during timing)") from None
            expected = None
        non_positive = [s for s in result.samples_ms if not s > 0]
        if non_positive:
            raise CandidateFailure(f"timer returned {len(non_positive)} non-positive samples (below its resolution)")
        return result.samples_ms, len(result.samples_ms)

    def check_clock(self, result: timing.AdaptiveResult) -> None:
        """The samples against the independent wall clock around the trial loop."""
        if result.timed_ms > result.wall_ms * 1.001 + 0.01:
            raise CandidateFailure(
                f"the timed samples add up to more than the wall-clock time around them "
                f"({result.timed_ms:.3f} ms > {result.wall_ms:.3f} ms): the clock was tampered with"
            )
        # Medians per trial: a trial's wall time beyond a do-nothing trial's is the call's own time, which
        # its sample must cover (one preemption of the process changes a median little).
        trial_wall = _median(result.trial_wall_ms)
        median_sample = _median(result.samples_ms) or 0.0
        if trial_wall is not None:
            unexplained = trial_wall - result.noop_trial_wall_ms
            if unexplained > MIN_UNEXPLAINED_MS and median_sample < MIN_TIMED_FRACTION * unexplained:
                raise CandidateFailure(
                    f"the timed samples cover under {MIN_TIMED_FRACTION:.0%} of the time the trials took beyond the "
                    f"harness's overhead (median {median_sample:.4f} ms of {unexplained:.4f} ms per trial): work ran "
                    f"outside the timed region or the clock was tampered with"
                )
        tail = _median(result.tail_ms)
        if tail is not None:
            baseline = result.noop_tail_ms or 0.0
            if tail - baseline > max(SIDE_STREAM_TAIL_MS, SIDE_STREAM_TAIL_FRACTION * median_sample):
                raise CandidateFailure(
                    f"work continued on the device after the timed stream's end event (median {tail - baseline:.3f} ms "
                    f"per trial, against {median_sample:.3f} ms timed): it ran on a side stream not joined to the "
                    f"current stream, so it would not have been counted"
                )


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _candidate_factory(context: _Context, job: Job) -> Callable[[], Callable[..., Any]]:
    def build() -> Callable[..., Any]:
        assert context.instance is not None and job.candidate_source is not None
        filename = job.candidate_filename or "<candidate>"
        try:
            module = problems_module.load_module(job.candidate_source, filename)
        except (Exception, SystemExit) as exc:
            raise CandidateFailure(describe_exception("importing the candidate module", exc, filename)) from None
        model_class = getattr(module, "ModelNew", None)
        if model_class is None:
            raise CandidateFailure("the candidate module defines no ModelNew class")
        if not callable(model_class):
            raise CandidateFailure("the candidate's ModelNew is not a class")
        init_inputs = detach_output(list(context.instance.init_inputs))
        try:
            problems_module.seed_everything(SEED)  # the same seed as the reference model's weights
            model = model_class(*init_inputs)
            if isinstance(model, torch.nn.Module):
                model = model.to(context.device)
        except (Exception, SystemExit) as exc:
            raise CandidateFailure(describe_exception("ModelNew.__init__", exc, filename)) from None
        if not callable(model):
            raise CandidateFailure("the candidate's ModelNew instance is not callable")
        return model

    return build


def _builtin_factory(context: _Context, implementation: runners.Implementation) -> Callable[[], Callable[..., Any]]:
    def build() -> Callable[..., Any]:
        assert context.instance is not None
        try:
            return implementation.build(context.instance.new_model())
        except (Exception, SystemExit) as exc:
            raise CandidateFailure(describe_exception(f"building {implementation.slug}", exc, context.problem.code_filename)) from None

    return build


def measure_job(payload: dict[str, Any]) -> dict[str, Any]:
    """Run inside the sandbox (Sandbox.run("benchmarks.candidate:measure_job", payload)).

    Returns {"records": [run record, ...], "environment": {...}, "checks": {...}}: the baseline's record
    first when ``baseline`` is set. Raises PayloadError for a malformed payload, RuntimeError when this
    machine cannot run the job at all (CUDA asked for, none here); a candidate's fault is a failed record.
    """
    job = parse_payload(payload)
    if job.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("the job asks for CUDA but torch.cuda.is_available() is false on this machine")
    device = torch.device(job.device)
    if device.type == "cuda":
        device = torch.device("cuda", torch.cuda.current_device())
    environment = capture_environment(device, provider=job.provider, label=job.label)
    context = _Context(job, device)
    timer = timing.make_adaptive_timer(device)
    checks: dict[str, Any] = {"device": str(device), "implementations": []}

    # (record fields, how to build it, whether its first call is reported as compile time, its file name)
    targets: list[tuple[dict[str, Any], Callable[[], Callable[..., Any]], bool, str]] = []
    if job.baseline:
        targets.append((TORCH_EAGER.record_fields(), _builtin_factory(context, TORCH_EAGER), False, "<torch_eager>"))
    if job.builtin is not None:
        builtin = IMPLEMENTATIONS[job.builtin]
        targets.append(({**builtin.record_fields(), **job.implementation}, _builtin_factory(context, builtin),
                         builtin.reports_compile_time, f"<{builtin.slug}>"))
    else:
        filename = job.candidate_filename or "<candidate>"
        targets.append((job.implementation, _candidate_factory(context, job), False, filename))

    def record(fields: Mapping[str, Any], result: Result, protocol: Mapping[str, Any]) -> dict[str, Any]:
        instance = context.instance
        bindings = instance.bindings if instance is not None else dict(job.bindings)
        dtype = instance.dtype if instance is not None else problems_module.FALLBACK_DTYPE
        return build_record(
            workload_slug=job.workload_slug,
            source_sha256=job.source_sha256 or context.problem.source_sha256,
            bindings=bindings,
            dtype=dtype,
            implementation=fields,
            environment=environment,
            protocol=protocol,
            status=result.status,
            failure_reason=result.failure_reason,
            samples_ms=result.samples_ms,
            compile_time_ms=result.compile_time_ms,
            correctness=result.correctness,
            observed_at=result.observed_at,
        )

    unmeasured = timer.protocol(job.timing, None, ROTATION_SETS)
    try:
        context.prepare()
    except _ProblemFailure as failure:
        release_memory(device)
        records = [record(fields, Result("failed", str(failure)), unmeasured) for fields, *_ in targets]
        checks["problem"] = str(failure)
        return {"records": records, "environment": environment, "checks": checks}

    assert context.module is not None
    extra = [("the problem module", context.module)]
    if isinstance(getattr(context.module, "Model", None), type):
        extra.append(("the problem's Model", context.module.Model))
    records = []
    for fields, factory, compiles, filename in targets:
        slug = fields["slug"]
        integrity = Integrity(_LIBRARY_SNAPSHOT, extra)
        measurement = _Measurement(context, integrity, filename)
        result = measurement.run(factory, compiles)
        protocol = getattr(measurement, "protocol", unmeasured)
        records.append(record(fields, result, protocol))
        checks["implementations"].append({"slug": slug, "status": result.status, "failure_reason": result.failure_reason,
                                          **measurement.checks})
    context.reference_model = None
    release_memory(device)
    return {"records": records, "environment": environment, "checks": checks}


_record_library()
