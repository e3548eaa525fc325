"""Writing run records: resolve the dimensions, then bulk-insert, supersede or skip each run.

One call of `RunWriter.write` is one batch; the caller owns the transaction, so a batch lands whole
or not at all. Idempotent: a record whose natural key (workload revision, configuration,
implementation, environment, protocol, source revision) is already live with the same content is
"unchanged"; with other content it becomes a new run that supersedes the old one.

A batch costs a fixed number of round trips whatever its size: the dimensions (environments,
implementations, protocols, sources, snapshots) new to the writer are created with one
INSERT … ON CONFLICT DO NOTHING (executemany) each and read back with one SELECT each; the live
runs with the batch's natural keys come from one join against unnest(...) arrays; new runs go in
with one INSERT … SELECT FROM unnest(...) RETURNING per 5,000. A writer keeps the dimension ids it
has resolved, so one writer can serve several batches of one transaction (or several committed
transactions: ids of committed rows stay good; call `forget()` after a rollback).

After writing, the writer refreshes the precomputed records (kernelindex.services.records) of the
cohorts that can hold records (current revision, canonical configuration) its new runs joined, in
the same transaction, so readers see a batch's runs and its records together. The record history
(events) is derived from the new runs in observed order; a writer made with defer_events leaves it
to one `record_events()` call after the last batch, so an import's events never depend on how it
was cut into batches.

With dry_run nothing is written at all: dimensions not in the database get placeholder ids (below
zero), and a run with any of them is counted as inserted. A dry run of a file with catalogue lines
is given those lines' hardware and workloads as an overlay (`catalog_overlay`), with placeholder
ids, so it resolves what the real run will find without writing it.

Hardware is never added here: a record naming hardware the catalogue lacks is refused (new hardware
comes in through kernelindex.hardware/1 catalogue lines).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any, TypeVar

from sqlalchemy import Table, or_, select, text, tuple_
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.copy import copy_rows, driver_connection
from kernelindex.db.locks import hold_index_writes
from kernelindex.db.models import (
    Base,
    Environment,
    Hardware,
    Implementation,
    Protocol,
    Source,
    SourceSnapshot,
    SuiteSnapshot,
    SuiteSnapshotMember,
    Workload,
    WorkloadRevision,
)
from kernelindex.ingest.errors import InputProblem
from kernelindex.ingest.records import PendingLine, RunRecord, parse_observed_at
from kernelindex.ingest.workloads import revision_matches
from kernelindex.rules.identity import configuration_key, digest
from kernelindex.rules.names import hardware_key, hardware_name_problem, skeleton
from kernelindex.services.records import CohortKey, RefreshSummary, refresh_cohorts

VOLATILE_ENVIRONMENT_DETAILS = ("clocks", "current_clocks", "fingerprint", "captured_at")

KEYS_PER_LOOKUP = 5000
# More new dimension rows than this in a batch go in by COPY (_insert_staged), fewer by executemany.
STAGE_DIMENSIONS_FROM = 50
COHORTS_PER_REFRESH = 500


@dataclass
class IngestSummary:
    inserted: int = 0
    unchanged: int = 0
    superseded: int = 0
    rejected: int = 0
    workloads: set[int] = field(default_factory=set)
    implementations: set[int] = field(default_factory=set)
    environments: set[int] = field(default_factory=set)
    problems: list[InputProblem] = field(default_factory=list)
    # Problems counted but not kept in `problems` (a file of a million bad lines keeps the first ones).
    problems_not_kept: int = 0
    warnings: list[str] = field(default_factory=list)
    inserted_run_ids: list[int] = field(default_factory=list)

    def merge(self, other: IngestSummary) -> None:
        self.inserted += other.inserted
        self.unchanged += other.unchanged
        self.superseded += other.superseded
        self.rejected += other.rejected
        self.workloads |= other.workloads
        self.implementations |= other.implementations
        self.environments |= other.environments
        self.problems += other.problems
        self.problems_not_kept += other.problems_not_kept
        self.warnings += other.warnings
        self.inserted_run_ids += other.inserted_run_ids

    @property
    def problem_count(self) -> int:
        return len(self.problems) + self.problems_not_kept

    def table(self, *, dry_run: bool = False) -> list[tuple[str, int]]:
        """The closing table; a dry run's says what would happen (DRY_RUN_LABELS)."""
        rows = [
            ("workloads", len(self.workloads)),
            ("implementations", len(self.implementations)),
            ("environments", len(self.environments)),
            ("runs inserted", self.inserted),
            ("runs unchanged", self.unchanged),
            ("runs superseded", self.superseded),
            ("runs rejected", self.rejected),
        ]
        return [(DRY_RUN_LABELS.get(name, name), value) for name, value in rows] if dry_run else rows


# A dry run writes nothing: its table says what the real run would do.
DRY_RUN_LABELS = {
    "runs inserted": "runs that would be inserted", "runs superseded": "runs that would be superseded",
    "runs rejected": "runs that would be rejected",
}


def environment_fingerprint(sku: str, env: dict[str, Any]) -> str:
    details = {k: v for k, v in (env.get("details") or {}).items() if k not in VOLATILE_ENVIRONMENT_DETAILS}
    software = {k: v for k, v in (env.get("software") or {}).items() if v is not None}
    return digest(
        {"sku": sku, "provider": env.get("provider"), "label": env.get("label"), "software": software, "details": details}
    )


# Most records share their environment and configuration with many others: the digests are memoised
# on a cheap key (a 128-bit hash of the repr of JSON data, which is injective; equal content in another
# key order only misses), in bounded memory.
_MEMO_LIMIT = 10_000
_fingerprints: dict[tuple[str, bytes], str] = {}
_configuration_keys: dict[tuple[str | tuple[str, int], ...], str] = {}

_Key = TypeVar("_Key", bound=Hashable)


def _memoised(table: dict[_Key, str], key: _Key, compute: Callable[[], str]) -> str:
    found = table.get(key)
    if found is None:
        if len(table) >= _MEMO_LIMIT:
            table.clear()
        found = table[key] = compute()
    return found


def environment_fingerprint_memo(sku: str, env: dict[str, Any]) -> str:
    key = (sku, hashlib.blake2b(repr(env).encode("utf-8", "surrogatepass"), digest_size=16).digest())
    return _memoised(_fingerprints, key, lambda: environment_fingerprint(sku, env))


def configuration_key_memo(bindings: dict[str, int], dtype: str) -> str:
    key: tuple[str | tuple[str, int], ...] = (dtype, *bindings.items())
    return _memoised(_configuration_keys, key, lambda: configuration_key(bindings, dtype))


