"""Workload pages read from the precomputed cohort bests plus the few runs on show: a fixed, small
number of statements however many runs the workload has.

The rules still decide: records, order and labels come from kernelindex.rules.ranking applied to
the cohort bests (each cohort's record is its fastest implementation best), a comparison ranks its
cohort's eligible runs, and plausibility holds flagged runs out exactly as the refresh does. Each
loader returns its values and changes nothing it was given: the page (`load_page_evidence`), then,
only for the fields that ask, the rows a comparison shows (`load_cohort_tops`), the latest
measurements with the runs held for review (`load_page_runs`: one statement for both, as a page shows
both) and every measurement of the subjects shown
(`load_subject_measurements`). What is read grows with what is shown, not with what is stored:
a cohort's count and latest observation come from its cohort-best rows, its rows from an ordered
LIMIT, the page's sources from an ordered LIMIT over workload_sources (each snapshot the cohort bests
name, kept with them), the latest measurements from index descents of ix_runs_cohort_measured. `load_comparisons` reads a record's whole cohort, for checks only.
`tests/api/test_page_paths.py` and `tests/api/test_page_scaling.py` check this path against the
full computation (kernelindex.services.evidence).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    Integer,
    Select,
    Text,
    any_,
    bindparam,
    func,
    literal,
    literal_column,
    null,
    select,
    text,
    true,
    type_coerce,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, distinct_on
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from kernelindex.db.arrays import array_values, id_array, unnested
from kernelindex.db.driver import fetch_rows
from kernelindex.db.models import (
    CohortBest,
    Hardware,
    Implementation,
    Protocol,
    Run,
    Source,
    SourceSnapshot,
    Workload,
    WorkloadRevision,
    WorkloadSource,
)
from kernelindex.rules import ranking
from kernelindex.rules.eligibility import HEADLINE, METRICS, RecordScope
from kernelindex.rules.facts import HardwareFacts, RunFacts, SourceFacts
from kernelindex.rules.identity import read_configuration_key
from kernelindex.rules.measurements import MAX_LATENCY_MS, MIN_LATENCY_MS
from kernelindex.services.eligibility import newest_snapshot_clause, not_held_clause
from kernelindex.services.facts import (
    COHORT_COLUMNS,
    RUN_ID_COLUMN,
    SOURCE_FACT_COLUMNS,
    CohortKey,
    FactsBuilder,
    run_columns_statement,
    run_rows_statement,
    source_facts_of_columns,
    workload_facts,
)
from kernelindex.services.holds import HeldRun, flagged_runs, held_of, held_runs_of, hold_columns, with_holds
from kernelindex.services.workload_page import SOURCES_SHOWN, CohortSummary, WorkloadPage

MEASURED_PER_IMPLEMENTATION_AND_SKU = 5

# A cohort best row is a plain row of the cohort_bests table (see load_page_evidence), without its
# source_snapshot_ids (they grow with the runs) but with how many there are and the first of them.
BestRow = Any
BEST_COLUMNS = (
    *(c for c in CohortBest.__table__.c if c.key != "source_snapshot_ids"),
    func.cardinality(CohortBest.source_snapshot_ids).label("snapshot_count"),
    CohortBest.source_snapshot_ids[1].label("first_snapshot_id"),
)

# A subject of the trust ladder: workload revision, configuration key, implementation, hardware.
Subject = tuple[int, str, int, int]


class _BestKey:
    """A cohort best row seen by ranking.order_key (figure, then earlier observation, then run id)."""

    __slots__ = ("figure", "observed_at", "id")

    def __init__(self, row: BestRow):
        self.figure, self.observed_at, self.id = row.figure, row.observed_at, row.run_id


def _order(row: BestRow) -> tuple[Any, ...]:
    return ranking.order_key(_BestKey(row))  # type: ignore[arg-type]  # order_key reads only these three


def _cohort_of(row: BestRow) -> CohortKey:
    return (row.workload_revision_id, row.configuration_key, row.protocol_id, row.environment_id)


def _page(
    workload: Workload, revision: WorkloadRevision | None, catalogue: Sequence[HardwareFacts],
    bests: Sequence[BestRow], runs_by_id: dict[int, RunFacts], sources: Sequence[SourceFacts],
) -> WorkloadPage:
    """The page from one workload's cohort bests and the runs they name."""
    facts = workload_facts(workload, revision)
    by_cohort: dict[CohortKey, list[BestRow]] = defaultdict(list)
    by_impl: dict[int, list[BestRow]] = defaultdict(list)
    kinds: dict[int, set[str]] = defaultdict(set)
    for b in bests:
        by_cohort[_cohort_of(b)].append(b)
        by_impl[b.implementation_id].append(b)
        kinds[b.implementation_id].update(b.evidence_kinds)
    heads = sorted(
        ((runs_by_id[min(rows, key=_order).run_id], sum(b.run_count for b in rows), key) for key, rows in by_cohort.items()),
        key=lambda head: ranking.order_key(head[0]),
    )
    labels = ranking.environment_labels([run for run, _, _ in heads])
    record_cohort = heads[0][2] if heads else None
    records = [
        ranking.CohortRecord(
            run=run, run_count=count, environment_label=labels[run.environment.id],
            cohort=ranking.rank_cohort(runs_by_id[b.run_id] for b in by_cohort[key]) if key == record_cohort else [],
        )
        for run, count, key in heads
    ]
    return WorkloadPage(
        workload=workload, revision=revision, facts=facts, catalogue=catalogue, records=records,
        implementation_bests=ranking.implementation_bests(runs_by_id[min(rows, key=_order).run_id] for rows in by_impl.values()),
        eligible_count=sum(b.run_count for b in bests),
        last_observed=max((b.last_observed_at.date() for b in bests), default=None),
        sources=sources,
        measured_hardware_ids=frozenset(b.hardware_id for b in bests),
        evidence_kinds_by_implementation={i: frozenset(k) for i, k in kinds.items()},
        record_cohort=record_cohort,
        cohort_summaries={key: _summary(rows) for key, rows in by_cohort.items()},
    )


