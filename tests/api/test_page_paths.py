"""The page read from precomputed cohort bests equals the page computed from every run."""

from __future__ import annotations

import random

from kernelindex.rules import ranking
from kernelindex.services.evidence import load_evidence
from kernelindex.services.facts import load_catalogue
from kernelindex.services.pages import load_comparisons, load_page_evidence
from tests.api.helpers import synthetic_records, write_records


def _baseline(record):
    baseline = ranking.baseline_of(record.cohort) if record else None
    return baseline.run.id if baseline else None


def _summary(page, comparison) -> dict:
    return {
        "eligible": page.eligible_count,
        "records": [(r.run.id, r.run_count, r.environment_label) for r in page.records],
        "comparison": [(row.run.id, row.rank) for row in comparison.cohort] if comparison else [],
        "implementations": sorted((b.run.id, round(b.vs_best, 9)) for b in page.implementation_bests),
        "last_observed": page.last_observed,
        "sources": [(s.name, s.revision) for s in page.sources],
        "hardware": sorted(page.measured_hardware_ids),
        "evidence_kinds": {b.run.implementation.id: page.evidence_kinds(b.run.implementation.id) for b in page.implementation_bests},
    }


async def test_fast_and_full_paths_agree(db_url, session):
    rng = random.Random(7)
    records = synthetic_records(40)
    for i, rec in enumerate(records):
        rec["environment"]["label"] = f"pool-{i % 6}"  # several runs per cohort
        rec["source"]["revision"] = f"t{i}"
        rec["implementation"] = {"slug": rng.choice(["torch_eager", "torch_compile_inductor", "custom_kernel"])}
        mean = round(rng.uniform(1.0, 2.0), 3)
        rec["statistics"].update(mean=mean, min=mean - 0.01, max=mean + 0.01)
    records[5]["status"] = "failed"
    records[5]["statistics"] = None
    records[5]["failure_reason"] = "wrong output"
    records[6]["configuration"]["bindings"] = {"batch_size": 8}
    await write_records(db_url, records)
    from sqlalchemy import select

    from kernelindex.db.models import Workload

    workloads = (await session.scalars(select(Workload))).all()
    catalogue = await load_catalogue(session)
    full = await load_evidence(session, workloads, catalogue)
    fast = await load_page_evidence(session, workloads, catalogue)
    comparisons = await load_comparisons(session, fast.values())
    for w in workloads:
        page = full[w.id].page
        assert _summary(fast[w.id], comparisons[w.id]) == _summary(page, page.overall_record), w.slug
        # The headline reads the baseline from the page's own cohort rows (each implementation's best).
        assert _baseline(fast[w.id].overall_record) == _baseline(page.overall_record), w.slug
    resnet = next(w for w in workloads if w.slug == "kernelbench-l3-p9-resnet18")
    assert fast[resnet.id].eligible_count == 4 + 38
