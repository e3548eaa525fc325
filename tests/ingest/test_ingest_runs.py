"""`kernelindex ingest runs FILE`: idempotence, supersession, dry runs, stdin, batches, exit statuses,
the closing table, and how records name their workload."""

from __future__ import annotations

import asyncio
import copy
import io
import json
import sys

import asyncpg
import pytest

from kernelindex.db.urls import to_libpq_url
from tests.api.helpers import seed_record, synthetic_records
from tests.ingest.conftest import counts, snapshot

RESNET = "kernelbench-l3-p9-resnet18"


def _page(db_url, slug):
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from tests.conftest import FIXED_NOW

    async def fetch():
        app = create_app(Settings(), database_url=db_url, clock=lambda: FIXED_NOW)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
                response = await client.get(f"/workloads/{slug}.json")
                assert response.status_code == 200, response.text
                return response.json()

    return asyncio.run(fetch())


def _sql(db_url, query, *args):
    async def go():
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            return await conn.fetch(query, *args)
        finally:
            await conn.close()

    return asyncio.run(go())


def write_jsonl(path, records) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return str(path)


def as_real(rows: dict[str, int]) -> dict[str, int]:
    """A dry run's table under the real run's names ("runs that would be inserted" → "runs inserted")."""
    from kernelindex.ingest.summary import DRY_RUN_LABELS

    real_name = {dry: real for real, dry in DRY_RUN_LABELS.items()}
    assert not set(rows) & set(DRY_RUN_LABELS), rows  # a dry run never says "inserted"
    return {real_name.get(name, name): value for name, value in rows.items()}


def table(out: str) -> dict[str, int]:
    rows = {}
    for line in out.splitlines():
        name, _, value = line.rpartition(" ")
        if name.strip() and value.replace(",", "").isdigit():
            rows[name.strip()] = int(value.replace(",", ""))
    return rows


def test_ingesting_a_file_twice_changes_nothing_the_second_time(cli, db_url, tmp_path, capsys):
    path = write_jsonl(tmp_path / "runs.jsonl", synthetic_records(5))
    before = counts(db_url)
    assert cli("ingest", "runs", path) == 0
    first = capsys.readouterr()
    assert table(first.out)["runs inserted"] == 5
    assert counts(db_url)["runs"] == before["runs"] + 5
    stored = snapshot(db_url)

    assert cli("ingest", "runs", path) == 0
    second = capsys.readouterr()
    assert "nothing new" in second.err
    assert table(second.out) == {
        "workloads": 1, "implementations": 1, "environments": 5,
        "runs inserted": 0, "runs unchanged": 5, "runs superseded": 0, "runs rejected": 0,
    }
    assert snapshot(db_url) == stored


def test_the_seed_file_is_all_unchanged(cli, db_url, capsys):
    from kernelindex.ingest.seed import SEEDS_DIR

    before = snapshot(db_url)
    assert cli("ingest", "runs", str(SEEDS_DIR / "runs.jsonl")) == 0
    out = capsys.readouterr()
    assert table(out.out)["runs unchanged"] == 8
    assert "nothing new" in out.err
    assert snapshot(db_url) == before


def test_a_changed_statistic_supersedes_the_old_run(cli, db_url, tmp_path, capsys):
    record = seed_record(0)  # ResNet18, PyTorch eager on H100 PCIe: the page's headline (the unbeaten baseline)
    assert _page(db_url, RESNET)["headline"]["latencyMs"] == record["statistics"]["mean"] == 1.39
    old = _sql(db_url, "SELECT id FROM runs WHERE mean_ms = 1.39 AND superseded_at IS NULL")
    assert len(old) == 1

    corrected = copy.deepcopy(record)
    corrected["statistics"]["mean"] = 1.35
    path = write_jsonl(tmp_path / "corrected.jsonl", [corrected])
    assert cli("ingest", "runs", path) == 0
    rows = table(capsys.readouterr().out)
    assert (rows["runs inserted"], rows["runs superseded"], rows["runs unchanged"]) == (1, 1, 0)

    (old_row,) = _sql(db_url, "SELECT superseded_by_id, superseded_at FROM runs WHERE id = $1", old[0]["id"])
    (new_row,) = _sql(db_url, "SELECT mean_ms, superseded_at FROM runs WHERE id = $1", old_row["superseded_by_id"])
    assert old_row["superseded_at"] is not None  # kept, as history
    assert new_row["mean_ms"] == 1.35 and new_row["superseded_at"] is None
    page = _page(db_url, RESNET)
    assert page["headline"]["latencyMs"] == 1.35
    assert 1.39 not in [r["latencyMs"] for r in page["records"]]

    # The same corrected record again: unchanged now.
    assert cli("ingest", "runs", path) == 0
    assert table(capsys.readouterr().out)["runs unchanged"] == 1


