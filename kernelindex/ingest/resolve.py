"""Resolving references: the natural keys a run record names, as the ids of catalogue rows.

Workloads (by slug, or by suite, level and problem number) and their revisions, and hardware (by
SKU or driver product name), are looked up and never created here: a record naming one the
catalogue lacks is refused with why (new hardware and workloads come in through catalogue lines).
The other dimensions (environments, implementations, protocols, sources and their snapshots) are
created when new, in bulk (`Resolver.ensure`): one INSERT … ON CONFLICT DO NOTHING per kind
(executemany, or COPY past STAGE_DIMENSIONS_FROM rows) and one SELECT per chunk of keys.

A Resolver keeps the ids it has resolved, so one serves several batches of one transaction (or
several committed transactions: ids of committed rows stay good; call `forget()` after a
rollback). A dry run's gets placeholder ids (below zero) for dimensions the database lacks, and
resolves against `References` (the database with the input's catalogue lines laid over it) instead.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

import msgspec
from sqlalchemy import Table, and_, bindparam, func, or_, select, text, tuple_
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.copy import copy_rows, driver_connection
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
from kernelindex.db.scratch import SCRATCH, emptied
from kernelindex.ingest.digests import environment_fingerprint_memo
from kernelindex.ingest.errors import InputProblem
from kernelindex.ingest.records import RunRecord
from kernelindex.ingest.summary import Refused
from kernelindex.ingest.workloads import is_git_hash, revision_matches
from kernelindex.rules.names import hardware_key, hardware_name_problem, skeleton
from kernelindex.rules.run_record import METRIC_UNITS

KEYS_PER_LOOKUP = 5000
# More new dimension rows than this in a batch go in by COPY (_insert_staged), fewer by executemany.
STAGE_DIMENSIONS_FROM = 50

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
SuiteKey = tuple[str, str]  # (suite, the suite's own key): a workload of a suite without levels


@dataclass
class WorkloadRef:
    id: int
    slug: str
    current_revision_id: int | None
    # source sha256 → revision id; a stand-in module's own digest names its revision too.
    revisions: dict[str, int] = field(default_factory=dict)
    # upstream revision of a suite snapshot → the revision this workload holds in it.
    snapshot_revisions: dict[str, int] = field(default_factory=dict)
    in_latest_snapshot: bool | None = None
    # In by_triple only: the other workloads that held this number, when none is in the latest snapshot.
    ambiguous_with: tuple[str, ...] = ()


@dataclass(frozen=True)
class WorkloadRefusal:
    """Why a record's workload reference names no workload revision, and the key at fault."""

    key: str
    reason: str


@dataclass(frozen=True)
class ResolvedWorkload:
    """The workload a record names and the revision it measured."""

    workload: WorkloadRef
    revision_id: int


def resolve_workload_ref(
    ref: dict[str, Any], by_slug: dict[str, WorkloadRef], by_triple: dict[WorkloadTriple, WorkloadRef],
    source_revision: str | None = None, by_key: dict[SuiteKey, WorkloadRef] | None = None,
) -> ResolvedWorkload | WorkloadRefusal:
    """The workload and revision a record's workload reference names, or why not.

    The revision: the one with the source_sha256 named; else the one the workload holds in the
    suite snapshot at the record's source revision (a KernelBench timing file measured the problem
    file of its own commit); else the current one.
    """
    if "slug" in ref:
        w = by_slug.get(ref["slug"])
        if w is None:
            return WorkloadRefusal("workload.slug", f"unknown workload {ref['slug']!r}")
    elif "key" in ref and "level" not in ref:
        # A workload its suite names by its own key (migration 0016's suite_key).
        w = (by_key or {}).get((ref["suite"], ref["key"]))
        if w is None:
            return WorkloadRefusal("workload.key", f"unknown workload {ref['key']!r} of suite {ref['suite']!r}")
    else:
        w = by_triple.get((ref["suite"], ref["level"], ref["problem"]))
        if w is None:
            return WorkloadRefusal("workload", f"unknown workload {ref['suite']} level {ref['level']} problem {ref['problem']}")
        if w.ambiguous_with:
            names = ", ".join(sorted((w.slug, *w.ambiguous_with)))
            return WorkloadRefusal("workload", (
                f"ambiguous: {ref['suite']} level {ref['level']} problem {ref['problem']} has been more than one "
                f"problem ({names}) and none is in the suite's latest complete snapshot; name the workload by slug"
            ))
    sha = ref.get("source_sha256")
    if sha:
        revision_id = w.revisions.get(sha)
        if revision_id is None:
            return WorkloadRefusal("workload.source_sha256", f"workload {w.slug!r} has no revision with source sha256 {sha[:12]}…")
        return ResolvedWorkload(w, revision_id)
    if source_revision and w.snapshot_revisions:
        found = w.snapshot_revisions.get(source_revision)
        # Only a git hash can be another spelling of a stored revision: any other that the workload's
        # snapshots do not hold exactly (a producer's own build name, a new one on every record) names none.
        if found is None and is_git_hash(source_revision):
            found = next(
                (rid for rev, rid in sorted(w.snapshot_revisions.items()) if revision_matches(rev, source_revision)), None
            )
        if found is not None:
            return ResolvedWorkload(w, found)
    if w.current_revision_id is None:
        return WorkloadRefusal("workload", f"workload {w.slug!r} has no reference source revision yet")
    return ResolvedWorkload(w, w.current_revision_id)


