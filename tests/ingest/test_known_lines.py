"""An unchanged re-ingest is a lookup: a line whose very bytes made a live run of the revision it
names now is counted unchanged without being checked again (RunWriter.skip_known), and everything
else takes the full path: other spellings, a new current revision, a new version of the checks."""

from __future__ import annotations

import asyncio
import json

import pytest

from kernelindex.ingest import records as records_module
from kernelindex.ingest import runs as runs_module
from kernelindex.ingest.runs import ingest_runs_file
from tests.api.helpers import synthetic_records
from tests.ingest.conftest import execute, fetch

RESNET = "kernelbench-l3-p9-resnet18"


@pytest.fixture
def checks(monkeypatch):
    """How many lines were checked (check_pending) by the ingests of a test."""
    calls = {"n": 0}
    real = runs_module.check_pending

    def counting(line, file):
        calls["n"] += 1
        return real(line, file)

    monkeypatch.setattr(runs_module, "check_pending", counting)
    return calls


def _write(path, records) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def _ingest(db_url, path, **options):
    return asyncio.run(ingest_runs_file(db_url, path, path.name, progress=False, **options))


def _live_runs(db_url) -> int:
    return fetch(db_url, "SELECT count(*) AS n FROM runs WHERE superseded_at IS NULL")[0]["n"]


def test_an_unchanged_file_is_not_checked_again(db_url, tmp_path, checks):
    path = tmp_path / "runs.jsonl"
    _write(path, synthetic_records(40))
    first = _ingest(db_url, path)
    assert (first.inserted, first.unchanged, first.rejected, checks["n"]) == (40, 0, 0, 40)
    stored = fetch(db_url, "SELECT count(*) AS n FROM runs WHERE line_sha IS NOT NULL AND superseded_at IS NULL")[0]["n"]
    assert stored == 40
    before = _live_runs(db_url)

    checks["n"] = 0
    again = _ingest(db_url, path)
    assert (again.inserted, again.unchanged, again.superseded, again.rejected) == (0, 40, 0, 0)
    assert checks["n"] == 0  # a lookup, not a check
    assert len(again.workloads) == 1 and len(again.environments) == 40  # the table says what the lines were
    assert _live_runs(db_url) == before

    checks["n"] = 0
    dry = _ingest(db_url, path, dry_run=True)
    assert (dry.inserted, dry.unchanged, checks["n"]) == (0, 40, 0)


def test_a_line_stated_twice_is_refused_whether_its_run_is_new_or_known(db_url, tmp_path, checks):
    a, b = synthetic_records(2)
    path = tmp_path / "runs.jsonl"
    _write(path, [a, b, a])
    for attempt in ("new", "known"):
        summary = _ingest(db_url, path)
        expected = (2, 0) if attempt == "new" else (0, 2)
        assert (summary.inserted, summary.unchanged, summary.rejected) == (*expected, 1), attempt
        assert [(p.where, p.reason) for p in summary.problems] == [("line 3", "the same run as line 1 (same natural key)")], attempt
    with pytest.raises(runs_module.IngestAborted):
        _ingest(db_url, path, strict=True)


def test_other_spellings_of_the_same_runs_are_checked_and_unchanged(db_url, tmp_path, checks):
    records = synthetic_records(10)
    path = tmp_path / "runs.jsonl"
    _write(path, records)
    _ingest(db_url, path)
    respelled = tmp_path / "respelled.jsonl"
    _write(respelled, [json.dumps(r, sort_keys=True, indent=None, separators=(", ", " : ")) for r in records])
    checks["n"] = 0
    summary = _ingest(db_url, respelled)
    assert (summary.inserted, summary.unchanged, checks["n"]) == (0, 10, 10)
    # An unchanged run is left alone, the digest of its first spelling with it: this spelling is checked each time.
    checks["n"] = 0
    summary = _ingest(db_url, respelled)
    assert (summary.unchanged, checks["n"]) == (10, 10)


def test_a_new_version_of_the_checks_checks_every_line_again(db_url, tmp_path, checks, monkeypatch):
    path = tmp_path / "runs.jsonl"
    _write(path, synthetic_records(10))
    _ingest(db_url, path)
    monkeypatch.setattr(records_module, "CHECKS_VERSION", b"run-record-checks/next")
    checks["n"] = 0
    summary = _ingest(db_url, path)
    assert (summary.inserted, summary.unchanged, checks["n"]) == (0, 10, 10)


