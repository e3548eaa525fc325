"""A workload page reads what it shows, and still says what the full computation says.

The page's comparisons read each cohort's first rows with an ordered LIMIT (kernelindex.services.pages);
these tests hold every figure they show to a brute-force computation over every live run
(kernelindex.services.evidence and the rules, as the page computed them before it read less), on a
cohort of hundreds of eligible runs with ties, held and approved runs, a baseline far down the
ranking, KernelIndex measurements that replicate and cross-check rows, and more sources than a page
shows.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from sqlalchemy import select

from kernelindex.db.models import Run, Workload
from kernelindex.db.urls import to_libpq_url
from kernelindex.rules import ranking, ties
from kernelindex.rules import trust_ladder as ladder
from kernelindex.rules.comparison_text import comparison_title, row_notes
from kernelindex.rules.display import format_date, plural
from kernelindex.rules.numbers import significant
from kernelindex.rules.trust_context import comparison_context
from kernelindex.services.evidence import load_evidence
from kernelindex.services.facts import load_catalogue
from kernelindex.services.holds import load_holds
from kernelindex.services.pages import load_page_evidence, not_held_clause
from kernelindex.services.records import refresh_all_records
from tests.api.helpers import synthetic_records, write_records
from tests.api.page_loaders import load_measured_runs

SLUG = "kernelbench-l3-p9-resnet18"
IMPLEMENTATIONS = ["torch_compile_inductor", "custom_kernel", "triton_kernel", "torch_eager"]
BIG_COHORT = 320  # eligible runs in one cohort, most of them not shown

ROW_FIELDS = """rank rankDisplay position intervalMs latencyMs vsFirst vsFirstDisplay speedupVsBaseline speedupInterval
  verdict verdictWithInterval trustLevel crossCheck summary exactConfiguration run { databaseId }"""
COMPARISON_FIELDS = f"title resultCount resultCountDisplay lastObserved header rows(first: $k) {{ {ROW_FIELDS} }}"
QUERY = f"""query($slug: String!, $k: Int!) {{ workload(slug: $slug) {{
  eligibleRunCount lastObserved
  records {{ runCount label run {{ databaseId }} }}
  implementations {{ vsBest trustLevel evidenceKinds bestRun {{ databaseId }} }}
  sources {{ name revision }}
  headline {{ speedupVsBaseline run {{ databaseId }} }}
  comparison {{ {COMPARISON_FIELDS} }}
  comparisons {{ {COMPARISON_FIELDS} }} }} }}"""


def _records() -> list[dict]:
    """A big cohort on one environment, and measurements of the same implementations elsewhere on the SKU."""
    rng = random.Random(16)
    start = datetime(2026, 3, 1, tzinfo=UTC)
    out = []
    for i, rec in enumerate(synthetic_records(BIG_COHORT + 60)):
        impl = IMPLEMENTATIONS[i % len(IMPLEMENTATIONS)]
        big = i < BIG_COHORT
        rec["implementation"] = {"slug": impl}
        rec["environment"]["label"] = "pool-big" if big else f"pool-{i % 3}"
        # One snapshot per run: the page shows 100 of BIG_COHORT sources.
        rec["source"] = {"name": "Synthetic test source" if i % 7 else "Another source", "revision": f"r{i:04d}"}
        # The baseline is slow, so its rows sit far below the first page; means repeat, so the
        # ranking's tie breaks (observation, id) decide, and wide spreads make ties span pages.
        low = 1.0 if big else 1.2  # the big cohort holds the record
        mean = round(rng.uniform(1.8, 2.4) if impl == "torch_eager" else rng.uniform(low, 1.9), 2)
        std = rng.choice([0.0005, 0.01, 0.05, 0.3])
        trials = rng.choice([100, 100, 100, 1])
        if trials == 1:
            std = 0.0
        rec["statistics"] = {"mean": mean, "std": std, "min": round(mean - std, 6), "max": round(mean + std, 6),
                             "num_trials": trials}
        rec["observed_at"] = (start + timedelta(hours=rng.randrange(0, 24 * 20))).isoformat()
        measured = not big or rng.random() < 0.3
        rec["evidence"] = "measured" if measured else "reported"
        if measured:
            rec["correctness"] = {"passed": True}
        out.append(rec)
    return out


async def _hostile_holds(db_url: str) -> None:
    """Flags and reviews on the leading runs, and measurements whose correctness failed, then the
    records refreshed (as every write path does)."""
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        leaders = [r["id"] for r in await conn.fetch(
            "SELECT r.id FROM runs r JOIN environments e ON e.id = r.environment_id "
            "WHERE e.label = 'pool-big' ORDER BY r.mean_ms, r.observed_at, r.id LIMIT 40")]
        t0 = datetime(2026, 4, 1, tzinfo=UTC)
        for n, run_id in enumerate(leaders[:30:2]):
            await conn.execute("INSERT INTO run_flags (run_id, code, reason, rule_version) VALUES ($1, 'test', 'why', 't/1')", run_id)
            decisions = [[], ["approved"], ["rejected"], ["approved", "rejected"], ["rejected", "approved"]][n % 5]
            for k, decision in enumerate(decisions):
                # n % 3 == 0: the two reviews at one instant, so the later id decides.
                at = t0 if n % 3 == 0 else t0 + timedelta(minutes=k)
                await conn.execute("INSERT INTO run_reviews (run_id, decision, reviewer, created_at) VALUES ($1, $2, 'me', $3)",
                                   run_id, decision, at)
        await conn.execute(
            "UPDATE runs SET correctness = '{\"passed\": false}' WHERE id IN (SELECT id FROM runs "
            "WHERE evidence = 'measured' ORDER BY observed_at DESC, id DESC LIMIT 12)")
        # custom_kernel's six latest measurements failed: the latest five the page weighs cannot
        # cross-check its reported rows, an older measurement in the record's own cohort does.
        await conn.execute(
            "UPDATE runs SET correctness = '{\"passed\": false}' WHERE id IN (SELECT r.id FROM runs r "
            "JOIN implementations i ON i.id = r.implementation_id WHERE i.slug = 'custom_kernel' "
            "AND r.evidence = 'measured' ORDER BY r.observed_at DESC, r.id DESC LIMIT 6)")
    finally:
        await conn.close()
    from kernelindex.db.engine import in_own_transaction

    await in_own_transaction(db_url, refresh_all_records)


@pytest.fixture
async def big_page(db_url):
    await write_records(db_url, _records())
    await _hostile_holds(db_url)
    return db_url


def _row(row: ranking.RankedRun, tied: ties.TiedRow, baseline: ranking.RankedRun | None, context, canonical: str) -> dict:
    """A comparison row's figures, computed as page.ComparisonRow states them, from the whole cohort."""
    run = row.run
    versus = baseline is not None and not run.implementation.is_baseline
    verdict = ties.baseline_verdict(run, baseline.run) if versus and baseline else None
    check = ladder.cross_check(run, [r for r in context if r.evidence == "measured"]) if run.evidence == "reported" else None
    exact = run.configuration_key == canonical
    return {
        "rank": tied.rank, "rankDisplay": tied.rank_display, "position": row.rank,
        # Numbers as GraphQL writes every Float (numbers-v1: 12 significant figures).
        "intervalMs": [significant(tied.interval.low), significant(tied.interval.high)], "latencyMs": significant(run.latency_ms),
        "vsFirst": significant(row.vs_first), "vsFirstDisplay": f"{row.vs_first:.2f}×",
        "speedupVsBaseline": significant(ranking.speedup_vs_baseline(run, baseline.run)) if versus and baseline else None,
        "speedupInterval": ([significant(verdict.interval.low), significant(verdict.interval.high)]
                            if verdict and verdict.interval else None),
        "verdict": verdict.page_sentence if verdict else None,
        "verdictWithInterval": verdict.sentence if verdict else None,
        "trustLevel": ladder.trust_level(run, context).name, "crossCheck": check.sentence if check else None,
        "summary": " ".join(row_notes(run, verdict.page_sentence if verdict else None, exact)),
        "exactConfiguration": exact, "run": {"databaseId": run.id},
    }


