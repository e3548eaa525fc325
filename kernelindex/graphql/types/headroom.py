"""Headroom: how far a workload's record is above a lower bound on its latency. headroom-v1 bounds the
declared tensors by the family's reference datasheet bandwidth; headroom-v3 (kernelindex.rules.headroom_v2)
is a roofline floor on one exact SKU from the bytes and FLOPs counted on the meta device, at the fastest
math each FLOP class may use. A floor that a record (a passed, eligible run) beats says so (`defect`,
`beatenBy`): the floor is wrong, the run is not held for it."""

from __future__ import annotations

import strawberry

from kernelindex.graphql.enums import FloorBound, FlopClass, MathPrecision, of_rules
from kernelindex.graphql.types.catalogue import Hardware
from kernelindex.graphql.types.run import Run
from kernelindex.rules import headroom_v1 as headroom_rules
from kernelindex.rules import headroom_v2 as roofline
from kernelindex.rules.display import format_count, format_ratio
from kernelindex.rules.facts import RunFacts


@strawberry.type(description="headroom-v1: a lower bound on latency from the declared tensors and the DRAM bandwidth of the family's reference datasheet.")
class Headroom:
    result: strawberry.Private[headroom_rules.HeadroomV1]

    @strawberry.field(description="'headroom-v1'.")
    def method(self) -> str:
        return self.result.method

    @strawberry.field(description="Bytes of every declared tensor fully bound at the canonical configuration.")
    def bytes(self) -> float:
        return float(self.result.bytes)

    @strawberry.field(description="'1,204,224 bytes'.")
    def bytes_display(self) -> str:
        return self.result.bytes_display

    @strawberry.field(description="The floor in nanoseconds; null when it cannot be computed.")
    def floor_ns(self) -> float | None:
        return self.result.floor_ns

    @strawberry.field(description="'359 ns'.")
    def floor_display(self) -> str | None:
        return self.result.floor_display

    @strawberry.field(description="Which bound binds: always MEMORY, the DRAM bandwidth (headroom-v1 has no arithmetic term); null without a floor.")
    def bound(self) -> FloorBound | None:
        return FloorBound.MEMORY if self.result.floor_ns is not None else None

    @strawberry.field(description="The datasheet's DRAM bandwidth used, GB/s.")
    def bandwidth_gbps(self) -> float | None:
        return self.result.bandwidth_gbps

    @strawberry.field(description="The hardware whose datasheet was used.")
    def hardware(self) -> Hardware | None:
        return Hardware(facts=self.result.hardware) if self.result.hardware else None

    @strawberry.field(description="The record latency in milliseconds.")
    def record_ms(self) -> float | None:
        return self.result.record_ms

    @strawberry.field(description="Record latency / floor.")
    def ratio_above(self) -> float | None:
        return self.result.ratio_above

    @strawberry.field(description="'3866.81×'.")
    def ratio_above_display(self) -> str | None:
        ratio = self.result.ratio_above
        return None if ratio is None else format_ratio(ratio)

    @strawberry.field(description="'Estimated floor 359 ns · record 3866.81× above it'.")
    def summary(self) -> str | None:
        return self.result.summary

    @strawberry.field(description="'DRAM 359 ns · bandwidth-bound on H100 SXM'.")
    def bound_line(self) -> str | None:
        return self.result.bound_line

    @strawberry.field(description="'every declared tensor crosses HBM exactly once (3,350 GB/s, H100 SXM datasheet)'.")
    def basis_line(self) -> str | None:
        return self.result.basis_line

    @strawberry.field(description="'no arithmetic formula for this family: bandwidth floor only', 'estimate, not evidence'.")
    def notes(self) -> list[str]:
        return list(headroom_rules.V1_NOTES)

    @strawberry.field(description="What headroom-v1 is.")
    def description(self) -> str:
        return headroom_rules.V1_DESCRIPTION

    @strawberry.field(description="Why there is no floor, when there is none.")
    def unavailable_reason(self) -> str | None:
        return self.result.unavailable_reason



@strawberry.type(description="One compute term of a roofline floor: FLOPs of one class at the peak of the math it runs.")
class ComputeTerm:
    term: strawberry.Private[roofline.ComputeTerm]

    @strawberry.field(description="The kind of FLOPs.")
    def flop_class(self) -> FlopClass:
        return of_rules(FlopClass, self.term.flop_class)

    @strawberry.field(description="FLOPs of this class (2 per multiply-accumulate).")
    def flops(self) -> float:
        return float(self.term.flops)

    @strawberry.field(description="The math it is bounded by.")
    def math(self) -> MathPrecision:
        return of_rules(MathPrecision, self.term.math)

    @strawberry.field(description="Datasheet peak used, TFLOPS (dense).")
    def peak_tflops(self) -> float | None:
        return self.term.peak_tflops

    @strawberry.field(description="Time at that peak, ns.")
    def time_ns(self) -> float | None:
        return self.term.time_ns

    @strawberry.field(description="True when the SKU lacks the matching peak and a slower one stands in.")
    def fell_back(self) -> bool:
        return self.term.fell_back

    @strawberry.field(description="The term in words.")
    def line(self) -> str:
        return self.term.line