def test_a_new_current_revision_takes_the_full_path(db_url, tmp_path, checks):
    """A line naming its workload by slug measures the current revision: the same bytes after a new
    revision became current are new runs of it, not the old live runs."""
    path = tmp_path / "runs.jsonl"
    _write(path, synthetic_records(5))
    _ingest(db_url, path)
    asyncio.run(execute(
        db_url,
        "CREATE TEMPORARY TABLE next_revision AS SELECT r.* FROM workload_revisions r JOIN workloads w "
        f"ON r.id = w.current_revision_id WHERE w.slug = '{RESNET}'",
        "UPDATE next_revision SET id = nextval(pg_get_serial_sequence('workload_revisions', 'id')), "
        "source_sha256 = repeat('e', 64), identity_sha256 = repeat('f', 64), stand_in_sha256 = NULL",
        "INSERT INTO workload_revisions SELECT * FROM next_revision",
        f"UPDATE workloads SET current_revision_id = (SELECT id FROM next_revision) WHERE slug = '{RESNET}'",
    ))
    checks["n"] = 0
    summary = _ingest(db_url, path)
    assert (summary.inserted, summary.unchanged, checks["n"]) == (5, 0, 5)
    # And once those are stored, the same bytes are known again.
    checks["n"] = 0
    summary = _ingest(db_url, path)
    assert (summary.inserted, summary.unchanged, checks["n"]) == (0, 5, 0)


def test_parts_of_known_lines_grow_and_records_are_still_written_in_batches(db_url, tmp_path, monkeypatch):
    """Where a part's lines were nearly all live runs already, the next parts hold up to
    KNOWN_PART_LINES lines (one lookup, a few round trips, for many lines); the records among them
    are written in batches of --batch-size all the same, and the counts are the same."""
    records = synthetic_records(24)
    known, new = records[:12], records[12:]
    first = tmp_path / "first.jsonl"
    _write(first, known)
    assert _ingest(db_url, first, batch_size=3).inserted == 12

    looked_up: list[int] = []
    written: list[int] = []
    real_skip, real_write = runs_module.RunWriter.skip_known, runs_module.RunWriter.write

    async def skip_known(self, session, lines, file):
        looked_up.append(len(lines))
        return await real_skip(self, session, lines, file)

    async def write(self, session, batch, **options):
        written.append(len(batch))
        return await real_write(self, session, batch, **options)

    monkeypatch.setattr(runs_module.RunWriter, "skip_known", skip_known)
    monkeypatch.setattr(runs_module.RunWriter, "write", write)
    both = tmp_path / "both.jsonl"
    _write(both, known + new + known[:1])  # and the first line again, last: a run stated twice
    summary = _ingest(db_url, both, batch_size=3)
    assert (summary.found, summary.inserted, summary.unchanged, summary.rejected) == (25, 12, 12, 1)
    assert [(p.where, p.reason) for p in summary.problems] == [("line 25", "the same run as line 1 (same natural key)")]
    assert max(looked_up) > 3  # a part grew past the batch size
    assert written and max(written) <= 3 and sum(written) == 12  # the new records, in batches of 3


