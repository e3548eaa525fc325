"""The schema's enums: every fixed set of values, in arguments and in results alike.

An argument and a result that speak of the same thing share one enum (a `Run.status` is a
`RunStatus`, as the `runs(status:)` filter is). The rules and services keep their own lower-case
strings; `of_rules` is the one place a rules value becomes an enum member, and a value the enum
does not know is an error there (a new rules value must be named here, not shown as a string).
Unknown values in a query are refused by GraphQL validation with a message that names the value
and the enum."""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

import strawberry

E = TypeVar("E", bound=Enum)


def of_rules(enum: type[E], value: object) -> E:
    """The member of `enum` whose value is the rules' `value`; an unknown value raises."""
    try:
        return enum(value)
    except ValueError:
        known = ", ".join(repr(m.value) for m in enum)
        raise ValueError(f"{value!r} is not a {enum.__name__} value (known: {known}): name it in kernelindex.graphql.enums") from None


def value_of(member: Enum | None) -> str | None:
    """The rules' string of an enum argument (None stays None)."""
    return None if member is None else member.value


@strawberry.enum(description="What a workload is.")
class WorkloadKind(Enum):
    MODEL = strawberry.enum_value("model", description="A whole model (KernelBench level 3).")
    OPERATOR = strawberry.enum_value("operator", description="A single operator (KernelBench level 1).")
    FUSION = strawberry.enum_value("fusion", description="A few operators fused into one (KernelBench level 2).")


@strawberry.enum(description="Where a figure comes from.")
class Evidence(Enum):
    REPORTED = strawberry.enum_value("reported", description="A source published it.")
    MEASURED = strawberry.enum_value("measured", description="A KernelIndex runner measured it.")


@strawberry.enum(description="trust-v2: how far a run's figure can be trusted, from the weakest rung to the strongest.")
class TrustLevel(Enum):
    REPORTED = strawberry.enum_value("Reported", description="Reported by a source; not independently reproduced.")
    REPRODUCIBLE = strawberry.enum_value(
        "Reproducible", description="Source available and raw samples stored, so anyone can check it.")
    VERIFIED = strawberry.enum_value("Verified", description="Measured by a KernelIndex worker; correctness checked.")
    REPLICATED = strawberry.enum_value(
        "Replicated", description="Measured by KernelIndex on two or more machines of the same SKU, agreeing.")


@strawberry.enum(description="Run outcome.")
class RunStatus(Enum):
    PASSED = strawberry.enum_value("passed", description="It ran and was timed (correctness checked where measured).")
    FAILED = strawberry.enum_value("failed", description="It did not complete; failureReason says why.")


@strawberry.enum(description="Order of a workload list.")
class WorkloadOrder(Enum):
    SUITE_LEVEL_PROBLEM = strawberry.enum_value("suite_level_problem", description="By suite, level, then problem number.")
    NAME = strawberry.enum_value("name", description="By name, case-insensitive.")
    SLUG = strawberry.enum_value("slug", description="By slug.")


@strawberry.enum(description="Order of a run list.")
class RunOrder(Enum):
    NEWEST = strawberry.enum_value("newest", description="Most recently stored first.")
    FASTEST = strawberry.enum_value("fastest", description="Lowest headline figure first (a KernelBench run's mean latency; another source's stated statistic of its metric); runs without one last. Figures of different metrics are not alike: compare within one protocol.")
    RECENTLY_OBSERVED = strawberry.enum_value("recently_observed", description="Most recently observed first.")


@strawberry.enum(description="Where a fleet job is: queued → running → passed, failed (with its reason) or cancelled.")
class JobState(Enum):
    QUEUED = strawberry.enum_value("queued", description="Waiting for a worker of its hardware.")
    RUNNING = strawberry.enum_value("running", description="A worker has started it.")
    PASSED = strawberry.enum_value("passed", description="Measured; its run is stored.")
    FAILED = strawberry.enum_value("failed", description="Ended without a figure; reason says why.")
    CANCELLED = strawberry.enum_value("cancelled", description="Withdrawn before it ended (cancelJob, `kernelindex jobs "
                                      "cancel`); reason says who and why. No run is stored for it.")