def _summary(rows: Sequence[BestRow]) -> CohortSummary:
    """A cohort's latest observation and whether one source gave all its rows, from its bests: each
    row's source snapshots are distinct, so one source means every row has one and the same."""
    return CohortSummary(
        last_observed=max(b.last_observed_at.date() for b in rows),
        single_source=all(b.snapshot_count == 1 for b in rows) and len({b.first_snapshot_id for b in rows}) == 1,
    )


def _shown_run_ids(bests: Sequence[BestRow]) -> set[int]:
    """The runs a page shows: each cohort's record, each implementation's best, the record cohort's rows."""
    if not bests:
        return set()
    by_cohort: dict[CohortKey, list[BestRow]] = defaultdict(list)
    by_impl: dict[int, list[BestRow]] = defaultdict(list)
    for b in bests:
        by_cohort[_cohort_of(b)].append(b)
        by_impl[b.implementation_id].append(b)
    heads = [min(rows, key=_order) for rows in by_cohort.values()]
    wanted = {b.run_id for b in heads}
    wanted.update(min(rows, key=_order).run_id for rows in by_impl.values())
    wanted.update(b.run_id for b in by_cohort[_cohort_of(min(heads, key=_order))])
    return wanted


async def load_page_evidence(
    session: AsyncSession, workloads: Sequence[Workload], catalogue: Sequence[Hardware] | Sequence[HardwareFacts],
    scope: RecordScope = HEADLINE,
) -> dict[int, WorkloadPage]:
    """The page of each workload, by workload id: its headline records (the canonical configuration's
    latencies), or those of another configuration or metric (`scope`, eligibility-v3). `catalogue`: every
    hardware row, or their facts (kernelindex.services.facts.load_catalogue_facts)."""
    builder = FactsBuilder()
    catalogue_facts = [builder.hardware(h) for h in catalogue]
    revision_ids = [w.current_revision_id for w in workloads if w.current_revision_id]
    revisions = (
        {r.id: r for r in (await session.scalars(_REVISIONS, {"revision_ids": revision_ids})).all()}
        if revision_ids else {}
    )
    bests_of: dict[int, list[BestRow]] = {w.id: [] for w in workloads}
    runs_by_id: dict[int, RunFacts] = {}
    sources_of: dict[int, list[SourceFacts]] = defaultdict(list)
    if revision_ids:
        canonical = scope.configuration_key is None
        values: dict[str, Any] = {"revision_ids": revision_ids}
        if not canonical:
            values["configuration_key"] = scope.configuration_key
        # Plain rows, not ORM entities: a list page reads ~80 per workload, and building and
        # identity-mapping thousands of entities was a third of the list query's time.
        bests = await fetch_rows(session, _bests_statement(canonical, _metric_literal(scope.metric)), values)
        for b in bests:
            bests_of[b.workload_id].append(b)
        wanted = set().union(*(_shown_run_ids(rows) for rows in bests_of.values()))
        if wanted:  # there are bests: the runs they show, and the sources, in one statement
            rows = await fetch_rows(session, _runs_and_sources_statement(canonical), values | {"run_ids": list(wanted)})
            for row in rows:
                if row[_PART_AT] == 0:  # a run: its columns first, as run_columns_statement() gives them
                    run = builder.run_of_columns(row)
                    runs_by_id[run.id] = run
                else:  # a source: the workload, then SOURCE_FACT_COLUMNS
                    sources_of[row[_RUN_WIDTH]].append(source_facts_of_columns(row[_RUN_WIDTH + 1:_PART_AT]))
    return {
        w.id: _page(w, revisions.get(w.current_revision_id) if w.current_revision_id else None, catalogue_facts,
                    bests_of[w.id], runs_by_id, sources_of[w.id])
        for w in workloads
    }


