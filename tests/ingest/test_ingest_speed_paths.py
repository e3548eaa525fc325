"""The shortcuts `ingest runs` takes for speed change nothing it decides (issue 24, point 4):

- new runs go into `runs` by INSERT … ON CONFLICT on the live natural key: a run whose key is live
  with the same content is unchanged, with other content it supersedes the live one;
- the environment fingerprint is remembered by the environment's JSON encoding, and is always the
  fingerprint the environment has (a NaN, which that encoding writes as null, included).
"""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from kernelindex.ingest.digests import environment_fingerprint, environment_fingerprint_memo
from kernelindex.ingest.runs import ingest_runs_file
from tests.api.helpers import synthetic_records
from tests.ingest.conftest import fetch


def _write(path, records) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def _ingest(db_url, path, **options):
    return asyncio.run(ingest_runs_file(db_url, path, path.name, progress=False, **options))


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