WorkloadResolution = ResolvedWorkload | WorkloadRefusal


def workload_resolver(
    by_slug: dict[str, WorkloadRef], by_triple: dict[WorkloadTriple, WorkloadRef], by_key: dict[SuiteKey, WorkloadRef] | None = None,
) -> Callable[[dict[str, Any], str | None], WorkloadResolution]:
    """resolve_workload_ref against these workloads, remembered per reference and source revision
    (a batch names a few workloads thousands of times, and finding a snapshot's revision walks them).
    A source revision that can name none of the workload's snapshots (not one of their revisions, and
    not a git hash, the only spelling that can abbreviate one) resolves as a reference without one:
    remembered once for the reference, not once a revision (a producer that stamps every run with its
    own build would otherwise miss on every record)."""
    memo: dict[tuple[Any, ...], WorkloadResolution] = {}

    def resolve(ref: dict[str, Any], source_revision: str | None) -> WorkloadResolution:
        # The reference's keys and values as written (the same reference in another key order only misses).
        try:
            items = tuple(ref.items())
            plain = memo.get((None, *items))
        except TypeError:  # an unhashable value where a name belongs: not remembered
            return resolve_workload_ref(ref, by_slug, by_triple, source_revision, by_key)
        if plain is None:
            plain = memo[(None, *items)] = resolve_workload_ref(ref, by_slug, by_triple, None, by_key)
        if not source_revision or (
            isinstance(plain, ResolvedWorkload) and source_revision not in plain.workload.snapshot_revisions
            and not is_git_hash(source_revision)
        ):
            return plain
        key = (source_revision, *items)
        found = memo.get(key)
        if found is None:
            found = memo[key] = resolve_workload_ref(ref, by_slug, by_triple, source_revision, by_key)
        return found

    return resolve


async def load_workload_refs(
    session: AsyncSession, slugs: Iterable[str] | None = None, triples: Iterable[WorkloadTriple] | None = None,
    keys: Iterable[SuiteKey] | None = None,
) -> tuple[dict[str, WorkloadRef], dict[WorkloadTriple, WorkloadRef], dict[SuiteKey, WorkloadRef]]:
    """Workloads with their revisions: those named (slugs, triples, suite keys), or every one when all are None;
    by slug, by (suite, level, problem) and by (suite, suite_key)."""
    query = select(
        Workload.id, Workload.slug, Workload.suite, Workload.level, Workload.problem_number, Workload.current_revision_id,
        Workload.in_latest_snapshot, Workload.suite_key,
    )
    if slugs is not None or triples is not None or keys is not None:
        conditions = []
        if slugs:
            conditions.append(Workload.slug.in_(list(slugs)))
        if triples:
            conditions.append(tuple_(Workload.suite, Workload.level, Workload.problem_number).in_(list(triples)))
        if keys:
            conditions.append(tuple_(Workload.suite, Workload.suite_key).in_(list(keys)))
        if not conditions:
            return {}, {}, {}
        query = query.where(or_(*conditions))
    rows = (await session.execute(query)).all()
    by_id = {r.id: WorkloadRef(r.id, r.slug, r.current_revision_id, in_latest_snapshot=r.in_latest_snapshot) for r in rows}
    if by_id:
        revisions = select(
            WorkloadRevision.id, WorkloadRevision.workload_id, WorkloadRevision.source_sha256, WorkloadRevision.stand_in_sha256,
        )
        members = select(SuiteSnapshotMember.workload_id, SuiteSnapshot.upstream_revision, SuiteSnapshotMember.workload_revision_id).join(
            SuiteSnapshot, SuiteSnapshot.id == SuiteSnapshotMember.snapshot_id
        )
        if slugs is not None or triples is not None or keys is not None:
            revisions = revisions.where(WorkloadRevision.workload_id.in_(list(by_id)))
            members = members.where(SuiteSnapshotMember.workload_id.in_(list(by_id)))
        for rev_id, workload_id, sha, stand_in_sha in (await session.execute(revisions.order_by(WorkloadRevision.id))).all():
            if workload_id in by_id:
                by_id[workload_id].revisions[sha] = rev_id
                if stand_in_sha:
                    by_id[workload_id].revisions.setdefault(stand_in_sha, rev_id)
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
    by_key = {(r.suite, r.suite_key): by_id[r.id] for r in rows if r.suite_key is not None}
    return by_slug, by_triple, by_key