# The page's statements are built once (per scope's kind and metric), their values given at execution:
# building and compiling each anew was a good part of a cold page's time (kernelindex.db.arrays).
_REVISIONS = select(WorkloadRevision).where(
    WorkloadRevision.id == any_(id_array("revision_ids")))


# The runs' rows as plain columns (run_columns_statement, FactsBuilder.run_of_columns): no ORM entity
# is loaded for a run's dimensions; what a row holds past them starts at _RUN_WIDTH.
_RUN_WIDTH = len(run_columns_statement().selected_columns)


@cache
def _runs_by_id_statement() -> Select:
    return run_columns_statement().where(RUN_ID_COLUMN == any_(id_array("run_ids")))


@cache
def _bests_statement(canonical: bool, metric: str) -> Select:
    """The cohort bests of the current revisions (`revision_ids`) at their canonical configuration, or at
    `configuration_key` (not canonical), for the metric (written into the text, as the metric of
    ix_runs' partial indexes is: see live_passed_clauses)."""
    current = (
        # The revisions by their own key too: PostgreSQL then finds each by its primary key rather than
        # scanning every revision for the join (a fifth of this statement's time at 252 workloads).
        (WorkloadRevision.id == any_(id_array("revision_ids")))
        & (CohortBest.workload_revision_id == any_(id_array("revision_ids")))
        & (CohortBest.configuration_key == _configuration(canonical))
        & (Protocol.metric == literal_column(f"'{_metric_literal(metric)}'"))
    )
    return (
        select(*BEST_COLUMNS)
        .join(WorkloadRevision, WorkloadRevision.id == CohortBest.workload_revision_id)
        .join(Protocol, Protocol.id == CohortBest.protocol_id)
        .where(current)
    )


def _configuration(canonical: bool) -> Any:
    """The configuration records are at: the current revision's canonical one, or the `configuration_key` given."""
    return WorkloadRevision.canonical_configuration_key if canonical else bindparam("configuration_key", type_=Text)


def _metric_literal(metric: str) -> str:
    if metric not in METRICS:  # a constant written into a statement: only a known word
        raise ValueError(f"unknown metric {metric!r}")
    return metric


