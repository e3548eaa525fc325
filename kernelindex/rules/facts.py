"""The plain facts the rules reason over, detached from the ORM so the rules stay pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime


@dataclass(frozen=True)
class HardwareFacts:
    id: int
    sku: str
    short_name: str
    family: str
    priority: bool = False
    reference_for_family: bool = False
    dram_bandwidth_gbps: float | None = None
    fp32_tflops: float | None = None
    tf32_tflops: float | None = None
    fp16_tflops: float | None = None
    bf16_tflops: float | None = None
    datasheet_source: str | None = None
    datasheet_url: str | None = None
    vendor: str = ""
    architecture: str | None = None
    driver_product_names: tuple[str, ...] = ()
    has_datasheet: bool = True
    memory_gb: float | None = None
    l2_mb: float | None = None
    sm_count: int | None = None
    tdp_w: float | None = None


@dataclass(frozen=True)
class ImplementationFacts:
    id: int
    slug: str
    title: str
    framework: str = "PyTorch"
    language: str = "python"
    runtime_id: str = ""
    role: str = "candidate"
    licence: str | None = None
    source_availability: str = "none"
    source_url: str | None = None
    install_recipe: str | None = None
    # As a source states them (kernelindex.com exports: authors, project, artifact; Liger: the version).
    authors: tuple[str, ...] = ()
    project: str | None = None
    target_architectures: tuple[str, ...] = ()
    artifact_sha256: str | None = None
    artifact_bytes: int | None = None
    version: str | None = None

    def __post_init__(self) -> None:
        # Rows give arrays as lists; the facts are frozen and shared, so they hold tuples.
        for name in ("authors", "target_architectures"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value or ()))

    @property
    def is_baseline(self) -> bool:
        return self.role == "baseline"


@dataclass(frozen=True)
class EnvironmentFacts:
    id: int
    hardware: HardwareFacts
    provider: str | None = None
    fingerprint: str = ""
    label: str | None = None
    torch_version: str | None = None
    cuda_version: str | None = None
    driver_version: str | None = None
    python_version: str | None = None
    triton_version: str | None = None


@dataclass(frozen=True)
class ProtocolFacts:
    id: int
    name: str
    version: str
    statistic: str = "mean"
    timer: str | None = None
    warmup: int | None = None
    trials: int | None = None
    l2_flush: bool | None = None
    # What its figures are and their unit: latency in ms, memory in MB, a source's own score in s.
    metric: str = "latency"
    unit: str = "ms"


@dataclass(frozen=True)
class SourceFacts:
    id: int
    name: str
    licence: str | None = None
    url: str | None = None
    revision: str | None = None
    revision_date: date | None = None
    route: str | None = None  # the file the snapshot came through (an export's name), beside the source
    # A whole snapshot of its source (an export, a results file) with a newer one: its runs count for nothing.
    outdated: bool = False
    terms: str | None = None
    attribution: str | None = None


@dataclass(frozen=True)
class RunFacts:
    id: int
    workload_revision_id: int
    bindings: dict[str, int]
    dtype: str
    configuration_key: str
    implementation: ImplementationFacts
    environment: EnvironmentFacts
    protocol: ProtocolFacts
    source: SourceFacts
    status: str
    mean_ms: float | None
    std_ms: float | None
    num_trials: int | None
    observed_at: datetime
    evidence: str
    min_ms: float | None = None
    max_ms: float | None = None
    samples_ms: tuple[float, ...] | None = None
    superseded: bool = False
    retracted: bool = False
    correctness_passed: bool | None = None
    median_ms: float | None = None
    p5_ms: float | None = None
    p95_ms: float | None = None
    compile_time_ms: float | None = None
    failure_reason: str | None = None
    workload_id: int = 0
    # Flagged by plausibility-v1 and not approved by a review: kept out of records.
    held_for_review: bool = False
    # The registered machine of the fleet worker that stored the run; None for every run from
    # outside the fleet (the trust ladder's Verified and Replicated need it).
    fleet_machine_id: str | None = None
    # "measured" where a record from outside said so: the source's claim, kept; the run is "reported".
    claimed_evidence: str | None = None
    # The headline figure: the protocol's statistic of its metric, in its unit (a KernelBench run's
    # mean latency; Liger's median; GPU MODE's score). Runs rank by it, only within a cohort (one
    # protocol, so one metric, statistic and unit). The spread the source states, at its quantiles.
    figure: float | None = None
    figure_low: float | None = None
    figure_high: float | None = None
    low_quantile: float | None = None
    high_quantile: float | None = None
    source_speedup: float | None = None  # a speedup the source itself states, shown as the source's
    upstream_id: str = ""  # the source's own id of the run ('' for a run record, which names none)

    def __post_init__(self) -> None:
        # A mean-latency protocol's headline figure is the mean (kernelindex.run/1 states no other): facts
        # made without a figure (a stored row always has one) take it.
        if self.figure is None and self.mean_ms is not None and self.protocol.metric == "latency" and self.protocol.statistic == "mean":
            object.__setattr__(self, "figure", self.mean_ms)

    @property
    def latency_ms(self) -> float:
        """The headline figure of a latency run that must have one (every passed run has a figure: the
        runs table's passed_has_figure check); headline records hold latency runs only (eligibility-v3)."""
        if self.figure is None or self.protocol.metric != "latency":
            raise ValueError(f"run {self.id} has no latency figure")
        return self.figure

    @property
    def cohort_key(self) -> tuple[int, str, int, int]:
        """Runs compare only inside a cohort: same revision, configuration, protocol and environment."""
        return (self.workload_revision_id, self.configuration_key, self.protocol.id, self.environment.id)


@dataclass(frozen=True)
class WorkloadFacts:
    id: int
    slug: str
    current_revision_id: int | None
    canonical_bindings: dict[str, int] = field(default_factory=dict)
    canonical_dtype: str = "fp32"
    canonical_configuration_key: str = ""