CONTENT_KEYS = ("status", "failure_reason", "statistics", "samples_ms", "compile_time_ms", "correctness", "observed_at", "evidence")


def _without_nulls(value: Any) -> Any:
    """An optional field stated as null is the same as one left out (an export writes every field)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def content_digest(data: dict[str, Any]) -> str:
    """sha256 of what a record measured, normalised so that equal content has equal digests: key
    order never counts (canonical JSON), null ≡ absent inside statistics and correctness, an empty
    samples list ≡ none, and observed_at is the instant in UTC (…Z), however the record spelled it.
    The spelling of a record without nulls, with samples and with a …Z time is the one stored by
    earlier versions, so their digests still match."""
    content = {k: data.get(k) for k in CONTENT_KEYS}
    for key in ("statistics", "correctness"):
        if isinstance(content[key], dict):
            content[key] = _without_nulls(content[key])
    if content["samples_ms"] == []:
        content["samples_ms"] = None
    observed = content["observed_at"]
    if isinstance(observed, str):
        try:
            content["observed_at"] = parse_observed_at(observed).astimezone(UTC).isoformat().replace("+00:00", "Z")
        except ValueError:
            pass  # validation reports it; the digest of an unparsed time is still a digest
    return digest(content)


# -- resolving references (shared with the validation pass of `ingest runs`) ----------------------


HARDWARE_KEY = "environment.hardware.sku"
HOW_TO_ADD_HARDWARE = (
    "new hardware comes in through the catalogue: add a kernelindex.hardware/1 line (sku, short_name, family, "
    "vendor, driver_product_names) before the runs, as /exports/catalog.jsonl writes them"
)


@dataclass(frozen=True)
class HardwareRefusal:
    """Why a record's hardware names no catalogue row, and the key at fault."""

    key: str
    reason: str


class HardwareIndex:
    """The hardware catalogue by SKU and by SKU-or-driver-product-name, both under names-v1's
    hardware_key (NFKC, no invisible characters, spaces collapsed, case-blind), and by skeleton, to
    name the row a look-alike imitates. The first row (in id order) wins, as a walk of the catalogue
    would find it. Unknown names are refused: new hardware comes in through catalogue lines only."""

    def __init__(self, rows: Iterable[tuple[int, str, Sequence[str]]] = ()):
        self.by_sku: dict[str, tuple[int, str]] = {}
        self.by_name: dict[str, tuple[int, str]] = {}
        self.by_skeleton: dict[str, str] = {}
        self._matched: dict[tuple[str | None, str | None], tuple[int, str] | HardwareRefusal] = {}
        for row in rows:
            self.add(*row)

    def add(self, hardware_id: int, sku: str, names: Sequence[str] = ()) -> None:
        """A catalogue row (a negative id: one a catalogue line of this input will create)."""
        entry = (hardware_id, sku)
        self._matched.clear()  # a new row can change what a name matches
        self.by_sku.setdefault(hardware_key(sku), entry)
        for name in (sku, *names):
            self.by_name.setdefault(hardware_key(name), entry)
            self.by_skeleton.setdefault(skeleton(name), name)

    def _unknown(self, what: str, name: str) -> str:
        imitated = self.by_skeleton.get(skeleton(name))
        if imitated is not None and hardware_key(imitated) != hardware_key(name):
            return f"hardware {what} {name!r} looks like {imitated!r} but is not it (look-alike letters); refused"
        return f"unknown hardware {what} {name!r} (not in the hardware catalogue); {HOW_TO_ADD_HARDWARE}"

    def match(self, spec: dict[str, Any]) -> tuple[int, str] | HardwareRefusal:
        """(id, sku) of the catalogue row the record names, or why it names none. Remembered per
        (sku, product name): a file names a few machines thousands of times."""
        sku = spec.get("sku")
        product = spec.get("product_name")
        if not (isinstance(sku, (str, type(None))) and isinstance(product, (str, type(None)))):
            return self._match(sku, product)
        names = (sku, product)
        found = self._matched.get(names)
        if found is None:
            if len(self._matched) >= 10_000:
                self._matched.clear()
            found = self._matched[names] = self._match(sku, product)
        return found

    def _match(self, sku: Any, product: Any) -> tuple[int, str] | HardwareRefusal:
        if not sku and not product:  # the schema requires one; an unchecked spec gets words, not an AttributeError
            return HardwareRefusal(HARDWARE_KEY, "hardware names neither a sku nor a product_name")
        by_sku = by_product = None
        if sku:
            problem = hardware_name_problem(sku)
            if problem:
                return HardwareRefusal(HARDWARE_KEY, problem)
            by_sku = self.by_sku.get(hardware_key(sku))
            if by_sku is None:
                return HardwareRefusal(HARDWARE_KEY, self._unknown("SKU", sku))
        if product:
            problem = hardware_name_problem(product)
            if problem:
                return HardwareRefusal("environment.hardware.product_name", problem)
            by_product = self.by_name.get(hardware_key(product))
            if by_product is None:
                return HardwareRefusal("environment.hardware.product_name", self._unknown("product name", product))
        if by_sku is not None and by_product is not None and by_sku[0] != by_product[0]:
            return HardwareRefusal(
                "environment.hardware.product_name",
                f"product name {product!r} is the catalogue's {by_product[1]!r}, which contradicts sku {by_sku[1]!r}",
            )
        found = by_sku or by_product
        assert found is not None
        return found


WorkloadTriple = tuple[str, int, int]  # (suite, level, problem number)
# A run's natural key: (workload revision, configuration key, implementation, environment, protocol, source
# snapshot) ids. Typed loosely (Any items) because the keys are also rebuilt from row dicts and result rows.
NaturalKey = tuple[Any, ...]


@dataclass
class WorkloadRef:
    id: int
    slug: str
    current_revision_id: int | None
    # source sha256 → revision id; a stand-in module's own digest names its revision too.
    revisions: dict[str, int] = field(default_factory=dict)
    canonical_keys: dict[int, str] = field(default_factory=dict)  # revision id → its canonical configuration key
    # upstream revision of a suite snapshot → the revision this workload holds in it.
    snapshot_revisions: dict[str, int] = field(default_factory=dict)
    in_latest_snapshot: bool | None = None
    # In by_triple only: the other workloads that held this number, when none is in the latest snapshot.
    ambiguous_with: tuple[str, ...] = ()