async def load_hardware_index(session: AsyncSession) -> HardwareIndex:
    rows = (await session.execute(select(Hardware.id, Hardware.sku, Hardware.driver_product_names).order_by(Hardware.id))).all()
    return HardwareIndex((r[0], r[1], r[2] or []) for r in rows)



@dataclass
class References:
    """What records name, resolved in memory instead of against the database: a dry run's every
    workload (with its revisions) and the hardware catalogue, with the input's catalogue lines laid
    over them (kernelindex.ingest.catalog.overlay_catalog)."""

    by_slug: dict[str, WorkloadRef]
    by_triple: dict[WorkloadTriple, WorkloadRef]
    hardware: HardwareIndex
    by_key: dict[SuiteKey, WorkloadRef] = field(default_factory=dict)

    @classmethod
    async def load(cls, session: AsyncSession) -> References:
        by_slug, by_triple, by_key = await load_workload_refs(session)
        return cls(by_slug, by_triple, await load_hardware_index(session), by_key)


@dataclass(slots=True)
class ResolvedRecord:
    """A record whose workload revision and hardware are catalogue rows."""

    index: int  # in its batch
    record: RunRecord
    workload: WorkloadRef
    revision_id: int
    hardware_id: int
    sku: str


@dataclass(slots=True)
class DimensionIds:
    """The rows a resolved record names besides its workload revision (placeholders, below zero, in a dry run)."""

    environment_id: int
    implementation_id: int
    protocol_id: int
    source_snapshot_id: int


