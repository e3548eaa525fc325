"""Nothing stored can make a page fail to render.

Two routes in: (1) the whole bad-input corpus ingested without --strict, so every good line around
each bad one lands; (2) hostile values written straight into the database, past every check (as an
older version, a manual fix or a restore might leave them). Then every workload's GraphQL page
query, its JSON twin, runs.csv and catalog.jsonl must answer 200 without errors."""

from __future__ import annotations

import pytest

from kernelindex.db.engine import in_own_transaction
from kernelindex.services.records import refresh_all_records
from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
from tests.ingest.conftest import FIXTURES, execute

RUNS_QUERY = """query($slug: String!) {
  all: runs(workload: $slug, first: 100, includeSuperseded: true) {
    totalCount edges { node { id stale observedAt observedDate observedDisplay latencyDisplay plusMinusDisplay
                              ciHalfWidthMs trustLabel caveats flags { code } } } }
  fresh: runs(workload: $slug, first: 100, stale: false) { totalCount }
  stale: runs(workload: $slug, first: 100, stale: true) { totalCount } }"""


async def _slugs(client) -> list[str]:
    body = (await client.post("/graphql", json={"query": "{ workloads(first: 100) { edges { node { slug } } } }"})).json()
    assert "errors" not in body, body
    return [e["node"]["slug"] for e in body["data"]["workloads"]["edges"]]


async def _every_page_renders(client) -> int:
    slugs = await _slugs(client)
    assert slugs
    for slug in slugs:
        for query in (WORKLOAD_PAGE_QUERY, RUNS_QUERY):
            response = await client.post("/graphql", json={"query": query, "variables": {"slug": slug}})
            assert response.status_code == 200, (slug, response.text[:500])
            body = response.json()
            assert "errors" not in body, (slug, body["errors"])
            assert body["data"]
        twin = await client.get(f"/workloads/{slug}.json")
        assert twin.status_code == 200, (slug, twin.text[:500])
        assert twin.json()["slug"] == slug
    for export in ("/exports/runs.csv", "/exports/catalog.jsonl"):
        response = await client.get(export)
        assert response.status_code == 200, (export, response.text[:500])
        assert len(response.content) > 0, export
    return len(slugs)


@pytest.fixture
def whole_corpus_ingested(db_url, cli, capsys) -> str:
    for path in sorted((FIXTURES / "bad").glob("*.jsonl")):
        status = cli("ingest", "runs", str(path))
        err = capsys.readouterr().err
        assert status in (1, 2), (path.name, err)
        assert "Traceback" not in err, (path.name, err)
        if status == 2:  # refused as a whole: only for inputs that are not files of records at all
            assert "error:" in err, (path.name, err)
    return db_url


async def test_pages_render_after_the_whole_bad_corpus(whole_corpus_ingested, client):
    assert await _every_page_renders(client) >= 2


# The database's own CHECK constraints are a second line of defence; a restore from an older
# version, or a manual fix, may have left rows they would refuse today.
_DROP_RUN_CHECKS = """DO $$ DECLARE c record; BEGIN
  FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'runs'::regclass AND contype = 'c' LOOP
    EXECUTE format('ALTER TABLE runs DROP CONSTRAINT %I', c.conname);
  END LOOP; END $$"""


# A live run of the seed to corrupt: ResNet18, PyTorch eager on H100 PCIe (the headline run).
_TARGET = "(SELECT id FROM runs WHERE superseded_at IS NULL AND retracted_at IS NULL ORDER BY id LIMIT {n} OFFSET {o})"


@pytest.mark.parametrize(
    "hostile",
    [
        "observed_at = '0001-01-01 00:00:00+00'",
        "observed_at = '9999-12-31 23:59:59+00'",
        "mean_ms = 1e300, min_ms = 1e-300, max_ms = 1e308, std_ms = 1e300, median_ms = 1e300, p5_ms = 1e-300, p95_ms = 1e308",
        "mean_ms = 1e-300, min_ms = 1e-300, max_ms = 1e-300, std_ms = 0, num_trials = 1",
        "mean_ms = 2.0, min_ms = 9.0, max_ms = 0.5, median_ms = 7.0, p5_ms = 8.0, p95_ms = 0.1, std_ms = 1e300",
        "num_trials = 2147483647, samples_ms = '{1e308,1e-308}'",
        "compile_time_ms = 1e308",
        # the headline figure (migration 0016) past every check, and out of step with the mean
        "figure = 1e300, figure_low = 1e-300, figure_high = 1e308, low_quantile = 0.9, high_quantile = 0.1, source_speedup = 1e308",
        "figure = 1e-300, upstream_id = repeat('x', 10000)",
    ],
)
async def test_hostile_stored_values_do_not_break_pages(db_url, hostile, client):
    # Past every check: straight into the table, for every live run (one statement per value set).
    await execute(db_url, _DROP_RUN_CHECKS, f"UPDATE runs SET {hostile} WHERE superseded_at IS NULL")
    # The precomputed records too, rebuilt from the hostile rows as a refresh would.
    await in_own_transaction(db_url, refresh_all_records)
    assert await _every_page_renders(client) >= 2


async def test_a_stored_time_of_year_1_and_9999_together(db_url, client):
    await execute(
        db_url,
        f"UPDATE runs SET observed_at = '0001-01-01 00:00:00+00' WHERE id IN {_TARGET.format(n=2, o=0)}",
        f"UPDATE runs SET observed_at = '9999-12-31 23:59:59+00' WHERE id IN {_TARGET.format(n=2, o=2)}",
    )
    assert await _every_page_renders(client) >= 2


@pytest.mark.parametrize("observed_at", ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59Z",
                                         "9999-12-31T23:59:59-14:00", "2026-06-01T12:00:00", "2099-01-01T00:00:00Z"])
async def test_runs_written_past_validation_do_not_break_pages(db_url, observed_at, client):
    """The writer itself, without the record checks in front of it (as a caller that skips them
    would): whatever observed_at it is handed, pages, twins and exports still answer."""
    from tests.api.helpers import synthetic_records, write_records

    records = synthetic_records(3, start=900)
    for record in records:
        record["observed_at"] = observed_at
    try:
        await write_records(db_url, records)
    except Exception as exc:  # refusing is fine (and better): it must be a refusal, not a half-written state
        assert "cannot be represented in UTC" in str(exc), exc
    assert await _every_page_renders(client) >= 2
