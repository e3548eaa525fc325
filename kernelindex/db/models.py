"""ORM models. The schema itself changes only through Alembic migrations (migrations/).

Every relationship is lazy="raise": data a resolver needs is loaded explicitly, in bulk.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Date,
    DateTime,
    Double,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# NaN compares greater than every number in PostgreSQL ('NaN'::float8 > 0 is true), so "positive"
# must also say "below infinity" to exclude NaN and +Infinity.
FINITE_POSITIVE = "({col} > 0 AND {col} < 'Infinity'::float8)"
FINITE_NON_NEGATIVE = "({col} >= 0 AND {col} < 'Infinity'::float8)"
FINITE_POSITIVE_OR_NULL = "{col} IS NULL OR " + FINITE_POSITIVE


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _created_at() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


class Hardware(Base):
    __tablename__ = "hardware"

    id: Mapped[int] = mapped_column(primary_key=True)
    sku: Mapped[str] = mapped_column(Text, unique=True)
    short_name: Mapped[str] = mapped_column(Text)
    family: Mapped[str] = mapped_column(Text)
    vendor: Mapped[str] = mapped_column(Text)
    architecture: Mapped[str | None] = mapped_column(Text)
    driver_product_names: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default=text("'{}'"))
    priority: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    reference_for_family: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    has_datasheet: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
    memory_gb: Mapped[float | None] = mapped_column(Double)
    dram_bandwidth_gbps: Mapped[float | None] = mapped_column(Double)
    fp32_tflops: Mapped[float | None] = mapped_column(Double)
    tf32_tflops: Mapped[float | None] = mapped_column(Double)
    fp16_tflops: Mapped[float | None] = mapped_column(Double)
    bf16_tflops: Mapped[float | None] = mapped_column(Double)
    l2_mb: Mapped[float | None] = mapped_column(Double)
    sm_count: Mapped[int | None] = mapped_column(Integer)
    tdp_w: Mapped[float | None] = mapped_column(Double)
    datasheet_source: Mapped[str | None] = mapped_column(Text)
    datasheet_url: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()

    __table_args__ = (
        CheckConstraint(
            "dram_bandwidth_gbps IS NULL OR " + FINITE_POSITIVE.format(col="dram_bandwidth_gbps"),
            name="bandwidth_positive",
        ),
    )


class Environment(Base):
    """A hardware SKU plus a provider and a software stack. Same SKU, other stack: another environment."""

    __tablename__ = "environments"

    id: Mapped[int] = mapped_column(primary_key=True)
    hardware_id: Mapped[int] = mapped_column(ForeignKey("hardware.id"), index=True)
    provider: Mapped[str | None] = mapped_column(Text)
    label: Mapped[str | None] = mapped_column(Text)
    torch_version: Mapped[str | None] = mapped_column(Text)
    cuda_version: Mapped[str | None] = mapped_column(Text)
    driver_version: Mapped[str | None] = mapped_column(Text)
    python_version: Mapped[str | None] = mapped_column(Text)
    triton_version: Mapped[str | None] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    fingerprint: Mapped[str] = mapped_column(Text, unique=True)
    created_at: Mapped[datetime] = _created_at()

    hardware: Mapped[Hardware] = relationship(lazy="raise")


class Workload(Base):
    __tablename__ = "workloads"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(Text, unique=True)
    suite: Mapped[str] = mapped_column(Text)
    # KernelBench's identity (migration 0016: other suites name a workload by their own `suite_key`).
    level: Mapped[int | None] = mapped_column(Integer)
    problem_number: Mapped[int | None] = mapped_column(Integer)
    suite_key: Mapped[str | None] = mapped_column(Text)
    name: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text)
    family: Mapped[str | None] = mapped_column(Text)  # the operation family the suite states
    reference: Mapped[str | None] = mapped_column(Text)  # what its reference is, in the source's words
    aliases: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default=text("'{}'"))  # other names the suite gives it
    description: Mapped[str | None] = mapped_column(Text)
    # Derived (kernelindex.ingest.workloads.recompute_current): the revision this workload holds in the
    # latest upstream snapshot that names it, by the snapshot's revision date — never the one written last.
    current_revision_id: Mapped[int | None] = mapped_column(
        ForeignKey("workload_revisions.id", use_alter=True, name="fk_workloads_current_revision_id_workload_revisions"),
    )
    # Derived: a member of its suite's latest complete snapshot; NULL while no complete snapshot is known.
    in_latest_snapshot: Mapped[bool | None] = mapped_column(Boolean)
    created_at: Mapped[datetime] = _created_at()
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())

    current_revision: Mapped[WorkloadRevision | None] = relationship(
        lazy="raise", foreign_keys=[current_revision_id], post_update=True
    )

    __table_args__ = (
        # Not unique: upstream replaces and renames problems under the same number. A workload is
        # suite + level + number + name (its slug).
        Index("ix_workloads_suite_level_problem", "suite", "level", "problem_number"),
        CheckConstraint("kind IN ('model', 'operator', 'fusion')", name="kind_known"),
        CheckConstraint("(level IS NOT NULL AND problem_number IS NOT NULL) OR suite_key IS NOT NULL", name="identified_in_suite"),
        Index("ux_workloads_suite_key", "suite", "suite_key", unique=True, postgresql_where=text("suite_key IS NOT NULL")),
        Index("ix_workloads_name_lower", text("lower(name)")),
    )


class WorkloadRevision(Base):
    """One version of a workload's reference source. Runs attach to the revision they measured.

    Its identity is source_sha256, the sha256 of the upstream file's bytes. The seed may know that
    digest without holding the file: reference_source is then our own module standing in for it
    (stand_in), until an import of the upstream file at that digest replaces it.
    """

    __tablename__ = "workload_revisions"

    id: Mapped[int] = mapped_column(primary_key=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id", ondelete="CASCADE"), index=True)
    source_sha256: Mapped[str] = mapped_column(Text)
    reference_source: Mapped[str] = mapped_column(Text)
    # Size in bytes of the upstream file, when known.
    source_size: Mapped[int | None] = mapped_column(Integer)
    stand_in: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    # sha256 of the stand-in module (kept after the real source replaces it): a file with exactly these
    # bytes is recognised as this revision's stand-in, not taken for a new upstream revision.
    stand_in_sha256: Mapped[str | None] = mapped_column(Text)
    source_filename: Mapped[str | None] = mapped_column(Text)
    upstream_revision: Mapped[str | None] = mapped_column(Text)
    # Bindings of the variable axes that records are measured at, e.g. {"batch_size": 2}.
    canonical_bindings: Mapped[dict[str, int]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    canonical_dtype: Mapped[str] = mapped_column(Text, server_default=text("'fp32'"))
    # configuration_key(canonical_bindings, canonical_dtype): lets SQL find a revision's eligible runs.
    canonical_configuration_key: Mapped[str] = mapped_column(Text, server_default=text("''"))
    semantics: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    semantics_error: Mapped[str | None] = mapped_column(Text)
    identity_sha256: Mapped[str] = mapped_column(Text)
    # What the meta-device trace measured: bytes, parameters, FLOPs by class (headroom-v2 input).
    analysis: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    # The tracer that produced `analysis` ("problem-trace/2 torch 2.13.0+cpu"); NULL: unknown (the
    # seed's declarations, older imports). An import reuses a trace only when this is what it would
    # trace with now (kernelindex.ingest.kernelbench).
    traced_with: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()

    __table_args__ = (
        UniqueConstraint("workload_id", "source_sha256"),
        # What the rows that name a revision and its workload refer to (revision_of_workload).
        UniqueConstraint("id", "workload_id", name="uq_workload_revisions_id_workload_id"),
        Index("ix_workload_revisions_source_sha256", "source_sha256"),
    )


def revision_of_workload(table: str) -> ForeignKeyConstraint:
    """A row's revision and that revision's workload, checked by one look-up (migration 0023): a
    foreign key is checked row by row, and two keys of their own cost a new run two."""
    return ForeignKeyConstraint(
        ["workload_revision_id", "workload_id"], ["workload_revisions.id", "workload_revisions.workload_id"],
        name=f"fk_{table}_revision_of_workload", ondelete="CASCADE",
    )


class SuiteSnapshot(Base):
    """A suite at one upstream revision (a KernelBench commit) and its date.

    complete: the whole suite was read (a checkout import); the seed's snapshot names only the
    workloads it carries. Which revision is current follows from these and their members.
    """

    __tablename__ = "suite_snapshots"

    id: Mapped[int] = mapped_column(primary_key=True)
    suite: Mapped[str] = mapped_column(Text)
    upstream_revision: Mapped[str] = mapped_column(Text)
    revision_date: Mapped[date | None] = mapped_column(Date)
    complete: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    # Retracted (kernelindex.ingest.snapshots, migration 0015): it decides nothing; kept, with why.
    retracted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    retraction_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()

    __table_args__ = (UniqueConstraint("suite", "upstream_revision"),)


class SuiteSnapshotMember(Base):
    """A workload in a snapshot, with the revision of its reference source at that snapshot."""

    __tablename__ = "suite_snapshot_members"

    snapshot_id: Mapped[int] = mapped_column(ForeignKey("suite_snapshots.id", ondelete="CASCADE"), primary_key=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id", ondelete="CASCADE"), primary_key=True)
    workload_revision_id: Mapped[int] = mapped_column(ForeignKey("workload_revisions.id", ondelete="CASCADE"))

    __table_args__ = (
        Index("ix_suite_snapshot_members_workload", "workload_id"),
        Index("ix_suite_snapshot_members_revision", "workload_revision_id"),
    )


class Implementation(Base):
    __tablename__ = "implementations"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(Text, unique=True)
    title: Mapped[str] = mapped_column(Text)
    framework: Mapped[str] = mapped_column(Text)
    language: Mapped[str] = mapped_column(Text)
    runtime_id: Mapped[str] = mapped_column(Text)
    role: Mapped[str] = mapped_column(Text)
    compile_mode: Mapped[str | None] = mapped_column(Text)
    licence: Mapped[str | None] = mapped_column(Text)
    source_availability: Mapped[str] = mapped_column(Text)
    source_url: Mapped[str | None] = mapped_column(Text)
    install_recipe: Mapped[str | None] = mapped_column(Text)
    # As a source states them (migration 0016).
    authors: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default=text("'{}'"))
    project: Mapped[str | None] = mapped_column(Text)
    target_architectures: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default=text("'{}'"))
    artifact_sha256: Mapped[str | None] = mapped_column(Text)  # the source artifact's digest ("sha256:…")
    artifact_bytes: Mapped[int | None] = mapped_column(BigInteger)
    version: Mapped[str | None] = mapped_column(Text)  # its own revision or package version
    created_at: Mapped[datetime] = _created_at()

    __table_args__ = (
        CheckConstraint("role IN ('baseline', 'candidate')", name="role_known"),
        CheckConstraint("source_availability IN ('mirrored', 'upstream', 'none')", name="availability_known"),
    )


class Protocol(Base):
    __tablename__ = "protocols"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    version: Mapped[str] = mapped_column(Text)
    timer: Mapped[str | None] = mapped_column(Text)
    warmup: Mapped[int | None] = mapped_column(Integer)
    trials: Mapped[int | None] = mapped_column(Integer)
    statistic: Mapped[str] = mapped_column(Text, server_default=text("'mean'"))
    l2_flush: Mapped[bool | None] = mapped_column(Boolean)
    # What its figures are, and the unit they are stored in (migration 0016): figures of two metrics
    # never compare, and a protocol is part of every cohort.
    metric: Mapped[str] = mapped_column(Text, server_default=text("'latency'"))
    unit: Mapped[str] = mapped_column(Text, server_default=text("'ms'"))
    harness: Mapped[str | None] = mapped_column(Text)
    comparator: Mapped[str | None] = mapped_column(Text)  # the correctness comparator, as the source names it
    family: Mapped[str | None] = mapped_column(Text)  # the comparability family, as the source names it
    notes: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()

    __table_args__ = (
        UniqueConstraint("name", "version"),
        CheckConstraint("statistic IN ('mean', 'median', 'min', 'geomean', 'unspecified')", name="statistic_known"),
        CheckConstraint("metric IN ('latency', 'memory', 'score')", name="metric_known"),
        CheckConstraint(
            "(metric = 'latency' AND unit = 'ms') OR (metric = 'memory' AND unit = 'MB') OR (metric = 'score' AND unit = 's')",
            name="unit_of_metric",
        ),
    )


class Source(Base):
    __tablename__ = "sources"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(Text, unique=True)
    url: Mapped[str | None] = mapped_column(Text)
    licence: Mapped[str | None] = mapped_column(Text)
    key: Mapped[str | None] = mapped_column(Text)  # the source's own slug ("gpumode-kernelbot")
    kind: Mapped[str | None] = mapped_column(Text)
    terms: Mapped[str | None] = mapped_column(Text)
    attribution: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()

    __table_args__ = (Index("ux_sources_key", "key", unique=True, postgresql_where=text("key IS NOT NULL")),)


class SourceSnapshot(Base):
    """A source at one revision (a commit of the KernelBench repository, a runner version)."""

    __tablename__ = "source_snapshots"

    id: Mapped[int] = mapped_column(primary_key=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("sources.id"), index=True)
    revision: Mapped[str] = mapped_column(Text, server_default=text("''"))
    revision_date: Mapped[date | None] = mapped_column(Date)
    route: Mapped[str | None] = mapped_column(Text)  # the file it came through (an export's name), beside the source
    # The source's entire catalogue at its date: a run it no longer holds counts for nothing. outdated
    # (derived, kernelindex.ingest.source_import): a newer whole snapshot of the source exists.
    whole: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    outdated: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    # The file's sha256 and what importing it found: the very same bytes again are known unchanged unread.
    file_sha256: Mapped[str | None] = mapped_column(Text)
    file_summary: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    # Retracted with its suite snapshot (migration 0015): each of its runs is retracted too.
    retracted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    retraction_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()

    source: Mapped[Source] = relationship(lazy="raise")

    __table_args__ = (UniqueConstraint("source_id", "revision"),)


class Run(Base):
    """One measurement. Never edited in place: a changed figure is a new run that supersedes this one."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    # Both checked by one key, the revision's and its workload's (revision_of_workload, migration 0023).
    workload_id: Mapped[int] = mapped_column(Integer)
    workload_revision_id: Mapped[int] = mapped_column(Integer)
    bindings: Mapped[dict[str, int]] = mapped_column(JSONB)
    dtype: Mapped[str] = mapped_column(Text)
    # Canonical text of bindings + dtype: part of the natural key and of the cohort.
    configuration_key: Mapped[str] = mapped_column(Text)
    implementation_id: Mapped[int] = mapped_column(ForeignKey("implementations.id"))
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"))
    protocol_id: Mapped[int] = mapped_column(ForeignKey("protocols.id"))
    source_snapshot_id: Mapped[int] = mapped_column(ForeignKey("source_snapshots.id"))
    status: Mapped[str] = mapped_column(Text)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    mean_ms: Mapped[float | None] = mapped_column(Double)
    std_ms: Mapped[float | None] = mapped_column(Double)
    min_ms: Mapped[float | None] = mapped_column(Double)
    max_ms: Mapped[float | None] = mapped_column(Double)
    median_ms: Mapped[float | None] = mapped_column(Double)
    p5_ms: Mapped[float | None] = mapped_column(Double)
    p95_ms: Mapped[float | None] = mapped_column(Double)
    num_trials: Mapped[int | None] = mapped_column(Integer)
    samples_ms: Mapped[list[float] | None] = mapped_column(ARRAY(Double))
    compile_time_ms: Mapped[float | None] = mapped_column(Double)
    correctness: Mapped[dict[str, Any] | None] = mapped_column(JSONB(none_as_null=True))
    observed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # The headline figure in its protocol's metric, statistic and unit (migration 0016): a KernelBench
    # run's mean latency, Liger's median, GPU MODE's score; with the spread the source states, at the
    # quantiles it names (Liger's 20th and 80th percentiles are never stored as p5/p95).
    figure: Mapped[float | None] = mapped_column(Double)
    figure_low: Mapped[float | None] = mapped_column(Double)
    figure_high: Mapped[float | None] = mapped_column(Double)
    low_quantile: Mapped[float | None] = mapped_column(Double)
    high_quantile: Mapped[float | None] = mapped_column(Double)
    source_speedup: Mapped[float | None] = mapped_column(Double)  # a speedup the source itself states
    # The source's own id of the run, part of its natural key: a source that names its runs may state two
    # of one implementation on one case and machine (FlashInfer-Bench's retries), each its own run. ''
    # for a run record (kernelindex.run/1 names none).
    upstream_id: Mapped[str] = mapped_column(Text, server_default=text("''"))
    # 'measured' only for a run a fleet worker stored under its registered identity (fleet_worker_id,
    # migration 0013); everything from outside (submitRuns, ingest runs, seeds) is 'reported'.
    evidence: Mapped[str] = mapped_column(Text)
    # 'measured' where an outside record said so (kept, shown as the source's claim); None otherwise.
    claimed_evidence: Mapped[str | None] = mapped_column(Text)
    # The registered fleet worker that stored the run, and its machine (copied, held to the worker's
    # by the composite foreign key): the trust ladder's Verified and Replicated read these.
    fleet_worker_id: Mapped[int | None] = mapped_column(BigInteger)
    fleet_machine_id: Mapped[str | None] = mapped_column(Text)
    # sha256 of the record's measured content: equal digest on re-ingest means "unchanged".
    content_sha256: Mapped[str] = mapped_column(Text)
    # The digest of the input line this run came from (ingest runs; migration 0008), None otherwise.
    line_sha: Mapped[bytes | None] = mapped_column(LargeBinary)
    superseded_by_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    superseded_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    retracted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    retraction_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()

    workload_revision: Mapped[WorkloadRevision] = relationship(lazy="raise", foreign_keys=[workload_revision_id])
    implementation: Mapped[Implementation] = relationship(lazy="raise")
    environment: Mapped[Environment] = relationship(lazy="raise")
    protocol: Mapped[Protocol] = relationship(lazy="raise")
    source_snapshot: Mapped[SourceSnapshot] = relationship(lazy="raise")

    __table_args__ = (
        revision_of_workload("runs"),
        CheckConstraint("status IN ('passed', 'failed')", name="status_known"),
        CheckConstraint("evidence IN ('reported', 'measured')", name="evidence_known"),
        # A claim is kept only where it is not what was stored: an outside record's "measured".
        CheckConstraint(
            "claimed_evidence IS NULL OR (claimed_evidence = 'measured' AND evidence = 'reported')", name="claimed_evidence_known"
        ),
        # Rungs come from the fleet alone: no route but a registered worker's can store 'measured'.
        CheckConstraint("evidence = 'reported' OR fleet_worker_id IS NOT NULL", name="measured_by_fleet"),
        CheckConstraint("(fleet_worker_id IS NULL) = (fleet_machine_id IS NULL)", name="fleet_machine_with_worker"),
        ForeignKeyConstraint(
            ["fleet_worker_id", "fleet_machine_id"], ["fleet_workers.id", "fleet_workers.machine_id"],
        ),
        CheckConstraint("status = 'passed' OR failure_reason IS NOT NULL", name="failed_has_reason"),
        CheckConstraint("status = 'failed' OR figure IS NOT NULL", name="passed_has_figure"),
        *(CheckConstraint(FINITE_POSITIVE_OR_NULL.format(col=c), name=f"{c}_finite_positive")
          for c in ("figure", "figure_low", "figure_high")),
        CheckConstraint("source_speedup IS NULL OR " + FINITE_NON_NEGATIVE.format(col="source_speedup"), name="source_speedup_finite"),
        CheckConstraint(
            "(low_quantile IS NULL AND high_quantile IS NULL) OR "
            "(0 <= low_quantile AND low_quantile < high_quantile AND high_quantile <= 1)", name="quantiles_in_order",
        ),
        CheckConstraint("mean_ms IS NULL OR " + FINITE_POSITIVE.format(col="mean_ms"), name="mean_finite_positive"),
        CheckConstraint("min_ms IS NULL OR " + FINITE_POSITIVE.format(col="min_ms"), name="min_finite_positive"),
        CheckConstraint("max_ms IS NULL OR " + FINITE_POSITIVE.format(col="max_ms"), name="max_finite_positive"),
        CheckConstraint("median_ms IS NULL OR " + FINITE_POSITIVE.format(col="median_ms"), name="median_finite_positive"),
        CheckConstraint("p5_ms IS NULL OR " + FINITE_POSITIVE.format(col="p5_ms"), name="p5_finite_positive"),
        CheckConstraint("p95_ms IS NULL OR " + FINITE_POSITIVE.format(col="p95_ms"), name="p95_finite_positive"),
        CheckConstraint("std_ms IS NULL OR " + FINITE_NON_NEGATIVE.format(col="std_ms"), name="std_finite"),
        CheckConstraint(
            "compile_time_ms IS NULL OR " + FINITE_NON_NEGATIVE.format(col="compile_time_ms"), name="compile_time_finite"
        ),
        CheckConstraint("num_trials IS NULL OR num_trials >= 1", name="trials_at_least_one"),
        CheckConstraint(
            "min_ms IS NULL OR mean_ms IS NULL OR min_ms <= mean_ms", name="min_not_above_mean"
        ),
        CheckConstraint(
            "max_ms IS NULL OR mean_ms IS NULL OR max_ms >= mean_ms", name="max_not_below_mean"
        ),
        # One live run per natural key; superseded runs stay as history.
        Index(
            "uq_runs_natural_key_live",
            "workload_revision_id",
            "configuration_key",
            "implementation_id",
            "environment_id",
            "protocol_id",
            "source_snapshot_id",
            "upstream_id",
            unique=True,
            postgresql_where=text("superseded_at IS NULL"),
        ),
        Index("ix_runs_workload_live", "workload_id", postgresql_where=text("superseded_at IS NULL")),
        # No index of workload_revision_id alone: ix_runs_cohort leads with it (migration 0022).
        Index("ix_runs_environment", "environment_id"),
        Index("ix_runs_implementation", "implementation_id"),
        Index("ix_runs_observed_at", "observed_at"),
        Index("ix_runs_cohort", "workload_revision_id", "configuration_key", "protocol_id", "environment_id"),
        Index(
            "ix_runs_eligible_lookup",
            "workload_revision_id",
            "configuration_key",
            "status",
            postgresql_where=text("superseded_at IS NULL AND retracted_at IS NULL"),
        ),
        Index("ix_runs_line_sha_live", "line_sha", postgresql_where=text("superseded_at IS NULL AND line_sha IS NOT NULL")),
        Index("ix_runs_fastest", "workload_revision_id", "configuration_key", text("coalesce(figure, 'Infinity'::float8)"), "id", postgresql_where=text("superseded_at IS NULL AND retracted_at IS NULL AND status = 'passed'")),
        # A cohort's live passed runs in ranking order, and its measured ones latest first per
        # implementation (migration 0010; services.pages.load_cohort_tops). The expression is written
        # as PostgreSQL prints it back, so Alembic's comparison sees the same text.
        Index(
            "ix_runs_cohort_top", "workload_revision_id", "configuration_key", "protocol_id", "environment_id",
            text("least(greatest(figure, '1e-06'::double precision), '86400000'::double precision)"), "observed_at", "id",
            postgresql_where=text("superseded_at IS NULL AND retracted_at IS NULL AND status = 'passed'"),
        ),
        Index(
            "ix_runs_cohort_measured", "workload_revision_id", "configuration_key", "protocol_id", "environment_id",
            "implementation_id", text("observed_at DESC"), text("id DESC"),
            postgresql_where=text("superseded_at IS NULL AND retracted_at IS NULL AND status = 'passed' AND evidence = 'measured'"),
        ),
    )


