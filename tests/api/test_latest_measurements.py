"""The page's latest measurements (pages._LATEST_MEASURED, read along ix_runs_cohort_measured; here by
its statement alone, tests/api/page_loaders.load_measured_runs, and within pages.load_page_runs) are what
their definition says, computed here over every live run: per implementation and SKU of the current
revision at its canonical configuration, the latest MEASURED_PER_IMPLEMENTATION_AND_SKU live, passed
KernelIndex measurements (held ones included: they take their place and are dropped after), then the
eligible ones."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import select, text

from kernelindex.db.models import Workload
from kernelindex.rules import ranking
from kernelindex.services.evidence import load_evidence
from kernelindex.services.facts import load_catalogue
from kernelindex.services.pages import MEASURED_PER_IMPLEMENTATION_AND_SKU, load_page_evidence, load_page_runs
from kernelindex.services.records import refresh_all_records
from tests.api.helpers import synthetic_records, write_records
from tests.api.page_loaders import load_held_runs, load_measured_runs

RESNET = "kernelbench-l3-p9-resnet18"


def _records() -> list[dict]:
    """36 measured runs on one SKU: four environments, two implementations, distinct observations, so
    each (implementation, SKU) has more than the few kept, spread over environments."""
    out = synthetic_records(36)
    for i, rec in enumerate(out):
        rec["environment"]["label"] = f"pool-{i % 4}"
        rec["implementation"] = {"slug": ("torch_eager", "custom_kernel")[i % 2]}
        rec["observed_at"] = f"2026-09-{i % 28 + 1:02d}T{i // 28:02d}:00:00Z"
        rec["source"]["revision"] = f"m{i}"  # part of the natural key: 36 runs, not 8
    out[3]["evidence"] = "reported"  # not a measurement: never among them
    return out


def _expected(evidence, page) -> list[int]:
    live = [r for r in evidence.runs if r.status == "passed" and not r.retracted and r.evidence == "measured"
            and r.workload_revision_id == page.facts.current_revision_id
            and r.configuration_key == page.facts.canonical_configuration_key]
    groups = defaultdict(list)
    for r in live:
        groups[(r.implementation.id, r.environment.hardware.id)].append(r)
    latest = [r for runs in groups.values()
              for r in sorted(runs, key=lambda r: (r.observed_at, r.id), reverse=True)[:MEASURED_PER_IMPLEMENTATION_AND_SKU]]
    return sorted(r.id for r in ranking.eligible_runs(latest, page.facts))


async def _compare(session) -> dict[str, list[int]]:
    workloads = (await session.scalars(select(Workload))).all()
    catalogue = await load_catalogue(session)
    full = await load_evidence(session, workloads, catalogue)
    pages = await load_page_evidence(session, workloads, catalogue)
    measured = await load_measured_runs(session, pages.values())
    # The page's one statement for its latest measurements and its held runs gives what each gives alone.
    both = await load_page_runs(session, pages.values())
    assert {w: r.measured for w, r in both.items()} == measured
    assert {w: r.held for w, r in both.items()} == await load_held_runs(session, list(pages.values()))
    out = {}
    for w in workloads:
        got = [r.id for r in measured[w.id]]
        assert got == sorted(got), "in run id order"
        assert got == _expected(full[w.id], pages[w.id]), w.slug
        out[w.slug] = got
    return out


async def test_latest_measurements_match_their_definition(db_url, session):
    summary = await write_records(db_url, _records())
    assert summary.problems == [] and summary.inserted == 36, summary
    first = await _compare(session)
    assert len(first[RESNET]) == 2 * MEASURED_PER_IMPLEMENTATION_AND_SKU  # two implementations on one SKU
    # Hold the latest run of each implementation and every run of one environment: held runs keep
    # their place among the latest and are dropped after, so fewer than the few remain, and an
    # environment with only held runs (no cohort best) still counts.
    await session.execute(text(
        "INSERT INTO run_flags (run_id, code, reason, rule_version) "
        "SELECT r.id, 'test', 'held', 't/1' FROM runs r JOIN environments e ON e.id = r.environment_id "
        "JOIN workloads w ON w.id = r.workload_id WHERE w.slug = :slug AND r.evidence = 'measured' AND "
        "(e.label = 'pool-1' OR r.id IN (SELECT DISTINCT ON (implementation_id) id FROM runs WHERE workload_id = w.id "
        "AND evidence = 'measured' AND superseded_at IS NULL ORDER BY implementation_id, observed_at DESC, id DESC))"
    ), {"slug": RESNET})
    await refresh_all_records(session)
    held = await _compare(session)
    assert len(held[RESNET]) < len(first[RESNET])
    assert not set(held[RESNET]) - set(first[RESNET])
