"""Ingest is idempotent for real: an export re-ingested, or the same runs spelled otherwise (keys in
another order, optional fields null instead of absent), changes nothing; and the record history of
one import does not depend on how it is cut into batches (history-v1)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections import OrderedDict

from kernelindex.ingest.runs import ingest_runs_file
from kernelindex.ingest.seed import SEEDS_DIR
from tests.api.helpers import synthetic_records
from tests.ingest.conftest import fetch, snapshot


def _event_count(db_url: str) -> int:
    return fetch(db_url, "SELECT count(*) AS n FROM record_events")[0]["n"]


def _reversed(value):
    """The same JSON with every object's keys in reverse order."""
    if isinstance(value, dict):
        return OrderedDict((k, _reversed(v)) for k, v in reversed(list(value.items())))
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


async def test_export_reingested_is_a_no_op(client, db_url, tmp_path):
    """GET /exports/catalog.jsonl → `ingest runs` of it: 0 inserted, 0 superseded, 0 record events."""
    exported = (await client.get("/exports/catalog.jsonl")).text
    # Only the statistics stored are written (the seed has no median, p5 or p95).
    assert '"median": null' not in exported
    path = tmp_path / "catalog.jsonl"
    path.write_text(exported)
    before, events = await asyncio.to_thread(snapshot, db_url), await asyncio.to_thread(_event_count, db_url)
    for batch_size in (5000, 1):
        summary = await ingest_runs_file(db_url, path, str(path), progress=False, batch_size=batch_size)
        assert summary.problems == []
        assert (summary.inserted, summary.superseded, summary.unchanged) == (0, 0, 8)
    assert await asyncio.to_thread(_event_count, db_url) == events
    assert await asyncio.to_thread(snapshot, db_url) == before


def test_other_key_order_and_explicit_nulls_are_the_same_runs(db_url, tmp_path):
    lines = [json.loads(line) for line in (SEEDS_DIR / "runs.jsonl").read_text().splitlines()]
    spelled = []
    for record in lines:
        record = copy.deepcopy(record)
        record["statistics"].update(median=None, p5=None, p95=None)
        record.update(failure_reason=None, samples_ms=None, compile_time_ms=None, correctness=None)
        record["observed_at"] = record["observed_at"].replace("T00:00:00Z", "T02:00:00+02:00")
        spelled.append(_reversed(record))
    path = tmp_path / "respelled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in spelled))
    before, events = snapshot(db_url), _event_count(db_url)
    summary = asyncio.run(ingest_runs_file(db_url, path, str(path), progress=False))
    assert summary.problems == []
    assert (summary.inserted, summary.superseded, summary.unchanged) == (0, 0, 8)
    assert _event_count(db_url) == events
    assert snapshot(db_url) == before


def _cohort_records(label: str) -> list[dict]:
    """Four candidates in one cohort (one environment), in a file order unlike their observed order."""
    base = synthetic_records(1, start=90)[0]
    out = []
    # (implementation, mean, observed day): observed order 1.5, 1.3, 1.4, 1.1 → three records set.
    for impl, mean, day in (("batchtest_c", 1.4, 4), ("batchtest_a", 1.5, 1), ("batchtest_d", 1.1, 5), ("batchtest_b", 1.3, 2)):
        record = copy.deepcopy(base)
        record["environment"]["label"] = label
        record["implementation"] = {"slug": impl, "title": impl, "role": "candidate"}
        record["statistics"] = {"mean": mean, "std": 0.01, "min": mean - 0.01, "max": mean + 0.01, "num_trials": 100}
        record["observed_at"] = f"2026-10-0{day}T00:00:00Z"
        out.append(record)
    return out


def _events_of(db_url: str, label: str) -> list[tuple]:
    rows = fetch(
        db_url,
        "SELECT e.kind, r.mean_ms, p.mean_ms AS previous, round(e.improvement_percent::numeric, 6) AS pct "
        "FROM record_events e JOIN environments env ON env.id = e.environment_id "
        "LEFT JOIN runs r ON r.id = e.run_id LEFT JOIN runs p ON p.id = e.previous_run_id "
        "WHERE env.label = $1 ORDER BY e.id",
        label,
    )
    return [(r["kind"], r["mean_ms"], r["previous"], r["pct"]) for r in rows]


def test_batch_boundaries_never_make_record_events(db_url, tmp_path):
    """The same runs with --batch-size 1 and with one batch: the same events, in observed order."""
    for label, batch_size in (("batch-of-one", 1), ("one-batch", 5000)):
        path = tmp_path / f"{label}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in _cohort_records(label)))
        summary = asyncio.run(ingest_runs_file(db_url, path, str(path), progress=False, batch_size=batch_size))
        assert summary.problems == [] and summary.inserted == 4
    one, many = _events_of(db_url, "batch-of-one"), _events_of(db_url, "one-batch")
    assert one == many
    assert [(kind, mean, previous) for kind, mean, previous, _ in one] == [
        ("new_record", 1.5, None), ("new_record", 1.3, 1.5), ("new_record", 1.1, 1.3),
    ]
    # And again: nothing new, no events.
    path = tmp_path / "one-batch.jsonl"
    again = asyncio.run(ingest_runs_file(db_url, path, str(path), progress=False, batch_size=1))
    assert (again.inserted, again.superseded, again.unchanged) == (0, 0, 4)
    assert _events_of(db_url, "one-batch") == many


async def test_export_carries_the_upstream_snapshots(client, db_url, empty_db_url, tmp_path):
    """Into an empty database, the export rebuilds the same snapshots, digests and current revisions."""
    from kernelindex.db.migrate import upgrade

    path = tmp_path / "catalog.jsonl"
    path.write_text((await client.get("/exports/catalog.jsonl")).text)
    await asyncio.to_thread(upgrade, empty_db_url)
    summary = await ingest_runs_file(empty_db_url, path, str(path), progress=False)
    assert summary.problems == [] and summary.inserted == 8

    query = (
        "SELECT w.slug, r.source_sha256, r.stand_in, r.source_size, w.current_revision_id = r.id AS current, "
        "s.upstream_revision, s.revision_date, s.complete FROM workload_revisions r JOIN workloads w ON w.id = r.workload_id "
        "JOIN suite_snapshot_members m ON m.workload_revision_id = r.id JOIN suite_snapshots s ON s.id = m.snapshot_id "
        "ORDER BY w.slug"
    )
    original, copy_ = await asyncio.to_thread(fetch, db_url, query), await asyncio.to_thread(fetch, empty_db_url, query)
    assert copy_ == original and len(original) == 2
    assert all(r["stand_in"] and r["current"] for r in original)
    again = await ingest_runs_file(empty_db_url, path, str(path), progress=False)
    assert (again.inserted, again.superseded, again.unchanged) == (0, 0, 8)