@strawberry.enum(description="Why a fleet job exists: a submitted implementation, or one of KernelIndex's own sweeps.")
class JobKind(Enum):
    SUBMISSION = strawberry.enum_value("submission", description="Made by submitImplementation or `kernelindex submit`.")
    SWEEP = strawberry.enum_value("sweep", description="Made by `kernelindex bench --enqueue`.")


@strawberry.enum(description="Who holds a workload's overall record.")
class HeadlineKind(Enum):
    BASELINE_UNBEATEN = strawberry.enum_value(
        "baseline_unbeaten", description="The source's designated baseline holds it: nothing beat it.")
    FASTEST = strawberry.enum_value("fastest", description="Another implementation holds it.")


@strawberry.enum(description="plausibility-v2: why a run is held out of records until a review approves it (never the source's baseline).")
class RunFlagCode(Enum):
    BELOW_FLOOR = strawberry.enum_value(
        "below_floor", description="Faster than the roofline floor of its SKU without a passed correctness check (a correct run under a floor is the floor's defect, not held).")
    IMPLAUSIBLE_SPEEDUP = strawberry.enum_value(
        "implausible_speedup", description="More than 10× faster than the baseline in its cohort.")


@strawberry.enum(description="Where a flagged run stands in review.")
class ReviewState(Enum):
    NEEDS_REVIEW = strawberry.enum_value("needs_review", description="Flagged and not reviewed: held out of records.")
    APPROVED = strawberry.enum_value("approved", description="Approved after review: it counts again.")
    REJECTED = strawberry.enum_value("rejected", description="Rejected after review: it stays out of records.")


@strawberry.enum(description="A review's decision on a flagged run.")
class ReviewDecision(Enum):
    APPROVED = strawberry.enum_value("approved", description="The run counts towards records again.")
    REJECTED = strawberry.enum_value("rejected", description="The run stays out of records.")


@strawberry.enum(description="How an axis of a workload behaves.")
class AxisBehaviour(Enum):
    VARIABLE = strawberry.enum_value("variable", description="A configuration may bind it to another value.")
    CONSTANT = strawberry.enum_value("constant", description="Fixed by the reference; `value` holds it.")
    DERIVED = strawberry.enum_value("derived", description="Computed from other axes by `expression`, as the source states it.")


@strawberry.enum(description="What a figure is: figures of two metrics never compare.")
class Metric(Enum):
    LATENCY = strawberry.enum_value("latency", description="Time per call: the metric of the headline records (the other metrics hold records of their own: Workload.recordsAt).")
    MEMORY = strawberry.enum_value("memory", description="Peak memory.")
    SCORE = strawberry.enum_value("score", description="A source's own score (GPU MODE's leaderboard score: a geometric mean over its cases).")


@strawberry.enum(description="The unit a metric's figures are stored in.")
class FigureUnit(Enum):
    MS = strawberry.enum_value("ms", description="Milliseconds (latency).")
    MB = strawberry.enum_value("MB", description="Megabytes of 2**20 bytes (memory, as Liger-Kernel states it).")
    S = strawberry.enum_value("s", description="Seconds (a source's score).")


@strawberry.enum(description="Whether the computation gives the same output for the same input.")
class Determinism(Enum):
    DETERMINISTIC = strawberry.enum_value("deterministic", description="Always the same output.")
    NONDETERMINISTIC = strawberry.enum_value("nondeterministic", description="The output may vary between calls.")
    UNSPECIFIED = strawberry.enum_value("unspecified", description="The reference does not say.")


@strawberry.enum(description="Whether an implementation's source can be read, and where.")
class SourceAvailability(Enum):
    MIRRORED = strawberry.enum_value("mirrored", description="KernelIndex keeps a copy of the source.")
    UPSTREAM = strawberry.enum_value("upstream", description="The source is public where it was published.")
    NONE = strawberry.enum_value("none", description="No public source.")


@strawberry.enum(description="An implementation's part in its source's comparisons.")
class ImplementationRole(Enum):
    BASELINE = strawberry.enum_value("baseline", description="The source's designated baseline.")
    CANDIDATE = strawberry.enum_value("candidate", description="Anything compared against the baseline.")


@strawberry.enum(description="deployability-v1: a reason an implementation is not deployable.")
class DeployabilityReasonCode(Enum):
    NO_PUBLIC_SOURCE = strawberry.enum_value("no_public_source", description="Its source is neither mirrored nor public.")
    NO_INSTALL_RECIPE = strawberry.enum_value("no_install_recipe", description="No way to install it is recorded.")
    LICENCE_UNKNOWN = strawberry.enum_value("licence_unknown", description="No known SPDX licence.")