def test_dry_run_says_what_would_happen_and_writes_nothing(cli, db_url, tmp_path, capsys):
    changed = seed_record(3)
    changed["statistics"].update(mean=1.41, min=1.39)
    bad = synthetic_records(1, start=90)[0]
    bad["statistics"]["mean"] = -1
    records = [synthetic_records(1, start=80)[0], changed, seed_record(0), bad]
    path = write_jsonl(tmp_path / "mixed.jsonl", records)
    before = snapshot(db_url)
    assert cli("ingest", "runs", "--dry-run", path) == 1
    out = capsys.readouterr()
    assert "dry run: nothing was written" in out.err
    assert "would insert 2 runs, supersede 1, skip 1 unchanged and reject 1" in out.err
    assert f"{path}: line 4 [statistics.mean]" in out.err
    rows = table(out.out)
    assert (
        rows["runs that would be inserted"], rows["runs that would be superseded"], rows["runs unchanged"],
        rows["runs that would be rejected"],
    ) == (2, 1, 1, 1)
    assert snapshot(db_url) == before


X9_LINE = {
    "format": "kernelindex.hardware/1", "sku": "NVIDIA X9 Ultra 96GB", "short_name": "X9 Ultra", "family": "NVIDIA X9",
    "vendor": "NVIDIA", "architecture": "Test", "driver_product_names": ["NVIDIA X9 Ultra"], "memory_gb": 96,
}


def test_dry_run_with_new_hardware_and_implementation_writes_nothing(cli, db_url, tmp_path, capsys):
    """The hardware comes in as a catalogue line: the dry run resolves the run against it without
    writing it, and says what the real run then does."""
    record = synthetic_records(1)[0]
    record["environment"]["hardware"] = {"product_name": "NVIDIA X9 Ultra"}
    record["implementation"] = {"slug": "my_triton_kernel", "title": "My Triton kernel", "framework": "Triton"}
    path = write_jsonl(tmp_path / "new.jsonl", [X9_LINE, record])
    before = snapshot(db_url)
    assert cli("ingest", "runs", "--dry-run", path) == 0
    dry = as_real(table(capsys.readouterr().out))
    assert dry["runs inserted"] == 1 and dry["implementations"] == 1
    assert snapshot(db_url) == before
    assert cli("ingest", "runs", path) == 0
    assert table(capsys.readouterr().out) == dry
    assert _sql(db_url, "SELECT has_datasheet FROM hardware WHERE sku = 'NVIDIA X9 Ultra 96GB'")


def test_stdin(cli, db_url, monkeypatch, capsys):
    data = "".join(json.dumps(r) + "\n" for r in synthetic_records(3))

    class Stdin:
        buffer = io.BytesIO(data.encode())

    monkeypatch.setattr(sys, "stdin", Stdin())
    before = counts(db_url)["runs"]
    assert cli("ingest", "runs", "-") == 0
    assert table(capsys.readouterr().out)["runs inserted"] == 3
    assert counts(db_url)["runs"] == before + 3


def test_stdin_problems_are_named_after_stdin(cli, db_url, monkeypatch, capsys):
    class Stdin:
        buffer = io.BytesIO(b'{"format": "kernelindex.run/1"}\n')

    monkeypatch.setattr(sys, "stdin", Stdin())
    assert cli("ingest", "runs", "-") == 1
    assert "<stdin>: line 1 [workload]: 'workload' is a required property" in capsys.readouterr().err


def test_batches_of_two_with_a_bad_line_in_the_third(cli, db_url, tmp_path, capsys):
    records = synthetic_records(7)
    records[4]["statistics"]["mean"] = "fast"  # line 5: the third batch
    before = counts(db_url)["runs"]
    path = write_jsonl(tmp_path / "runs.jsonl", records)
    assert cli("ingest", "runs", "--batch-size", "2", path) == 1
    out = capsys.readouterr()
    assert f"{path}: line 5 [statistics.mean]: 'fast' is not of type 'number'" in out.err
    assert table(out.out)["runs inserted"] == 6 and table(out.out)["runs rejected"] == 1
    labels = {r["label"] for r in _sql(db_url, "SELECT label FROM environments")}
    assert {f"pool-{i}" for i in (0, 1, 2, 3, 5, 6)} <= labels and "pool-4" not in labels
    assert counts(db_url)["runs"] == before + 6


@pytest.fixture
def refuse_mean_666(db_url):
    """A database that refuses one value the run-record checks let through (as a trigger or a newer
    constraint might): the writer has to find the one record the database refuses."""
    _sql(db_url, "ALTER TABLE runs ADD CONSTRAINT test_no_666 CHECK (mean_ms IS NULL OR mean_ms <> 6.66)")


