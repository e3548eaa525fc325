"""Creating workloads and their revisions (seed data, the KernelBench importer)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import Workload, WorkloadRevision
from kernelindex.rules.identity import configuration_key, sha256_hex, workload_identity

KIND_BY_LEVEL = {1: "operator", 2: "fusion", 3: "model", 4: "model"}
DEFAULT_DESCRIPTION = (
    "The computation is the reference PyTorch module's forward pass; the output shape follows the module "
    "(mirrored as each implementation's source)."
)


def workload_slug(suite: str, level: int, problem: int, name: str) -> str:
    """kernelbench-l3-p9-resnet18: lower case, '_' and other separators as '-'."""
    cleaned = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return f"{suite}-l{level}-p{problem}-{cleaned}"


@dataclass
class WorkloadSpec:
    suite: str
    level: int
    problem_number: int
    name: str
    reference_source: str
    kind: str | None = None
    slug: str | None = None
    description: str | None = DEFAULT_DESCRIPTION
    source_filename: str | None = None
    upstream_revision: str | None = None
    canonical_bindings: dict[str, int] | None = None
    canonical_dtype: str = "fp32"
    semantics: dict[str, Any] | None = None
    semantics_error: str | None = None
    analysis: dict[str, Any] | None = None

    @property
    def resolved_slug(self) -> str:
        return self.slug or workload_slug(self.suite, self.level, self.problem_number, self.name)

    @property
    def resolved_kind(self) -> str:
        return self.kind or KIND_BY_LEVEL.get(self.level, "model")


@dataclass(frozen=True)
class WorkloadOutcome:
    workload_id: int
    revision_id: int
    status: str  # "inserted", "new revision", "unchanged"


async def upsert_workload(session: AsyncSession, spec: WorkloadSpec) -> WorkloadOutcome:
    slug = spec.resolved_slug
    await session.execute(
        pg_insert(Workload)
        .values(
            slug=slug, suite=spec.suite, level=spec.level, problem_number=spec.problem_number,
            name=spec.name, kind=spec.resolved_kind, description=spec.description,
        )
        .on_conflict_do_nothing(index_elements=["slug"])
    )
    workload = (await session.scalars(select(Workload).where(Workload.slug == slug))).one()
    created = workload.current_revision_id is None
    sha = sha256_hex(spec.reference_source)
    existing = (
        await session.scalars(
            select(WorkloadRevision).where(WorkloadRevision.workload_id == workload.id, WorkloadRevision.source_sha256 == sha)
        )
    ).one_or_none()
    if existing is not None:
        status = "unchanged"
        revision_id = existing.id
        if existing.analysis is None and spec.analysis is not None:
            # Same source, first traced now: the analysis is derived data, not a new revision.
            await session.execute(
                update(WorkloadRevision).where(WorkloadRevision.id == existing.id).values(analysis=spec.analysis)
            )
    else:
        revision_id = (
            await session.execute(
                pg_insert(WorkloadRevision)
                .values(
                    workload_id=workload.id,
                    source_sha256=sha,
                    reference_source=spec.reference_source,
                    source_filename=spec.source_filename,
                    upstream_revision=spec.upstream_revision,
                    canonical_bindings=spec.canonical_bindings or {},
                    canonical_dtype=spec.canonical_dtype,
                    canonical_configuration_key=configuration_key(spec.canonical_bindings or {}, spec.canonical_dtype),
                    semantics=spec.semantics,
                    semantics_error=spec.semantics_error,
                    identity_sha256=workload_identity(spec.semantics, spec.reference_source),
                    analysis=spec.analysis,
                )
                .returning(WorkloadRevision.id)
            )
        ).scalar_one()
        status = "inserted" if created else "new revision"
    if workload.current_revision_id != revision_id:
        # The source just imported is the workload's current definition.
        await session.execute(
            update(Workload)
            .where(Workload.id == workload.id)
            .values(current_revision_id=revision_id, updated_at=func.now())
        )
        if status == "unchanged":
            status = "new revision"
    return WorkloadOutcome(workload.id, revision_id, status)