@strawberry.enum(description="Which bound of a latency floor binds.")
class FloorBound(Enum):
    MEMORY = strawberry.enum_value(
        "memory", description="Moving the bytes at the DRAM bandwidth takes longest (headroom-v1 is always this one).")
    COMPUTE = strawberry.enum_value("compute", description="The FLOPs at their matching peaks take longest.")


@strawberry.enum(description="headroom-v3: the kinds of FLOPs counted apart, each at the peak of the fastest math it may use.")
class FlopClass(Enum):
    CONV = strawberry.enum_value("conv", description="Convolutions.")
    MATMUL = strawberry.enum_value("matmul", description="Matrix multiplications.")
    OTHER = strawberry.enum_value("other", description="Every other operation (FP32 math).")


@strawberry.enum(description="The math a compute term is bounded by: the datasheet peak it uses.")
class MathPrecision(Enum):
    FP32 = strawberry.enum_value("FP32", description="FP32, non-tensor.")
    TF32 = strawberry.enum_value("TF32", description="TF32 tensor cores, dense.")
    FP16 = strawberry.enum_value("FP16", description="FP16 tensor cores, dense.")
    BF16 = strawberry.enum_value("BF16", description="BF16 tensor cores, dense.")


@strawberry.enum(description="history-v1: what changed a record.")
class RecordEventKind(Enum):
    NEW_RECORD = strawberry.enum_value("new_record", description="A faster run took the record.")
    RESTORED = strawberry.enum_value(
        "restored", description="The holder was retracted or superseded: the next run holds the record again.")
    REVISION_CHANGED = strawberry.enum_value(
        "revision_changed", description="The workload's current revision moved upstream; names no run.")
    SNAPSHOT_RETRACTED = strawberry.enum_value(
        "snapshot_retracted", description="A snapshot holding some of the workload's runs was retracted; `reason` says why. Names no run.")


@strawberry.enum(description="compare-v1: a field runs are compared on.")
class CompareField(Enum):
    HARDWARE = strawberry.enum_value("hardware", description="The hardware SKU.")
    PROVIDER = strawberry.enum_value("provider", description="Cloud or lab.")
    TORCH_VERSION = strawberry.enum_value("torch_version", description="torch version.")
    CUDA_VERSION = strawberry.enum_value("cuda_version", description="CUDA version.")
    DRIVER_VERSION = strawberry.enum_value("driver_version", description="Driver version.")
    PYTHON_VERSION = strawberry.enum_value("python_version", description="Python version.")
    TRITON_VERSION = strawberry.enum_value("triton_version", description="Triton version.")
    PROTOCOL_NAME = strawberry.enum_value("protocol_name", description="Timing protocol.")
    PROTOCOL_VERSION = strawberry.enum_value("protocol_version", description="Version of the timing protocol.")
    BINDINGS = strawberry.enum_value("bindings", description="Axis bindings of the configuration.")
    DTYPE = strawberry.enum_value("dtype", description="Data type.")
    SOURCE_NAME = strawberry.enum_value("source_name", description="Source of the figure.")
    SOURCE_REVISION = strawberry.enum_value("source_revision", description="Revision of that source.")
    WORKLOAD_REVISION = strawberry.enum_value("workload_revision", description="Revision of the workload's reference source.")


@strawberry.enum(description="The input field of submitImplementation a problem is about.")
class SubmissionInputField(Enum):
    WORKLOAD = strawberry.enum_value("workload", description="`workload`: the slug.")
    FILE = strawberry.enum_value("file", description="`source` and `filename`: the module submitted.")
    TITLE = strawberry.enum_value("title", description="`title`.")
    HARDWARE = strawberry.enum_value("hardware", description="`hardware`: where to measure.")
    SOURCE_URL = strawberry.enum_value("sourceUrl", description="`sourceUrl`.")
    LICENCE = strawberry.enum_value("licence", description="`licence`: an SPDX licence expression.")
    BINDINGS = strawberry.enum_value("bindings", description="`bindings`: the configuration overrides.")
    REPLICAS = strawberry.enum_value("replicas", description="`replicas`.")