def test_a_line_the_database_refuses_costs_only_itself(cli, db_url, refuse_mean_666, tmp_path, capsys):
    records = synthetic_records(7)
    records[4]["statistics"].update(mean=6.66, min=6.6, max=6.7)
    before = counts(db_url)["runs"]
    path = write_jsonl(tmp_path / "runs.jsonl", records)
    assert cli("ingest", "runs", "--batch-size", "2", path) == 1
    out = capsys.readouterr()
    assert f"{path}: line 5: the database refused it:" in out.err and "test_no_666" in out.err
    rows = table(out.out)
    assert (rows["runs inserted"], rows["runs rejected"]) == (6, 1)
    assert counts(db_url)["runs"] == before + 6


def test_strict_is_all_or_nothing_even_when_the_database_refuses_a_late_batch(cli, db_url, refuse_mean_666, tmp_path, capsys):
    records = synthetic_records(7)
    records[4]["statistics"].update(mean=6.66, min=6.6, max=6.7)
    before = snapshot(db_url)
    path = write_jsonl(tmp_path / "runs.jsonl", records)
    assert cli("ingest", "runs", "--strict", "--batch-size", "2", path) == 3
    err = capsys.readouterr().err
    assert f"{path}: line 5: the database refused it:" in err and "test_no_666" in err and "nothing written" in err
    assert snapshot(db_url) == before


def test_strict_refuses_the_whole_file(cli, db_url, tmp_path, capsys):
    records = synthetic_records(4)
    records[2]["statistics"]["num_trials"] = 0
    before = snapshot(db_url)
    path = write_jsonl(tmp_path / "runs.jsonl", records)
    assert cli("ingest", "runs", "--strict", "--batch-size", "1", path) == 3
    err = capsys.readouterr().err
    assert f"{path}: line 3 [statistics.num_trials]" in err and "nothing written" in err
    assert snapshot(db_url) == before


