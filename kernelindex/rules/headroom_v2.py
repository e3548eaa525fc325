"""A roofline floor on one exact SKU, from a traced analysis and the SKU's datasheet peaks.

headroom-v3 (headroom-v2 bounded fp32 matmuls and attention at the FP32 peak, PyTorch's
``float32_matmul_precision`` "highest" default; real runs beat it: KernelBench level 1 problem 97's
eager attention ran at about 130 TFLOPS on an H100 SXM whose FP32 peak is 67):
- bytes: the problem's inputs, outputs, parameters and buffers, each crossing DRAM exactly once
  (``input_bytes + output_bytes + param_bytes + buffer_bytes`` of the analysis);
- memory time: bytes / the SKU's DRAM bandwidth;
- compute time: each FLOP class (FLOPs = 2 × MACs) at the peak of the fastest math the hardware
  offers that the class may use under the protocol, summed. A floor bounds every implementation,
  not the reference under PyTorch's defaults: a hand-written kernel, a compiler, cuDNN's attention
  all use tensor cores whatever the reference's settings. For fp32 work: convolutions and matmuls
  (attention included: the tracer counts its two batched matmuls as matmul FLOPs) on TF32 tensor
  cores, everything else at the FP32 peak. For fp16/bf16 work convolutions and matmuls use the
  fp16/bf16 tensor peak; everything else stays at the FP32 peak. A protocol that states a slower
  math for a class (IEEE fp32 matmuls, say) is honoured through ``protocol_math``; no protocol
  catalogued today states one. A missing tensor-core figure falls back to the FP32 peak, and the
  floor says so;
- floor: max(memory time, compute time), in ns; the larger term names the bound.

The analysis is the dict ``ProblemTrace.to_json()`` stores per workload revision. Both terms are
optimistic on purpose (no cache misses, no launch overhead, perfect overlap), so the floor is a lower
bound, never a prediction. A passed, correct run below it is a defect of the floor (a wrong count or
a missing peak), reported on the floor (``defect``), never a reason to doubt the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kernelindex.rules.display import format_count, format_duration_ns, format_ratio
from kernelindex.rules.dtypes import float_bytes, normalise_dtype
from kernelindex.rules.facts import HardwareFacts

HEADROOM_V2 = "headroom-v2"  # the previous rule: fp32 matmuls at the FP32 peak
HEADROOM_V3 = "headroom-v3"
ROOFLINE_VERSION = HEADROOM_V3

# PyTorch's defaults, as the tracer records them (kernelindex.ingest.problem_trace.ASSUMED_SETTINGS).
# Repeated here because the rules never import torch; used when an analysis does not carry its own.
# headroom-v3 reports them (what the reference ran under) but does not bound by them.
DEFAULT_SETTINGS: dict[str, Any] = {"cudnn.allow_tf32": True, "float32_matmul_precision": "highest"}

FLOP_CLASSES = ("conv", "matmul", "other")
CLASS_WORDS = {"conv": "convolutions", "matmul": "matmuls", "other": "other operations"}

# Datasheet field and words for each kind of math.
PEAK_FIELDS = {"FP32": "fp32_tflops", "TF32": "tf32_tflops", "FP16": "fp16_tflops", "BF16": "bf16_tflops"}
PEAK_WORDS = {
    "FP32": "the FP32 peak",
    "TF32": "TF32 tensor cores",
    "FP16": "FP16 tensor cores",
    "BF16": "BF16 tensor cores",
}

BYTE_FIELDS = ("input_bytes", "output_bytes", "param_bytes", "buffer_bytes")


# The fastest math each FLOP class may use, by the dtype of the work.
FASTEST_MATH: dict[str, dict[str, str]] = {
    "fp32": {"conv": "TF32", "matmul": "TF32", "other": "FP32"},
    "fp16": {"conv": "FP16", "matmul": "FP16", "other": "FP32"},
    "bf16": {"conv": "BF16", "matmul": "BF16", "other": "FP32"},
    # No FP64 figure in the catalogue; FP64 never runs faster than FP32, so the FP32 peak still bounds it.
    "fp64": {"conv": "FP32", "matmul": "FP32", "other": "FP32"},
}


def math_by_class(dtype: str, protocol_math: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The math each FLOP class is bounded at: {"conv": "TF32", "matmul": "TF32", "other": "FP32"} for
    fp32. ``protocol_math`` is what a protocol states for a class ({"matmul": "FP32"}: IEEE fp32
    matmuls required) and replaces the fastest math for that class. None for a dtype with no
    datasheet peak to bound it (int8, fp8…)."""
    fastest = FASTEST_MATH.get(dtype)
    if fastest is None:
        return None
    out = dict(fastest)
    for flop_class, math in (protocol_math or {}).items():
        if flop_class not in FLOP_CLASSES:
            raise ValueError(f"protocol_math: unknown FLOP class {flop_class!r} (expected one of {', '.join(FLOP_CLASSES)})")
        if math not in PEAK_FIELDS:
            raise ValueError(f"protocol_math: unknown math {math!r} for {flop_class} (expected one of {', '.join(PEAK_FIELDS)})")
        out[flop_class] = math
    return out