@cache
def _first_sources(canonical: bool) -> tuple[Select, tuple[Any, ...]]:
    """Each workload's first SOURCES_SHOWN sources of its eligible runs, by name then revision
    (workload_page.sorted_sources's order: code points, hence collation "C"), in that order; for the
    current revisions `revision_ids`, at the canonical configuration or at `configuration_key`.

    Read from workload_sources (each snapshot the cohort bests of a revision and configuration name,
    kept by kernelindex.services.records): per current revision an ordered LIMIT along
    ix_workload_sources_order, so a cohort of 10,000 runs naming a thousand snapshots reads the
    SOURCES_SHOWN the page shows, not every snapshot id of its bests."""
    top = (
        select(WorkloadSource.source_snapshot_id, WorkloadSource.source_name, WorkloadSource.snapshot_revision)
        .where(
            WorkloadSource.workload_revision_id == WorkloadRevision.id,
            WorkloadSource.configuration_key == _configuration(canonical),
        )
        .order_by(WorkloadSource.source_name, WorkloadSource.snapshot_revision, WorkloadSource.source_snapshot_id)
        .limit(SOURCES_SHOWN)
        .lateral("top")
    )
    statement = (
        select(WorkloadRevision.workload_id, *SOURCE_FACT_COLUMNS)
        .select_from(WorkloadRevision)
        .join(top, true())
        .join(SourceSnapshot, SourceSnapshot.id == top.c.source_snapshot_id)
        .join(Source, Source.id == SourceSnapshot.source_id)
        .where(WorkloadRevision.id == any_(id_array("revision_ids")))
    )
    return statement, (WorkloadRevision.workload_id, top.c.source_name, top.c.snapshot_revision, top.c.source_snapshot_id)


_PART_AT = _RUN_WIDTH + 1 + len(SOURCE_FACT_COLUMNS)  # _runs_and_sources_statement's column saying which part a row is of


@cache
def _runs_and_sources_statement(canonical: bool) -> Any:
    """The rows of _runs_by_id_statement (`run_ids`) and of _first_sources (`revision_ids`, and
    `configuration_key` where not canonical) in one statement, one round trip: each row holds the columns
    of both, those of the other part NULL; then its part (0: a run, 1: a source) and, for a source, its
    place in the sources' order. Ordered by part, then that place: the sources in their own order.

    Two parts, so PostgreSQL types each column of the union from the part that has it (a bare NULL takes
    the other part's type)."""
    runs = _runs_by_id_statement()
    sources, order = _first_sources(canonical)
    run_columns, source_columns = list(runs.selected_columns), list(sources.selected_columns)
    runs_part = runs.add_columns(
        *(type_coerce(null(), c.type).label(f"source_{i}") for i, c in enumerate(source_columns)),
        literal_column("0").label("part"), type_coerce(null(), BigInteger).label("place"),
    )
    sources_part = sources.with_only_columns(
        *(type_coerce(null(), c.type).label(f"run_{i}") for i, c in enumerate(run_columns)),
        *source_columns, literal_column("1"), func.row_number().over(order_by=order),
        maintain_column_froms=False,
    )
    return union_all(runs_part, sources_part).order_by(literal_column("part"), literal_column("place"))


async def load_comparisons(session: AsyncSession, pages: Iterable[WorkloadPage]) -> dict[int, ranking.CohortRecord | None]:
    """Each page's overall record with every eligible run of its cohort ranked (only the comparison
    asks for them), by workload id; None for a page with no record."""
    pages = list(pages)
    keys = [p.record_cohort for p in pages if p.record_cohort]
    out: dict[int, ranking.CohortRecord | None] = {p.workload.id: None for p in pages}
    if not keys:
        return out
    cohorts = unnested("cohorts", COHORT_COLUMNS, keys)
    statement = run_rows_statement().join(
        cohorts,
        (Run.workload_revision_id == cohorts.c.rev) & (Run.configuration_key == cohorts.c.cfg)
        & (Run.protocol_id == cohorts.c.proto) & (Run.environment_id == cohorts.c.env),
    ).where(Run.status == "passed", Run.superseded_at.is_(None), Run.retracted_at.is_(None))
    builder = FactsBuilder()
    facts = await with_holds(session, [builder.run(*row[:7]) for row in (await session.execute(statement)).all()])
    for page in pages:
        record = page.overall_record
        if record is None:
            continue
        mine = [f for f in facts if f.cohort_key == page.record_cohort]
        out[page.workload.id] = replace(record, cohort=ranking.rank_cohort(ranking.eligible_runs(mine, page.facts)))
    return out