def test_exit_statuses(cli, db_url, tmp_path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", synthetic_records(2))
    assert cli("ingest", "runs", good) == 0
    some_bad = write_jsonl(tmp_path / "some_bad.jsonl", synthetic_records(2, start=10) + ["{"])
    assert cli("ingest", "runs", some_bad) == 1
    capsys.readouterr()
    assert cli("ingest", "runs", str(tmp_path / "missing.jsonl")) == 2
    assert f"error: {tmp_path / 'missing.jsonl'}: no such file" in capsys.readouterr().err
    assert cli("ingest", "runs", str(tmp_path)) == 2
    assert "is a directory" in capsys.readouterr().err
    assert cli("ingest", "runs", "--batch-size", "0", good) == 2


def test_no_database_is_fatal(cli, monkeypatch, tmp_path, capsys):
    from kernelindex.settings import get_settings

    monkeypatch.setenv("KERNELINDEX_DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none")
    get_settings.cache_clear()
    assert cli("ingest", "runs", write_jsonl(tmp_path / "good.jsonl", synthetic_records(1))) == 2
    err = capsys.readouterr().err
    assert "cannot reach PostgreSQL" in err and "Traceback" not in err


def test_the_closing_table(cli, db_url, tmp_path, capsys):
    changed = seed_record(3)
    changed["statistics"].update(mean=1.41, min=1.39)
    vgg = synthetic_records(2, slug="kernelbench-l3-p12-vgg19", batch=10, start=20)
    vgg[1]["implementation"] = {"slug": "torch_eager"}
    records = synthetic_records(2) + vgg + [changed, seed_record(0), "not json"]
    assert cli("ingest", "runs", write_jsonl(tmp_path / "runs.jsonl", records)) == 1
    out = capsys.readouterr().out
    assert [line.rsplit(None, 1)[0].strip() for line in out.splitlines()] == [
        "workloads", "implementations", "environments",
        "runs inserted", "runs unchanged", "runs superseded", "runs rejected",
    ]
    assert table(out) == {
        "workloads": 2, "implementations": 2, "environments": 6,
        "runs inserted": 5, "runs unchanged": 1, "runs superseded": 1, "runs rejected": 1,
    }


def test_a_record_for_an_unknown_workload(cli, db_url, tmp_path, capsys):
    path = write_jsonl(tmp_path / "runs.jsonl", synthetic_records(2, slug="kernelbench-l3-p99-nothing"))
    before = counts(db_url)
    assert cli("ingest", "runs", path) == 1
    err = capsys.readouterr().err
    assert f"{path}: line 1 [workload.slug]: unknown workload 'kernelbench-l3-p99-nothing'" in err
    assert f"{path}: line 2 [workload.slug]" in err
    assert counts(db_url) == before


def test_a_record_naming_its_workload_by_suite_level_and_problem(cli, db_url, tmp_path, capsys):
    record = synthetic_records(1, start=40)[0]
    record["workload"] = {"suite": "kernelbench", "level": 3, "problem": 9}
    assert cli("ingest", "runs", write_jsonl(tmp_path / "runs.jsonl", [record])) == 0
    (row,) = _sql(
        db_url,
        "SELECT w.slug, r.workload_revision_id = w.current_revision_id AS current FROM runs r "
        "JOIN workloads w ON w.id = r.workload_id JOIN environments e ON e.id = r.environment_id WHERE e.label = 'pool-40'",
    )
    assert row["slug"] == RESNET and row["current"]
    # The same run named by slug is the same run.
    record["workload"] = {"slug": RESNET}
    assert cli("ingest", "runs", write_jsonl(tmp_path / "again.jsonl", [record])) == 0
    assert table(capsys.readouterr().out)["runs unchanged"] == 1


def test_a_record_measured_on_an_older_revision(cli, db_url, tmp_path, capsys):
    from datetime import date

    from kernelindex.db.engine import make_engine, make_sessionmaker, transaction
    from kernelindex.ingest.seed import SEEDS_DIR
    from kernelindex.ingest.workloads import WorkloadSpec, record_snapshot

    source = (SEEDS_DIR / "reference" / "resnet18.py").read_text()

    async def new_revision():
        # A later upstream snapshot revises the file: its revision becomes current (revisions-v1).
        engine = make_engine(db_url, pool_size=1, max_overflow=0)
        try:
            async with transaction(make_sessionmaker(engine)) as session:
                result = await record_snapshot(
                    session, "kernelbench", "later01", date(2026, 6, 1),
                    [WorkloadSpec(suite="kernelbench", level=3, problem_number=9, name="ResNet18", slug=RESNET,
                                  reference_source=source + "\n# revised\n", canonical_bindings={"batch_size": 2})],
                    complete=False,
                )
                return result.outcomes[0]
        finally:
            await engine.dispose()

    outcome = asyncio.run(new_revision())
    assert outcome.status == "new revision"
    (old,) = _sql(db_url, "SELECT r.id, r.source_sha256 FROM workload_revisions r JOIN workloads w ON w.id = r.workload_id "
                          "WHERE w.slug = $1 AND r.id <> $2", RESNET, outcome.revision_id)

    record = synthetic_records(1, start=50)[0]
    record["workload"] = {"slug": RESNET, "source_sha256": old["source_sha256"]}
    current = synthetic_records(1, start=51)[0]
    assert cli("ingest", "runs", write_jsonl(tmp_path / "runs.jsonl", [record, current])) == 0
    rows = {
        r["label"]: r["workload_revision_id"]
        for r in _sql(db_url, "SELECT e.label, r.workload_revision_id FROM runs r JOIN environments e ON e.id = r.environment_id")
    }
    assert rows["pool-50"] == old["id"]
    assert rows["pool-51"] == outcome.revision_id != old["id"]

    unknown = synthetic_records(1, start=52)[0]
    unknown["workload"]["source_sha256"] = "0" * 64
    assert cli("ingest", "runs", write_jsonl(tmp_path / "unknown.jsonl", [unknown])) == 1
    assert "[workload.source_sha256]: workload 'kernelbench-l3-p9-resnet18' has no revision with source sha256 000000000000" in (
        capsys.readouterr().err
    )


def test_unknown_hardware_is_refused_and_comes_in_through_a_catalogue_line(cli, db_url, tmp_path, capsys):
    records = synthetic_records(4, start=60)
    records[0]["environment"]["hardware"] = {"sku": "NVIDIA X9 Ultra 96GB"}
    records[1]["environment"]["hardware"] = {"product_name": "NVIDIA X9 Ultra"}
    records[2]["environment"]["hardware"] = {"product_name": "nvidia x9 ultra"}
    records[3]["environment"]["hardware"] = {"product_name": "NVIDIA\u200b X9 Ultra "}  # zero-width space, trailing space
    hardware_before = counts(db_url)["hardware"]
    path = write_jsonl(tmp_path / "runs.jsonl", records)
    assert cli("ingest", "runs", path) == 1
    out = capsys.readouterr()
    assert f"{path}: line 1 [environment.hardware.sku]: unknown hardware SKU 'NVIDIA X9 Ultra 96GB'" in out.err
    for line in (2, 3, 4):
        assert f"{path}: line {line} [environment.hardware.product_name]: unknown hardware product name" in out.err
    assert out.err.count("add a kernelindex.hardware/1 line") == 4
    assert table(out.out)["runs inserted"] == 0 and table(out.out)["runs rejected"] == 4
    assert counts(db_url)["hardware"] == hardware_before  # nothing added behind the catalogue's back

    # With the catalogue line first, every spelling names the one new row.
    assert cli("ingest", "runs", write_jsonl(tmp_path / "with_catalogue.jsonl", [X9_LINE, *records])) == 0
    assert table(capsys.readouterr().out)["runs inserted"] == 4
    (hardware,) = _sql(db_url, "SELECT id FROM hardware WHERE sku = 'NVIDIA X9 Ultra 96GB'")
    assert len(_sql(db_url, "SELECT 1 FROM environments WHERE hardware_id = $1", hardware["id"])) == 4
    assert counts(db_url)["hardware"] == hardware_before + 1


@pytest.mark.parametrize(
    "spelling",
    ["NVIDIA H100 80GB HBM3 ", " NVIDIA  H100 80GB HBM3", "NVIDIA H100\u200b 80GB HBM3", "\u200fNVIDIA H100 80GB HBM3",
     "\uff2e\uff36\uff29\uff24\uff29\uff21 \uff28\uff11\uff10\uff10 80GB HBM3", "nvidia h100 80gb hbm3\ufeff"],
)
def test_hardware_spellings_resolve_to_the_catalogue_row(cli, db_url, tmp_path, capsys, spelling):
    """names-v1: NFKC (full-width), format characters (zero-width space, RLM, BOM) removed, spaces
    collapsed, case-blind: the catalogue's own row, never a new one."""
    record = synthetic_records(1, start=95)[0]
    record["environment"]["hardware"] = {"product_name": spelling}
    before = counts(db_url)["hardware"]
    assert cli("ingest", "runs", write_jsonl(tmp_path / "runs.jsonl", [record])) == 0, capsys.readouterr().err
    assert counts(db_url)["hardware"] == before
    (row,) = _sql(
        db_url, "SELECT h.sku FROM environments e JOIN hardware h ON h.id = e.hardware_id WHERE e.label = 'pool-95'"
    )
    assert row["sku"] == "NVIDIA H100 SXM5 80GB"


@pytest.mark.parametrize("name", ["NVIDIA \u041d100 80GB HBM3", "NVIDIA H100 80GB \u041d\u0412\u041c3", "\u041d\u0412\u041c"])
def test_look_alike_hardware_is_refused(cli, db_url, tmp_path, capsys, name):
    record = synthetic_records(1, start=96)[0]
    record["environment"]["hardware"] = {"product_name": name}
    before = counts(db_url)
    path = write_jsonl(tmp_path / "runs.jsonl", [record])
    assert cli("ingest", "runs", "--strict", path) == 3
    err = capsys.readouterr().err
    assert f"{path}: line 1 [environment.hardware.product_name]:" in err
    assert "Cyrillic" in err or "look-alike" in err or "unknown hardware product name" in err
    assert counts(db_url) == before


def test_a_line_too_long_is_refused_without_reading_it_whole(cli, db_url, tmp_path, capsys, monkeypatch):
    from kernelindex.ingest import records as records_module

    monkeypatch.setattr(records_module, "MAX_LINE_BYTES", 4096)
    good = synthetic_records(2, start=70)
    long_line = json.dumps({**good[0], "failure_reason": "x" * 10_000})
    path = write_jsonl(tmp_path / "runs.jsonl", [good[0], long_line, good[1]])
    assert cli("ingest", "runs", path) == 1
    out = capsys.readouterr()
    assert f"{path}: line 2: the line is 1" in out.err and "over the limit of 4,096" in out.err
    assert table(out.out)["runs inserted"] == 2


def test_a_run_too_fast_to_be_true_lands_flagged_and_holds_no_record(cli, db_url, tmp_path, capsys):
    """The writer refreshes the precomputed records of the cohorts it touched: a run under its floor
    is stored, flagged for review, and kept off the page's headline (a candidate without a correctness
    check: plausibility-v2 never holds the source's baseline, nor a correct run, for beating a floor)."""
    record = seed_record(2)
    record["environment"]["label"] = "too-fast"
    record["statistics"].update(mean=0.001, std=0.0001, min=0.0009, max=0.0011)
    assert cli("ingest", "runs", write_jsonl(tmp_path / "fast.jsonl", [record])) == 0
    assert table(capsys.readouterr().out)["runs inserted"] == 1
    flags = _sql(
        db_url,
        "SELECT f.code FROM run_flags f JOIN runs r ON r.id = f.run_id JOIN environments e ON e.id = r.environment_id "
        "WHERE e.label = 'too-fast'",
    )
    assert [f["code"] for f in flags] == ["below_floor"]
    assert _page(db_url, RESNET)["headline"]["latencyMs"] == 1.39


# -- record checks: observed_at and the provider (no database) -------------------------------------


def _checked_record(**changes):
    from tests.fixtures.bad.make_corpus import GOOD

    record = copy.deepcopy(GOOD)
    for key, value in changes.items():
        target = record
        *parents, last = key.split(".")
        for p in parents:
            target = target[p]
        target[last] = value
    return record


def test_observed_at_in_the_future_is_refused_beyond_the_clock_skew():
    from datetime import UTC, datetime, timedelta

    from kernelindex.ingest.records import MAX_CLOCK_SKEW, check_record

    now = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    assert MAX_CLOCK_SKEW == timedelta(minutes=5)
    assert check_record(_checked_record(observed_at="2026-06-01T12:04:59Z"), now=now) == []
    assert check_record(_checked_record(observed_at="2026-06-01T12:05:00Z"), now=now) == []
    assert check_record(_checked_record(observed_at="2026-06-01T14:04:00+02:00"), now=now) == []  # 12:04 UTC
    (problem,) = check_record(_checked_record(observed_at="2026-06-01T12:05:01Z"), now=now)
    assert problem[0] == "observed_at"
    assert "2026-06-01T12:05:01+00:00 is in the future" in problem[1] and "5 minutes of clock skew" in problem[1]
    (problem,) = check_record(_checked_record(observed_at="2026-06-01T12:30:00-01:00"), now=now)  # 13:30 UTC
    assert problem[0] == "observed_at" and "is in the future" in problem[1]
    # without `now`, the clock: far in the future is refused today too
    assert [k for k, _ in check_record(_checked_record(observed_at="2999-01-01T00:00:00Z"))] == ["observed_at"]


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_observed_at_outside_utc_is_a_problem_not_an_exception(text):
    from datetime import UTC, datetime

    from kernelindex.ingest.records import check_record, parse_observed_at

    found = check_record(_checked_record(observed_at=text), now=datetime(2026, 6, 1, tzinfo=UTC))
    assert found == [("observed_at", f"{text!r} cannot be represented as a time in UTC (it falls outside years 1 to 9999 there)")]
    with pytest.raises(ValueError):
        parse_observed_at(text)


def test_observed_at_is_read_in_utc():
    from datetime import UTC, datetime

    from kernelindex.ingest.records import parse_observed_at

    assert parse_observed_at("2026-06-01T14:00:00+02:00") == datetime(2026, 6, 1, 12, tzinfo=UTC)
    assert parse_observed_at("2026-06-01T14:00:00+02:00").tzinfo is UTC
    assert parse_observed_at("2026-06-01T12:00:00") == datetime(2026, 6, 1, 12, tzinfo=UTC)


def test_the_future_is_refused_with_file_line_and_key():
    from kernelindex.ingest.records import read_run_records

    lines = [json.dumps(_checked_record()), json.dumps(_checked_record(observed_at="2999-01-01T00:00:00Z"))]
    items = list(read_run_records(lines, "runs.jsonl"))
    assert len(items) == 2
    problem = items[1]
    assert (problem.file, problem.where, problem.key) == ("runs.jsonl", "line 2", "observed_at")
    assert "is in the future" in problem.reason


@pytest.mark.parametrize("written, stored", [("modal", "Modal"), (" MODAL ", "Modal"), ("LambdaLabs", "Lambda Labs"),
                                             ("gcp", "Google Cloud"), ("  Corpus   Cloud ", "Corpus Cloud"), ("", None)])
def test_checking_a_record_normalises_its_provider(written, stored):
    from kernelindex.ingest.records import check_record

    record = _checked_record(**{"environment.provider": written})
    assert check_record(record) == []
    assert record["environment"]["provider"] == stored


def test_modal_and_Modal_are_one_environment(cli, db_url, tmp_path, capsys):
    records = synthetic_records(3, start=80)
    for record, provider in zip(records, ("modal", "Modal", " MODAL "), strict=True):
        record["environment"]["provider"] = provider
        record["environment"]["label"] = "provider-spellings"
    # one provider, so one environment: the second and third lines are the first run again
    assert cli("ingest", "runs", write_jsonl(tmp_path / "runs.jsonl", records)) == 1
    err = capsys.readouterr().err
    assert "line 2: the same run as line 1 (same natural key)" in err
    assert "line 3: the same run as line 1 (same natural key)" in err
    rows = _sql(db_url, "SELECT DISTINCT provider FROM environments WHERE label = 'provider-spellings'")
    assert [r["provider"] for r in rows] == ["Modal"]
    assert len(_sql(db_url, "SELECT 1 FROM environments WHERE label = 'provider-spellings'")) == 1


# -- --strict and --dry-run mean what they say ------------------------------------------------------

VGG = "kernelbench-l3-p12-vgg19"
NEW_WORKLOAD = "corpus-l1-p1-corpusop"


def _mixed_file(tmp_path, *, bad: bool) -> str:
    """Catalogue lines that add hardware, a workload and a later VGG19 revision (which becomes
    current), then runs that use them, a supersession, an unchanged seed run and (bad=True) a bad line."""
    from kernelindex.ingest.seed import SEEDS_DIR

    workload = {
        "format": "kernelindex.workload/1", "suite": "corpus", "level": 1, "problem_number": 1, "name": "CorpusOp",
        "slug": NEW_WORKLOAD, "reference_source": "import torch\n", "canonical": {"bindings": {"batch_size": 2}, "dtype": "fp32"},
    }
    vgg = {
        "format": "kernelindex.workload/1", "suite": "kernelbench", "level": 3, "problem_number": 12, "name": "VGG19",
        "slug": VGG, "reference_source": (SEEDS_DIR / "reference" / "vgg19.py").read_text() + "\n# revised upstream\n",
        "canonical": {"bindings": {"batch_size": 10}, "dtype": "fp32"}, "current": True,
        "snapshots": [{"upstream_revision": "later01", "revision_date": "2026-06-01", "complete": False}],
    }
    on_x9 = synthetic_records(1, slug=NEW_WORKLOAD, start=300)[0]
    on_x9["environment"]["hardware"] = {"product_name": "NVIDIA X9 Ultra"}
    on_vgg = synthetic_records(2, slug=VGG, batch=10, start=310)
    changed = seed_record(3)
    changed["statistics"].update(mean=1.41, min=1.39)
    records: list = [X9_LINE, workload, vgg, on_x9, *on_vgg, changed, seed_record(0), *synthetic_records(2, start=320)]
    if bad:
        broken = synthetic_records(1, start=330)[0]
        broken["statistics"]["median"] = broken["statistics"]["max"] + 1  # median above max
        records.insert(5, broken)
    return write_jsonl(tmp_path / f"mixed-{bad}.jsonl", records)


def _vgg_state(db_url):
    (row,) = _sql(db_url, "SELECT current_revision_id FROM workloads WHERE slug = $1", VGG)
    return row["current_revision_id"], counts(db_url)


@pytest.mark.parametrize("bad", [True, False])
def test_dry_run_figures_are_what_the_real_run_writes(cli, db_url, tmp_path, capsys, bad):
    path = _mixed_file(tmp_path, bad=bad)
    before = snapshot(db_url)
    expected_status = 1 if bad else 0
    assert cli("ingest", "runs", "--dry-run", path) == expected_status
    dry = capsys.readouterr()
    assert snapshot(db_url) == before  # catalogue lines included: nothing written
    assert cli("ingest", "runs", path) == expected_status
    real = capsys.readouterr()
    assert as_real(table(dry.out)) == table(real.out)
    assert table(real.out)["runs inserted"] == 6 and table(real.out)["runs superseded"] == 1
    assert table(real.out)["runs rejected"] == (1 if bad else 0)
    rejected = sorted(line for line in real.err.splitlines() if line.startswith("kernelindex: rejected:"))
    assert sorted(line for line in dry.err.splitlines() if line.startswith("kernelindex: rejected:")) == rejected
    assert len(rejected) == (1 if bad else 0)
    assert _sql(db_url, "SELECT 1 FROM workloads WHERE slug = $1", NEW_WORKLOAD)


def test_strict_dry_run_figures_are_what_the_strict_run_writes(cli, db_url, tmp_path, capsys):
    path = _mixed_file(tmp_path, bad=False)
    before = snapshot(db_url)
    assert cli("ingest", "runs", "--strict", "--dry-run", path) == 0
    dry = as_real(table(capsys.readouterr().out))
    assert snapshot(db_url) == before
    assert cli("ingest", "runs", "--strict", path) == 0
    assert table(capsys.readouterr().out) == dry


def test_strict_writes_no_catalogue_line_when_a_run_line_is_bad(cli, db_url, tmp_path, capsys):
    """The issue's case: a --strict ingest reported as 'nothing written' had added hardware and
    workload rows and switched VGG19's current revision. Now nothing, catalogue lines included."""
    path = _mixed_file(tmp_path, bad=True)
    before = snapshot(db_url)
    vgg_before = _vgg_state(db_url)
    assert cli("ingest", "runs", "--strict", path) == 3
    err = capsys.readouterr().err
    assert f"{path}: line 6 [statistics.max]" in err and "nothing written" in err
    assert snapshot(db_url) == before
    assert _vgg_state(db_url) == vgg_before
    # and the same file without its bad line lands whole, catalogue and runs in one transaction
    assert cli("ingest", "runs", "--strict", _mixed_file(tmp_path, bad=False)) == 0
    assert table(capsys.readouterr().out)["runs inserted"] == 6
    assert _vgg_state(db_url)[0] != vgg_before[0]


def test_strict_refuses_a_bad_catalogue_line_before_writing_anything(cli, db_url, tmp_path, capsys):
    bad_line = {**X9_LINE, "sku": "NVIDIA X9 \u0423ltra 96GB"}  # Cyrillic У
    path = write_jsonl(tmp_path / "runs.jsonl", [X9_LINE, bad_line, *synthetic_records(2, start=340)])
    before = snapshot(db_url)
    assert cli("ingest", "runs", "--strict", path) == 3
    err = capsys.readouterr().err
    assert f"{path}: line 2 [sku]:" in err and "Cyrillic" in err and "nothing written" in err
    assert snapshot(db_url) == before


# -- bounded input ---------------------------------------------------------------------------------


def test_a_50_mb_line_is_refused_quickly_in_little_memory(cli, db_url, tmp_path, capsys):
    import time
    import tracemalloc

    good = synthetic_records(2, start=350)
    path = tmp_path / "long.jsonl"
    with path.open("wb") as out:
        out.write((json.dumps(good[0]) + "\n").encode())
        out.write(b'{"format": "kernelindex.run/1", "failure_reason": "')
        chunk = b"x" * (1 << 20)
        for _ in range(50):
            out.write(chunk)
        out.write(b'"}\n')
        out.write((json.dumps(good[1]) + "\n").encode())
    assert path.stat().st_size > 50_000_000
    tracemalloc.start()
    started = time.perf_counter()
    try:
        status = cli("ingest", "runs", str(path))
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out = capsys.readouterr()
    print(f"50 MB line: refused in {elapsed:.2f} s, peak {peak:,} bytes traced")
    assert status == 1
    assert f"{path}: line 2: the line is 52,428,8" in out.err and "over the limit of 1,048,576 (max line length" in out.err
    assert table(out.out)["runs inserted"] == 2
    assert peak < 16_000_000, peak  # a few chunks of 1 MiB, never the line
    assert elapsed < 30


def test_dev_zero_is_refused_at_once(cli, db_url, capsys):
    import time

    started = time.perf_counter()
    assert cli("ingest", "runs", "/dev/zero") == 2
    assert time.perf_counter() - started < 5
    assert "/dev/zero: is a character device, not a file of run records" in capsys.readouterr().err


def test_a_fifo_is_refused_at_once_never_read(db_url, tmp_path):
    import os

    from kernelindex.ingest.errors import IngestFatal
    from kernelindex.ingest.runs import ingest_runs_file

    fifo = tmp_path / "runs.fifo"
    os.mkfifo(fifo)

    async def go():
        # No writer ever opens the FIFO: opening it for reading would block for ever.
        return await asyncio.wait_for(ingest_runs_file(db_url, fifo, str(fifo), progress=False), timeout=10)

    with pytest.raises(IngestFatal, match="is a FIFO \\(named pipe\\), not a file of run records"):
        asyncio.run(go())


def test_a_file_over_the_maximum_size_is_refused_before_it_is_read(cli, db_url, tmp_path, monkeypatch, capsys):
    from kernelindex.settings import get_settings

    path = write_jsonl(tmp_path / "runs.jsonl", synthetic_records(3, start=360))
    monkeypatch.setenv("KERNELINDEX_INGEST_MAX_FILE_BYTES", "1000")
    get_settings.cache_clear()
    before = counts(db_url)
    assert cli("ingest", "runs", path) == 2
    err = capsys.readouterr().err
    assert "over the maximum file size of 1,000 (KERNELINDEX_INGEST_MAX_FILE_BYTES)" in err
    assert counts(db_url) == before


def test_the_cli_refuses_a_fifo_at_once(cli, db_url, tmp_path, capsys):
    """The command line checks the path before it opens it: an open() of a FIFO no one writes blocks forever."""
    import os
    import threading

    fifo = tmp_path / "runs.fifo"
    os.mkfifo(fifo)
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(cli("ingest", "runs", str(fifo))), daemon=True)
    worker.start()
    worker.join(timeout=15)
    assert not worker.is_alive(), "the CLI blocked on the FIFO"
    assert result == [2]
    assert "is a FIFO (named pipe), not a file of run records" in capsys.readouterr().err


def test_endless_stdin_is_cut_at_the_maximum_size(cli, db_url, monkeypatch, capsys):
    from kernelindex.settings import get_settings

    class Endless(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def read(self, size: int = -1) -> bytes:
            return b"\0" * (size if size > 0 else 1 << 16)

    class Stdin:
        buffer = Endless()

    monkeypatch.setattr(sys, "stdin", Stdin())
    monkeypatch.setenv("KERNELINDEX_INGEST_MAX_FILE_BYTES", str(5 << 20))
    get_settings.cache_clear()
    before = counts(db_url)
    try:
        assert cli("ingest", "runs", "-") == 2
    finally:
        get_settings.cache_clear()
    assert "<stdin>: more than the maximum input size of 5,242,880 bytes" in capsys.readouterr().err
    assert counts(db_url) == before