@strawberry.type(description="headroom-v3: a roofline lower bound on one exact SKU, max(bytes / DRAM bandwidth, Σ FLOPs / the peak of the fastest math each class may use: TF32 tensor cores for fp32 convolutions, matmuls and attention unless the protocol states otherwise).")
class RooflineFloor:
    floor: strawberry.Private[roofline.RooflineFloor]
    record_run: strawberry.Private[RunFacts | None] = None  # the run recordMs comes from

    @strawberry.field(description="'headroom-v3'.")
    def method(self) -> str:
        return self.floor.method

    @strawberry.field(description="The SKU.")
    def hardware(self) -> Hardware:
        return Hardware(facts=self.floor.hardware)

    @strawberry.field(description="Bytes moved once: inputs, outputs, parameters and buffers at the canonical configuration.")
    def bytes(self) -> float:
        return float(self.floor.bytes)

    @strawberry.field(description="'48,008,832 bytes'.")
    def bytes_display(self) -> str:
        return f"{format_count(self.floor.bytes)} bytes"

    @strawberry.field(description="All FLOPs counted on the meta device (2 per multiply-accumulate).")
    def flops(self) -> float:
        return float(self.floor.flops)

    @strawberry.field(description="Memory time at the DRAM bandwidth, ns; null without a bandwidth figure.")
    def memory_ns(self) -> float | None:
        return self.floor.memory_ns

    @strawberry.field(description="Compute time, ns; null when a needed peak is missing.")
    def compute_ns(self) -> float | None:
        return self.floor.compute_ns

    @strawberry.field(description="The compute terms by FLOP class.")
    def compute_terms(self) -> list[ComputeTerm]:
        return [ComputeTerm(term=t) for t in self.floor.compute_terms]

    @strawberry.field(description="The floor, ns; null when it cannot be computed.")
    def floor_ns(self) -> float | None:
        return self.floor.floor_ns

    @strawberry.field(description="'14.7 µs'.")
    def floor_display(self) -> str | None:
        return self.floor.floor_display

    @strawberry.field(description="Which bound binds; null without a floor.")
    def bound(self) -> FloorBound | None:
        return None if self.floor.bound is None else of_rules(FloorBound, self.floor.bound)

    @strawberry.field(description="The record on this SKU, ms, when there is one.")
    def record_ms(self) -> float | None:
        return self.floor.record_ms

    @strawberry.field(description="Record / floor.")
    def ratio_above(self) -> float | None:
        return self.floor.ratio_above

    @strawberry.field(description="'100.04×'.")
    def ratio_above_display(self) -> str | None:
        ratio = self.floor.ratio_above
        return None if ratio is None else format_ratio(ratio)

    @strawberry.field(description="When the record on this SKU (a passed, eligible run) is under the floor: why the floor, not the run, is wrong, e.g. 'record 8.45 ms is under this floor of 16.4 ms: the floor is wrong (a count or a peak), not the run'. Null when nothing beats it. The run is never held for it.")
    def defect(self) -> str | None:
        return self.floor.defect

    @strawberry.field(description="The run that beats the floor, when one does (see defect); null otherwise.")
    def beaten_by(self) -> Run | None:
        if self.floor.defect is None or self.record_run is None:
            return None
        return Run(facts=self.record_run)

    @strawberry.field(description="'Estimated floor 14.7 µs · compute-bound on H100 SXM · record 100.22× above it'; a record under it reads 'record 0.51× the floor: a floor defect'.")
    def summary(self) -> str | None:
        return self.floor.summary

    @strawberry.field(description="'DRAM 14.3 µs · compute 14.7 µs'.")
    def terms_line(self) -> str | None:
        return self.floor.terms_line

    @strawberry.field(description="Bytes, bandwidth and peaks used, and the datasheet.")
    def basis_line(self) -> str | None:
        return self.floor.basis_line

    @strawberry.field(description="The math assumed for each FLOP class (the fastest it may use) and the PyTorch settings the reference was traced under, which do not bind other implementations.")
    def settings_line(self) -> str:
        return self.floor.settings_line

    @strawberry.field(description="Caveats, e.g. a missing TF32 figure.")
    def notes(self) -> list[str]:
        return list(self.floor.notes)

    @strawberry.field(description="Why there is no floor, when there is none.")
    def unavailable_reason(self) -> str | None:
        return self.floor.unavailable_reason