def _measured_of(pages: Sequence[WorkloadPage], facts: Sequence[RunFacts]) -> dict[int, list[RunFacts]]:
    """Each page's latest measurements, by workload id (PageRuns.measured), from the runs of
    _LATEST_MEASURED (in id order, each held or not): the eligible ones of its workload."""
    return {page.workload.id: ranking.eligible_runs([f for f in facts if f.workload_id == page.workload.id], page.facts)
            for page in pages}


def _latest_measured() -> Any:
    """The ids of the latest measurements of the current revisions (`revs`): _LATEST_MEASURED."""
    return text(_LATEST_MEASURED).bindparams(bindparam("revs", type_=ARRAY(Integer))).columns(id=BigInteger).subquery("latest")


@dataclass(frozen=True)
class PageRuns:
    """The runs a page reads past its records: its latest measurements (_LATEST_MEASURED, then
    _measured_of) and its runs held for review (holds.flagged_runs, then holds.held_runs_of)."""

    measured: list[RunFacts]
    held: list[HeldRun]


_MEASURED_TAG, _HELD_TAG = "measured", "held"
# Where a row of _page_runs_statement ends its hold_columns(), which follow the run's own columns.
_HOLDS_END = _RUN_WIDTH + len(hold_columns())


@cache
def _page_runs_statement() -> Select:
    """load_page_runs' statement, built once: the latest measurements of the current revisions `revs`
    (_LATEST_MEASURED) and the flagged runs of those of `revision_ids` (holds.flagged_runs) in one, each
    run with its four hold_columns() and a tag saying which it is (a run both measured latest and
    flagged comes twice); by tag, then run id."""
    latest, flagged = _latest_measured(), flagged_runs()
    picked = union_all(
        select(latest.c.id, literal_column(f"'{_MEASURED_TAG}'", Text).label("tag")),
        select(flagged.c.id, literal_column(f"'{_HELD_TAG}'", Text).label("tag")),
    ).subquery("page_runs")
    return (run_columns_statement().add_columns(*hold_columns(), picked.c.tag)
            .join(picked, picked.c.id == RUN_ID_COLUMN).order_by(picked.c.tag, RUN_ID_COLUMN))


async def load_page_runs(session: AsyncSession, pages: Iterable[WorkloadPage]) -> dict[int, PageRuns]:
    """Each page's latest measurements and held runs, by workload id, in one statement (a cold page asks
    for both: one round trip, not two). The tests read each alone (tests/api/page_loaders) and compare."""
    pages = list(pages)
    measured_revisions = [p.workload.current_revision_id for p in pages if p.workload.current_revision_id]
    held_revisions = [p.revision.id for p in pages if p.revision is not None]
    rows = await fetch_rows(session, _page_runs_statement(), {"revs": measured_revisions, "revision_ids": held_revisions})
    builder = FactsBuilder()
    measured: list[RunFacts] = []
    flagged: list[tuple[RunFacts, Sequence[Any]]] = []
    for row in rows:
        facts, holds = builder.run_of_columns(row), row[_RUN_WIDTH:_HOLDS_END]
        if row[-1] == _MEASURED_TAG:
            measured.append(held_of(facts, holds))
        else:
            flagged.append((facts, holds))
    latest = _measured_of(pages, measured) if measured_revisions else {p.workload.id: [] for p in pages}
    held = held_runs_of(pages, flagged)
    return {p.workload.id: PageRuns(measured=latest[p.workload.id], held=held[p.workload.id]) for p in pages}


# A live, passed KernelIndex measurement: ix_runs_cohort_measured's predicate, written as constants
# so a prepared statement's generic plan still uses the index (see _live_passed).
_MEASURED = "m.superseded_at IS NULL AND m.retracted_at IS NULL AND m.status = 'passed' AND m.evidence = 'measured'"
_NEXT_COMBINATION = f"""SELECT m.protocol_id, m.environment_id, m.implementation_id FROM runs m
         WHERE m.workload_revision_id = {{rev}} AND m.configuration_key = {{cfg}} AND {_MEASURED}{{after}}
         ORDER BY m.protocol_id, m.environment_id, m.implementation_id LIMIT 1"""
