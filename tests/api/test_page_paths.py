"""The page read from precomputed cohort bests equals the page computed from every run."""

from __future__ import annotations

import random

from kernelindex.services.evidence import load_catalogue, load_evidence
from kernelindex.services.pages import load_page_evidence
from tests.api.helpers import synthetic_records, write_records


def _baseline(ev):
    from kernelindex.rules import ranking

    record = ev.overall_record
    baseline = ranking.baseline_of(record.cohort) if record else None
    return baseline.run.id if baseline else None


def _summary(ev) -> dict:
    return {
        "eligible": ev.eligible_count,
        "records": [(r.run.id, r.run_count, r.environment_label) for r in ev.records],
        "comparison": [(row.run.id, row.rank) for row in ev.overall_record.cohort] if ev.overall_record else [],
        "implementations": sorted((b.run.id, round(b.vs_best, 9)) for b in ev.implementation_bests),
        "last_observed": ev.last_observed,
        "sources": [(s.name, s.revision) for s in ev.sources],
        "hardware": sorted(ev.measured_hardware_ids),
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
    from tests.conftest import FIXED_NOW

    full = await load_evidence(session, workloads, catalogue, FIXED_NOW)
    fast = await load_page_evidence(session, workloads, catalogue, FIXED_NOW)
    from kernelindex.services.pages import load_comparison_runs

    headline_baselines = {w.id: _baseline(fast[w.id]) for w in workloads}  # before the full cohort is loaded
    await load_comparison_runs(session, fast)
    for w in workloads:
        assert _summary(fast[w.id]) == _summary(full[w.id]), w.slug
        assert headline_baselines[w.id] == _baseline(full[w.id]), w.slug
    resnet = next(w for w in workloads if w.slug == "kernelbench-l3-p9-resnet18")
    assert fast[resnet.id].eligible_count == 4 + 38