def table_of(model: type[Base]) -> Table:
    """A mapped class's Table (typed as a plain FromClause by the declarative base)."""
    table = model.__table__
    assert isinstance(table, Table)
    return table


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Resolver:
    """Natural keys → ids for a writer's batches, remembering what it resolved (see the module)."""

    def __init__(self, known: References | None = None):
        self._known = known
        self._placeholders = itertools.count(-1, -1)
        self.forget()

    def forget(self) -> None:
        """Drop every id resolved so far (after a rollback they may name rows that are gone)."""
        self._hardware: HardwareIndex | None = None
        self._environments: dict[str, int] = {}
        self._implementations: dict[str, int] = {}
        self._protocols: dict[tuple[str, str], int] = {}
        self._sources: dict[str, int] = {}
        self._snapshots: dict[tuple[int, str], int] = {}  # (source id, revision)
        self.whole_sources: set[int] = set()  # sources with a whole snapshot this resolver named first
        # The environments the last ensure inserted, by id, with the values it inserted: no run names one
        # but that batch's own (the rows are this transaction's, unseen by any other), so their cohorts
        # hold nothing stored to read, and their facts need not be read back.
        self.new_environments: dict[int, dict[str, Any]] = {}

    async def hardware_index(self, session: AsyncSession) -> HardwareIndex:
        if self._known is not None:
            return self._known.hardware
        if self._hardware is None:
            self._hardware = await load_hardware_index(session)
        return self._hardware

    async def workload_resolver(
        self, session: AsyncSession, records: Iterable[dict[str, Any]],
    ) -> Callable[[dict[str, Any], str | None], WorkloadResolution]:
        """A resolver of the workloads these records name (every one known to a dry run's overlay)."""
        if self._known is not None:
            return workload_resolver(self._known.by_slug, self._known.by_triple, self._known.by_key)
        slugs: set[str] = set()
        triples: set[WorkloadTriple] = set()
        keys: set[SuiteKey] = set()
        for data in records:
            ref = data.get("workload")
            if not isinstance(ref, dict):
                continue
            if isinstance(ref.get("slug"), str):
                slugs.add(ref["slug"])
            elif all(isinstance(ref.get(k), (str, int)) and not isinstance(ref.get(k), bool) for k in ("suite", "level", "problem")):
                triples.add((ref["suite"], ref["level"], ref["problem"]))
            elif isinstance(ref.get("suite"), str) and isinstance(ref.get("key"), str):
                keys.add((ref["suite"], ref["key"]))
        return workload_resolver(*await load_workload_refs(session, slugs, triples, keys))

    async def resolve(self, session: AsyncSession, records: list[RunRecord]) -> tuple[list[ResolvedRecord], list[Refused]]:
        """Which workload revision and catalogue hardware each record names (an unknown or look-alike
        name is refused), in record order."""
        resolve = await self.workload_resolver(session, (rec.data for rec in records))
        index = await self.hardware_index(session)
        resolved: list[ResolvedRecord] = []
        refused: list[Refused] = []
        for i, rec in enumerate(records):
            workload = resolve(rec.data["workload"], rec.data["source"].get("revision"))
            if isinstance(workload, WorkloadRefusal):
                refused.append(Refused(i, InputProblem(rec.file, rec.where, workload.reason, key=workload.key)))
                continue
            hardware = index.match(rec.data["environment"]["hardware"])
            if isinstance(hardware, HardwareRefusal):
                refused.append(Refused(i, InputProblem(rec.file, rec.where, hardware.reason, key=hardware.key)))
                continue
            hardware_id, sku = hardware
            resolved.append(ResolvedRecord(i, rec, workload.workload, workload.revision_id, hardware_id, sku))
        return resolved, refused

    async def ensure(self, session: AsyncSession, resolved: list[ResolvedRecord], *, dry_run: bool) -> list[DimensionIds]:
        """The ids of every dimension the records name, creating those new (placeholders in a dry
        run), in bulk; per record, in order."""
        environments: dict[str, dict[str, Any]] = {}
        implementations: dict[str, dict[str, Any]] = {}
        protocols: dict[tuple[str, str], dict[str, Any]] = {}
        sources: dict[str, dict[str, Any]] = {}
        fingerprints: list[str] = []
        for item in resolved:
            data = item.record.data
            env = data["environment"]
            # A stated fingerprint: the environment as a source adapter keyed it (a record in the stated form).
            fingerprint = env.get("fingerprint") or environment_fingerprint_memo(item.sku, env)
            fingerprints.append(fingerprint)
            if fingerprint not in environments and fingerprint not in self._environments:
                software = env.get("software") or {}
                environments[fingerprint] = {
                    "hardware_id": item.hardware_id, "provider": env.get("provider"), "label": env.get("label"),
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
                    # As a source states them (absent from a measured record: the table's defaults).
                    "authors": list(spec.get("authors") or []), "project": spec.get("project"),
                    "target_architectures": list(spec.get("target_architectures") or []),
                    "artifact_sha256": spec.get("artifact_sha256"), "artifact_bytes": spec.get("artifact_bytes"),
                    "version": spec.get("version"),
                }
            proto = data["protocol"]
            pkey = (proto["name"], proto["version"])
            if pkey not in protocols and pkey not in self._protocols:
                protocols[pkey] = {
                    "name": proto["name"], "version": proto["version"], "timer": proto.get("timer"),
                    "warmup": proto.get("warmup"), "trials": proto.get("trials"),
                    "statistic": proto.get("statistic") or "mean", "l2_flush": proto.get("l2_flush"),
                    "metric": proto.get("metric") or "latency",
                    "unit": proto.get("unit") or METRIC_UNITS[proto.get("metric") or "latency"],
                    "harness": proto.get("harness"), "comparator": proto.get("comparator"), "family": proto.get("family"),
                    "notes": proto.get("notes"),
                }
            src = data["source"]
            if src["name"] not in sources and src["name"] not in self._sources:
                sources[src["name"]] = {
                    "name": src["name"], "url": src.get("url"), "licence": src.get("licence"), "key": src.get("key"),
                    "kind": src.get("kind"), "terms": src.get("terms"), "attribution": src.get("attribution"),
                }
        created: set[int] = set()
        await self._ensure(session, table_of(Environment), self._environments, environments, ["fingerprint"], dry_run, created)
        self.new_environments = {
            self._environments[fingerprint]: row for fingerprint, row in environments.items() if self._environments[fingerprint] in created
        }
        await self._ensure(session, table_of(Implementation), self._implementations, implementations, ["slug"], dry_run)
        await self._ensure(session, table_of(Protocol), self._protocols, protocols, ["name", "version"], dry_run)
        await self._ensure(session, table_of(Source), self._sources, sources, ["name"], dry_run)
        snapshots: dict[tuple[int, str], dict[str, Any]] = {}
        for item in resolved:
            src = item.record.data["source"]
            skey = (self._sources[src["name"]], src.get("revision") or "")
            if skey not in snapshots and skey not in self._snapshots:
                revision_date = date.fromisoformat(src["revision_date"]) if src.get("revision_date") else None
                snapshots[skey] = {"source_id": skey[0], "revision": skey[1], "revision_date": revision_date,
                                   "route": src.get("route"), "whole": bool(src.get("whole"))}
        missing = {k for k in snapshots if k not in self._snapshots}
        await self._ensure(session, table_of(SourceSnapshot), self._snapshots, snapshots, ["source_id", "revision"], dry_run)
        # A whole snapshot new here may outdate an older one of its source, or be outdated (RunWriter.write).
        self.whole_sources |= {k[0] for k in missing if snapshots[k]["whole"] and k[0] > 0}
        ids: list[DimensionIds] = []
        for item, fingerprint in zip(resolved, fingerprints):
            data = item.record.data
            ids.append(DimensionIds(
                self._environments[fingerprint],
                self._implementations[data["implementation"]["slug"]],
                self._protocols[(data["protocol"]["name"], data["protocol"]["version"])],
                self._snapshots[(self._sources[data["source"]["name"]], data["source"].get("revision") or "")],
            ))
        return ids

    async def _ensure(
        self,
        session: AsyncSession,
        table: Table,
        cache: dict[Any, int],
        wanted: dict[Any, dict[str, Any]],
        key_columns: Sequence[str],
        dry_run: bool,
        created: set[int] | None = None,
    ) -> None:
        """Make sure every wanted key has a row and its id is in cache (ensure_rows; `created` gets the
        ids of the rows inserted); in a dry run a key with no row gets a placeholder id."""
        await ensure_rows(session, table, wanted, key_columns, known=cache, dry_run=dry_run, placeholders=self._placeholders,
                          created=created)