def test_a_part_grows_only_where_its_lines_were_known_and_only_so_far():
    reader = runs_module.PartReader([], "f", 10)
    reader.settled(pending=10, known=10, size=10 * 500)  # short lines: as many as a part may hold
    assert reader.part_lines == runs_module.KNOWN_PART_LINES
    reader.settled(pending=10, known=10, size=10 * runs_module.KNOWN_PART_BYTES // 50)  # long lines: 50 fit
    assert reader.part_lines == 50
    reader.settled(pending=10, known=10, size=10 * runs_module.KNOWN_PART_BYTES)  # longer still: a batch
    assert reader.part_lines == 10
    reader.settled(pending=10, known=5, size=10 * 1000)  # half new: back to a batch
    assert reader.part_lines == 10


def test_new_lines_are_checked_once_each_ahead_of_their_part_and_known_ones_still_count_unchanged(db_url, tmp_path, checks, monkeypatch):
    """Once a part was found mostly new lines, the reader's thread checks the next parts' lines as it
    reads them (PartReader.check_ahead), while the part before is merged. Each line is still checked
    once, its problems reported once, and which lines are live runs is still asked in order: a line
    checked ahead that turns out a live run counts unchanged, not inserted."""
    ahead: list[int] = []
    real_next = runs_module.PartReader.next_part

    def next_part(self):
        part = real_next(self)
        if part is not None:
            ahead.append(len(part.checked))
        return part

    monkeypatch.setattr(runs_module.PartReader, "next_part", next_part)
    records = synthetic_records(60)
    known = tmp_path / "known.jsonl"
    _write(known, records[40:])
    assert _ingest(db_url, known).inserted == 20

    bad = json.loads(json.dumps(records[35]))
    bad["status"] = "bogus"
    path = tmp_path / "runs.jsonl"
    _write(path, records[:35] + [bad] + records[36:])  # 40 new lines (one bad), then 20 live runs
    before = _live_runs(db_url)
    checks["n"], ahead[:] = 0, []
    summary = _ingest(db_url, path, batch_size=10)
    assert (summary.found, summary.inserted, summary.unchanged, summary.rejected) == (60, 39, 20, 1)
    assert [(p.where, p.key) for p in summary.problems] == [("line 36", "status")]
    # The first part is checked as it is settled; from the third on (read after the first was found
    # new) ahead, in the reader's thread, the known ones among them too (then dropped), until a part is
    # found known: that part merges nothing, so the part after it is read once it was settled, and is
    # not checked (runs._read_ahead: a new part is read from the merge on, so it follows the latest verdict).
    assert ahead[0] == 0 and ahead[2:] == [10, 10, 10, 0]
    # Part 1 as settled, 2 (read unchecked with part 1) once part 1 was found new, as it merges; 3 to 5 ahead
    # (5's known lines dropped), 6 (known) never.
    assert checks["n"] == 50
    assert _live_runs(db_url) == before + 39
    # A digest worked out ahead, in the reader's thread, is the stage's own.
    from kernelindex.ingest.digests import content_digest
    stored = {row["content_sha256"] for row in fetch(db_url, "SELECT content_sha256 FROM runs WHERE line_sha IS NOT NULL")}
    assert stored == {content_digest(records_module.check_run(r)) for i, r in enumerate(records) if i != 35}

    # The same file again: the first part is found known, and no part after it is checked ahead.
    checks["n"], ahead[:] = 0, []
    again = _ingest(db_url, path, batch_size=10)
    assert (again.inserted, again.unchanged, again.rejected) == (0, 59, 1)
    assert sum(ahead[2:]) == 0 and checks["n"] <= 1 + ahead[1]  # the bad line (never stored) is checked each time


def test_the_second_part_is_checked_beside_the_first_merge_and_both_orders_of_new_and_known_parts_hold(db_url, tmp_path, monkeypatch):
    """runs._read_ahead: the second part is read with the first, before anything is known of its lines,
    so unchecked; once the first part's lines turn out new, the second's are checked in a worker thread
    as the database merges the first (not in the writer's thread, between two batches). Only the first
    part's lines are checked in the writer's thread; each line still once. A file whose first part is
    known and whose second is new (the other order) checks the second as it is settled, as before."""
    import threading

    where: list[bool] = []  # per check: in the writer's (main) thread
    real = runs_module.check_pending

    def check_pending(line, file):
        where.append(threading.current_thread() is threading.main_thread())
        return real(line, file)

    monkeypatch.setattr(runs_module, "check_pending", check_pending)
    records = synthetic_records(80)
    path = tmp_path / "new.jsonl"
    _write(path, records[:50])
    before = _live_runs(db_url)
    summary = _ingest(db_url, path, batch_size=10)
    assert (summary.found, summary.inserted, summary.rejected) == (50, 50, 0)
    assert _live_runs(db_url) == before + 50
    assert len(where) == 50 and where.count(True) == 10  # part 1 alone in the writer's thread (was 20)

    # The other order: a known part first (not checked), then new parts.
    where.clear()
    other = tmp_path / "known_then_new.jsonl"
    _write(other, records[:10] + records[50:80])
    summary = _ingest(db_url, other, batch_size=10)
    assert (summary.found, summary.inserted, summary.unchanged, summary.rejected) == (40, 30, 10, 0)
    assert _live_runs(db_url) == before + 80
    assert len(where) == 30  # each new line once, the known ones never


def test_a_new_part_is_read_while_the_part_before_is_merged_not_while_it_is_staged(db_url, tmp_path, monkeypatch):
    """runs._read_ahead: while the lines are new, the next part is read from the moment the database
    starts merging the batch before (its Python then runs beside PostgreSQL's work, not beside the
    writer's own staging for the GIL); every part is still read once, in order, and the import is whole."""
    from kernelindex.ingest.stage import Stage

    staged = {"batches": 0}
    staged_at_read: list[int] = []
    real_runs, real_next = Stage.runs, runs_module.PartReader.next_part

    async def runs(self, session, rows):
        await real_runs(self, session, rows)
        staged["batches"] += 1

    def next_part(self):
        staged_at_read.append(staged["batches"])
        return real_next(self)

    monkeypatch.setattr(Stage, "runs", runs)
    monkeypatch.setattr(runs_module.PartReader, "next_part", next_part)
    path = tmp_path / "runs.jsonl"
    _write(path, synthetic_records(50))
    before = _live_runs(db_url)
    summary = _ingest(db_url, path, batch_size=10)
    assert (summary.found, summary.inserted) == (50, 50)
    assert _live_runs(db_url) == before + 50
    # Parts 1 and 2 are read before anything is known of the lines; part 3 on (and the last read, which
    # finds the end) once the part before was staged: as its merge starts. Read at the start of each
    # part instead, these would be [0, 0, 1, 2, 3, 4].
    assert staged_at_read == [0, 0, 2, 3, 4, 5]
