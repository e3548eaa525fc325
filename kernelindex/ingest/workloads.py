"""Creating workloads, their revisions and the upstream snapshots that decide which revision is current.

revisions-v1 (docs/how-records-are-decided.md):
- a revision's identity is the sha256 of the upstream file's bytes (WorkloadSpec.digest). The seed
  names that digest without holding the file: its own module stands in (stand_in) until an import
  of the file at that digest replaces it; a file with exactly the stand-in's bytes is the same revision;
- a suite snapshot (a KernelBench commit, with its date) lists the revision of each workload it holds;
  a checkout import is a complete snapshot, the seed's is partial;
- a workload's current revision is the one it holds in the latest snapshot that names it: latest
  revision date, then a complete snapshot before a partial one, then the greater upstream revision
  and digest (a stable key). It is recomputed from the snapshots after every write, so any order of
  imports and seeds gives the same answer. A workload no snapshot names keeps the revision it was
  given (kernelindex.ingest.catalog, local tools);
- a different problem under an old number is a different workload (identity: suite, level, number
  and name, i.e. the slug); the old one stays, `in_latest_snapshot` false once the suite's latest
  complete snapshot no longer holds it;
- older revisions and their runs stay stored and queryable; only the current revision's runs count
  for records. A change of current revision appends a 'revision_changed' record event.

For the KernelBench importer: call `record_snapshot(session, "kernelbench", revision, date, specs,
complete=True)` in the transaction that writes the workloads, before the timing runs are written;
it returns a `SnapshotOutcome`: `outcomes` (one `WorkloadOutcome` per spec, in order: workload id,
revision id, status "inserted" / "new revision" / "unchanged", and `source_sha256`, the digest to
name as workload.source_sha256 in its run records), `changes` (`SuiteChange`s: kind "replaced",
"renamed", "removed" or "added", with the old and new slugs, against the nearest earlier complete
snapshot; `SuiteChange.words` says each in a line) and `workload_ids` to pass to
kernelindex.services.records.refresh_workloads. Run records then attach to the snapshot's revision
by their source revision (or by workload.source_sha256), not to whatever is current. For the
record history, write all the timing batches with one `RunWriter(defer_events=True)` (each batch's
session passed to `write`) and call `await writer.record_events(session)` once after the last batch
(in a transaction), so batch boundaries never make record events.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from sqlalchemy import func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.locks import hold_index_writes
from kernelindex.db.models import RecordEvent, SuiteSnapshot, SuiteSnapshotMember, Workload, WorkloadRevision
from kernelindex.ingest.errors import IngestFatal
from kernelindex.rules.history import REVISION_CHANGED, REVISIONS_VERSION
from kernelindex.rules.identity import configuration_key, sha256_hex, workload_identity

KIND_BY_LEVEL = {1: "operator", 2: "fusion", 3: "model", 4: "model"}
DEFAULT_DESCRIPTION = (
    "The computation is the reference PyTorch module's forward pass; the output shape follows the module "
    "(mirrored as each implementation's source)."
)


def workload_slug(suite: str, level: int, problem: int, name: str) -> str:
    """kernelbench-l3-p9-resnet18: lower case, '_' and other separators as '-' (the rule lives in
    benchmarks.naming, so the runner names a checkout's file exactly as the importer does)."""
    from benchmarks.naming import workload_slug as slug_rule

    return slug_rule(suite, level, problem, name)



@dataclass
class WorkloadSpec:
    suite: str
    level: int | None  # KernelBench's; None for a suite that names workloads by suite_key
    problem_number: int | None
    name: str
    reference_source: str
    kind: str | None = None
    slug: str | None = None
    suite_key: str | None = None  # the suite's own name for it (a suite without levels)
    family: str | None = None
    reference: str | None = None  # what its reference is, in the source's words
    aliases: tuple[str, ...] = ()  # other names the suite gives it
    description: str | None = DEFAULT_DESCRIPTION
    source_filename: str | None = None
    upstream_revision: str | None = None
    canonical_bindings: dict[str, int] | None = None
    canonical_dtype: str = "fp32"
    semantics: dict[str, Any] | None = None
    semantics_error: str | None = None
    analysis: dict[str, Any] | None = None
    traced_with: str | None = None  # the tracer behind `analysis` (problem_trace.traced_with), when traced
    # sha256 of the upstream file's bytes; None: the digest of reference_source (UTF-8) is the file's.
    source_sha256: str | None = None
    source_size: int | None = None
    # reference_source is our module standing in for the upstream file named by source_sha256.
    stand_in: bool = False

    @property
    def resolved_slug(self) -> str:
        if self.slug:
            return self.slug
        if self.level is None or self.problem_number is None:
            raise ValueError(f"{self.suite} workload {self.suite_key or self.name!r}: a workload without a level needs its slug")
        return workload_slug(self.suite, self.level, self.problem_number, self.name)

    @property
    def resolved_kind(self) -> str:
        if self.kind:
            return self.kind
        return KIND_BY_LEVEL.get(self.level, "model") if self.level is not None else "operator"

    @property
    def digest(self) -> str:
        """The revision's identity: the upstream file's sha256."""
        return self.source_sha256 or sha256_hex(self.reference_source)


@dataclass(frozen=True)
class WorkloadOutcome:
    workload_id: int
    revision_id: int
    status: str  # "inserted", "new revision", "unchanged"
    slug: str = ""
    # The revision's identity digest: what a run record names as workload.source_sha256.
    source_sha256: str = ""


@dataclass(frozen=True)
class SuiteChange:
    """A problem upstream replaced, renamed, removed or added, between two complete snapshots."""

    kind: str  # "replaced", "renamed", "removed", "added"
    old_slug: str | None
    new_slug: str | None

    @property
    def words(self) -> str:
        if self.kind == "added":
            return f"added: {self.new_slug}"
        if self.kind == "removed":
            return f"removed: {self.old_slug} (kept, no longer in the latest snapshot)"
        return f"{self.kind}: {self.old_slug} → {self.new_slug}"


@dataclass
class SnapshotOutcome:
    snapshot_id: int
    outcomes: list[WorkloadOutcome] = field(default_factory=list)
    changes: list[SuiteChange] = field(default_factory=list)
    # Workloads whose current revision moved (each also got a 'revision_changed' record event).
    current_changed: list[int] = field(default_factory=list)

    # Workloads whose workload or revision row the snapshot wrote (created, or an existing revision changed).
    rewritten: list[int] = field(default_factory=list)

    def tally(self) -> tuple[int, int, int]:
        """(inserted, new revision, unchanged): how many of its workloads each outcome holds."""
        statuses = [o.status for o in self.outcomes]
        inserted, new = statuses.count("inserted"), statuses.count("new revision")
        return inserted, new, len(statuses) - inserted - new

    @property
    def workload_ids(self) -> list[int]:
        """Every workload the snapshot touched."""
        return sorted({o.workload_id for o in self.outcomes} | set(self.current_changed))

    @property
    def changed_workload_ids(self) -> list[int]:
        """The workloads whose eligible runs the snapshot may have changed: a revision stored or rewritten (its
        canonical configuration), or the current one moved. Refresh their records after it; an unchanged
        re-import has none."""
        return sorted(set(self.rewritten) | set(self.current_changed))


@dataclass(frozen=True)
class _Stored:
    workload_id: int
    revision_id: int
    workload_created: bool
    revision_created: bool
    digest: str
    revision_updated: bool = False  # an existing revision's row was changed (its configuration, semantics, …)


async def _store(session: AsyncSession, spec: WorkloadSpec) -> _Stored:
    """The workload and the revision the spec describes, created when missing; never a downgrade."""
    slug = spec.resolved_slug
    inserted = (
        await session.execute(
            pg_insert(Workload)
            .values(
                slug=slug, suite=spec.suite, level=spec.level, problem_number=spec.problem_number,
                suite_key=spec.suite_key, family=spec.family, reference=spec.reference, aliases=list(spec.aliases),
                name=spec.name, kind=spec.resolved_kind, description=spec.description,
            )
            .on_conflict_do_nothing(index_elements=["slug"])
            .returning(Workload.id)
        )
    ).scalar_one_or_none()
    created = inserted is not None
    workload = (await session.scalars(select(Workload).where(Workload.slug == slug))).one()
    sha = spec.digest
    own_sha = sha256_hex(spec.reference_source)
    candidates = (
        await session.scalars(
            select(WorkloadRevision).where(
                WorkloadRevision.workload_id == workload.id,
                # A file from a checkout with the bytes of a stand-in is that stand-in's revision; a
                # seed entry is always its declared digest (a new fact with the same module is a new revision).
                or_(WorkloadRevision.source_sha256 == sha, WorkloadRevision.stand_in_sha256 == own_sha)
                if not spec.stand_in else WorkloadRevision.source_sha256 == sha,
            ).order_by(WorkloadRevision.id)
        )
    ).all()
    existing = _pick(candidates, sha)
    if existing is None:
        revision_id = (
            await session.execute(
                pg_insert(WorkloadRevision)
                .values(
                    workload_id=workload.id,
                    source_sha256=sha,
                    reference_source=spec.reference_source,
                    source_size=spec.source_size if spec.source_size is not None else (
                        None if spec.stand_in else len(spec.reference_source.encode("utf-8"))
                    ),
                    stand_in=spec.stand_in,
                    stand_in_sha256=own_sha if spec.stand_in else None,
                    source_filename=spec.source_filename,
                    upstream_revision=spec.upstream_revision,
                    canonical_bindings=spec.canonical_bindings or {},
                    canonical_dtype=spec.canonical_dtype,
                    canonical_configuration_key=configuration_key(spec.canonical_bindings or {}, spec.canonical_dtype),
                    semantics=spec.semantics,
                    semantics_error=spec.semantics_error,
                    identity_sha256=workload_identity(spec.semantics, spec.reference_source),
                    analysis=spec.analysis,
                    traced_with=spec.traced_with if spec.analysis is not None else None,
                )
                .returning(WorkloadRevision.id)
            )
        ).scalar_one()
        return _Stored(workload.id, revision_id, created, True, sha)

    values = _revision_changes(existing, spec, sha, own_sha)
    if values:
        await session.execute(update(WorkloadRevision).where(WorkloadRevision.id == existing.id).values(**values))
    return _Stored(workload.id, existing.id, created, False, existing.source_sha256, revision_updated=bool(values))


def _pick(candidates: Sequence[WorkloadRevision], sha: str) -> WorkloadRevision | None:
    """The declared digest first; a file with the bytes of a stand-in is that stand-in's revision."""
    return next((r for r in candidates if r.source_sha256 == sha), None) or next(iter(candidates), None)


def _revision_changes(existing: WorkloadRevision, spec: WorkloadSpec, sha: str, own_sha: str) -> dict[str, Any]:
    """What storing ``spec`` changes on the revision it resolves to (empty: nothing; never a downgrade)."""
    values: dict[str, Any] = {}
    if spec.stand_in and sha == existing.source_sha256:
        # The seed's declarations about a revision it names by digest (semantics, analysis, canonical
        # configuration) are the facts the reference pages rest on: they hold whichever of seed and
        # import came first, so both orders end alike.
        if spec.semantics is not None and existing.semantics != spec.semantics:
            values.update(semantics=spec.semantics, semantics_error=None)
        if spec.analysis is not None and existing.analysis != spec.analysis:
            values["analysis"] = spec.analysis
        bindings = spec.canonical_bindings or {}
        if (existing.canonical_bindings, existing.canonical_dtype) != (bindings, spec.canonical_dtype):
            values.update(
                canonical_bindings=bindings, canonical_dtype=spec.canonical_dtype,
                canonical_configuration_key=configuration_key(bindings, spec.canonical_dtype),
            )
    if existing.stand_in and not spec.stand_in and sha == existing.source_sha256:
        # The upstream file itself, at the digest the seed named: it replaces our stand-in. The
        # stored semantics and analysis stay (facts about the same revision).
        values.update(reference_source=spec.reference_source, stand_in=False)
        if spec.source_filename:
            values["source_filename"] = spec.source_filename
    if existing.analysis is None and spec.analysis is not None:
        # Same source, first traced now: the analysis is derived data, not a new revision.
        values.setdefault("analysis", spec.analysis)
    if spec.traced_with is not None and spec.analysis is not None and not (existing.stand_in or spec.stand_in):
        # Our own trace of these very bytes: derived data, so the tracer's latest word replaces an older
        # one (the semantics, which the revision's identity rests on, stay), and says who made it, so
        # a later import may reuse it. A stand-in's analysis is the seed's declaration: it stays.
        if values.get("analysis", existing.analysis) != spec.analysis:
            values["analysis"] = spec.analysis
        if existing.traced_with != spec.traced_with:
            values["traced_with"] = spec.traced_with
    if existing.semantics is None and spec.semantics is not None and "semantics" not in values:
        # Traced for the first time (an earlier trace failed or timed out): its configuration was unknown
        # until now, so it comes with the semantics.
        bindings = spec.canonical_bindings or {}
        values.update(
            semantics=spec.semantics, semantics_error=None, canonical_bindings=bindings,
            canonical_dtype=spec.canonical_dtype, canonical_configuration_key=configuration_key(bindings, spec.canonical_dtype),
        )
    if (existing.semantics is None and spec.semantics is None and not (existing.stand_in or spec.stand_in)
            and spec.canonical_bindings is not None
            and (existing.canonical_bindings, existing.canonical_dtype) != (spec.canonical_bindings, spec.canonical_dtype)):
        # Still untraced, its configuration now read from its constants (benchmarks.problem_constants): a
        # revision stored before that was read had none, and its timings were skipped.
        values.update(
            canonical_bindings=spec.canonical_bindings, canonical_dtype=spec.canonical_dtype,
            canonical_configuration_key=configuration_key(spec.canonical_bindings, spec.canonical_dtype),
        )
    if "semantics" in values or "reference_source" in values:
        # The identity follows what it is computed from: the semantics and the source as stored now.
        values["identity_sha256"] = workload_identity(
            values.get("semantics", existing.semantics), values.get("reference_source", existing.reference_source)
        )
    if existing.source_size is None and sha == existing.source_sha256:
        size = spec.source_size if spec.source_size is not None else (
            None if spec.stand_in else len(spec.reference_source.encode("utf-8"))
        )
        if size is not None:
            values["source_size"] = size
    if existing.stand_in_sha256 is None and spec.stand_in:
        values["stand_in_sha256"] = own_sha  # so a checkout holding this very module finds the revision
    if existing.upstream_revision is None and spec.upstream_revision:
        values["upstream_revision"] = spec.upstream_revision
    return values


async def _store_all(session: AsyncSession, specs: Sequence[WorkloadSpec]) -> list[_Stored]:
    """_store for each spec, with what already exists read in two statements: a spec whose workload and
    revision are stored and would change in nothing (an unchanged re-import, a seed's workloads) costs no
    statement of its own; the others go through _store, which reads and writes as ever."""
    workloads = {
        w.slug: w for w in (await session.scalars(select(Workload).where(Workload.slug.in_([s.resolved_slug for s in specs])))).all()
    }
    revisions: dict[int, list[WorkloadRevision]] = {}
    if workloads:
        own = {sha256_hex(spec.reference_source) for spec in specs}
        rows = await session.scalars(
            select(WorkloadRevision)
            .where(
                WorkloadRevision.workload_id.in_([w.id for w in workloads.values()]),
                or_(WorkloadRevision.source_sha256.in_({spec.digest for spec in specs}), WorkloadRevision.stand_in_sha256.in_(own)),
            )
            .order_by(WorkloadRevision.id)
        )
        for row in rows.all():
            revisions.setdefault(row.workload_id, []).append(row)
    out: list[_Stored] = []
    for spec in specs:
        workload = workloads.get(spec.resolved_slug)
        if workload is not None:
            sha, own_sha = spec.digest, sha256_hex(spec.reference_source)
            # The same candidates as _store's query: by digest, or (a checkout's file) by a stand-in's bytes.
            candidates = [r for r in revisions.get(workload.id, [])
                          if r.source_sha256 == sha or (not spec.stand_in and r.stand_in_sha256 == own_sha)]
            existing = _pick(candidates, sha)
            if existing is not None and not _revision_changes(existing, spec, sha, own_sha):
                out.append(_Stored(workload.id, existing.id, False, False, existing.source_sha256))
                continue
        out.append(await _store(session, spec))
    return out


def _status(stored: _Stored, current_moved: bool) -> str:
    if stored.workload_created:
        return "inserted"
    return "new revision" if stored.revision_created or current_moved else "unchanged"


async def upsert_workload(session: AsyncSession, spec: WorkloadSpec, *, make_current: bool = True) -> WorkloadOutcome:
    """A workload and revision outside any upstream snapshot (catalogue lines, local tools).

    The revision becomes current only while no snapshot names the workload (make_current); once one
    does, the snapshots decide (revisions-v1) and this revision is stored beside the others.
    """
    stored = await _store(session, spec)
    moved = False
    has_snapshot = (
        await session.scalars(
            select(SuiteSnapshotMember.snapshot_id).where(SuiteSnapshotMember.workload_id == stored.workload_id).limit(1)
        )
    ).first() is not None
    if make_current and not has_snapshot:
        current = (await session.scalars(select(Workload.current_revision_id).where(Workload.id == stored.workload_id))).one()
        if current != stored.revision_id:
            await _set_current(session, stored.workload_id, current, stored.revision_id)
            moved = True
    return WorkloadOutcome(stored.workload_id, stored.revision_id, _status(stored, moved), spec.resolved_slug, stored.digest)


async def _set_current(session: AsyncSession, workload_id: int, old: int | None, new: int) -> None:
    await session.execute(
        update(Workload).where(Workload.id == workload_id).values(current_revision_id=new, updated_at=func.now())
    )
    if old is not None:
        key = (
            await session.scalars(select(WorkloadRevision.canonical_configuration_key).where(WorkloadRevision.id == new))
        ).one()
        await session.execute(
            pg_insert(RecordEvent).values(
                workload_id=workload_id, workload_revision_id=new, configuration_key=key, protocol_id=None,
                environment_id=None, kind=REVISION_CHANGED, run_id=None, previous_run_id=None,
                improvement_percent=None, rule_version=REVISIONS_VERSION,
            )
        )


_GIT_HASH = re.compile(r"[0-9a-f]{7,64}")


def is_git_hash(revision: str) -> bool:
    """Whether a revision is spelled as a git hash, whole or abbreviated (≥ 7 hex digits): the only
    spelling another one can match besides itself (revision_matches)."""
    return _GIT_HASH.fullmatch(revision) is not None


def revision_matches(stored: str, given: str) -> bool:
    """Two spellings of one upstream revision: equal, or both git hashes and one an abbreviation
    (≥ 7 hex digits) of the other (`git log --abbrev=7` gives 423217d; the seed states the full hash)."""
    if stored == given:
        return True
    if not (is_git_hash(stored) and is_git_hash(given)):
        return False
    shorter, longer = sorted((stored, given), key=len)
    return longer.startswith(shorter)


async def find_or_create_snapshot(
    session: AsyncSession, suite: str, upstream_revision: str, revision_date: date | None, *, complete: bool
) -> int:
    """The snapshot of this suite at this revision (an abbreviation matches the full hash), merged:
    complete once any reading of it was complete, the longer spelling and the known date kept."""
    rows = (await session.scalars(select(SuiteSnapshot).where(SuiteSnapshot.suite == suite))).all()
    found = sorted((s for s in rows if revision_matches(s.upstream_revision, upstream_revision)), key=lambda s: s.id)
    if not found:
        return (
            await session.execute(
                pg_insert(SuiteSnapshot)
                .values(suite=suite, upstream_revision=upstream_revision, revision_date=revision_date, complete=complete)
                .returning(SuiteSnapshot.id)
            )
        ).scalar_one()
    snapshot = found[0]
    if snapshot.retracted_at is not None:
        # Its runs would be written live beside retracted ones (kernelindex snapshot retract): refuse.
        raise IngestFatal(
            f"the {suite} snapshot at revision {snapshot.upstream_revision} was retracted on "
            f"{snapshot.retracted_at:%Y-%m-%d} ({snapshot.retraction_reason}); nothing imported under that revision "
            "counts. Check --revision and --observed"
        )
    values: dict[str, Any] = {}
    if complete and not snapshot.complete:
        values["complete"] = True
    if len(upstream_revision) > len(snapshot.upstream_revision):
        values["upstream_revision"] = upstream_revision
    if snapshot.revision_date is None and revision_date is not None:
        values["revision_date"] = revision_date
    if values:
        await session.execute(update(SuiteSnapshot).where(SuiteSnapshot.id == snapshot.id).values(**values))
    return snapshot.id


_LATEST_COMPLETE = (
    "SELECT id FROM suite_snapshots WHERE suite = :suite AND complete AND retracted_at IS NULL "
    "ORDER BY revision_date DESC NULLS LAST, upstream_revision DESC LIMIT 1"
)


async def latest_complete_snapshot(session: AsyncSession, suite: str) -> int | None:
    """The id of a suite's latest complete snapshot (by revision date), not retracted; None when it has none."""
    found: int | None = (await session.execute(text(_LATEST_COMPLETE), {"suite": suite})).scalar_one_or_none()
    return found


async def _members(session: AsyncSession, snapshot_id: int) -> dict[tuple[int, int], list[tuple[str, str]]]:
    """(level, number) → [(slug, revision digest)] of a snapshot's members."""
    rows = (
        await session.execute(
            select(Workload.level, Workload.problem_number, Workload.slug, WorkloadRevision.source_sha256)
            .join(SuiteSnapshotMember, SuiteSnapshotMember.workload_id == Workload.id)
            .join(WorkloadRevision, WorkloadRevision.id == SuiteSnapshotMember.workload_revision_id)
            .where(SuiteSnapshotMember.snapshot_id == snapshot_id)
            .order_by(Workload.slug)
        )
    ).all()
    out: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for level, number, slug, sha in rows:
        if level is not None and number is not None:  # KernelBench's members: a suite named by level and number
            out.setdefault((level, number), []).append((slug, sha))
    return out


def suite_changes(
    before: dict[tuple[int, int], list[tuple[str, str]]], after: dict[tuple[int, int], list[tuple[str, str]]]
) -> list[SuiteChange]:
    """Per problem number: another name with the same file is a rename, with another file a
    replacement; a number only before is removed, only after is added."""
    changes: list[SuiteChange] = []
    for key in sorted(set(before) | set(after)):
        old = {slug: sha for slug, sha in before.get(key, [])}
        new = {slug: sha for slug, sha in after.get(key, [])}
        gone = sorted(set(old) - set(new))
        came = sorted(set(new) - set(old))
        for old_slug, new_slug in zip(gone, came):
            kind = "renamed" if old[old_slug] == new[new_slug] else "replaced"
            changes.append(SuiteChange(kind, old_slug, new_slug))
        changes += [SuiteChange("removed", s, None) for s in gone[len(came):]]
        changes += [SuiteChange("added", None, s) for s in came[len(gone):]]
    return changes


async def record_snapshot(
    session: AsyncSession, suite: str, upstream_revision: str, revision_date: date | None,
    specs: Sequence[WorkloadSpec], *, complete: bool,
) -> SnapshotOutcome:
    """Store a suite snapshot and the revision of each workload in it, then recompute which
    revisions are current (revisions-v1). Everything in the caller's transaction; the caller
    refreshes the records of `workload_ids` (kernelindex.services.records.refresh_workloads)."""
    # Snapshot writers one at a time (with every other writer of the index): the current revisions
    # are recomputed from a settled set.
    await hold_index_writes(session)
    snapshot_id = await find_or_create_snapshot(session, suite, upstream_revision, revision_date, complete=complete)
    stored = await _store_all(session, specs)
    if stored:
        member = pg_insert(SuiteSnapshotMember)
        await session.execute(
            member.on_conflict_do_update(
                index_elements=["snapshot_id", "workload_id"],
                set_={"workload_revision_id": member.excluded.workload_revision_id},
            ),
            [{"snapshot_id": snapshot_id, "workload_id": s.workload_id, "workload_revision_id": s.revision_id} for s in stored],
        )
    moved = await recompute_current(session, [s.workload_id for s in stored])
    await update_in_latest_snapshot(session, suite)
    outcome = SnapshotOutcome(snapshot_id, current_changed=sorted(moved))
    outcome.outcomes = [
        WorkloadOutcome(s.workload_id, s.revision_id, _status(s, s.workload_id in moved), spec.resolved_slug, s.digest)
        for s, spec in zip(stored, specs)
    ]
    outcome.rewritten = sorted({s.workload_id for s in stored if s.workload_created or s.revision_created or s.revision_updated})
    if complete:
        # Against the nearest earlier complete snapshot of the suite (none: nothing to compare).
        this = (await session.scalars(select(SuiteSnapshot).where(SuiteSnapshot.id == snapshot_id))).one()
        earlier = (
            await session.scalars(
                select(SuiteSnapshot.id)
                .where(
                    SuiteSnapshot.suite == suite, SuiteSnapshot.complete, SuiteSnapshot.id != snapshot_id,
                    SuiteSnapshot.retracted_at.is_(None),
                    SuiteSnapshot.revision_date <= this.revision_date if this.revision_date else text("false"),
                )
                .order_by(SuiteSnapshot.revision_date.desc(), SuiteSnapshot.upstream_revision.desc())
                .limit(1)
            )
        ).first()
        if earlier is not None:
            outcome.changes = suite_changes(await _members(session, earlier), await _members(session, snapshot_id))
    return outcome


async def recompute_current(session: AsyncSession, workload_ids: Iterable[int]) -> set[int]:
    """Set each workload's current revision from its snapshots; the workloads whose current moved.

    A workload no snapshot names keeps its current revision.
    """
    ids = sorted(set(workload_ids))
    if not ids:
        return set()
    rows = (
        await session.execute(
            text(
                "SELECT DISTINCT ON (m.workload_id) m.workload_id, m.workload_revision_id, w.current_revision_id "
                "FROM suite_snapshot_members m JOIN suite_snapshots s ON s.id = m.snapshot_id "
                "JOIN workload_revisions r ON r.id = m.workload_revision_id JOIN workloads w ON w.id = m.workload_id "
                "WHERE m.workload_id = ANY(CAST(:ids AS int[])) AND s.retracted_at IS NULL "
                "ORDER BY m.workload_id, s.revision_date DESC NULLS LAST, s.complete DESC, s.upstream_revision DESC, "
                "r.source_sha256 DESC"
            ),
            {"ids": ids},
        )
    ).all()
    moved: set[int] = set()
    for workload_id, chosen, current in rows:
        if chosen != current:
            await _set_current(session, workload_id, current, chosen)
            moved.add(workload_id)
    return moved


async def update_in_latest_snapshot(session: AsyncSession, suite: str) -> None:
    """workloads.in_latest_snapshot of a suite: in its latest complete snapshot, or NULL when it has none."""
    latest = await latest_complete_snapshot(session, suite)
    if latest is None:
        await session.execute(
            update(Workload).where(Workload.suite == suite, Workload.in_latest_snapshot.is_not(None)).values(in_latest_snapshot=None)
        )
        return
    await session.execute(
        text(
            "UPDATE workloads w SET in_latest_snapshot = v.member FROM ("
            " SELECT w2.id, EXISTS (SELECT 1 FROM suite_snapshot_members m WHERE m.snapshot_id = :latest"
            " AND m.workload_id = w2.id) AS member FROM workloads w2 WHERE w2.suite = :suite) v "
            "WHERE w.id = v.id AND w.in_latest_snapshot IS DISTINCT FROM v.member"
        ),
        {"latest": latest, "suite": suite},
    )