async def ensure_rows(
    session: AsyncSession, table: Table, wanted: Mapping[Any, dict[str, Any]], key_columns: Sequence[str], *,
    known: dict[Any, int] | None = None, dry_run: bool = False, placeholders: Iterator[int] | None = None,
    created: set[int] | None = None,
) -> dict[Any, int]:
    """Each wanted row's id by its natural key (a single value, or a tuple of key_columns' values),
    the row inserted when missing; an existing row is kept as it is. `known`: ids found before (a
    resolver's cache), filled in and returned. The stored rows are looked up first, so an unchanged
    re-import inserts nothing (an INSERT … ON CONFLICT of thousands of rows was a third of its time);
    then the missing ones go in, one statement (staged when many) whose RETURNING gives their ids: a
    fixed number of round trips however many rows. dry_run: nothing is written, and a missing key gets the
    next of `placeholders` (ids below zero). created: gets the ids of the rows this call inserted (its
    INSERT's RETURNING: none another writer inserted meanwhile), rows nothing else can name yet."""
    ids = known if known is not None else {}
    missing = [k for k in wanted if k not in ids]
    if not missing:
        return ids
    columns = [table.c[name] for name in key_columns]
    await _look_up(session, table, columns, missing, ids)
    missing = [k for k in missing if k not in ids]
    if missing and not dry_run:
        inserted: Sequence[Any]
        if len(missing) > STAGE_DIMENSIONS_FROM:
            # The rows it inserted come back with their ids; only keys another writer inserted meanwhile
            # (none, under the index write lock) are looked up again.
            inserted = await _insert_staged(session, table, [wanted[k] for k in missing], key_columns)
        else:
            # executemany of one cached statement (a multi-row VALUES would be compiled anew each time),
            # its RETURNING gathered by SQLAlchemy's insertmanyvalues.
            inserted = (await session.execute(
                pg_insert(table).on_conflict_do_nothing(index_elements=list(key_columns)).returning(table.c.id, *columns),
                [wanted[k] for k in missing],
            )).all()
        for row in inserted:
            ids[row[1] if len(columns) == 1 else tuple(row[1:])] = row[0]
        if created is not None:
            created.update(row[0] for row in inserted)
        again = [k for k in missing if k not in ids]
        if again:
            await _look_up(session, table, columns, again, ids)
    for k in missing:
        if k not in ids:
            if not dry_run or placeholders is None:
                raise RuntimeError(f"{table.name}: the row for {k!r} was inserted but cannot be read back")
            ids[k] = next(placeholders)
    return ids