class RunFlag(Base):
    """A plausibility flag on a run (e.g. faster than its floor): the run waits for review."""

    __tablename__ = "run_flags"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    code: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(Text)
    rule_version: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()

    __table_args__ = (UniqueConstraint("run_id", "code"),)


class RunReview(Base):
    """A person's decision on a flagged run: approved runs count again, rejected ones stay out."""

    __tablename__ = "run_reviews"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    decision: Mapped[str] = mapped_column(Text)
    reviewer: Mapped[str] = mapped_column(Text)
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()

    __table_args__ = (CheckConstraint("decision IN ('approved', 'rejected')", name="decision_known"),)


class RecordEvent(Base):
    """A change of record holder in a cohort, or of a workload's current revision (kind
    'revision_changed': no protocol or environment, workload_revision_id the new current revision),
    or a snapshot retracted (kind 'snapshot_retracted', workload-level too, `reason` says why).
    Events are appended, never deleted."""

    __tablename__ = "record_events"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    # Both checked by one key, the revision's and its workload's (revision_of_workload, migration 0023).
    workload_id: Mapped[int] = mapped_column(Integer)
    workload_revision_id: Mapped[int] = mapped_column(Integer)
    configuration_key: Mapped[str] = mapped_column(Text)
    # No keys of their own (migration 0023): a cohort's event names a run of the cohort (its holder, or
    # the holder it lost: cohort_event_names_a_run), whose own keys hold for both.
    protocol_id: Mapped[int | None] = mapped_column(Integer)
    environment_id: Mapped[int | None] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(Text)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    previous_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    improvement_percent: Mapped[float | None] = mapped_column(Double)
    rule_version: Mapped[str] = mapped_column(Text)
    # Why, where the event has one to give: a 'snapshot_retracted' event's retraction reason (0015).
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()

    __table_args__ = (
        revision_of_workload("record_events"),
        CheckConstraint("kind IN ('new_record', 'restored', 'revision_changed', 'snapshot_retracted')", name="kind_known"),
        CheckConstraint(
            "kind IN ('revision_changed', 'snapshot_retracted') OR (protocol_id IS NOT NULL AND environment_id IS NOT NULL)",
            name="cohort_known",
        ),
        CheckConstraint(
            "kind IN ('revision_changed', 'snapshot_retracted') OR run_id IS NOT NULL OR previous_run_id IS NOT NULL",
            name="cohort_event_names_a_run",
        ),
        Index("ix_record_events_workload_created", "workload_id", "created_at"),
        Index("ix_record_events_created", "created_at"),
        # A cohort's latest event, newest first (migration 0024: kernelindex.services.records._latest_events).
        Index("ix_record_events_cohort", "workload_revision_id", "configuration_key", "protocol_id", "environment_id", "id"),
    )


