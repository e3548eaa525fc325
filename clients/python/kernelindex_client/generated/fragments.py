from datetime import date, datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import (
    Evidence,
    FigureUnit,
    JobKind,
    JobState,
    Metric,
    RecordEventKind,
    RunStatus,
    TrustLevel,
)


class ConfigurationLine(BaseModel):
    dtype: str
    display: str
    bindings: list["ConfigurationLineBindings"]


class ConfigurationLineBindings(BaseModel):
    axis: str
    value: int


class ImplementationBadge(BaseModel):
    id: str
    slug: str
    title: str
    framework: str
    licence: Optional[str]
    is_baseline: bool = Field(alias="isBaseline")
    availability_label: str = Field(alias="availabilityLabel")
    runtime_display: str = Field(alias="runtimeDisplay")


class HardwareBadge(BaseModel):
    id: str
    sku: str
    short_name: str = Field(alias="shortName")
    family: str
    vendor: str


class RunFigures(BaseModel):
    id: str
    database_id: int = Field(alias="databaseId")
    workload_slug: str = Field(alias="workloadSlug")
    status: RunStatus
    evidence: Evidence
    trust_level: TrustLevel = Field(alias="trustLevel")
    trust_label: str = Field(alias="trustLabel")
    stale: bool
    mean_ms: Optional[float] = Field(alias="meanMs")
    ci_half_width_ms: Optional[float] = Field(alias="ciHalfWidthMs")
    latency_display: Optional[str] = Field(alias="latencyDisplay")
    plus_minus_display: Optional[str] = Field(alias="plusMinusDisplay")
    statistic_display: Optional[str] = Field(alias="statisticDisplay")
    observed_at: datetime = Field(alias="observedAt")
    observed_display: str = Field(alias="observedDisplay")
    review_status: Optional[str] = Field(alias="reviewStatus")
    caveats: list[str]
    configuration: "RunFiguresConfiguration"
    implementation: "RunFiguresImplementation"
    environment: "RunFiguresEnvironment"


class RunFiguresConfiguration(ConfigurationLine):
    pass


class RunFiguresImplementation(ImplementationBadge):
    pass


class RunFiguresEnvironment(BaseModel):
    id: str
    provider: Optional[str]
    label: Optional[str]
    hardware: "RunFiguresEnvironmentHardware"


class RunFiguresEnvironmentHardware(HardwareBadge):
    pass


class ComparisonTable(BaseModel):
    title: str
    header: str
    gpu: str
    protocol_name: str = Field(alias="protocolName")
    statistic: str
    result_count: int = Field(alias="resultCount")
    result_count_display: str = Field(alias="resultCountDisplay")
    last_observed: Optional[date] = Field(alias="lastObserved")
    configuration: "ComparisonTableConfiguration"
    rows: list["ComparisonTableRows"]


class ComparisonTableConfiguration(ConfigurationLine):
    pass


class ComparisonTableRows(BaseModel):
    rank: int
    rank_display: str = Field(alias="rankDisplay")
    is_baseline: bool = Field(alias="isBaseline")
    latency_ms: float = Field(alias="latencyMs")
    interval_ms: list[float] = Field(alias="intervalMs")
    latency_display: str = Field(alias="latencyDisplay")
    plus_minus_display: Optional[str] = Field(alias="plusMinusDisplay")
    vs_first: float = Field(alias="vsFirst")
    vs_first_display: str = Field(alias="vsFirstDisplay")
    speedup_vs_baseline: Optional[float] = Field(alias="speedupVsBaseline")
    verdict: Optional[str]
    verdict_with_interval: Optional[str] = Field(alias="verdictWithInterval")
    exact_configuration: bool = Field(alias="exactConfiguration")
    notes: list[str]
    summary: str
    trust_level: TrustLevel = Field(alias="trustLevel")
    trust_label: str = Field(alias="trustLabel")
    cross_check: Optional[str] = Field(alias="crossCheck")
    observed_display: str = Field(alias="observedDisplay")
    stale: bool
    implementation: "ComparisonTableRowsImplementation"
    run: "ComparisonTableRowsRun"