def resolve_workload_ref(
    ref: dict[str, Any], by_slug: dict[str, WorkloadRef], by_triple: dict[WorkloadTriple, WorkloadRef],
    source_revision: str | None = None,
) -> tuple[WorkloadRef, int] | tuple[str, str]:
    """(workload, revision id) a record's workload reference names, or (key, why not).

    The revision: the one with the source_sha256 named; else the one the workload holds in the
    suite snapshot at the record's source revision (a KernelBench timing file measured the problem
    file of its own commit); else the current one.
    """
    if "slug" in ref:
        w = by_slug.get(ref["slug"])
        if w is None:
            return "workload.slug", f"unknown workload {ref['slug']!r}"
    else:
        w = by_triple.get((ref["suite"], ref["level"], ref["problem"]))
        if w is None:
            return "workload", f"unknown workload {ref['suite']} level {ref['level']} problem {ref['problem']}"
        if w.ambiguous_with:
            names = ", ".join(sorted((w.slug, *w.ambiguous_with)))
            return "workload", (
                f"ambiguous: {ref['suite']} level {ref['level']} problem {ref['problem']} has been more than one "
                f"problem ({names}) and none is in the suite's latest complete snapshot; name the workload by slug"
            )
    sha = ref.get("source_sha256")
    if sha:
        revision_id = w.revisions.get(sha)
        if revision_id is None:
            return "workload.source_sha256", f"workload {w.slug!r} has no revision with source sha256 {sha[:12]}…"
        return w, revision_id
    if source_revision and w.snapshot_revisions:
        found = w.snapshot_revisions.get(source_revision)
        if found is None:
            found = next(
                (rid for rev, rid in sorted(w.snapshot_revisions.items()) if revision_matches(rev, source_revision)), None
            )
        if found is not None:
            return w, found
    if w.current_revision_id is None:
        return "workload", f"workload {w.slug!r} has no reference source revision yet"
    return w, w.current_revision_id


def workload_resolver(
    by_slug: dict[str, WorkloadRef], by_triple: dict[WorkloadTriple, WorkloadRef]
) -> Callable[[dict[str, Any], str | None], tuple[WorkloadRef, int] | tuple[str, str]]:
    """resolve_workload_ref against these workloads, remembered per reference and source revision
    (a batch names a few workloads thousands of times, and finding a snapshot's revision walks them)."""
    memo: dict[tuple[Any, ...], tuple[WorkloadRef, int] | tuple[str, str]] = {}

    def resolve(ref: dict[str, Any], source_revision: str | None) -> tuple[WorkloadRef, int] | tuple[str, str]:
        key = (ref.get("slug"), ref.get("suite"), ref.get("level"), ref.get("problem"), ref.get("source_sha256"), source_revision)
        try:
            found = memo.get(key)
        except TypeError:  # an unhashable value where a name belongs: not remembered
            return resolve_workload_ref(ref, by_slug, by_triple, source_revision)
        if found is None:
            found = memo[key] = resolve_workload_ref(ref, by_slug, by_triple, source_revision)
        return found

    return resolve


async def load_workload_refs(
    session: AsyncSession, slugs: Iterable[str] | None = None, triples: Iterable[WorkloadTriple] | None = None
) -> tuple[dict[str, WorkloadRef], dict[WorkloadTriple, WorkloadRef]]:
    """Workloads with their revisions: those named (slugs, triples), or every one when both are None."""
    query = select(
        Workload.id, Workload.slug, Workload.suite, Workload.level, Workload.problem_number, Workload.current_revision_id,
        Workload.in_latest_snapshot,
    )
    if slugs is not None or triples is not None:
        conditions = []
        if slugs:
            conditions.append(Workload.slug.in_(list(slugs)))
        if triples:
            conditions.append(tuple_(Workload.suite, Workload.level, Workload.problem_number).in_(list(triples)))
        if not conditions:
            return {}, {}
        query = query.where(or_(*conditions))
    rows = (await session.execute(query)).all()
    by_id = {r.id: WorkloadRef(r.id, r.slug, r.current_revision_id, in_latest_snapshot=r.in_latest_snapshot) for r in rows}
    if by_id:
        revisions = select(
            WorkloadRevision.id, WorkloadRevision.workload_id, WorkloadRevision.source_sha256,
            WorkloadRevision.canonical_configuration_key, WorkloadRevision.stand_in_sha256,
        )
        members = select(SuiteSnapshotMember.workload_id, SuiteSnapshot.upstream_revision, SuiteSnapshotMember.workload_revision_id).join(
            SuiteSnapshot, SuiteSnapshot.id == SuiteSnapshotMember.snapshot_id
        )
        if slugs is not None or triples is not None:
            revisions = revisions.where(WorkloadRevision.workload_id.in_(list(by_id)))
            members = members.where(SuiteSnapshotMember.workload_id.in_(list(by_id)))
        for rev_id, workload_id, sha, canonical_key, stand_in_sha in (await session.execute(revisions.order_by(WorkloadRevision.id))).all():
            if workload_id in by_id:
                by_id[workload_id].revisions[sha] = rev_id
                if stand_in_sha:
                    by_id[workload_id].revisions.setdefault(stand_in_sha, rev_id)
                by_id[workload_id].canonical_keys[rev_id] = canonical_key
        for workload_id, upstream_revision, rev_id in (await session.execute(members)).all():
            if workload_id in by_id:
                by_id[workload_id].snapshot_revisions[upstream_revision] = rev_id
    by_slug = {by_id[r.id].slug: by_id[r.id] for r in rows}
    holders: dict[WorkloadTriple, list[WorkloadRef]] = {}
    for r in sorted(rows, key=lambda r: r.slug):
        holders.setdefault((r.suite, r.level, r.problem_number), []).append(by_id[r.id])
    by_triple: dict[WorkloadTriple, WorkloadRef] = {}
    for triple, refs in holders.items():
        # A number upstream gave to more than one problem names the one in the latest snapshot.
        latest = [w for w in refs if w.in_latest_snapshot]
        if len(refs) == 1 or len(latest) == 1:
            by_triple[triple] = refs[0] if len(refs) == 1 else latest[0]
        else:
            by_triple[triple] = replace(refs[0], ambiguous_with=tuple(w.slug for w in refs[1:]))
    return by_slug, by_triple


async def load_hardware_index(session: AsyncSession) -> HardwareIndex:
    rows = (await session.execute(select(Hardware.id, Hardware.sku, Hardware.driver_product_names).order_by(Hardware.id))).all()
    return HardwareIndex((r[0], r[1], r[2] or []) for r in rows)


# -- the writer ---------------------------------------------------------------------------------