# The latest MEASURED_PER_IMPLEMENTATION_AND_SKU measurements per implementation and SKU of each
# current revision at its canonical configuration, read along ix_runs_cohort_measured (revision,
# configuration, protocol, environment, implementation, observed_at DESC, id DESC): `combos` walks
# the index's distinct (protocol, environment, implementation) one descent each (a loose index
# scan), `picked` takes the latest few of each as an index range, and the window keeps the latest
# few per SKU over its environments. What is read grows with the combinations, not with the runs.
# Held runs are picked like any (the Python filter drops them after, as it did over the full scan).
_LATEST_MEASURED = f"""
WITH RECURSIVE combos (rev, cfg, proto, env, impl) AS (
    SELECT r.id, r.canonical_configuration_key, f.protocol_id, f.environment_id, f.implementation_id
      FROM workload_revisions r
     CROSS JOIN LATERAL ({_NEXT_COMBINATION.format(rev="r.id", cfg="r.canonical_configuration_key", after="")}) f
     WHERE r.id = ANY(:revs)
    UNION ALL
    SELECT c.rev, c.cfg, f.protocol_id, f.environment_id, f.implementation_id
      FROM combos c
     CROSS JOIN LATERAL ({_NEXT_COMBINATION.format(
         rev="c.rev", cfg="c.cfg",
         after=" AND (m.protocol_id, m.environment_id, m.implementation_id) > (c.proto, c.env, c.impl)")}) f
),
picked AS (
    SELECT t.id, row_number() OVER (PARTITION BY c.rev, c.impl, e.hardware_id  -- cfg: the revision's canonical one
                                    ORDER BY t.observed_at DESC, t.id DESC) AS n
      FROM combos c
      JOIN environments e ON e.id = c.env
     CROSS JOIN LATERAL (
        SELECT m.id, m.observed_at FROM runs m
         WHERE m.workload_revision_id = c.rev AND m.configuration_key = c.cfg AND m.protocol_id = c.proto
           AND m.environment_id = c.env AND m.implementation_id = c.impl AND {_MEASURED}
         ORDER BY m.observed_at DESC, m.id DESC LIMIT {MEASURED_PER_IMPLEMENTATION_AND_SKU}) t
)
SELECT id FROM picked WHERE n <= {MEASURED_PER_IMPLEMENTATION_AND_SKU}
"""


def _float8(value: float) -> Any:
    """A float8 constant written into the statement (never bound): see _ranking_order."""
    return literal_column(f"'{value!r}'::double precision")


def _ranking_order() -> tuple[Any, ...]:
    """ranking.order_key in SQL: the mean as the read side holds it (measurements.readable clamps a
    stored mean to measurements-v1's bounds), then the earlier observation, then the run id.

    The expression of ix_runs_cohort_top (migration 0010), with its bounds as constants in the text:
    a bound parameter in ORDER BY never matches an index expression under a prepared statement's
    generic plan, and the cohort's rows would be read in full and sorted again."""
    mean = func.least(func.greatest(Run.figure, _float8(MIN_LATENCY_MS)), _float8(MAX_LATENCY_MS))
    return (mean, Run.observed_at, Run.id)


def _live_passed() -> tuple[ColumnElement[bool], ...]:
    """Live and passed, 'passed' written into the statement: a plan kept for a prepared statement
    uses a partial index (ix_runs_cohort_top, ix_runs_cohort_measured) only if the statement's own
    text implies the index's predicate."""
    return (Run.status == literal_column("'passed'"), Run.superseded_at.is_(None), Run.retracted_at.is_(None))


@dataclass(frozen=True)
class CohortTop:
    """What a comparison of one cohort needs beyond its cohort bests, for its first `limit` rows.

    rows: the first limit + 1 eligible runs in ranking order; the one past the rows shown says
    whether the last shown tie group is shared (ties.tied_ranks walks in order, so ranks of a
    prefix depend on the prefix alone, a group's size on the next row too).
    baseline: the fastest eligible run of a baseline implementation (ranking.baseline_of), read from
    the cohort bests: each implementation's best is its fastest run, so the baseline is one of them.
    cross_checks: per implementation, the latest eligible KernelIndex measurement of the cohort
    whose correctness did not fail: the only cohort runs a row's cross-check can pick (a cohort is
    one environment, so no cohort run replicates a row: the trust ladder wants another one)."""

    rows: Sequence[RunFacts]
    baseline: RunFacts | None
    cross_checks: Sequence[RunFacts]


