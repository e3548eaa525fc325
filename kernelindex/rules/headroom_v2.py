"""A roofline floor on one exact SKU, from a traced analysis and the SKU's datasheet peaks.

headroom-v2:
- bytes: the problem's inputs, outputs, parameters and buffers, each crossing DRAM exactly once
  (``input_bytes + output_bytes + param_bytes + buffer_bytes`` of the analysis);
- memory time: bytes / the SKU's DRAM bandwidth;
- compute time: each FLOP class (FLOPs = 2 × MACs) at the peak of the math it really runs under
  PyTorch's defaults, summed. For fp32 work: convolutions on TF32 tensor cores
  (``cudnn.allow_tf32`` on), matmuls at the FP32 peak (``float32_matmul_precision`` "highest"),
  everything else at the FP32 peak. For fp16/bf16 work convolutions and matmuls use the fp16/bf16
  tensor peak; everything else stays at the FP32 peak. A missing tensor-core figure falls back to
  the FP32 peak, and the floor says so;
- floor: max(memory time, compute time), in ns; the larger term names the bound.

The analysis is the dict ``ProblemTrace.to_json()`` stores per workload revision. Both terms are
optimistic on purpose (no cache misses, no launch overhead, perfect overlap), so the floor is a lower
bound, never a prediction: a run below it points at a wrong count or a wrong measurement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kernelindex.rules.display import format_count, format_duration_ns, format_ratio
from kernelindex.rules.dtypes import float_bytes, normalise_dtype
from kernelindex.rules.facts import HardwareFacts

HEADROOM_V2 = "headroom-v2"
ROOFLINE_VERSION = HEADROOM_V2

# PyTorch's defaults, as the tracer records them (kernelindex.ingest.problem_trace.ASSUMED_SETTINGS).
# Repeated here because the rules never import torch; used when an analysis does not carry its own.
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


def math_by_class(dtype: str, settings: Mapping[str, Any] | None = None) -> dict[str, str] | None:
    """The math each FLOP class runs in: {"conv": "TF32", "matmul": "FP32", "other": "FP32"} for fp32
    under PyTorch's defaults. None for a dtype with no datasheet peak to bound it (int8, fp8…)."""
    s = dict(DEFAULT_SETTINGS)
    s.update(settings or {})
    if dtype in ("fp16", "bf16"):
        tensor = dtype.upper()
        return {"conv": tensor, "matmul": tensor, "other": "FP32"}
    if dtype == "fp64":
        # No FP64 figure in the catalogue; FP64 never runs faster than FP32, so the FP32 peak still bounds it.
        return {"conv": "FP32", "matmul": "FP32", "other": "FP32"}
    if dtype == "fp32":
        conv = "TF32" if s.get("cudnn.allow_tf32", True) else "FP32"
        precision = str(s.get("float32_matmul_precision", "highest"))
        matmul = {"highest": "FP32", "high": "TF32", "medium": "BF16"}.get(precision, "FP32")
        return {"conv": conv, "matmul": matmul, "other": "FP32"}
    return None


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
    assumed_settings: dict[str, Any]
    bandwidth_gbps: float | None
    memory_ns: float | None  # None when the SKU has no DRAM bandwidth figure
    compute_ns: float | None  # None when a needed peak is missing
    compute_terms: tuple[ComputeTerm, ...]
    floor_ns: float | None
    bound: str | None  # "memory" or "compute"; None without a floor
    record_ms: float | None = None
    notes: tuple[str, ...] = ()
    unavailable_reason: str | None = None

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

    def with_record(self, record_ms: float | None) -> RooflineFloor:
        return replace(self, record_ms=record_ms)

    @property
    def floor_display(self) -> str | None:
        return None if self.floor_ns is None else format_duration_ns(self.floor_ns)

    @property
    def summary(self) -> str | None:
        """'Estimated floor 14.7 µs · compute-bound on H100 SXM · record 94.59× above it'.

        A record under the floor reads 'record 0.80× the floor: below it'."""
        if self.floor_ns is None:
            return None
        text = f"Estimated floor {self.floor_display} · {self.bound}-bound on {self.hardware.short_name}"
        ratio = self.ratio_above
        if ratio is not None:
            if ratio < 1:
                text += f" · record {format_ratio(ratio)} the floor: below it"
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
        """'assumed: cudnn.allow_tf32=True, float32_matmul_precision=highest'."""
        return "assumed: " + ", ".join(f"{k}={v}" for k, v in sorted(self.assumed_settings.items()))


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
) -> RooflineFloor:
    """The headroom-v2 floor of a traced problem on one exact SKU.

    ``dtype`` overrides the analysis's dtype (a configuration run in fp16 of a problem traced in fp32).
    When it is narrower than the traced dtype the traced bytes are scaled down by the width ratio (all
    of them, integers included, so the result stays a lower bound); a wider one leaves them as traced.
    ``bindings``, when given, must equal the bindings the analysis was traced at: a floor traced at
    batch 2 says nothing about batch 64.
    """
    empty = dict.fromkeys(FLOP_CLASSES, 0)
    if not analysis:
        return RooflineFloor(HEADROOM_V2, hardware, normalise_dtype(dtype), 0, empty, dict(DEFAULT_SETTINGS), None, None,
                             None, (), None, None, record_ms, (), "no traced analysis for this workload revision")

    traced_dtype = normalise_dtype(analysis.get("dtype")) or "fp32"
    work_dtype = normalise_dtype(dtype) or traced_dtype
    settings = dict(DEFAULT_SETTINGS)
    settings.update(analysis.get("assumed_settings") or {})
    flops_by_class = {c: int((analysis.get("flops_by_class") or {}).get(c) or 0) for c in FLOP_CLASSES}
    n_bytes = analysis_bytes(analysis)
    notes: list[str] = []

    def unavailable(reason: str) -> RooflineFloor:
        return RooflineFloor(HEADROOM_V2, hardware, work_dtype, n_bytes, flops_by_class, settings,
                             hardware.dram_bandwidth_gbps, None, None, (), None, None, record_ms, tuple(notes), reason)

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
    classes = math_by_class(work_dtype, settings)
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
    return RooflineFloor(HEADROOM_V2, hardware, work_dtype, n_bytes, flops_by_class, settings, bandwidth, memory_ns,
                         compute_ns, tuple(terms), floor_ns, bound, record_ms, tuple(notes), None)


def floors_for_catalogue(
    analysis: Mapping[str, Any] | None,
    catalogue: Iterable[HardwareFacts],
    dtype: str | None = None,
    bindings: Mapping[str, int] | None = None,
) -> list[RooflineFloor]:
    """The floor on every catalogued SKU, in catalogue order: what each GPU could at best do before
    anyone measured it. SKUs without a floor are kept, with their unavailable_reason."""
    return [roofline_floor(analysis, hw, None, dtype, bindings) for hw in catalogue]