def _table_of(model: type[Base]) -> Table:
    """A mapped class's Table (typed as a plain FromClause by the declarative base)."""
    table = model.__table__
    assert isinstance(table, Table)
    return table


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# A batch's runs travel to PostgreSQL by COPY (binary) into a temporary staging table, then merge
# into `runs` with set-based statements: supersede the live runs whose content changed, insert the
# runs whose key has no live run, and count the rest unchanged. The stage and the natural keys an
# import has staged (to refuse a run stated twice, however far apart the lines) live in temporary
# tables of the writer's connection, so the writer's memory does not grow with the input.
_KEY_COLUMNS = (
    "workload_revision_id", "configuration_key", "implementation_id", "environment_id", "protocol_id", "source_snapshot_id",
)
_STAGE_COLUMNS = (
    ("ord", "int"), ("place", "text"), ("workload_id", "int"), ("workload_revision_id", "int"), ("bindings", "jsonb"), ("dtype", "text"),
    ("configuration_key", "text"), ("implementation_id", "int"), ("environment_id", "int"), ("protocol_id", "int"),
    ("source_snapshot_id", "int"), ("status", "text"), ("failure_reason", "text"), ("mean_ms", "float8"),
    ("std_ms", "float8"), ("min_ms", "float8"), ("max_ms", "float8"), ("median_ms", "float8"), ("p5_ms", "float8"),
    ("p95_ms", "float8"), ("num_trials", "int"), ("samples_ms", "float8[]"), ("compile_time_ms", "float8"),
    ("correctness", "jsonb"), ("observed_at", "timestamptz"), ("evidence", "text"), ("content_sha256", "text"),
    ("line_sha", "bytea"), ("claimed_evidence", "text"), ("fleet_worker_id", "bigint"), ("fleet_machine_id", "text"),
)
_STAGE_NAMES = tuple(name for name, _ in _STAGE_COLUMNS)
_RUN_NAMES = _STAGE_NAMES[2:]  # every staged column but the order and the place in the input goes into runs
_KEYS = ", ".join(_KEY_COLUMNS)
_SAME_KEY = " AND ".join(f"r.{c} = s.{c}" for c in _KEY_COLUMNS)
_CREATE_STAGE = (
    f"CREATE TEMPORARY TABLE IF NOT EXISTS ingest_stage ({', '.join(f'{n} {t}' for n, t in _STAGE_COLUMNS)})",
    # The keys staged so far (by this batch, or by every batch of an import: track_keys) and where.
    "CREATE TEMPORARY TABLE IF NOT EXISTS ingest_keys (workload_revision_id int, configuration_key text, "
    "implementation_id int, environment_id int, protocol_id int, source_snapshot_id int, ord int, place text, "
    f"PRIMARY KEY ({_KEYS}))",
    # Lines whose very bytes may be a live run already (skip_known): their digest and the revision they name.
    "CREATE TEMPORARY TABLE IF NOT EXISTS ingest_lines (ord int, place text, line_sha bytea, workload_revision_id int)",
)
_CLAIM_KEYS = text(
    f"INSERT INTO ingest_keys ({_KEYS}, ord, place) SELECT {_KEYS}, ord, place FROM ingest_stage "
    "ORDER BY ord ON CONFLICT DO NOTHING RETURNING ord"
)
_FIRST_PLACES = text(
    "SELECT s.ord, k.place FROM ingest_stage s JOIN ingest_keys k USING "
    f"({_KEYS}) WHERE s.ord = ANY(CAST(:ords AS int[]))"
)
_DROP_STAGED = text("DELETE FROM ingest_stage WHERE ord = ANY(CAST(:ords AS int[]))")
# A record from outside never replaces what a fleet worker measured (its figures would inherit the
# run's place while the rung goes): such records are refused first (_FLEET_HELD), and the clause
# here keeps it so whatever the caller does. Without a registered worker there is nothing to look
# for: the uncorrelated EXISTS is a one-time filter, so an index without a fleet pays no join.
_FLEET_HELD = text(
    f"SELECT s.ord, r.id FROM ingest_stage s JOIN runs r ON r.superseded_at IS NULL AND {_SAME_KEY} "
    "WHERE EXISTS (SELECT 1 FROM fleet_workers) "
    "AND s.fleet_worker_id IS NULL AND r.fleet_worker_id IS NOT NULL AND r.content_sha256 <> s.content_sha256"
)
_SUPERSEDE = text(
    f"UPDATE runs r SET superseded_at = :now FROM ingest_stage s WHERE r.superseded_at IS NULL AND {_SAME_KEY} "
    "AND (r.fleet_worker_id IS NULL OR s.fleet_worker_id IS NOT NULL) "
    f"AND r.content_sha256 <> s.content_sha256 RETURNING r.id, {', '.join(f'r.{c}' for c in _KEY_COLUMNS)}"
)
# Superseded runs have left the live-key index by now, so "no live run" is new or changed content.
_INSERT_NEW = text(
    f"INSERT INTO runs ({', '.join(_RUN_NAMES)}) SELECT {', '.join(f's.{c}' for c in _RUN_NAMES)} FROM ingest_stage s "
    f"WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.superseded_at IS NULL AND {_SAME_KEY}) ORDER BY s.ord "
    f"RETURNING id, {_KEYS}"
)
_LINK_SUPERSEDED = text(
    "UPDATE runs SET superseded_by_id = v.new_id FROM unnest(CAST(:old AS bigint[]), CAST(:new AS bigint[])) "
    "AS v(old_id, new_id) WHERE runs.id = v.old_id"
)
# The live runs some lines' very bytes made (skip_known), and the claim of their natural keys.
_SAME_LINE = (
    "FROM ingest_lines s JOIN runs r ON r.line_sha = s.line_sha AND r.workload_revision_id = s.workload_revision_id "
    "AND r.superseded_at IS NULL AND r.line_sha IS NOT NULL"  # the partial index's own predicate, stated
)
# One join: the live runs found, and which of their keys this line is the first to claim.
_CLAIM_KNOWN = text(
    f"WITH found AS (SELECT s.ord, s.place, r.workload_id, "
    f"{', '.join(f'r.{c}' for c in _KEY_COLUMNS)} {_SAME_LINE}), "
    f"claimed AS (INSERT INTO ingest_keys ({_KEYS}, ord, place) SELECT {_KEYS}, ord, place FROM found ORDER BY ord "
    "ON CONFLICT DO NOTHING RETURNING ord) "
    "SELECT f.ord, f.workload_id, f.implementation_id, f.environment_id, c.ord IS NOT NULL "
    "FROM found f LEFT JOIN claimed c ON c.ord = f.ord"
)
_FIRST_PLACES_KNOWN = text(
    f"SELECT s.ord, k.place {_SAME_LINE} JOIN ingest_keys k ON {' AND '.join(f'k.{c} = r.{c}' for c in _KEY_COLUMNS)} "
    "WHERE s.ord = ANY(CAST(:ords AS int[]))"
)
# What a deferred record_events will replay, for an import of any size (RunWriter._remember_pending).
_CREATE_PENDING = (
    "CREATE TEMPORARY TABLE IF NOT EXISTS ingest_cohorts (rev int, cfg text, proto int, env int, PRIMARY KEY (rev, cfg, proto, env))",
    "CREATE TEMPORARY TABLE IF NOT EXISTS ingest_arrived (id bigint PRIMARY KEY)",
)
_PENDING_COHORTS = text(
    "INSERT INTO ingest_cohorts SELECT * FROM unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), CAST(:protos AS int[]), "
    "CAST(:envs AS int[])) ON CONFLICT DO NOTHING"
)
_ARRIVED = text("INSERT INTO ingest_arrived SELECT unnest(CAST(:ids AS bigint[])) ON CONFLICT DO NOTHING")
_FIRST_PENDING = text(f"SELECT rev, cfg, proto, env FROM ingest_cohorts ORDER BY rev, cfg, proto, env LIMIT {COHORTS_PER_REFRESH}")
_NEXT_PENDING = text(
    "SELECT rev, cfg, proto, env FROM ingest_cohorts WHERE (rev, cfg, proto, env) > (:rev, :cfg, :proto, :env) "
    f"ORDER BY rev, cfg, proto, env LIMIT {COHORTS_PER_REFRESH}"
)
_ARRIVED_IN = text(
    "SELECT a.id FROM ingest_arrived a JOIN runs r ON r.id = a.id JOIN unnest(CAST(:revs AS int[]), CAST(:cfgs AS text[]), "
    "CAST(:protos AS int[]), CAST(:envs AS int[])) AS k(rev, cfg, proto, env) ON r.workload_revision_id = k.rev "
    "AND r.configuration_key = k.cfg AND r.protocol_id = k.proto AND r.environment_id = k.env"
)


