"""The shortcuts `ingest runs` takes for speed change nothing it decides (issue 24, point 4):

- lines after a part of mostly new runs are checked as they are read, in the reader's thread
  (PartReader.check_ahead), their content digests made there too: each new line is checked once, and
  the counts, problems and digests are those of checking them afterwards; a file of lines that are
  live runs already is still never checked;
- new runs go into `runs` by INSERT … ON CONFLICT on the live natural key: a run whose key is live
  with the same content is unchanged, with other content it supersedes the live one;
- the environment fingerprint is remembered by the environment's JSON encoding, and is always the
  fingerprint the environment has (a NaN, which that encoding writes as null, included).
"""

from __future__ import annotations

import asyncio
import json
import math
import threading

import pytest

from kernelindex.ingest import runs as runs_module
from kernelindex.ingest.digests import content_digest, environment_fingerprint, environment_fingerprint_memo
from kernelindex.ingest.records import RunRecord, line_digest, read_item
from kernelindex.ingest.runs import ingest_runs_file
from tests.api.helpers import synthetic_records
from tests.ingest.conftest import fetch


def _write(path, records) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def _ingest(db_url, path, **options):
    return asyncio.run(ingest_runs_file(db_url, path, path.name, progress=False, **options))


def _checked_lines(monkeypatch) -> list[tuple[int, bool]]:
    """(line number, whether in the main thread) of every check_pending of the ingests that follow."""
    calls: list[tuple[int, bool]] = []
    real = runs_module.check_pending

    def counting(line, file):
        calls.append((line.number, threading.current_thread() is threading.main_thread()))
        return real(line, file)

    monkeypatch.setattr(runs_module, "check_pending", counting)
    return calls


def test_new_lines_are_checked_once_each_and_ahead_in_the_reader(db_url, tmp_path, monkeypatch):
    records = synthetic_records(15)
    bad = dict(records[7], status="maybe")  # refused by the check, whichever thread makes it
    path = tmp_path / "runs.jsonl"
    _write(path, [*records[:7], bad, *records[8:]])
    calls = _checked_lines(monkeypatch)
    summary = _ingest(db_url, path, batch_size=3)
    assert (summary.found, summary.inserted, summary.rejected) == (15, 14, 1)
    assert [p.where for p in summary.problems] == ["line 8"]
    assert sorted(number for number, _ in calls) == list(range(1, 16))  # each line once
    assert any(not main for _, main in calls)  # the parts after the first new one: in the reader's thread
    assert all(main for number, main in calls if number <= 3)  # the first part: nothing known yet
    # The content digests made ahead, in the reader's thread, are the writer's own.
    stored = {bytes(r["line_sha"]): r["content_sha256"] for r in fetch(
        db_url, "SELECT line_sha, content_sha256 FROM runs WHERE superseded_at IS NULL AND line_sha IS NOT NULL")}
    for number, raw in enumerate(path.read_bytes().splitlines(keepends=True), start=1):
        record = read_item(number, raw, path.name)
        if isinstance(record, RunRecord):
            assert stored[line_digest(raw)] == content_digest(record.data), number


def test_known_lines_after_new_ones_count_the_same_and_a_known_file_is_never_checked(db_url, tmp_path, monkeypatch):
    records = synthetic_records(18)
    known, new = records[:9], records[9:]
    first = tmp_path / "first.jsonl"
    _write(first, known)
    assert _ingest(db_url, first, batch_size=3).inserted == 9
    both = tmp_path / "both.jsonl"
    _write(both, new + known + new[:1])  # new lines, then known ones (checked ahead, maybe), then a repeat
    calls = _checked_lines(monkeypatch)
    summary = _ingest(db_url, both, batch_size=3)
    assert (summary.found, summary.inserted, summary.unchanged, summary.rejected) == (19, 9, 9, 1)
    assert [(p.where, p.reason) for p in summary.problems] == [("line 19", "the same run as line 1 (same natural key)")]
    assert {number for number, _ in calls} >= set(range(1, 10))  # every new line checked
    assert len([n for n, _ in calls if n <= 9]) == 9  # and once
    calls.clear()
    again = _ingest(db_url, first, batch_size=3)
    assert (again.inserted, again.unchanged, calls) == (0, 9, [])


def test_the_insert_by_the_live_key_keeps_unchanged_and_supersedes_changed(db_url, tmp_path):
    records = synthetic_records(4)
    path = tmp_path / "runs.jsonl"
    _write(path, records)
    assert _ingest(db_url, path).inserted == 4
    live = "SELECT id FROM runs WHERE superseded_at IS NULL"
    before = {r["id"] for r in fetch(db_url, live)}
    changed = [dict(records[0], statistics=dict(records[0]["statistics"], std=records[0]["statistics"]["std"] / 2)),
               *records[1:]]
    _write(path, changed)
    summary = _ingest(db_url, path)
    assert (summary.inserted, summary.superseded, summary.unchanged) == (1, 1, 3)
    after = {r["id"] for r in fetch(db_url, live)}
    (gone,), (new,) = before - after, after - before
    assert fetch(db_url, f"SELECT superseded_by_id FROM runs WHERE id = {gone}")[0]["superseded_by_id"] == new
    assert _ingest(db_url, path).unchanged == 4  # and the same file again: nothing to insert


def test_the_remembered_fingerprint_is_the_environments_own():
    base = {"provider": "p", "label": "l", "software": {"torch": "2.5"}, "details": {"x": 1}}
    variants = [
        base,
        {**base, "details": {"x": 1.0}},  # 1 and 1.0 are spelled apart
        {**base, "details": {"x": True}},
        {**base, "details": {"x": None}},
        {**base, "details": {"x": math.nan}},  # msgspec writes null for it: told apart by its repr
        {**base, "details": {"x": 2**70}},
        {**base, "label": "l\udc80"},  # no UTF-8 spelling: by its repr
        {"label": "l", "provider": "p", "details": {"x": 1}, "software": {"torch": "2.5"}},  # another key order
    ]
    for env in variants + variants[::-1]:
        try:
            expected = environment_fingerprint("H100", env)
        except ValueError:  # canonical JSON refuses a NaN (and a lone surrogate): the memo refuses it as well
            expected = None
        for _ in range(2):  # computed, then remembered
            if expected is None:
                with pytest.raises(ValueError):
                    environment_fingerprint_memo("H100", env)
            else:
                assert environment_fingerprint_memo("H100", env) == expected, env