def _comparison(record: ranking.CohortRecord, measured, canonical: str, k: int) -> dict:
    runs = [r.run for r in record.cohort]
    baseline = ranking.baseline_of(record.cohort)
    tied = {t.run.id: t for t in ties.tied_ranks(runs)}
    context = comparison_context(measured, runs)
    last = max(r.observed_at.date() for r in runs)
    title = comparison_title(runs)
    config = record.run
    bindings = ", ".join(f"{a} = {v}" for a, v in config.bindings.items())
    return {
        "title": title, "resultCount": len(runs), "resultCountDisplay": plural(len(runs), "result"),
        "lastObserved": last.isoformat(),
        "header": f"{title} · GPU {config.environment.hardware.family} · Workload {bindings} · {config.dtype} · "
                  f"Protocol {config.protocol.name} · {config.protocol.statistic} · {plural(len(runs), 'result')} · "
                  f"last observed {format_date(last)}",
        "rows": [_row(row, tied[row.run.id], baseline, context, canonical) for row in record.cohort[:k]],
    }


@pytest.mark.parametrize("k", [1, 7, 20, 100])
async def test_page_of_a_big_cohort_equals_the_full_computation(big_page, session, graphql, k):
    workload = (await session.scalars(select(Workload).where(Workload.slug == SLUG))).one()
    catalogue = await load_catalogue(session)
    full = (await load_evidence(session, [workload], catalogue))[workload.id]
    page = full.page
    fast = (await load_page_evidence(session, [workload], catalogue))[workload.id]
    latest = (await load_measured_runs(session, [fast]))[workload.id]
    canonical = page.facts.canonical_configuration_key
    big = page.overall_record
    assert big.run_count > 100 and ranking.baseline_of(big.cohort).rank > 20  # the case this test is for

    got = (await graphql(QUERY, {"slug": SLUG, "k": k}))["workload"]

    assert got["eligibleRunCount"] == page.eligible_count
    assert got["lastObserved"] == page.last_observed.isoformat()
    assert got["records"] == [{"runCount": r.run_count, "label": r.environment_label, "run": {"databaseId": r.run.id}}
                              for r in page.records]
    assert len(page.sources) > 100
    assert got["sources"] == [{"name": s.name, "revision": s.revision} for s in page.sources[:100]]
    assert got["headline"]["run"]["databaseId"] == page.overall_record.run.id
    assert sorted(i["bestRun"]["databaseId"] for i in got["implementations"]) == sorted(b.run.id for b in page.implementation_bests)
    # `comparison` weighs the latest measurements per implementation and SKU; `comparisons` every one.
    assert got["comparison"] == _comparison(page.overall_record, latest, canonical, k)
    assert got["comparisons"] == [_comparison(r, full.measured_runs, canonical, k) for r in page.records]
    # The data exercise what the figures depend on: shared ranks, held leaders, trust levels, verdicts.
    rows = got["comparisons"][0]["rows"]
    if k == 100:
        assert got["comparison"]["rows"] != rows  # the two weigh different measurements
        assert any(r["rankDisplay"].endswith("=") for r in rows)
        assert {r["trustLevel"] for r in rows} >= {"REPLICATED", "VERIFIED", "REPORTED"}
        assert any(r["crossCheck"] for r in rows) and any(r["verdictWithInterval"] for r in rows)


async def test_sql_holds_agree_with_the_rules(big_page, session):
    """pages.not_held_clause (the LIMIT's filter) says what plausibility.is_held_for_review says."""
    ids = (await session.scalars(select(Run.id))).all()
    not_held = set((await session.scalars(select(Run.id).where(not_held_clause()))).all())
    holds = await load_holds(session, ids)
    held = {i for i in ids if holds[i].held_for_review}
    assert held and any(h.flags and not h.held_for_review for h in holds.values())
    assert {i for i in ids if i not in not_held} == held


async def test_page_statements_do_not_grow_with_the_cohort(app, big_page, graphql, count_statements):
    """The comparisons and their trust levels read in a fixed number of statements."""
    with count_statements(app.state.engine) as statements:
        await graphql(QUERY, {"slug": SLUG, "k": 100})
    first = len(statements)
    await write_records(big_page, synthetic_records(200, start=1000))
    with count_statements(app.state.engine) as statements:
        await graphql(QUERY, {"slug": SLUG, "k": 100})
    assert len(statements) == first <= 14