CohortTopKey = tuple[CohortKey, int]  # a cohort and how many rows are shown


_COHORT_TOPS = (*COHORT_COLUMNS, ("lim", Integer))  # the cohorts and how many rows each shows


@cache
def _cohort_tops_statement() -> Select:
    """load_cohort_tops' statement, built once: the cohorts are its array parameters (array_values)."""
    wanted = unnested("wanted", _COHORT_TOPS)
    in_cohort = (
        (Run.workload_revision_id == wanted.c.rev) & (Run.configuration_key == wanted.c.cfg)
        & (Run.protocol_id == wanted.c.proto) & (Run.environment_id == wanted.c.env)
    )
    top = (
        # A whole snapshot a newer one replaced (an older export) is stored but ranks nowhere (eligibility-v3).
        select(Run.id.label("id")).where(in_cohort, *_live_passed(), newest_snapshot_clause(), not_held_clause())
        .order_by(*_ranking_order()).limit(wanted.c.lim + 1).lateral("top")
    )
    checks = (
        select(Run.id.label("id"))
        .where(in_cohort, *_live_passed(), newest_snapshot_clause(), not_held_clause(), Run.evidence == literal_column("'measured'"),
               Run.correctness["passed"].is_distinct_from(literal_column("'false'::jsonb")))
        .ext(distinct_on(Run.implementation_id))
        .order_by(Run.implementation_id, Run.observed_at.desc(), Run.id.desc())
        .lateral("checks")
    )
    baseline = (
        select(CohortBest.run_id.label("id"))
        .join(Implementation, Implementation.id == CohortBest.implementation_id)
        .where(
            CohortBest.workload_revision_id == wanted.c.rev, CohortBest.configuration_key == wanted.c.cfg,
            CohortBest.protocol_id == wanted.c.proto, CohortBest.environment_id == wanted.c.env,
            Implementation.role == "baseline",
        )
        .order_by(CohortBest.figure, CohortBest.observed_at, CohortBest.run_id)
        .limit(1)
        .lateral("baseline")
    )
    picked = union_all(*(
        select(*wanted.c, part.c.id, literal(tag).label("tag")).select_from(wanted.join(part, true()))
        for part, tag in ((top, "row"), (checks, "check"), (baseline, "baseline"))
    )).subquery("picked")
    statement = run_columns_statement().add_columns(
        *(picked.c[n] for n in ("rev", "cfg", "proto", "env", "lim", "tag")), *hold_columns())
    return statement.join(picked, picked.c.id == RUN_ID_COLUMN)


async def load_cohort_tops(session: AsyncSession, keys: Sequence[CohortTopKey]) -> dict[CohortTopKey, CohortTop]:
    """Each cohort's CohortTop for its limit: one statement (an ordered LIMIT per cohort, joined
    laterally), each run with what decides its holds (hold_columns). Reads grow with the rows shown, not with the cohort."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return {}
    rows = await fetch_rows(
        session, _cohort_tops_statement(), array_values("wanted", _COHORT_TOPS, [(*key, limit) for key, limit in keys]))
    builder = FactsBuilder()
    facts = {f.id: f for f in (held_of(builder.run_of_columns(row), row[_RUN_WIDTH + 6:]) for row in rows)}
    parts: dict[CohortTopKey, dict[str, list[RunFacts]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        run = facts[row[0]]  # the run's id, its first column
        if not run.held_for_review:
            rev, cfg, proto, env, limit, tag = row[_RUN_WIDTH:_RUN_WIDTH + 6]
            parts[((rev, cfg, proto, env), limit)][tag].append(run)
    out: dict[CohortTopKey, CohortTop] = {}
    for key in keys:
        mine = parts[key]
        out[key] = CohortTop(
            rows=sorted(mine["row"], key=ranking.order_key),
            baseline=mine["baseline"][0] if mine["baseline"] else None,
            cross_checks=mine["check"],
        )
    return out


_SUBJECTS = (("rev", Integer), ("cfg", Text), ("impl", Integer), ("hw", Integer))


@cache
def _subject_measurements_statement() -> Select:
    """load_subject_measurements' statement, built once: the subjects are its array parameters (array_values)."""
    wanted = unnested("subjects", _SUBJECTS)
    return run_columns_statement().add_columns(*hold_columns()).join(
        wanted,
        (Run.workload_revision_id == wanted.c.rev) & (Run.configuration_key == wanted.c.cfg)
        & (Run.implementation_id == wanted.c.impl) & (Hardware.id == wanted.c.hw),
    ).where(*_live_passed(), Run.evidence == literal_column("'measured'"))