@dataclass(frozen=True)
class ComputeTerm:
    flop_class: str  # "conv", "matmul" or "other"
    flops: int
    math: str  # the math the FLOPs are bounded at: "TF32", "FP32", "FP16", "BF16"
    peak_tflops: float
    time_ns: float
    fell_back: bool = False  # True when the intended tensor-core figure is missing and FP32 stands in

    @property
    def line(self) -> str:
        """'convolutions 7,254,245,376 FLOPs at 494.7 TFLOPS (TF32 tensor cores): 14.7 µs'."""
        return (
            f"{CLASS_WORDS[self.flop_class]} {format_count(self.flops)} FLOPs at {self.peak_tflops:g} TFLOPS "
            f"({PEAK_WORDS[self.math]}): {format_duration_ns(self.time_ns)}"
        )


@dataclass(frozen=True)
class RooflineFloor:
    method: str
    hardware: HardwareFacts
    dtype: str | None
    bytes: int
    flops_by_class: dict[str, int]
    assumed_settings: dict[str, Any]  # what the reference was traced under; reported, not bounded by
    bandwidth_gbps: float | None
    memory_ns: float | None  # None when the SKU has no DRAM bandwidth figure
    compute_ns: float | None  # None when a needed peak is missing
    compute_terms: tuple[ComputeTerm, ...]
    floor_ns: float | None
    bound: str | None  # "memory" or "compute"; None without a floor
    record_ms: float | None = None
    notes: tuple[str, ...] = ()
    unavailable_reason: str | None = None
    math: dict[str, str] | None = None  # the math each FLOP class is bounded at; None without a peak to use

    @property
    def flops(self) -> int:
        return sum(self.flops_by_class.values())

    @property
    def ratio_above(self) -> float | None:
        """record / floor; below 1 means the record claims to beat the floor."""
        if self.floor_ns is None or self.record_ms is None or self.floor_ns <= 0:
            return None
        return self.record_ms * 1e6 / self.floor_ns

    @property
    def below_floor(self) -> bool:
        ratio = self.ratio_above
        return ratio is not None and ratio < 1

    @property
    def defect(self) -> str | None:
        """Why the floor is wrong when the record (a passed run) beats it: a lower bound that a real
        run beats has a wrong count or a missing peak; the run is not doubted for it.
        'record 8.45 ms is under this floor of 16.4 ms: the floor is wrong (a count or a peak), not the run'."""
        if not self.below_floor or self.floor_ns is None or self.record_ms is None:
            return None
        return (
            f"record {format_duration_ns(self.record_ms * 1e6)} is under this floor of {format_duration_ns(self.floor_ns)}: "
            "the floor is wrong (a count or a peak), not the run"
        )

    def with_record(self, record_ms: float | None) -> RooflineFloor:
        return replace(self, record_ms=record_ms)

    @property
    def floor_display(self) -> str | None:
        return None if self.floor_ns is None else format_duration_ns(self.floor_ns)

    @property
    def summary(self) -> str | None:
        """'Estimated floor 14.7 µs · compute-bound on H100 SXM · record 94.59× above it'.

        A record under the floor reads 'record 0.80× the floor: a floor defect' (see `defect`)."""
        if self.floor_ns is None:
            return None
        text = f"Estimated floor {self.floor_display} · {self.bound}-bound on {self.hardware.short_name}"
        ratio = self.ratio_above
        if ratio is not None:
            if ratio < 1:
                text += f" · record {format_ratio(ratio)} the floor: a floor defect"
            else:
                text += f" · record {format_ratio(ratio)} above it"
        return text

    @property
    def terms_line(self) -> str | None:
        """'DRAM 14.3 µs · compute 14.7 µs'; a term the datasheet cannot give is left out."""
        parts = []
        if self.memory_ns is not None:
            parts.append(f"DRAM {format_duration_ns(self.memory_ns)}")
        if self.compute_ns is not None:
            parts.append(f"compute {format_duration_ns(self.compute_ns)}")
        return " · ".join(parts) or None

    @property
    def basis_line(self) -> str | None:
        """'48,008,832 bytes cross DRAM once at 3,350 GB/s; convolutions at 494.7 TFLOPS TF32; matmuls at
        67 TFLOPS FP32 · H100 SXM datasheet'."""
        if self.floor_ns is None:
            return None
        parts = []
        if self.memory_ns is not None and self.bandwidth_gbps is not None:  # memory_ns is set only with a bandwidth
            parts.append(f"{format_count(self.bytes)} bytes cross DRAM once at {format_count(self.bandwidth_gbps)} GB/s")
        for term in self.compute_terms:
            parts.append(f"{CLASS_WORDS[term.flop_class]} at {term.peak_tflops:g} TFLOPS {term.math}")
        return f"{'; '.join(parts)} · {self.hardware.short_name} datasheet"

    @property
    def settings_line(self) -> str:
        """'assumed: the fastest math allowed (convolutions TF32, matmuls TF32, other operations FP32);
        the reference ran with cudnn.allow_tf32=True, float32_matmul_precision=highest'."""
        traced = ", ".join(f"{k}={v}" for k, v in sorted(self.assumed_settings.items()))
        if self.math is None:
            return f"assumed: no arithmetic peak; the reference ran with {traced}"
        math = ", ".join(f"{CLASS_WORDS[c]} {self.math[c]}" for c in FLOP_CLASSES)
        return f"assumed: the fastest math allowed ({math}); the reference ran with {traced}"