async def _look_up(session: AsyncSession, table: Table, columns: Sequence[Any], keys: list[Any], ids: dict[Any, int]) -> None:
    """The ids of the stored rows with these keys, into `ids`."""
    single = len(columns) == 1
    for chunk in chunks(keys, KEYS_PER_LOOKUP):
        derived = _keys_table(columns, [(k,) for k in chunk] if single else list(chunk))
        lookup = select(table.c.id, *columns).join(derived, and_(*(c == derived.c[c.name] for c in columns)))
        for row in (await session.execute(lookup)).all():
            ids[row[1] if single else tuple(row[1:])] = row[0]


def _keys_table(columns: Sequence[Any], keys: list[tuple[Any, ...]]) -> Any:
    """Keys as a derived table of the columns' names: one array parameter a column, however many
    keys (an IN list binds one a value, a thousand machines' fingerprints a thousand, and is compiled
    anew for each length)."""
    arrays = [
        bindparam(f"keys_{column.name}", [key[i] for key in keys], type_=ARRAY(column.type), unique=True)
        for i, column in enumerate(columns)
    ]
    return func.unnest(*arrays).table_valued(*(column.name for column in columns)).render_derived(name="wanted_keys")


_JSON = msgspec.json.Encoder()


def _json_text(value: Any) -> str:
    """JSON text for a jsonb column (the database parses it: spacing and key order do not count),
    written in C; json.dumps where msgspec has no spelling (an integer past 64 bits), or would write
    null for what is not one (a NaN: json.dumps writes it, and the database refuses it, as ever)."""
    try:
        encoded = _JSON.encode(value)
    except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
        return json.dumps(value)
    if b"null" in encoded:
        return json.dumps(value)
    return encoded.decode("utf-8")


async def _insert_staged(
    session: AsyncSession, table: Table, rows: list[dict[str, Any]], key_columns: Sequence[str],
) -> list[Any]:
    """Many new dimension rows (a file of a thousand machines) in one statement: COPYed into a
    temporary table of the same shape, then INSERT … SELECT … ON CONFLICT DO NOTHING in the
    order given. executemany would be a statement, and a firing of every trigger, per row.
    Returns (id, *key_columns) of each row inserted."""
    names = list(rows[0])
    stage = f"stage_{table.name}"
    # Made (when missing) and emptied in one round trip, a script on the driver connection in the
    # session's transaction (a stage made in a transaction that rolled back is gone with it).
    connection = await driver_connection(session)
    await connection.execute(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS {stage} {SCRATCH} AS SELECT {', '.join(names)}, 0 AS ord FROM {table.name} "
        f"WITH NO DATA;\n{emptied(stage)}"
    )
    as_json = {name for name in names if isinstance(table.c[name].type, JSONB)}
    values = [
        (*(_json_text(row[n]) if n in as_json and row[n] is not None else row[n] for n in names), i)
        for i, row in enumerate(rows)
    ]
    await copy_rows(session, stage, [*names, "ord"], values)
    inserted = await session.execute(text(
        f"INSERT INTO {table.name} ({', '.join(names)}) SELECT {', '.join(names)} FROM {stage} ORDER BY ord "
        f"ON CONFLICT ({', '.join(key_columns)}) DO NOTHING RETURNING id, {', '.join(key_columns)}"
    ))
    return list(inserted.all())