async def load_subject_measurements(session: AsyncSession, subjects: Sequence[Subject]) -> dict[Subject, list[RunFacts]]:
    """Every eligible KernelIndex measurement of these subjects (workload revision, configuration,
    implementation, hardware), by subject: what the trust ladder weighs for a row of that subject
    (replicas and cross-checks are of the same revision, configuration, implementation and SKU).
    One statement, the holds read with the runs; reads grow with the measurements of the subjects shown."""
    subjects = list(dict.fromkeys(subjects))
    out: dict[Subject, list[RunFacts]] = {s: [] for s in subjects}
    if not subjects:
        return out
    rows = await fetch_rows(session, _subject_measurements_statement(), array_values("subjects", _SUBJECTS, subjects))
    builder = FactsBuilder()
    for f in (held_of(builder.run_of_columns(row), row[_RUN_WIDTH:]) for row in rows):
        if not f.held_for_review:
            out[(f.workload_revision_id, f.configuration_key, f.implementation.id, f.environment.hardware.id)].append(f)
    return out


@dataclass(frozen=True)
class ScopeSummary:
    """One record scope of a workload's current revision that holds records (eligibility-v3): a
    configuration and a metric, with how many runs count there and on which hardware."""

    configuration_key: str
    metric: str
    canonical: bool
    run_count: int
    hardware_ids: tuple[int, ...]

    @property
    def scope(self) -> RecordScope:
        return RecordScope(None if self.canonical else self.configuration_key, self.metric)


async def load_record_scopes(session: AsyncSession, workload_ids: Sequence[int]) -> dict[int, list[ScopeSummary]]:
    """Each workload's record scopes, by workload id: the canonical configuration first, then by key,
    each configuration's metrics in METRICS order. Read from the cohort bests alone (one statement)."""
    out: dict[int, list[ScopeSummary]] = {w: [] for w in workload_ids}
    if not workload_ids:
        return out
    canonical = CohortBest.configuration_key == WorkloadRevision.canonical_configuration_key
    rows = (await session.execute(
        select(CohortBest.workload_id, CohortBest.configuration_key, Protocol.metric, canonical,
               func.sum(CohortBest.run_count), func.array_agg(CohortBest.hardware_id.distinct()))
        .join(Workload, Workload.id == CohortBest.workload_id)
        .join(WorkloadRevision, WorkloadRevision.id == CohortBest.workload_revision_id)
        .join(Protocol, Protocol.id == CohortBest.protocol_id)
        .where(CohortBest.workload_id == any_(id_array("ids", workload_ids)),
               CohortBest.workload_revision_id == Workload.current_revision_id)
        .group_by(CohortBest.workload_id, CohortBest.configuration_key, Protocol.metric, canonical)
    )).all()
    for workload_id, key, metric, is_canonical, count, hardware in rows:
        out[workload_id].append(ScopeSummary(key, metric, bool(is_canonical), int(count), tuple(sorted(hardware))))
    for scopes in out.values():
        scopes.sort(key=lambda s: (not s.canonical, _binding_order(s.configuration_key), s.configuration_key,
                                   METRICS.index(s.metric)))
    return out


def _binding_order(configuration_key: str) -> tuple:
    """A configuration's place in a list: by its bindings' values in axis order, as numbers (N = 2048
    before N = 16384); a key that is not a configuration's (none is) sorts last."""
    try:
        bindings = read_configuration_key(configuration_key).bindings
    except (ValueError, TypeError):
        return (1, ())
    return (0, tuple((axis, bindings[axis]) for axis in sorted(bindings)))