class ComparisonTableRowsImplementation(ImplementationBadge):
    pass


class ComparisonTableRowsRun(RunFigures):
    pass


class EnvironmentKey(BaseModel):
    id: str
    database_id: int = Field(alias="databaseId")
    provider: Optional[str]
    fingerprint: str
    hardware: "EnvironmentKeyHardware"


class EnvironmentKeyHardware(BaseModel):
    id: str
    sku: str
    family: str


class ImplementationStanding(BaseModel):
    best_latency_ms: float = Field(alias="bestLatencyMs")
    best_latency_display: str = Field(alias="bestLatencyDisplay")
    vs_best: float = Field(alias="vsBest")
    vs_best_display: str = Field(alias="vsBestDisplay")
    trust_level: TrustLevel = Field(alias="trustLevel")
    evidence_kinds: list[Evidence] = Field(alias="evidenceKinds")
    availability: str
    runtime_display: str = Field(alias="runtimeDisplay")
    implementation: "ImplementationStandingImplementation"
    best_run: "ImplementationStandingBestRun" = Field(alias="bestRun")


class ImplementationStandingImplementation(ImplementationBadge):
    pass


class ImplementationStandingBestRun(BaseModel):
    id: str
    database_id: int = Field(alias="databaseId")


class JobProgress(BaseModel):
    id: str
    database_id: int = Field(alias="databaseId")
    state: JobState
    kind: JobKind
    reason: Optional[str]
    hardware: str
    replica: int
    attempts: int
    max_attempts: int = Field(alias="maxAttempts")
    worker: Optional[str]
    created_at: datetime = Field(alias="createdAt")
    started_at: Optional[datetime] = Field(alias="startedAt")
    finished_at: Optional[datetime] = Field(alias="finishedAt")
    duration_s: Optional[float] = Field(alias="durationS")
    implementation_slug: str = Field(alias="implementationSlug")
    workload: Optional["JobProgressWorkload"]
    run: Optional["JobProgressRun"]
    baseline_run: Optional["JobProgressBaselineRun"] = Field(alias="baselineRun")


class JobProgressWorkload(BaseModel):
    id: str
    slug: str
    title: str


class JobProgressRun(RunFigures):
    pass


class JobProgressBaselineRun(BaseModel):
    id: str
    mean_ms: Optional[float] = Field(alias="meanMs")
    latency_display: Optional[str] = Field(alias="latencyDisplay")


