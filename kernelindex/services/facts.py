"""Rows turned into the facts the rules reason over: one converter per dimension, the statement
that reads runs with every dimension they are judged by, and a builder that shares the facts of a
dimension between the runs that have it."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any, NamedTuple

from sqlalchemy import ARRAY, BigInteger, Integer, Row, Select, Text, bindparam, func, select, type_coerce
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Bundle
from sqlalchemy.types import NullType, TypeDecorator

from kernelindex.db.driver import fetch_rows
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
from kernelindex.rules.instants import as_utc
from kernelindex.rules.measurements import MAX_COMPILE_TIME_MS, MAX_LATENCY_MS, readable, std_bound

# The runs that compete for one record (RunFacts.cohort_key): workload revision, configuration key,
# protocol, environment.
CohortKey = tuple[int, str, int, int]


# A CohortKey's parts as SQL columns (kernelindex.db.arrays.unnested), named as cohort_columns names them.
COHORT_COLUMNS = (("rev", Integer), ("cfg", Text), ("proto", Integer), ("env", Integer))


def cohort_columns(keys: Sequence[CohortKey]) -> dict[str, list[Any]]:
    """Cohort keys as four columns (bound as arrays and unnested in SQL: four parameters however many
    cohorts): revs, cfgs, protos, envs."""
    revs, cfgs, protos, envs = (list(column) for column in zip(*keys)) if keys else ([], [], [], [])
    return {"revs": revs, "cfgs": cfgs, "protos": protos, "envs": envs}


def hardware_facts(h: Hardware) -> HardwareFacts:
    return hardware_facts_of_columns([getattr(h, name) for name in _HARDWARE_READ])


def hardware_facts_of_columns(columns: Sequence[Any]) -> HardwareFacts:
    """The facts of a hardware row read as its _HARDWARE_READ columns (a row, or the hardware part of a run
    row): the one place their values are made facts."""
    values = dict(zip(_HARDWARE_READ, columns, strict=True))
    values["driver_product_names"] = tuple(values["driver_product_names"] or ())
    return HardwareFacts(**values)


def environment_facts(env: Environment, hardware: HardwareFacts) -> EnvironmentFacts:
    return EnvironmentFacts(
        id=env.id, hardware=hardware, provider=env.provider, fingerprint=env.fingerprint, label=env.label,
        torch_version=env.torch_version, cuda_version=env.cuda_version, driver_version=env.driver_version,
        python_version=env.python_version, triton_version=env.triton_version,
    )


def protocol_facts(p: Protocol) -> ProtocolFacts:
    return ProtocolFacts(
        id=p.id, name=p.name, version=p.version, statistic=p.statistic, timer=p.timer, warmup=p.warmup,
        trials=p.trials, l2_flush=p.l2_flush, metric=p.metric, unit=p.unit,
    )


def implementation_facts(i: Implementation) -> ImplementationFacts:
    return ImplementationFacts(
        id=i.id, slug=i.slug, title=i.title, framework=i.framework, language=i.language,
        runtime_id=i.runtime_id, role=i.role, licence=i.licence, source_availability=i.source_availability,
        source_url=i.source_url, install_recipe=i.install_recipe, authors=tuple(i.authors or ()), project=i.project,
        target_architectures=tuple(i.target_architectures or ()), artifact_sha256=i.artifact_sha256,
        artifact_bytes=i.artifact_bytes, version=i.version,
    )


# The columns a source's facts are made of, in the order source_facts_of_columns takes them (a Core statement's rows).
SOURCE_FACT_COLUMNS = (
    SourceSnapshot.id, Source.name, Source.licence, Source.url, SourceSnapshot.revision, SourceSnapshot.revision_date,
    SourceSnapshot.route, SourceSnapshot.outdated, Source.terms, Source.attribution,
)


def source_facts(snapshot: SourceSnapshot, source: Source) -> SourceFacts:
    return source_facts_of_columns([getattr(snapshot if column.class_ is SourceSnapshot else source, column.key)
                                    for column in SOURCE_FACT_COLUMNS])


def source_facts_of_columns(columns: Sequence[Any]) -> SourceFacts:
    """source_facts of a snapshot and its source read as SOURCE_FACT_COLUMNS: equal to what it makes of the rows."""
    snapshot_id, name, licence, url, revision, revision_date, route, outdated, terms, attribution = columns
    return SourceFacts(
        id=snapshot_id, name=name, licence=licence, url=url, revision=revision or None, revision_date=revision_date,
        route=route, outdated=outdated, terms=terms, attribution=attribution,
    )


def passed_verdict(value: Any) -> bool | None:
    """A stored correctness check's verdict ("passed"): JSON true or false; anything else a row may hold
    (a string, a number, nothing) is unknown, read the same by the facts and by the holds
    (services.holds), so that a run is held or not the same way on every path. Ingest stores only booleans."""
    return value if isinstance(value, bool) else None


def readable_std(std: float | None, min_ms: float | None, max_ms: float | None, mean_ms: float | None,
                  num_trials: int | None) -> float | None:
    """A stored std as the read side uses it (RunFacts.std_ms), from the run's stored columns: none where
    it is NaN, negative or past what the other stated figures allow (rules.measurements.std_bound), else
    held to the largest latency. Also the runs page's writer's (kernelindex.graphql.runs_page)."""
    if std is None:
        return None
    bound = std_bound({"min": min_ms, "max": max_ms, "mean": mean_ms, "num_trials": num_trials})
    return None if std != std or std < 0 or (bound is not None and std > bound) else min(std, MAX_LATENCY_MS)


def run_facts(
    run: Any, impl: ImplementationFacts, env: EnvironmentFacts, protocol: ProtocolFacts, source: SourceFacts
) -> RunFacts:
    # Stored values are read through measurements-v1 and instants-v1 (rules.measurements.readable,
    # rules.instants.as_utc): a row written before today's checks, or past them, is held to what a
    # run can be, so no figure derived from it overflows and no naive time meets an aware one.
    samples = tuple(run.samples_ms) if run.samples_ms else None
    if samples and any(readable(v) != v for v in samples):
        samples = None  # samples no run can give say nothing about this one's spread
    std = readable_std(run.std_ms, run.min_ms, run.max_ms, run.mean_ms, run.num_trials)
    return RunFacts(
        id=run.id, workload_revision_id=run.workload_revision_id, bindings=run.bindings, dtype=run.dtype,
        configuration_key=run.configuration_key, implementation=impl, environment=env, protocol=protocol,
        source=source, status=run.status, mean_ms=readable(run.mean_ms), std_ms=std, num_trials=run.num_trials,
        observed_at=as_utc(run.observed_at), evidence=run.evidence, min_ms=readable(run.min_ms), max_ms=readable(run.max_ms),
        samples_ms=samples,
        superseded=run.superseded_at is not None, retracted=run.retracted_at is not None,
        correctness_passed=passed_verdict(run.correctness.get("passed")) if isinstance(run.correctness, dict) else None,
        median_ms=readable(run.median_ms), p5_ms=readable(run.p5_ms), p95_ms=readable(run.p95_ms),
        compile_time_ms=readable(run.compile_time_ms, 0.0, MAX_COMPILE_TIME_MS),
        failure_reason=run.failure_reason, workload_id=run.workload_id, fleet_machine_id=run.fleet_machine_id,
        claimed_evidence=run.claimed_evidence, figure=readable(run.figure), figure_low=readable(run.figure_low),
        figure_high=readable(run.figure_high), low_quantile=run.low_quantile, high_quantile=run.high_quantile,
        source_speedup=run.source_speedup, upstream_id=run.upstream_id or "",
    )


async def load_catalogue(session: AsyncSession) -> list[Hardware]:
    return list((await session.scalars(select(Hardware).order_by(Hardware.id))).all())


async def load_catalogue_facts(session: AsyncSession) -> list[HardwareFacts]:
    """[hardware_facts(h) for h in load_catalogue(session)], read as columns (no ORM rows): a workload page's
    catalogue, read by every cold page. Equal facts: the columns hardware_facts reads, as the run rows' hardware
    (FactsBuilder.run_of_columns) are read."""
    return [hardware_facts_of_columns(row) for row in await fetch_rows(session, _CATALOGUE_FACTS)]


RUN_COLUMNS: Bundle[Any] = Bundle("run", *(getattr(Run, attr.key) for attr in sa_inspect(Run).column_attrs))


def run_rows_statement() -> Select[Any]:
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


# run_columns_statement(): the runs page's rows as plain columns, no entity at all. Each dimension's
# columns are named as the fields of its facts (the models use the same names; a renamed column
# fails here, at import), so a dimension's facts are built from its slice of the row, once per
# dimension and statement; each row costs a few dictionary look-ups besides its own run's facts.
_RUN_READ = (
    "id", "workload_id", "workload_revision_id", "bindings", "dtype", "configuration_key", "status", "failure_reason",
    "mean_ms", "std_ms", "min_ms", "max_ms", "median_ms", "p5_ms", "p95_ms", "num_trials", "samples_ms",
    "compile_time_ms", "correctness", "observed_at", "evidence", "superseded_at", "retracted_at", "fleet_machine_id",
    "claimed_evidence", "figure", "figure_low", "figure_high", "low_quantile", "high_quantile", "source_speedup", "upstream_id",
)  # what run_facts reads
_RunColumns = namedtuple("_RunColumns", _RUN_READ)  # type: ignore[misc]  # the names are data, as intended
_IMPLEMENTATION_READ = tuple(f.name for f in fields(ImplementationFacts))
_ENVIRONMENT_READ = tuple(f.name for f in fields(EnvironmentFacts) if f.name != "hardware")
_HARDWARE_READ = tuple(f.name for f in fields(HardwareFacts))
# The hardware columns HardwareFacts holds, by id: load_catalogue_facts.
_CATALOGUE_FACTS = select(*(Hardware.__table__.c[name] for name in _HARDWARE_READ)).order_by(Hardware.__table__.c.id)
_PROTOCOL_READ = tuple(f.name for f in fields(ProtocolFacts))
_SNAPSHOT_READ = ("id", "revision", "revision_date", "route", "outdated")
_SOURCE_READ = ("name", "licence", "url", "terms", "attribution")


class _ListAsRead(TypeDecorator[list[Any]]):
    """An array column read as the driver gives it: asyncpg already returns a list of Python values,
    and SQLAlchemy's ARRAY result processor would copy it item by item in Python (for the cohort
    refresh, which reads every run of each cohort it judges, that copy was about 6% of an import)."""

    impl = NullType
    cache_ok = True


def _labelled(model: Any, names: tuple[str, ...], prefix: str) -> list[Any]:
    table = model.__table__
    return [(type_coerce(table.c[name], _ListAsRead()) if isinstance(table.c[name].type, ARRAY) else table.c[name]).label(f"{prefix}{name}")
            for name in names]


_COLUMN_GROUPS = (
    _labelled(Run, _RUN_READ, ""), _labelled(Implementation, _IMPLEMENTATION_READ, "implementation__"),
    _labelled(Environment, _ENVIRONMENT_READ, "environment__"), _labelled(Hardware, _HARDWARE_READ, "hardware__"),
    _labelled(Protocol, _PROTOCOL_READ, "protocol__"), _labelled(SourceSnapshot, _SNAPSHOT_READ, "snapshot__"),
    _labelled(Source, _SOURCE_READ, "source__"),
)
_STARTS = [sum(len(g) for g in _COLUMN_GROUPS[:i]) for i in range(len(_COLUMN_GROUPS) + 1)]
_IMPLEMENTATION_AT, _ENVIRONMENT_AT, _HARDWARE_AT, _PROTOCOL_AT, _SNAPSHOT_AT, _SOURCE_AT, _END = _STARTS[1:]
_RUNS, _IMPLEMENTATIONS, _ENVIRONMENTS = Run.__table__.c, Implementation.__table__.c, Environment.__table__.c
_HARDWARE, _PROTOCOLS = Hardware.__table__.c, Protocol.__table__.c
_SNAPSHOTS, _SOURCES = SourceSnapshot.__table__.c, Source.__table__.c
# Built once: the statement is immutable (a join onto it is a new one) and its cache key the same
# every time, so SQLAlchemy compiles it once per shape of what is joined to it.
_RUN_COLUMNS_STATEMENT: Select[Any] = (
    select(*(c for group in _COLUMN_GROUPS for c in group))
    .select_from(Run.__table__)
    .join(Implementation.__table__, _RUNS.implementation_id == _IMPLEMENTATIONS.id)
    .join(Environment.__table__, _RUNS.environment_id == _ENVIRONMENTS.id)
    .join(Hardware.__table__, _ENVIRONMENTS.hardware_id == _HARDWARE.id)
    .join(Protocol.__table__, _RUNS.protocol_id == _PROTOCOLS.id)
    .join(SourceSnapshot.__table__, _RUNS.source_snapshot_id == _SNAPSHOTS.id)
    .join(Source.__table__, _SNAPSHOTS.source_id == _SOURCES.id)
)
RUN_ID_COLUMN = _RUNS.id
# A run's own columns as run_facts reads them (_RUN_READ, in that order), for runs whose values the
# caller holds already (a write's new runs, kernelindex.ingest.writer): FactsBuilder.run_of_values.
RunValues: Any = _RunColumns  # built with keywords: a missing or unknown name fails
RUN_VALUE_NAMES = _RUN_READ


class NewRun(NamedTuple):
    """A run just written, as its writer holds it: its own columns as the database would give them
    back (RunValues) and the ids of its dimensions."""

    values: Any  # RunValues
    implementation_id: int
    environment_id: int
    protocol_id: int
    source_snapshot_id: int
_IMPLEMENTATIONS_BY_ID = select(*_COLUMN_GROUPS[1]).where(_IMPLEMENTATIONS.id == func.any(bindparam("ids", type_=ARRAY(Integer))))
_ENVIRONMENTS_BY_ID = (
    select(*_COLUMN_GROUPS[2], *_COLUMN_GROUPS[3])
    .select_from(Environment.__table__).join(Hardware.__table__, _ENVIRONMENTS.hardware_id == _HARDWARE.id)
    .where(_ENVIRONMENTS.id == func.any(bindparam("ids", type_=ARRAY(Integer))))
)
_PROTOCOLS_BY_ID = select(*_COLUMN_GROUPS[4]).where(_PROTOCOLS.id == func.any(bindparam("ids", type_=ARRAY(Integer))))
_SNAPSHOTS_BY_ID = (
    select(*_COLUMN_GROUPS[5], *_COLUMN_GROUPS[6])
    .select_from(SourceSnapshot.__table__).join(Source.__table__, _SNAPSHOTS.source_id == _SOURCES.id)
    .where(_SNAPSHOTS.id == func.any(bindparam("ids", type_=ARRAY(BigInteger))))
)


def run_columns_statement() -> Select[Any]:
    """The rows of run_rows_statement() as plain columns of the tables (a Core statement: no ORM
    loading, each row is the driver's record), for FactsBuilder.run_of_columns. For lists of runs
    read per request; join or filter it on RUN_ID_COLUMN and the tables' own columns."""
    return _RUN_COLUMNS_STATEMENT


def workload_facts(workload: Workload, revision: WorkloadRevision | None) -> WorkloadFacts:
    """What eligibility needs of a workload: its current revision and canonical configuration."""
    bindings = revision.canonical_bindings if revision else {}
    dtype = revision.canonical_dtype if revision else "fp32"
    return WorkloadFacts(
        id=workload.id, slug=workload.slug, current_revision_id=workload.current_revision_id,
        canonical_bindings=bindings, canonical_dtype=dtype,
        # As stored: a suite's case that is a suite of cases (or differs only in a stated parameter) has
        # the source's case key in its configuration key (kernelindex.ingest.source_import).
        canonical_configuration_key=(revision.canonical_configuration_key if revision and revision.canonical_configuration_key
                                     else configuration_key(bindings, dtype)),
    )


class FactsBuilder:
    """Turns joined rows into shared, de-duplicated facts objects."""

    def __init__(self) -> None:
        self._impl: dict[int, ImplementationFacts] = {}
        self._env: dict[int, EnvironmentFacts] = {}
        self._hw: dict[int, HardwareFacts] = {}
        self._protocol: dict[int, ProtocolFacts] = {}
        self._source: dict[int, SourceFacts] = {}

    def hardware(self, h: Hardware | HardwareFacts) -> HardwareFacts:
        """The facts of a hardware row, or facts read already (load_catalogue_facts), kept for the runs that name it."""
        if h.id not in self._hw:
            self._hw[h.id] = h if isinstance(h, HardwareFacts) else hardware_facts(h)
        return self._hw[h.id]

    def source(self, snapshot: SourceSnapshot, source: Source) -> SourceFacts:
        if snapshot.id not in self._source:
            self._source[snapshot.id] = source_facts(snapshot, source)
        return self._source[snapshot.id]

    def run_of_columns(self, row: Row[Any]) -> RunFacts:
        """A row of run_columns_statement() as RunFacts, equal to what run() makes of the same run."""
        impl = self._impl.get(row[_IMPLEMENTATION_AT])
        if impl is None:
            impl = ImplementationFacts(*row[_IMPLEMENTATION_AT:_ENVIRONMENT_AT])
            self._impl[impl.id] = impl
        env = self._env.get(row[_ENVIRONMENT_AT])
        if env is None:
            env = self._environment_of_row(row)
        protocol = self._protocol.get(row[_PROTOCOL_AT])
        if protocol is None:
            protocol = ProtocolFacts(*row[_PROTOCOL_AT:_SNAPSHOT_AT])
            self._protocol[protocol.id] = protocol
        source = self._source.get(row[_SNAPSHOT_AT])
        if source is None:
            source = self._source_of_row(row)
        # A named tuple of the run's columns: run_facts reads them by name, and a Row's attribute
        # look-up costs about twenty times a tuple field's (half of this method's time).
        return run_facts(_RunColumns._make(row[:_IMPLEMENTATION_AT]), impl, env, protocol, source)

    def know_environments(self, rows: Mapping[int, Mapping[str, Any]]) -> None:
        """The facts of environments whose columns the caller holds (a writer's new rows, by id), where the
        builder knows their hardware already (the refresh loads the catalogue): the values the rows hold,
        so facts made so equal those load_dimensions would read."""
        for env_id, row in rows.items():
            hw = self._hw.get(row["hardware_id"])
            if hw is not None and env_id not in self._env:
                self._env[env_id] = EnvironmentFacts(
                    id=env_id, hardware=hw, **{name: row[name] for name in _ENVIRONMENT_READ if name != "id"})

    async def load_dimensions(self, session: AsyncSession, runs: Sequence[NewRun]) -> None:
        """The facts of every dimension these runs name that the builder lacks, read with the very
        columns run_of_columns reads (one statement per kind of dimension), so facts made either way
        are equal."""
        wanted = (
            (_IMPLEMENTATIONS_BY_ID, self._impl, {r.implementation_id for r in runs}, _IMPLEMENTATION_AT),
            (_ENVIRONMENTS_BY_ID, self._env, {r.environment_id for r in runs}, _ENVIRONMENT_AT),
            (_PROTOCOLS_BY_ID, self._protocol, {r.protocol_id for r in runs}, _PROTOCOL_AT),
            (_SNAPSHOTS_BY_ID, self._source, {r.source_snapshot_id for r in runs}, _SNAPSHOT_AT),
        )
        for statement, known, ids, at in wanted:
            missing = sorted(i for i in ids if i not in known)
            if not missing:
                continue
            for row in (await session.execute(statement, {"ids": missing})).all():
                # Laid out as a run_columns_statement() row from `at` on, so the same slicing builds them.
                self._dimension_of_row((None,) * at + tuple(row), at)

    def _dimension_of_row(self, row: Sequence[Any], at: int) -> None:
        if at == _IMPLEMENTATION_AT:
            impl = ImplementationFacts(*row[_IMPLEMENTATION_AT:_ENVIRONMENT_AT])
            self._impl.setdefault(impl.id, impl)
        elif at == _ENVIRONMENT_AT:
            self._environment_of_row(row)
        elif at == _PROTOCOL_AT:
            protocol = ProtocolFacts(*row[_PROTOCOL_AT:_SNAPSHOT_AT])
            self._protocol.setdefault(protocol.id, protocol)
        else:
            self._source_of_row(row)

    def _environment_of_row(self, row: Sequence[Any]) -> EnvironmentFacts:
        env = self._env.get(row[_ENVIRONMENT_AT])
        if env is None:
            hw = self._hw.get(row[_HARDWARE_AT])
            if hw is None:
                hw = hardware_facts_of_columns(row[_HARDWARE_AT:_PROTOCOL_AT])
                self._hw[hw.id] = hw
            env = EnvironmentFacts(hardware=hw, **dict(zip(_ENVIRONMENT_READ, row[_ENVIRONMENT_AT:_HARDWARE_AT], strict=True)))
            self._env[env.id] = env
        return env

    def _source_of_row(self, row: Sequence[Any]) -> SourceFacts:
        source = self._source.get(row[_SNAPSHOT_AT])
        if source is None:
            snapshot_id, revision, revision_date, route, outdated = row[_SNAPSHOT_AT:_SOURCE_AT]
            name, licence, url, terms, attribution = row[_SOURCE_AT:_END]
            source = SourceFacts(id=snapshot_id, name=name, licence=licence, url=url, revision=revision or None,
                                 revision_date=revision_date, route=route, terms=terms, attribution=attribution,
                                 outdated=outdated)
            self._source[snapshot_id] = source
        return source

    def run_of_values(self, run: NewRun) -> RunFacts:
        """RunFacts of a run whose columns the caller holds, its dimensions loaded (load_dimensions):
        equal to what run_of_columns makes of the stored run."""
        return run_facts(run.values, self._impl[run.implementation_id], self._env[run.environment_id],
                         self._protocol[run.protocol_id], self._source[run.source_snapshot_id])

    def run(
        self, run: Any, impl: Implementation, env: Environment, hw: Hardware, protocol: Protocol,
        snapshot: SourceSnapshot, source: Source,
    ) -> RunFacts:
        """A row of run_rows_statement() as RunFacts (`run` is the Bundle of the run's columns)."""
        if impl.id not in self._impl:
            self._impl[impl.id] = implementation_facts(impl)
        if env.id not in self._env:
            self._env[env.id] = environment_facts(env, self.hardware(hw))
        if protocol.id not in self._protocol:
            self._protocol[protocol.id] = protocol_facts(protocol)
        return run_facts(run, self._impl[impl.id], self._env[env.id], self._protocol[protocol.id], self.source(snapshot, source))