class ApiToken(Base):
    """A write token. Only its sha256 is stored; the token itself is shown once, at creation."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    token_sha256: Mapped[str] = mapped_column(Text, unique=True)
    display_prefix: Mapped[str] = mapped_column(Text)
    scopes: Mapped[list[str]] = mapped_column(ARRAY(Text))
    created_at: Mapped[datetime] = _created_at()
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class CohortBest(Base):
    """Precomputed: per eligible cohort and implementation, its fastest eligible run and how many.

    Kept current by kernelindex.services.records in the same transaction as every write, so the
    API reads records without scanning runs. Derived data: rebuildable from runs at any time.
    """

    __tablename__ = "cohort_bests"

    # Every column is its run's (the run's own, or its environment's hardware): the foreign key to the
    # run (its cascade included) holds for them all, so they have none of their own (migration 0022:
    # PostgreSQL checks each key row by row, and they were most of a refresh's upsert).
    workload_revision_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    configuration_key: Mapped[str] = mapped_column(Text, primary_key=True)
    protocol_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    environment_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    implementation_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    workload_id: Mapped[int] = mapped_column(Integer)
    hardware_id: Mapped[int] = mapped_column(Integer)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    figure: Mapped[float] = mapped_column(Double)  # the best run's headline figure (runs.figure)
    observed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    run_count: Mapped[int] = mapped_column(Integer)
    last_observed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    evidence_kinds: Mapped[list[str]] = mapped_column(ARRAY(Text))
    source_snapshot_ids: Mapped[list[int]] = mapped_column(ARRAY(BigInteger))

    __table_args__ = (
        Index("ix_cohort_bests_workload", "workload_id"),
        Index("ix_cohort_bests_hardware", "hardware_id"),
        Index("ix_cohort_bests_run", "run_id"),
    )


class DataVersion(Base):
    """One row: a counter that statement triggers move once per transaction that changes the index.

    The API's response cache is keyed on it (kernelindex.web.response_cache). Moved only by the
    change-log triggers of migration 0007, once per transaction that changed a row, never by
    application code.
    """

    __tablename__ = "data_version"

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger)
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    changed_by_xact: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (CheckConstraint("id = 1", name="single_row"),)


class ChangeLog(Base):
    """What one data version changed: the workloads whose rows changed, the catalogue tables that
    changed (new rows or changed ones) and of those the ones an existing row of which changed
    (`catalogue_edited`, migration 0021), or everything (a TRUNCATE). One row per writing transaction,
    written and pruned only by the triggers of migration 0007; the response cache evicts by it
    (kernelindex.web.response_cache)."""

    __tablename__ = "change_log"

    version: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    workload_ids: Mapped[list[int]] = mapped_column(ARRAY(Integer), server_default=text("'{}'"))
    catalogue_tables: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default=text("'{}'"))
    catalogue_edited: Mapped[list[str]] = mapped_column(ARRAY(Text), server_default=text("'{}'"))
    everything: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


# --- the fleet: submitted kernels and the jobs that measure them (kernelindex.fleet) ---------------------


class Submission(Base):
    """A submitted implementation of a workload: a ``ModelNew`` module, kept as submitted.

    Identity is the file's bytes for the workload revision it was written against: the same file
    submitted again for the same revision is this row, whatever title it comes with. Its
    implementation row (role candidate, source mirrored here) is what its runs are filed under.
    """

    __tablename__ = "submissions"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id"))
    workload_revision_id: Mapped[int] = mapped_column(ForeignKey("workload_revisions.id"))
    implementation_id: Mapped[int] = mapped_column(ForeignKey("implementations.id"))
    source_sha256: Mapped[str] = mapped_column(Text)
    source_text: Mapped[str] = mapped_column(Text)
    filename: Mapped[str] = mapped_column(Text)
    submitted_by_token_id: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = _created_at()

    __table_args__ = (
        UniqueConstraint("workload_revision_id", "source_sha256"),
        Index("ix_submissions_workload_id", "workload_id"),
    )


class FleetWorker(Base):
    """A worker of the fleet, registered when an operator starts `kernelindex worker` (which holds the
    database's credentials; no API token can write here). Its runs name it (runs.fleet_worker_id), and
    only they climb the trust ladder: Verified needs one, Replicated two on distinct machines.

    One row per (name, machine, hardware): a restarted worker of the same name on the same machine is
    the same identity. ``machine_id`` is the machine's identity (kernelindex.fleet.worker.machine_identity).
    """

    __tablename__ = "fleet_workers"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    machine_id: Mapped[str] = mapped_column(Text)
    hardware: Mapped[str] = mapped_column(Text)
    registered_at: Mapped[datetime] = _created_at()
    last_started_at: Mapped[datetime] = _created_at()

    __table_args__ = (
        UniqueConstraint("name", "machine_id", "hardware"),
        # The target of runs' (fleet_worker_id, fleet_machine_id) key.
        UniqueConstraint("id", "machine_id"),
        CheckConstraint("length(machine_id) BETWEEN 1 AND 64", name="machine_id_bounded"),
    )


FLEET_JOB_STATES = ("queued", "running", "passed", "failed", "cancelled")


class FleetJob(Base):
    """One measurement to make on one kind of hardware: a workload revision × an implementation (a
    builtin runner or a submission) × a hardware SKU (or 'cpu') × a configuration.

    The queue itself is procrastinate's (procrastinate_jobs, queue ``queue_name``; ``queue_job_id``
    is its id); this row is what users follow: state, reason, which worker and environment, the runs
    it produced. ``dedupe_key`` makes a repeated request the same job.
    """

    __tablename__ = "fleet_jobs"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    dedupe_key: Mapped[str] = mapped_column(Text, unique=True)
    kind: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(Text, server_default=text("'queued'"))
    workload_id: Mapped[int] = mapped_column(ForeignKey("workloads.id"))
    workload_revision_id: Mapped[int] = mapped_column(ForeignKey("workload_revisions.id"))
    implementation_slug: Mapped[str] = mapped_column(Text)
    submission_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id"))
    hardware: Mapped[str] = mapped_column(Text)
    queue_name: Mapped[str] = mapped_column(Text)
    bindings: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    # Replicas of one measurement (0, 1, …) are measured on distinct machines, for the Replicated rung.
    replica: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    machine_id: Mapped[str | None] = mapped_column(Text)
    queue_job_id: Mapped[int | None] = mapped_column(BigInteger)
    attempts: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    max_attempts: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str | None] = mapped_column(Text)
    worker: Mapped[str | None] = mapped_column(Text)
    environment_id: Mapped[int | None] = mapped_column(ForeignKey("environments.id"))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    baseline_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id"))
    requested_by_token_id: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = _created_at()
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = _created_at()

    __table_args__ = (
        CheckConstraint("kind IN ('submission', 'sweep')", name="kind_known"),
        CheckConstraint("state IN ('queued', 'running', 'passed', 'failed', 'cancelled')", name="state_known"),
        CheckConstraint("(kind = 'submission') = (submission_id IS NOT NULL)", name="submission_named"),
        CheckConstraint("max_attempts >= 1", name="attempts_positive"),
        CheckConstraint("replica >= 0", name="replica_known"),
        Index("ix_fleet_jobs_state_hardware", "state", "hardware"),
        Index("ix_fleet_jobs_workload_id", "workload_id"),
        Index("ix_fleet_jobs_submission_id", "submission_id"),
        Index("ix_fleet_jobs_subject", "workload_revision_id", "implementation_slug", "hardware"),
    )


# --- derived for the workload page (kernelindex.services.records keeps it) ------------------------------


class WorkloadSource(Base):
    """Precomputed: each source snapshot the cohort bests of a (workload revision, configuration) name,
    once, with the source's name and the snapshot's revision as the page sorts them.

    The page shows its first SOURCES_SHOWN sources by name then revision; read through
    ix_workload_sources_order that is an index range of that many entries, however many runs (and
    snapshots) the workload has. Kept by kernelindex.services.records in the same transaction as
    the cohort bests it is derived from; rebuildable from them (and so from runs) at any time. The
    name and revision are copied because a LIMIT can only follow an index of this table; sources and
    snapshots are never renamed (their names are their natural keys). Collation "C": the page's
    order is by code point (workload_page.sorted_sources).
    """

    __tablename__ = "workload_sources"

    workload_revision_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    configuration_key: Mapped[str] = mapped_column(Text, primary_key=True)
    source_snapshot_id: Mapped[int] = mapped_column(ForeignKey("source_snapshots.id"), primary_key=True)
    workload_id: Mapped[int] = mapped_column(Integer)
    source_name: Mapped[str] = mapped_column(Text(collation="C"))
    snapshot_revision: Mapped[str] = mapped_column(Text(collation="C"))

    __table_args__ = (
        revision_of_workload("workload_sources"),
        Index("ix_workload_sources_order", "workload_revision_id", "configuration_key", "source_name",
              "snapshot_revision", "source_snapshot_id"),
        Index("ix_workload_sources_workload", "workload_id"),
    )


# --- the importer's own cache (kernelindex.ingest.trace_cache) --------------------------------------------


class ProblemTrace(Base):
    """What tracing one problem file gave: its trace, or the problem's own error. Keyed by the file's
    digest and the tracer (problem_trace.traced_with: the tracer's revision and torch's version), so a
    file traced once is not traced again by any later import, whatever a seed or a stand-in did to its
    workload's revision meanwhile; written as each trace finishes, so an interrupted import keeps what it
    traced. A failure is kept with the installed modules it happened under (modules_fingerprint) and is
    tried again once they change (`pip install transformers`); a timeout or a crash, which may be the
    machine's doing, is never kept. Derived data: deleting every row only costs a re-trace."""

    __tablename__ = "problem_traces"

    source_sha256: Mapped[str] = mapped_column(Text, primary_key=True)
    tracer: Mapped[str] = mapped_column(Text, primary_key=True)
    analysis: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    error_stage: Mapped[str | None] = mapped_column(Text)
    error_message: Mapped[str | None] = mapped_column(Text)
    modules_fingerprint: Mapped[str | None] = mapped_column(Text)
    traced_at: Mapped[datetime] = _created_at()

    __table_args__ = (
        CheckConstraint("(analysis IS NULL) <> (error_stage IS NULL)", name="trace_or_error"),
        CheckConstraint("(error_stage IS NULL) = (error_message IS NULL)", name="error_whole"),
        CheckConstraint("(error_stage IS NULL) = (modules_fingerprint IS NULL)", name="failure_fingerprinted"),
    )
