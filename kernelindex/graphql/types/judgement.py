"""The rules beyond the reference pages, as API types: the roofline floor (headroom-v2), record
history events, plausibility flags and reviews, deployability, and run comparison."""

from __future__ import annotations

from datetime import datetime

import strawberry

from kernelindex.graphql.types.catalogue import Hardware
from kernelindex.graphql.types.run import Run
from kernelindex.rules import compare as compare_rules
from kernelindex.rules import headroom_v2 as roofline
from kernelindex.rules.deployability import Deployability as DeployabilityResult
from kernelindex.rules.display import format_count, format_ratio


@strawberry.type(description="One compute term of a roofline floor: FLOPs of one class at the peak of the math it runs.")
class ComputeTerm:
    term: strawberry.Private[roofline.ComputeTerm]

    @strawberry.field(description="'conv', 'matmul' or 'other'.")
    def flop_class(self) -> str:
        return self.term.flop_class

    @strawberry.field(description="FLOPs of this class (2 per multiply-accumulate).")
    def flops(self) -> float:
        return float(self.term.flops)

    @strawberry.field(description="The math it is bounded by: 'TF32', 'FP32', 'FP16' or 'BF16'.")
    def math(self) -> str:
        return self.term.math

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


@strawberry.type(description="headroom-v2: a roofline lower bound on one exact SKU, max(bytes / DRAM bandwidth, Σ FLOPs / matching peak).")
class RooflineFloor:
    floor: strawberry.Private[roofline.RooflineFloor]

    @strawberry.field(description="'headroom-v2'.")
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

    @strawberry.field(description="Which bound binds: 'memory' or 'compute'.")
    def bound(self) -> str | None:
        return self.floor.bound

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

    @strawberry.field(description="'Estimated floor 14.7 µs · compute-bound on H100 SXM · record 100.04× above it'.")
    def summary(self) -> str | None:
        return self.floor.summary

    @strawberry.field(description="'DRAM 14.3 µs · compute 14.7 µs'.")
    def terms_line(self) -> str | None:
        return self.floor.terms_line

    @strawberry.field(description="Bytes, bandwidth and peaks used, and the datasheet.")
    def basis_line(self) -> str | None:
        return self.floor.basis_line

    @strawberry.field(description="The PyTorch settings assumed for the math, e.g. cudnn.allow_tf32=True.")
    def settings_line(self) -> str:
        return self.floor.settings_line

    @strawberry.field(description="Caveats, e.g. a missing TF32 figure.")
    def notes(self) -> list[str]:
        return list(self.floor.notes)

    @strawberry.field(description="Why there is no floor, when there is none.")
    def unavailable_reason(self) -> str | None:
        return self.floor.unavailable_reason


@strawberry.type(description="A change of record holder in one cohort. Events are appended, never deleted.")
class RecordEvent:
    row: strawberry.Private[object]
    run_facts: strawberry.Private[object | None]
    previous_facts: strawberry.Private[object | None]
    workload_slug_value: strawberry.Private[str]

    @strawberry.field(description="'new_record' or 'restored' (the holder was retracted or superseded).")
    def kind(self) -> str:
        return self.row.kind

    @strawberry.field(description="Workload slug.")
    def workload_slug(self) -> str:
        return self.workload_slug_value

    @strawberry.field(description="The holder after the event; null when no eligible run remains.")
    def run(self) -> Run | None:
        return Run(facts=self.run_facts) if self.run_facts else None

    @strawberry.field(description="The holder before the event.")
    def previous_run(self) -> Run | None:
        return Run(facts=self.previous_facts) if self.previous_facts else None

    @strawberry.field(description="(previous − new) / previous × 100; negative when a restore is slower.")
    def improvement_percent(self) -> float | None:
        return self.row.improvement_percent

    @strawberry.field(description="When it happened.")
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field(description="The event in words.")
    def words(self) -> str:
        from kernelindex.rules.history import EventDraft

        draft = EventDraft(
            self.row.kind, self.row.run_id, self.row.previous_run_id, self.row.improvement_percent,
            self.run_facts.mean_ms if self.run_facts else None,
            self.previous_facts.mean_ms if self.previous_facts else None,
        )
        return draft.words


@strawberry.type(description="Why an implementation is or is not deployable.")
class DeployabilityReason:
    code: str = strawberry.field(description="'no_public_source', 'no_install_recipe' or 'licence_unknown'.")
    words: str = strawberry.field(description="The reason in words.")


@strawberry.type(description="deployability-v1: deployable only with source available, a known SPDX licence and an install recipe.")
class Deployability:
    result: strawberry.Private[DeployabilityResult]

    @strawberry.field(description="Whether it is deployable.")
    def deployable(self) -> bool:
        return self.result.deployable

    @strawberry.field(description="Why not, when it is not.")
    def reasons(self) -> list[DeployabilityReason]:
        return [DeployabilityReason(code=r.code, words=r.words) for r in self.result.reasons]

    @strawberry.field(description="Whether the licence is permissive (Apache-2.0, MIT, BSD-2/3-Clause, ISC, Zlib, BSL-1.0).")
    def permissive(self) -> bool:
        return self.result.permissive

    @strawberry.field(description="The verdict in words.")
    def words(self) -> str:
        return self.result.words


@strawberry.type(description="One field compared across runs.")
class FieldDifference:
    diff: strawberry.Private[compare_rules.FieldDiff]

    @strawberry.field(description="Field name, e.g. 'hardware'.")
    def field(self) -> str:
        return self.diff.field

    @strawberry.field(description="Its label in words.")
    def label(self) -> str:
        return self.diff.label

    @strawberry.field(description="The value for each run, in the order asked.")
    def values(self) -> list[str]:
        return [str(v) for v in self.diff.values]

    @strawberry.field(description="Whether the runs differ on it.")
    def differs(self) -> bool:
        return self.diff.differs


@strawberry.type(description="compare-v1: field-by-field differences of 2 to 8 runs, and a winner only when all are in one cohort.")
class RunComparison:
    result: strawberry.Private[compare_rules.Comparison]
    runs_by_id: strawberry.Private[dict]

    @strawberry.field(description="The runs compared, in the order asked.")
    def runs(self) -> list[Run]:
        return [Run(facts=self.runs_by_id[i]) for i in self.result.run_ids]

    @strawberry.field(description="Every field compared.")
    def fields(self) -> list[FieldDifference]:
        return [FieldDifference(diff=d) for d in self.result.fields]

    @strawberry.field(description="Only the fields that differ.")
    def differences(self) -> list[FieldDifference]:
        return [FieldDifference(diff=d) for d in self.result.differences]

    @strawberry.field(description="Whether all runs are in one cohort (same workload revision, configuration, protocol, environment).")
    def comparable(self) -> bool:
        return self.result.comparable

    @strawberry.field(description="The fastest run, only when comparable.")
    def winner(self) -> Run | None:
        return Run(facts=self.result.winner) if self.result.winner is not None else None

    @strawberry.field(description="The first difference that makes them incomparable, in words.")
    def incomparable_because(self) -> str | None:
        return self.result.incomparable_because
