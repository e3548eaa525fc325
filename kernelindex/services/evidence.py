"""Loading what the rules reason over, in bulk: a fixed number of statements for any number of
workloads and runs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from sqlalchemy import inspect as sa_inspect
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Bundle

from kernelindex.db.models import (
    Environment,
    Hardware,
    Implementation,
    Protocol,
    Run,
    Source,
    SourceSnapshot,
    Workload,
    WorkloadRevision,
)
from kernelindex.rules import ranking
from kernelindex.rules.facts import (
    EnvironmentFacts,
    HardwareFacts,
    ImplementationFacts,
    ProtocolFacts,
    RunFacts,
    SourceFacts,
    WorkloadFacts,
)
from kernelindex.rules.identity import configuration_key


def hardware_facts(h: Hardware) -> HardwareFacts:
    return HardwareFacts(
        id=h.id, sku=h.sku, short_name=h.short_name, family=h.family, priority=h.priority,
        reference_for_family=h.reference_for_family, dram_bandwidth_gbps=h.dram_bandwidth_gbps,
        fp32_tflops=h.fp32_tflops, tf32_tflops=h.tf32_tflops, fp16_tflops=h.fp16_tflops,
        bf16_tflops=h.bf16_tflops, datasheet_source=h.datasheet_source, datasheet_url=h.datasheet_url,
        vendor=h.vendor, architecture=h.architecture, driver_product_names=tuple(h.driver_product_names or ()),
        has_datasheet=h.has_datasheet, memory_gb=h.memory_gb, l2_mb=h.l2_mb, sm_count=h.sm_count, tdp_w=h.tdp_w,
    )


def environment_facts(env: Environment, hardware: HardwareFacts) -> EnvironmentFacts:
    return EnvironmentFacts(
        id=env.id, hardware=hardware, provider=env.provider, fingerprint=env.fingerprint, label=env.label,
        torch_version=env.torch_version, cuda_version=env.cuda_version, driver_version=env.driver_version,
        python_version=env.python_version, triton_version=env.triton_version,
    )


def protocol_facts(p: Protocol) -> ProtocolFacts:
    return ProtocolFacts(
        id=p.id, name=p.name, version=p.version, statistic=p.statistic, timer=p.timer, warmup=p.warmup,
        trials=p.trials, l2_flush=p.l2_flush,
    )


def implementation_facts(i: Implementation) -> ImplementationFacts:
    return ImplementationFacts(
        id=i.id, slug=i.slug, title=i.title, framework=i.framework, language=i.language,
        runtime_id=i.runtime_id, role=i.role, licence=i.licence, source_availability=i.source_availability,
        source_url=i.source_url, install_recipe=i.install_recipe,
    )


def run_facts(
    run: Run, impl: ImplementationFacts, env: EnvironmentFacts, protocol: ProtocolFacts, source: SourceFacts
) -> RunFacts:
    return RunFacts(
        id=run.id, workload_revision_id=run.workload_revision_id, bindings=run.bindings, dtype=run.dtype,
        configuration_key=run.configuration_key, implementation=impl, environment=env, protocol=protocol,
        source=source, status=run.status, mean_ms=run.mean_ms, std_ms=run.std_ms, num_trials=run.num_trials,
        observed_at=run.observed_at, evidence=run.evidence, min_ms=run.min_ms, max_ms=run.max_ms,
        samples_ms=tuple(run.samples_ms) if run.samples_ms else None,
        superseded=run.superseded_at is not None, retracted=run.retracted_at is not None,
        correctness_passed=(run.correctness or {}).get("passed") if run.correctness else None,
        median_ms=run.median_ms, p5_ms=run.p5_ms, p95_ms=run.p95_ms, compile_time_ms=run.compile_time_ms,
        failure_reason=run.failure_reason, workload_id=run.workload_id,
    )


async def load_catalogue(session: AsyncSession) -> list[Hardware]:
    return list((await session.scalars(select(Hardware).order_by(Hardware.id))).all())


RUN_COLUMNS = Bundle("run", *(getattr(Run, attr.key) for attr in sa_inspect(Run).column_attrs))


def run_rows_statement():
    """Runs with every dimension they are judged by, in one statement.

    The run comes as a plain row (a Bundle of its columns), not an entity: runs are read by the
    thousand and only ever turned into RunFacts, so identity-mapping each one was wasted time. The
    dimensions stay entities: few and shared, the identity map de-duplicates them."""
    return (
        select(RUN_COLUMNS, Implementation, Environment, Hardware, Protocol, SourceSnapshot, Source)
        .join(Implementation, Run.implementation_id == Implementation.id)
        .join(Environment, Run.environment_id == Environment.id)
        .join(Hardware, Environment.hardware_id == Hardware.id)
        .join(Protocol, Run.protocol_id == Protocol.id)
        .join(SourceSnapshot, Run.source_snapshot_id == SourceSnapshot.id)
        .join(Source, SourceSnapshot.source_id == Source.id)
    )


def workload_facts(workload: Workload, revision: WorkloadRevision | None) -> WorkloadFacts:
    """What eligibility needs of a workload: its current revision and canonical configuration."""
    bindings = revision.canonical_bindings if revision else {}
    dtype = revision.canonical_dtype if revision else "fp32"
    return WorkloadFacts(
        id=workload.id, slug=workload.slug, current_revision_id=workload.current_revision_id,
        canonical_bindings=bindings, canonical_dtype=dtype, canonical_configuration_key=configuration_key(bindings, dtype),
    )


class FactsBuilder:
    """Turns joined rows into shared, de-duplicated facts objects."""

    def __init__(self) -> None:
        self._impl: dict[int, ImplementationFacts] = {}
        self._env: dict[int, EnvironmentFacts] = {}
        self._hw: dict[int, HardwareFacts] = {}
        self._protocol: dict[int, ProtocolFacts] = {}
        self._source: dict[int, SourceFacts] = {}

    def hardware(self, h: Hardware) -> HardwareFacts:
        if h.id not in self._hw:
            self._hw[h.id] = hardware_facts(h)
        return self._hw[h.id]

    def run(self, run, impl, env, hw, protocol, snapshot, source) -> RunFacts:
        if impl.id not in self._impl:
            self._impl[impl.id] = implementation_facts(impl)
        if env.id not in self._env:
            self._env[env.id] = environment_facts(env, self.hardware(hw))
        if protocol.id not in self._protocol:
            self._protocol[protocol.id] = protocol_facts(protocol)
        if snapshot.id not in self._source:
            self._source[snapshot.id] = SourceFacts(
                id=snapshot.id, name=source.name, licence=source.licence, url=source.url,
                revision=snapshot.revision or None, revision_date=snapshot.revision_date,
            )
        return run_facts(run, self._impl[impl.id], self._env[env.id], self._protocol[protocol.id], self._source[snapshot.id])


@dataclass
class WorkloadEvidence:
    """A workload, its current revision and its live runs, with the rules' verdicts memoised."""

    workload: Workload
    revision: WorkloadRevision | None
    runs: list[RunFacts]
    catalogue: list[HardwareFacts]
    now: datetime

    @cached_property
    def facts(self) -> WorkloadFacts:
        return workload_facts(self.workload, self.revision)

    @cached_property
    def eligible(self) -> list[RunFacts]:
        return ranking.eligible_runs(self.runs, self.facts)

    @cached_property
    def records(self) -> list[ranking.CohortRecord]:
        return ranking.records_by_environment(self.eligible)

    @property
    def overall_record(self) -> ranking.CohortRecord | None:
        return self.records[0] if self.records else None

    @cached_property
    def implementation_bests(self) -> list[ranking.ImplementationBest]:
        return ranking.implementation_bests(self.eligible)

    # The same questions PageEvidence answers from the precomputed cohort bests.
    @property
    def eligible_count(self) -> int:
        return len(self.eligible)

    @property
    def last_observed(self):
        return max((r.observed_at.date() for r in self.eligible), default=None)

    @property
    def sources(self) -> list[SourceFacts]:
        seen = {r.source.id: r.source for r in self.eligible}
        return sorted(seen.values(), key=lambda s: (s.name, s.revision or ""))

    @property
    def measured_hardware_ids(self) -> set[int]:
        return {r.environment.hardware.id for r in self.eligible}

    def evidence_kinds(self, implementation_id: int) -> set[str]:
        return {r.evidence for r in self.eligible if r.implementation.id == implementation_id}

    @property
    def measured_runs(self) -> list[RunFacts]:
        return [r for r in self.eligible if r.evidence == "measured"]

    def runs_of_implementation(self, implementation_id: int) -> list[RunFacts]:
        return [r for r in self.eligible if r.implementation.id == implementation_id]