class PageCursor(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    has_previous_page: bool = Field(alias="hasPreviousPage")
    start_cursor: Optional[str] = Field(alias="startCursor")
    end_cursor: Optional[str] = Field(alias="endCursor")


class RecordChange(BaseModel):
    id: str
    kind: RecordEventKind
    workload_slug: str = Field(alias="workloadSlug")
    improvement_percent: Optional[float] = Field(alias="improvementPercent")
    created_at: datetime = Field(alias="createdAt")
    words: str
    run: Optional["RecordChangeRun"]
    previous_run: Optional["RecordChangePreviousRun"] = Field(alias="previousRun")


class RecordChangeRun(RunFigures):
    pass


class RecordChangePreviousRun(BaseModel):
    id: str
    database_id: int = Field(alias="databaseId")
    mean_ms: Optional[float] = Field(alias="meanMs")
    latency_display: Optional[str] = Field(alias="latencyDisplay")


class RecordRow(BaseModel):
    label: str
    latency_ms: Optional[float] = Field(alias="latencyMs")
    latency_display: Optional[str] = Field(alias="latencyDisplay")
    run_count: int = Field(alias="runCount")
    implementation: "RecordRowImplementation"
    run: "RecordRowRun"


class RecordRowImplementation(ImplementationBadge):
    pass


class RecordRowRun(BaseModel):
    id: str
    database_id: int = Field(alias="databaseId")


class RecordTableRow(BaseModel):
    label: str
    metric: Metric
    figure: float
    figure_unit: FigureUnit = Field(alias="figureUnit")
    latency_ms: Optional[float] = Field(alias="latencyMs")
    run_count: int = Field(alias="runCount")
    implementation: "RecordTableRowImplementation"
    environment: "RecordTableRowEnvironment"
    run: "RecordTableRowRun"


class RecordTableRowImplementation(BaseModel):
    id: str
    slug: str


class RecordTableRowEnvironment(EnvironmentKey):
    pass


class RecordTableRowRun(BaseModel):
    id: str
    database_id: int = Field(alias="databaseId")
    num_trials: Optional[int] = Field(alias="numTrials")
    ci_half_width_ms: Optional[float] = Field(alias="ciHalfWidthMs")
    evidence: Evidence
    trust_level: TrustLevel = Field(alias="trustLevel")
    observed_at: datetime = Field(alias="observedAt")


class RunRow(BaseModel):
    id: str
    database_id: int = Field(alias="databaseId")
    workload_slug: str = Field(alias="workloadSlug")
    suite: str
    level: Optional[int]
    problem_number: Optional[int] = Field(alias="problemNumber")
    workload_name: str = Field(alias="workloadName")
    configuration: "RunRowConfiguration"
    implementation: "RunRowImplementation"
    environment: "RunRowEnvironment"
    protocol: "RunRowProtocol"
    source: "RunRowSource"
    status: RunStatus
    failure_reason: Optional[str] = Field(alias="failureReason")
    metric: Metric
    figure: Optional[float]
    figure_unit: FigureUnit = Field(alias="figureUnit")
    mean_ms: Optional[float] = Field(alias="meanMs")
    std_ms: Optional[float] = Field(alias="stdMs")
    min_ms: Optional[float] = Field(alias="minMs")
    max_ms: Optional[float] = Field(alias="maxMs")
    median_ms: Optional[float] = Field(alias="medianMs")
    p_5_ms: Optional[float] = Field(alias="p5Ms")
    p_95_ms: Optional[float] = Field(alias="p95Ms")
    num_trials: Optional[int] = Field(alias="numTrials")
    ci_half_width_ms: Optional[float] = Field(alias="ciHalfWidthMs")
    compile_time_ms: Optional[float] = Field(alias="compileTimeMs")
    observed_at: datetime = Field(alias="observedAt")
    evidence: Evidence
    trust_level: TrustLevel = Field(alias="trustLevel")
    trust_label: str = Field(alias="trustLabel")
    stale: bool
    superseded: bool
    retracted: bool


class RunRowConfiguration(BaseModel):
    dtype: str
    bindings: list["RunRowConfigurationBindings"]


class RunRowConfigurationBindings(BaseModel):
    axis: str
    value: int


class RunRowImplementation(BaseModel):
    id: str
    slug: str
    licence: Optional[str]


class RunRowEnvironment(EnvironmentKey):
    pass


class RunRowProtocol(BaseModel):
    id: str
    name: str
    version: str
    statistic: str


class RunRowSource(BaseModel):
    id: str
    name: str
    revision: Optional[str]


class WorkloadKey(BaseModel):
    id: str
    slug: str
    suite: str
    level: Optional[int]
    name: str


ConfigurationLine.model_rebuild()
ImplementationBadge.model_rebuild()
HardwareBadge.model_rebuild()
RunFigures.model_rebuild()
ComparisonTable.model_rebuild()
EnvironmentKey.model_rebuild()
ImplementationStanding.model_rebuild()
JobProgress.model_rebuild()
PageCursor.model_rebuild()
RecordChange.model_rebuild()
RecordRow.model_rebuild()
RecordTableRow.model_rebuild()
RunRow.model_rebuild()
WorkloadKey.model_rebuild()