def _after(key: CohortKey | None) -> dict[str, Any]:
    return {} if key is None else {"rev": key[0], "cfg": key[1], "proto": key[2], "env": key[3]}


async def _listed_chunks(cohorts: list[CohortKey], arrived: set[int]) -> AsyncIterator[tuple[list[CohortKey], set[int]]]:
    for chunk in _chunks(cohorts, COHORTS_PER_REFRESH):
        yield list(chunk), arrived


# A dry run's merge: what the statements above would do, counted.
_COUNT_MERGE = text(
    "SELECT count(*) FILTER (WHERE r.id IS NULL), count(*) FILTER (WHERE r.content_sha256 <> s.content_sha256), "
    f"count(*) FILTER (WHERE r.content_sha256 = s.content_sha256) FROM ingest_stage s LEFT JOIN runs r "
    f"ON r.superseded_at IS NULL AND {_SAME_KEY}"
)


class RunWriter:
    """Resolves and writes run records inside the caller's transaction."""

    def __init__(
        self, session: AsyncSession | None = None, *, now: datetime | None = None, dry_run: bool = False,
        defer_events: bool = False, track_keys: bool = False,
        known: tuple[dict[str, WorkloadRef], dict[WorkloadTriple, WorkloadRef], HardwareIndex] | None = None,
        fleet_worker: tuple[int, str] | None = None,
    ):
        """session: the transaction to write in; a writer that spans several transactions (one per batch)
        is made without one and given each batch's session before it writes.
        defer_events: batches refresh the records but leave the history to `record_events()`, which
        the caller runs once after its last batch, so batch boundaries never make events (history-v1).
        track_keys: a run whose natural key an earlier batch of this writer staged is refused as stated
        twice (an import's batches: the keys are kept in a temporary table of the one connection the
        import writes with, not in memory); without it only a batch's own repeats are.
        known: (workloads by slug, by triple, hardware) to resolve records against instead of the
        database: a dry run's, with the input's catalogue lines laid over the database (placeholder ids).
        fleet_worker: (id, machine id) of the registered fleet worker storing its own measurements
        (kernelindex.fleet.worker, the only caller that passes it); every other route is outside."""
        self._known = known
        self.fleet_worker = fleet_worker
        self._session = session
        self.now = now or datetime.now(UTC)
        self.dry_run = dry_run
        self.defer_events = defer_events
        self.track_keys = track_keys
        self._stage_connection: Any = None
        self._placeholders = itertools.count(-1, -1)
        self._pending_cohorts: set[CohortKey] = set()
        self._arrived: set[int] = set()
        self.forget()

    @property
    def session(self) -> AsyncSession:
        if self._session is None:
            raise RuntimeError("RunWriter has no session: give it the batch's session before it writes")
        return self._session

    @session.setter
    def session(self, session: AsyncSession) -> None:
        self._session = session

    async def record_events(self, session: AsyncSession | None = None) -> RefreshSummary:
        """The record events of everything this writer wrote since the last call (with defer_events):
        once, over every cohort its batches touched, the new runs taken in observed order. In the
        caller's transaction (`session`, or the writer's own)."""
        session = session or self.session
        if not self.dry_run:
            await hold_index_writes(session)
        summary = RefreshSummary()
        if self.track_keys:
            chunks = self._spilled_pending(session)
        else:
            cohorts, arrived = sorted(self._pending_cohorts), set(self._arrived)
            self._pending_cohorts.clear()
            self._arrived.clear()
            chunks = _listed_chunks(cohorts, arrived)
        async for chunk, arrived in chunks:
            part = await refresh_cohorts(session, chunk, now=self.now, arrived=arrived)
            summary.cohorts += part.cohorts
            summary.events += part.events
            summary.flagged_runs += part.flagged_runs
        return summary

    async def _remember_pending(self, cohorts: set[CohortKey], arrived: set[int]) -> None:
        """What record_events will replay. An import that tracks its keys (one connection, any size)
        keeps it in temporary tables, so its memory does not grow with the runs it wrote; the
        others, in memory."""
        if not self.track_keys:
            self._pending_cohorts |= cohorts
            self._arrived |= arrived
            return
        for statement in _CREATE_PENDING:
            await self.session.execute(text(statement))
        columns = list(zip(*sorted(cohorts)))
        await self.session.execute(_PENDING_COHORTS, {
            "revs": list(columns[0]), "cfgs": list(columns[1]), "protos": list(columns[2]), "envs": list(columns[3]),
        })
        await self.session.execute(_ARRIVED, {"ids": sorted(arrived)})

    async def _spilled_pending(self, session: AsyncSession) -> AsyncIterator[tuple[list[CohortKey], set[int]]]:
        """The remembered cohorts in chunks, in key order, each with the runs that arrived in it."""
        for statement in _CREATE_PENDING:
            await session.execute(text(statement))
        after: CohortKey | None = None
        while True:
            rows = (await session.execute(_NEXT_PENDING if after else _FIRST_PENDING, _after(after))).all()
            if not rows:
                break
            chunk = [(r[0], r[1], r[2], r[3]) for r in rows]
            after = chunk[-1]
            columns = list(zip(*chunk))
            arrived = set((await session.execute(_ARRIVED_IN, {
                "revs": list(columns[0]), "cfgs": list(columns[1]), "protos": list(columns[2]), "envs": list(columns[3]),
            })).scalars().all())
            yield chunk, arrived
        await session.execute(text("TRUNCATE ingest_cohorts, ingest_arrived"))

    def forget(self) -> None:
        """Drop every id this writer has resolved (after a rollback they may name rows that are gone)."""
        self._hardware: HardwareIndex | None = None
        self._environments: dict[str, int] = {}
        self._implementations: dict[str, int] = {}
        self._protocols: dict[tuple[str, str], int] = {}
        self._sources: dict[str, int] = {}
        self._snapshots: dict[tuple[int, str], int] = {}  # (source id, revision)

    # -- dimensions -------------------------------------------------------------------------

    async def _ensure(
        self,
        table: Table,
        cache: dict[Any, int],
        wanted: dict[Any, dict[str, Any]],
        key_columns: Sequence[str],
        dry_run: bool,
    ) -> None:
        """Make sure every wanted key (tuple or single value) has a row and its id is in cache: one
        INSERT … ON CONFLICT DO NOTHING (executemany) and one SELECT per chunk of keys."""
        missing = [k for k in wanted if k not in cache]
        if not missing:
            return
        columns = [table.c[name] for name in key_columns]
        single = len(columns) == 1
        if not dry_run and len(missing) > STAGE_DIMENSIONS_FROM:
            await self._insert_staged(table, [wanted[k] for k in missing], key_columns)
        elif not dry_run:
            # executemany of one cached statement (a multi-row VALUES would be compiled anew each time).
            await self.session.execute(
                pg_insert(table).on_conflict_do_nothing(index_elements=list(key_columns)), [wanted[k] for k in missing]
            )
        for chunk in _chunks(missing, KEYS_PER_LOOKUP):
            condition = columns[0].in_(list(chunk)) if single else tuple_(*columns).in_(list(chunk))
            for row in (await self.session.execute(select(table.c.id, *columns).where(condition))).all():
                cache[row[1] if single else tuple(row[1:])] = row[0]
        for k in missing:
            if k not in cache:
                if not dry_run:
                    raise RuntimeError(f"{table.name}: the row for {k!r} was inserted but cannot be read back")
                cache[k] = next(self._placeholders)

    async def _insert_staged(self, table: Table, rows: list[dict[str, Any]], key_columns: Sequence[str]) -> None:
        """Many new dimension rows (a file of a thousand machines) in one statement: COPYed into a
        temporary table of the same shape, then INSERT … SELECT … ON CONFLICT DO NOTHING in the
        order given. executemany would be a statement, and a firing of every trigger, per row."""
        names = list(rows[0])
        stage = f"stage_{table.name}"
        await self.session.execute(text(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {stage} AS SELECT {', '.join(names)}, 0 AS ord FROM {table.name} WITH NO DATA"
        ))
        await self.session.execute(text(f"TRUNCATE {stage}"))
        as_json = {name for name in names if isinstance(table.c[name].type, JSONB)}
        values = [
            (*(json.dumps(row[n]) if n in as_json and row[n] is not None else row[n] for n in names), i)
            for i, row in enumerate(rows)
        ]
        await copy_rows(self.session, stage, [*names, "ord"], values)
        await self.session.execute(text(
            f"INSERT INTO {table.name} ({', '.join(names)}) SELECT {', '.join(names)} FROM {stage} ORDER BY ord "
            f"ON CONFLICT ({', '.join(key_columns)}) DO NOTHING"
        ))

    async def hardware_index(self) -> HardwareIndex:
        if self._known is not None:
            return self._known[2]
        if self._hardware is None:
            self._hardware = await load_hardware_index(self.session)
        return self._hardware

    async def resolve_workloads(self, records: list[RunRecord]) -> dict[int, tuple[WorkloadRef, int] | tuple[str, str]]:
        """Per record index: its workload and the revision it measured, or (key, why it cannot be found)."""
        by_slug, by_triple = await self._workload_refs([rec.data for rec in records])
        resolve = workload_resolver(by_slug, by_triple)
        return {i: resolve(rec.data["workload"], rec.data["source"].get("revision")) for i, rec in enumerate(records)}

    # -- runs -------------------------------------------------------------------------------

    async def write(self, records: list[RunRecord], *, dry_run: bool = False) -> IngestSummary:
        dry_run = dry_run or self.dry_run
        summary = IngestSummary()
        if not records:
            return summary
        if not dry_run:
            await hold_index_writes(self.session)
        workloads = await self.resolve_workloads(records)
        index = await self.hardware_index()
        problems: list[tuple[int, InputProblem]] = []

        # Which catalogue row each record ran on (an unknown or look-alike name is refused).
        staged: list[tuple[int, RunRecord, WorkloadRef, int, int, str]] = []
        for i, rec in enumerate(records):
            resolved = workloads[i]
            if isinstance(resolved[0], str):
                problems.append((i, InputProblem(rec.file, rec.where, resolved[1], key=resolved[0])))
                continue
            workload, revision_id = resolved
            hardware = index.match(rec.data["environment"]["hardware"])
            if isinstance(hardware, HardwareRefusal):
                problems.append((i, InputProblem(rec.file, rec.where, hardware.reason, key=hardware.key)))
                continue
            hardware_id, sku = hardware
            staged.append((i, rec, workload, revision_id, hardware_id, sku))

        # Every dimension the batch needs, in bulk.
        environments: dict[str, dict[str, Any]] = {}
        implementations: dict[str, dict[str, Any]] = {}
        protocols: dict[tuple[str, str], dict[str, Any]] = {}
        sources: dict[str, dict[str, Any]] = {}
        fingerprints: list[str] = []
        for _, rec, _, _, hardware_id, sku in staged:
            data = rec.data
            env = data["environment"]
            fingerprint = environment_fingerprint_memo(sku, env)
            fingerprints.append(fingerprint)
            if fingerprint not in environments and fingerprint not in self._environments:
                software = env.get("software") or {}
                environments[fingerprint] = {
                    "hardware_id": hardware_id, "provider": env.get("provider"), "label": env.get("label"),
                    "torch_version": software.get("torch"), "cuda_version": software.get("cuda"),
                    "driver_version": software.get("driver"), "python_version": software.get("python"),
                    "triton_version": software.get("triton"), "details": env.get("details") or {}, "fingerprint": fingerprint,
                }
            spec = data["implementation"]
            slug = spec["slug"]
            if slug not in implementations and slug not in self._implementations:
                implementations[slug] = {
                    "slug": slug,
                    "title": spec.get("title") or slug,
                    "framework": spec.get("framework") or "unknown",
                    "language": spec.get("language") or "unknown",
                    "runtime_id": spec.get("runtime_id") or slug,
                    "role": spec.get("role") or "candidate",
                    "compile_mode": spec.get("compile_mode"),
                    "licence": spec.get("licence"),
                    "source_availability": spec.get("source_availability") or "none",
                    "source_url": spec.get("source_url"),
                    "install_recipe": spec.get("install_recipe"),
                }
            proto = data["protocol"]
            pkey = (proto["name"], proto["version"])
            if pkey not in protocols and pkey not in self._protocols:
                protocols[pkey] = {
                    "name": proto["name"], "version": proto["version"], "timer": proto.get("timer"),
                    "warmup": proto.get("warmup"), "trials": proto.get("trials"),
                    "statistic": proto.get("statistic") or "mean", "l2_flush": proto.get("l2_flush"),
                }
            src = data["source"]
            if src["name"] not in sources and src["name"] not in self._sources:
                sources[src["name"]] = {"name": src["name"], "url": src.get("url"), "licence": src.get("licence")}
        await self._ensure(_table_of(Environment), self._environments, environments, ["fingerprint"], dry_run)
        await self._ensure(_table_of(Implementation), self._implementations, implementations, ["slug"], dry_run)
        await self._ensure(_table_of(Protocol), self._protocols, protocols, ["name", "version"], dry_run)
        await self._ensure(_table_of(Source), self._sources, sources, ["name"], dry_run)
        snapshots: dict[tuple[int, str], dict[str, Any]] = {}
        for _, rec, *_ in staged:
            src = rec.data["source"]
            skey = (self._sources[src["name"]], src.get("revision") or "")
            if skey not in snapshots and skey not in self._snapshots:
                revision_date = date.fromisoformat(src["revision_date"]) if src.get("revision_date") else None
                snapshots[skey] = {"source_id": skey[0], "revision": skey[1], "revision_date": revision_date}
        await self._ensure(_table_of(SourceSnapshot), self._snapshots, snapshots, ["source_id", "revision"], dry_run)

        # One staged row per record, in _STAGE_COLUMNS order; its natural key is the id tuple of
        # _KEY_COLUMNS, built here and nowhere else.
        rows: list[tuple[Any, ...]] = []
        places: list[InputProblem] = []  # by ord: the record's place, to word a refusal
        order_of_problem: list[int] = []  # by ord: the record's index in the batch
        eligible_cohorts: set[CohortKey] = set()
        for (i, rec, workload, revision_id, _, _), fingerprint in zip(staged, fingerprints):
            data = rec.data
            env_id = self._environments[fingerprint]
            impl_id = self._implementations[data["implementation"]["slug"]]
            protocol_id = self._protocols[(data["protocol"]["name"], data["protocol"]["version"])]
            snapshot_id = self._snapshots[(self._sources[data["source"]["name"]], data["source"].get("revision") or "")]
            config = data["configuration"]
            key_text = configuration_key_memo(config["bindings"], config["dtype"])
            stats = data.get("statistics") or {}
            correctness = data.get("correctness")
            samples = data.get("samples_ms")
            # Where the route decides the stored evidence (trust-v2: rungs come from the fleet alone).
            # Only a registered fleet worker stores its record's evidence as is; from any other route
            # (submitRuns, ingest runs, seeds) the run is 'reported' and a "measured" is kept as the
            # source's claim. The content digest keeps hashing the record as stated, so the same
            # record ingested again is unchanged.
            evidence, claim = data["evidence"], None
            if self.fleet_worker is None and evidence != "reported":
                evidence, claim = "reported", data["evidence"]
            worker_id, machine_id = self.fleet_worker or (None, None)
            rows.append((
                len(places), rec.where, workload.id, revision_id, json.dumps(config["bindings"]), config["dtype"], key_text, impl_id,
                env_id, protocol_id, snapshot_id, data["status"], data.get("failure_reason"), _float(stats.get("mean")),
                _float(stats.get("std")), _float(stats.get("min")), _float(stats.get("max")), _float(stats.get("median")),
                _float(stats.get("p5")), _float(stats.get("p95")), stats.get("num_trials"),
                None if samples is None else [float(v) for v in samples], _float(data.get("compile_time_ms")),
                None if correctness is None else json.dumps(correctness), rec.observed_at, evidence,
                content_digest(data), rec.line_sha, claim, worker_id, machine_id,
            ))
            places.append(InputProblem(rec.file, rec.where, ""))
            order_of_problem.append(i)
            summary.workloads.add(workload.id)
            summary.implementations.add(impl_id)
            summary.environments.add(env_id)
            if revision_id == workload.current_revision_id and key_text == workload.canonical_keys.get(revision_id):
                eligible_cohorts.add((revision_id, key_text, protocol_id, env_id))
        written = await self._merge(rows, places, order_of_problem, problems, summary, dry_run=dry_run)
        problems.sort(key=lambda p: p[0])
        summary.problems = [p for _, p in problems]
        summary.rejected = len({(p.file, p.where) for p in summary.problems})
        cohorts = {(key[0], key[1], key[4], key[3]) for key in written} & eligible_cohorts
        if cohorts:
            # The precomputed records (cohort_bests, flags, record events) of the cohorts these runs joined,
            # in the same transaction. Only cohorts that can hold records (the workload's current revision,
            # at its canonical configuration): the same cohorts refresh_workloads rebuilds.
            # In chunks: cohorts are independent, and one call's multi-row statements must stay under
            # PostgreSQL's 32,767 parameters.
            ordered = sorted(cohorts)
            arrived = set(summary.inserted_run_ids)
            for chunk in _chunks(ordered, COHORTS_PER_REFRESH):
                await refresh_cohorts(self.session, chunk, now=self.now, arrived=arrived, events=not self.defer_events)
            if self.defer_events:
                await self._remember_pending(cohorts, arrived)
        return summary

    async def skip_known(self, lines: list[PendingLine], file: str) -> tuple[IngestSummary, list[PendingLine]]:
        """The lines whose very bytes made a live run of the revision they name now: unchanged, and
        not checked again (the same bytes passed the same checks, CHECKS_VERSION, before; hardware,
        implementation, protocol and source names resolve as they did). Their natural keys are
        claimed like any staged run's, so a line stating one again is refused. Returns what they
        count for and the other lines, to check and write. In the caller's transaction."""
        summary = IngestSummary()
        if not lines:
            return summary, []
        session = self.session
        if not self.dry_run:
            await hold_index_writes(session)
        by_slug, by_triple = await self._workload_refs([line.data for line in lines])
        candidates: list[tuple[int, str, bytes, int]] = []
        resolve = workload_resolver(by_slug, by_triple)
        for ord_, line in enumerate(lines):
            data = line.data
            try:
                resolved = resolve(data["workload"], data["source"].get("revision"))
            except (KeyError, TypeError, AttributeError):  # not a record's shape: the check will say why
                continue
            if not isinstance(resolved[0], str):
                candidates.append((ord_, line.where, line.digest, resolved[1]))
        if not candidates:
            return summary, lines
        for statement in _CREATE_STAGE:
            await session.execute(text(statement))
        await session.execute(text("TRUNCATE ingest_lines"))
        await copy_rows(session, "ingest_lines", ("ord", "place", "line_sha", "workload_revision_id"), candidates)
        rows = (await session.execute(_CLAIM_KNOWN)).all()
        if not rows:
            return summary, lines
        found = {row[0]: row[1:4] for row in rows}
        claimed = {row[0] for row in rows if row[4]}
        again = sorted(set(found) - claimed)
        if again:
            first: dict[int, str] = dict((await session.execute(_FIRST_PLACES_KNOWN, {"ords": again})).all())
            for ord_ in again:
                summary.problems.append(InputProblem(
                    file, lines[ord_].where, f"the same run as {first.get(ord_, 'an earlier one')} (same natural key)",
                ))
            summary.rejected = len(again)
        summary.unchanged = len(claimed)
        for ord_ in claimed:
            workload_id, implementation_id, environment_id = found[ord_]
            summary.workloads.add(workload_id)
            summary.implementations.add(implementation_id)
            summary.environments.add(environment_id)
        return summary, [line for ord_, line in enumerate(lines) if ord_ not in found]

    async def _workload_refs(self, records: list[dict[str, Any]]) -> tuple[dict[str, WorkloadRef], dict[WorkloadTriple, WorkloadRef]]:
        """The workloads the records name (every one known to a dry run's overlay)."""
        if self._known is not None:
            return self._known[0], self._known[1]
        slugs: set[str] = set()
        triples: set[WorkloadTriple] = set()
        for data in records:
            ref = data.get("workload")
            if not isinstance(ref, dict):
                continue
            if isinstance(ref.get("slug"), str):
                slugs.add(ref["slug"])
            elif all(isinstance(ref.get(k), (str, int)) and not isinstance(ref.get(k), bool) for k in ("suite", "level", "problem")):
                triples.add((ref["suite"], ref["level"], ref["problem"]))
        return await load_workload_refs(self.session, slugs, triples)

    async def _stage(self, rows: list[tuple[Any, ...]]) -> None:
        """The batch's rows into a fresh stage, by COPY."""
        session = self.session
        connection = await driver_connection(session)
        if self.track_keys and self._stage_connection is not None and connection is not self._stage_connection:
            # The keys staged by earlier batches are in the old connection's temporary table.
            raise RuntimeError("the import's database connection changed between batches: run it again (it is idempotent)")
        self._stage_connection = connection
        # Every time: a stage made in a transaction that rolled back is gone with it.
        for statement in _CREATE_STAGE:
            await session.execute(text(statement))
        await session.execute(text("TRUNCATE ingest_stage"))
        if not self.track_keys:
            await session.execute(text("TRUNCATE ingest_keys"))
        await copy_rows(session, "ingest_stage", _STAGE_NAMES, rows)

    async def _merge(
        self, rows: list[tuple[Any, ...]], places: list[InputProblem], order_of_problem: list[int],
        problems: list[tuple[int, InputProblem]], summary: IngestSummary, *, dry_run: bool,
    ) -> list[NaturalKey]:
        """Stage the rows, refuse the runs already stated (in this batch, or earlier in the import),
        then insert, supersede or count each as unchanged; the natural keys of the runs inserted."""
        if not rows:
            return []
        await self._stage(rows)
        session = self.session
        claimed = set((await session.execute(_CLAIM_KEYS)).scalars().all())
        if len(claimed) < len(rows):
            again = [row[0] for row in rows if row[0] not in claimed]
            first: dict[int, str] = dict((await session.execute(_FIRST_PLACES, {"ords": again})).all())
            for ord_ in again:
                place = places[ord_]
                problems.append((
                    order_of_problem[ord_],
                    InputProblem(place.file, place.where, f"the same run as {first.get(ord_, 'an earlier one')} (same natural key)"),
                ))
            await session.execute(_DROP_STAGED, {"ords": again})
        if self.fleet_worker is None:
            held = (await session.execute(_FLEET_HELD)).all()
            if held:
                for ord_, run_id in held:
                    place = places[ord_]
                    problems.append((order_of_problem[ord_], InputProblem(
                        place.file, place.where,
                        f"run {run_id} with this natural key was measured by the fleet; a record from outside cannot replace it",
                    )))
                await session.execute(_DROP_STAGED, {"ords": [row[0] for row in held]})
                claimed -= {row[0] for row in held}
        staged = len(claimed)
        if dry_run:
            new, changed, same = (await session.execute(_COUNT_MERGE)).one()
            summary.inserted = new + changed
            summary.superseded = changed
            summary.unchanged = same
            return []
        superseded = (await session.execute(_SUPERSEDE, {"now": self.now})).all()
        inserted = (await session.execute(_INSERT_NEW)).all()
        summary.inserted = len(inserted)
        summary.superseded = len(superseded)
        summary.unchanged = staged - len(inserted)
        summary.inserted_run_ids = [row[0] for row in inserted]
        if superseded:
            new_of = {tuple(row[1:]): row[0] for row in inserted}
            pairs = [(row[0], new_of[tuple(row[1:])]) for row in superseded]
            await session.execute(_LINK_SUPERSEDED, {"old": [p[0] for p in pairs], "new": [p[1] for p in pairs]})
        return [tuple(row[1:]) for row in inserted]


def _float(value: Any) -> float | None:
    """A JSON number as the double its column holds (an integer-valued 5 arrives as an int)."""
    return None if value is None else float(value)