async def load_evidence(
    session: AsyncSession, workloads: Sequence[Workload], catalogue: Iterable[Hardware], now: datetime
) -> dict[int, WorkloadEvidence]:
    """Two statements for any number of workloads: current revisions, then live runs with dimensions."""
    ids = [w.id for w in workloads]
    revision_ids = [w.current_revision_id for w in workloads if w.current_revision_id]
    revisions = (
        {r.id: r for r in (await session.scalars(select(WorkloadRevision).where(WorkloadRevision.id.in_(revision_ids)))).all()}
        if revision_ids
        else {}
    )
    builder = FactsBuilder()
    catalogue_facts = [builder.hardware(h) for h in catalogue]
    by_workload: dict[int, list[RunFacts]] = {i: [] for i in ids}
    if ids:
        rows = await session.execute(
            run_rows_statement().where(Run.workload_id.in_(ids), Run.superseded_at.is_(None))
        )
        from kernelindex.services.pages import with_holds

        for facts in await with_holds(session, [builder.run(*row) for row in rows]):
            by_workload[facts.workload_id].append(facts)
    return {
        w.id: WorkloadEvidence(
            workload=w, revision=revisions.get(w.current_revision_id), runs=by_workload[w.id],
            catalogue=catalogue_facts, now=now,
        )
        for w in workloads
    }