def analysis_bytes(analysis: Mapping[str, Any]) -> int:
    """Inputs, outputs, parameters and buffers, each moved once."""
    return sum(int(analysis.get(name) or 0) for name in BYTE_FIELDS)


def _peak(hw: HardwareFacts, math: str) -> float | None:
    value = getattr(hw, PEAK_FIELDS[math])
    return float(value) if value else None


def roofline_floor(
    analysis: Mapping[str, Any] | None,
    hardware: HardwareFacts,
    record_ms: float | None = None,
    dtype: str | None = None,
    bindings: Mapping[str, int] | None = None,
    protocol_math: Mapping[str, str] | None = None,
) -> RooflineFloor:
    """The headroom-v3 floor of a traced problem on one exact SKU.

    ``dtype`` overrides the analysis's dtype (a configuration run in fp16 of a problem traced in fp32).
    When it is narrower than the traced dtype the traced bytes are scaled down by the width ratio (all
    of them, integers included, so the result stays a lower bound); a wider one leaves them as traced.
    ``bindings``, when given, must equal the bindings the analysis was traced at: a floor traced at
    batch 2 says nothing about batch 64. ``protocol_math``: the math a protocol states for a FLOP
    class (see math_by_class); without it each class gets the fastest math its dtype may use.
    """
    empty = dict.fromkeys(FLOP_CLASSES, 0)
    if not analysis:
        return RooflineFloor(HEADROOM_V3, hardware, normalise_dtype(dtype), 0, empty, dict(DEFAULT_SETTINGS), None, None,
                             None, (), None, None, record_ms, (), "no traced analysis for this workload revision")

    traced_dtype = normalise_dtype(analysis.get("dtype")) or "fp32"
    work_dtype = normalise_dtype(dtype) or traced_dtype
    settings = dict(DEFAULT_SETTINGS)
    settings.update(analysis.get("assumed_settings") or {})
    flops_by_class = {c: int((analysis.get("flops_by_class") or {}).get(c) or 0) for c in FLOP_CLASSES}
    n_bytes = analysis_bytes(analysis)
    notes: list[str] = []
    classes = math_by_class(work_dtype, protocol_math)

    def unavailable(reason: str) -> RooflineFloor:
        return RooflineFloor(HEADROOM_V3, hardware, work_dtype, n_bytes, flops_by_class, settings,
                             hardware.dram_bandwidth_gbps, None, None, (), None, None, record_ms, tuple(notes), reason,
                             classes)

    traced_bindings = analysis.get("bindings")
    if bindings is not None and traced_bindings is not None and dict(bindings) != dict(traced_bindings):
        asked = ", ".join(f"{k}={v}" for k, v in sorted(bindings.items()))
        traced = ", ".join(f"{k}={v}" for k, v in sorted(traced_bindings.items()))
        return unavailable(f"analysis traced at {traced}, not at {asked}")

    if work_dtype != traced_dtype:
        old, new = float_bytes(traced_dtype), float_bytes(work_dtype)
        if old and new and new < old:
            n_bytes = n_bytes * new // old
            notes.append(f"bytes scaled from {traced_dtype} to {work_dtype} (×{new / old:g})")

    # Memory term.
    bandwidth = float(hardware.dram_bandwidth_gbps) if hardware.dram_bandwidth_gbps else None
    memory_ns = n_bytes / bandwidth if bandwidth else None  # bytes / (GB/s) = ns

    # Compute term.
    terms: list[ComputeTerm] = []
    compute_ns: float | None = None
    compute_missing: str | None = None
    if classes is None:
        compute_missing = f"no datasheet peak for {work_dtype} arithmetic"
    else:
        if work_dtype == "fp64" and any(flops_by_class.values()):
            notes.append("no FP64 figure in the catalogue: fp64 work bounded at the FP32 peak")
        fallbacks: dict[str, list[str]] = {}
        for c in FLOP_CLASSES:
            flops = flops_by_class[c]
            if not flops:
                continue
            math = classes[c]
            peak = _peak(hardware, math)
            fell_back = False
            if peak is None and math != "FP32":
                fallbacks.setdefault(math, []).append(CLASS_WORDS[c])
                math, peak, fell_back = "FP32", _peak(hardware, "FP32"), True
            if peak is None:
                compute_missing = f"no datasheet FP32 peak for {hardware.short_name}"
                break
            # FLOPs / (TFLOPS × 1e12) s = FLOPs / (TFLOPS × 1e3) ns.
            terms.append(ComputeTerm(c, flops, math, peak, flops / (peak * 1e3), fell_back))
        for math, words in fallbacks.items():
            notes.append(f"no {math} tensor cores on {hardware.short_name}: {' and '.join(words)} bounded at the FP32 peak")
        if compute_missing is None:
            compute_ns = sum(t.time_ns for t in terms)
    if compute_missing is not None:
        terms = []
        if memory_ns is not None:
            notes.append(f"{compute_missing}: bandwidth bound only")
    elif memory_ns is None and compute_ns is not None:
        notes.append(f"no datasheet DRAM bandwidth for {hardware.short_name}: compute bound only")

    if memory_ns is None and compute_ns is None:
        reason = (
            f"no datasheet DRAM bandwidth for {hardware.short_name} and {compute_missing}"
            if compute_missing else f"no datasheet DRAM bandwidth for {hardware.short_name} and no FLOPs counted"
        )
        return unavailable(reason)
    floor_ns = max(memory_ns or 0.0, compute_ns or 0.0)
    if floor_ns <= 0:
        return unavailable("nothing to move or compute")
    # The larger term binds; an exact tie is called memory-bound.
    bound = "compute" if (compute_ns or 0.0) > (memory_ns or 0.0) else "memory"
    return RooflineFloor(HEADROOM_V3, hardware, work_dtype, n_bytes, flops_by_class, settings, bandwidth, memory_ns,
                         compute_ns, tuple(terms), floor_ns, bound, record_ms, tuple(notes), None, classes)


def floors_for_catalogue(
    analysis: Mapping[str, Any] | None,
    catalogue: Iterable[HardwareFacts],
    dtype: str | None = None,
    bindings: Mapping[str, int] | None = None,
    protocol_math: Mapping[str, str] | None = None,
) -> list[RooflineFloor]:
    """The floor on every catalogued SKU, in catalogue order: what each GPU could at best do before
    anyone measured it. SKUs without a floor are kept, with their unavailable_reason."""
    return [roofline_floor(analysis, hw, None, dtype, bindings, protocol_math) for hw in catalogue]
