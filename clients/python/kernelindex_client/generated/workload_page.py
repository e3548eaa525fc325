from datetime import date
from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import AxisBehaviour, Determinism, FloorBound, HeadlineKind, WorkloadKind
from .fragments import (
    ComparisonTable,
    ConfigurationLine,
    HardwareBadge,
    ImplementationBadge,
    ImplementationStanding,
    RecordRow,
    RunFigures,
)


class WorkloadPage(BaseModel):
    workload: Optional["WorkloadPageWorkload"]


class WorkloadPageWorkload(BaseModel):
    id: str
    slug: str
    suite: str
    level: Optional[int]
    problem_number: Optional[int] = Field(alias="problemNumber")
    name: str
    kind: WorkloadKind
    title: str
    description: Optional[str]
    eligible_run_count: int = Field(alias="eligibleRunCount")
    eligible_run_count_display: str = Field(alias="eligibleRunCountDisplay")
    last_observed: Optional[date] = Field(alias="lastObserved")
    last_observed_display: Optional[str] = Field(alias="lastObservedDisplay")
    canonical_configuration: "WorkloadPageWorkloadCanonicalConfiguration" = Field(
        alias="canonicalConfiguration"
    )
    headline: Optional["WorkloadPageWorkloadHeadline"]
    records: list["WorkloadPageWorkloadRecords"]
    not_measured: list["WorkloadPageWorkloadNotMeasured"] = Field(alias="notMeasured")
    comparison: Optional["WorkloadPageWorkloadComparison"]
    headroom: "WorkloadPageWorkloadHeadroom"
    implementations: list["WorkloadPageWorkloadImplementations"]
    semantics: Optional["WorkloadPageWorkloadSemantics"]
    identity: Optional["WorkloadPageWorkloadIdentity"]
    sources: list["WorkloadPageWorkloadSources"]
    policy: "WorkloadPageWorkloadPolicy"


WorkloadPageWorkloadCanonicalConfiguration = ConfigurationLine


class WorkloadPageWorkloadHeadline(BaseModel):
    kind: HeadlineKind
    label: str
    latency_ms: float = Field(alias="latencyMs")
    ci_half_width_ms: Optional[float] = Field(alias="ciHalfWidthMs")
    latency_display: str = Field(alias="latencyDisplay")
    plus_minus_display: Optional[str] = Field(alias="plusMinusDisplay")
    statistic_display: str = Field(alias="statisticDisplay")
    speedup_vs_baseline: Optional[float] = Field(alias="speedupVsBaseline")
    speedup_display: Optional[str] = Field(alias="speedupDisplay")
    evidence_line: str = Field(alias="evidenceLine")
    caveats: list[str]
    implementation: "WorkloadPageWorkloadHeadlineImplementation"
    run: "WorkloadPageWorkloadHeadlineRun"


WorkloadPageWorkloadHeadlineImplementation = ImplementationBadge
WorkloadPageWorkloadHeadlineRun = RunFigures
WorkloadPageWorkloadRecords = RecordRow


class WorkloadPageWorkloadNotMeasured(BaseModel):
    message: str
    hardware: "WorkloadPageWorkloadNotMeasuredHardware"


WorkloadPageWorkloadNotMeasuredHardware = HardwareBadge
WorkloadPageWorkloadComparison = ComparisonTable


class WorkloadPageWorkloadHeadroom(BaseModel):
    method: str
    floor_ns: Optional[float] = Field(alias="floorNs")
    floor_display: Optional[str] = Field(alias="floorDisplay")
    bound: Optional[FloorBound]
    record_ms: Optional[float] = Field(alias="recordMs")
    ratio_above: Optional[float] = Field(alias="ratioAbove")
    ratio_above_display: Optional[str] = Field(alias="ratioAboveDisplay")
    summary: Optional[str]
    bound_line: Optional[str] = Field(alias="boundLine")
    basis_line: Optional[str] = Field(alias="basisLine")
    notes: list[str]
    unavailable_reason: Optional[str] = Field(alias="unavailableReason")
    hardware: Optional["WorkloadPageWorkloadHeadroomHardware"]


WorkloadPageWorkloadHeadroomHardware = HardwareBadge
WorkloadPageWorkloadImplementations = ImplementationStanding


class WorkloadPageWorkloadSemantics(BaseModel):
    determinism: Determinism
    constraints: list[str]
    inputs: list["WorkloadPageWorkloadSemanticsInputs"]
    outputs: list["WorkloadPageWorkloadSemanticsOutputs"]
    axes: list["WorkloadPageWorkloadSemanticsAxes"]


class WorkloadPageWorkloadSemanticsInputs(BaseModel):
    name: str
    display: str


class WorkloadPageWorkloadSemanticsOutputs(BaseModel):
    name: str
    display: str


class WorkloadPageWorkloadSemanticsAxes(BaseModel):
    name: str
    behaviour: AxisBehaviour
    value: Optional[int]


class WorkloadPageWorkloadIdentity(BaseModel):
    sha_256: str = Field(alias="sha256")
    short: str
    version: str


class WorkloadPageWorkloadSources(BaseModel):
    id: str
    name: str
    revision: Optional[str]
    revision_date: Optional[date] = Field(alias="revisionDate")
    licence: Optional[str]
    url: Optional[str]
    display: str


class WorkloadPageWorkloadPolicy(BaseModel):
    title: str
    version: str
    url: str


WorkloadPage.model_rebuild()
WorkloadPageWorkload.model_rebuild()
WorkloadPageWorkloadHeadline.model_rebuild()
WorkloadPageWorkloadNotMeasured.model_rebuild()
WorkloadPageWorkloadHeadroom.model_rebuild()
WorkloadPageWorkloadSemantics.model_rebuild()
