"""Ingest under faults: a SIGKILL leaves whole batches, and a re-run finishes with no duplicates; two
overlapping ingests at once end as one after the other."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.api.helpers import synthetic_records
from tests.ingest.conftest import counts, snapshot

BATCH = 250


def _records(start: int, count: int) -> list[dict]:
    out = []
    for i, rec in enumerate(synthetic_records(count, start=start)):
        rec["environment"]["label"] = "fault-pool"
        rec["source"]["revision"] = f"r{start + i}"
        out.append(rec)
    return out


def _ingest(db_url: str, path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "KERNELINDEX_DATABASE_URL": db_url}
    return subprocess.Popen(
        [sys.executable, "-m", "kernelindex.cli", "ingest", "runs", str(path), "--batch-size", str(BATCH), *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _run_keys(db_url: str) -> list[tuple]:
    names = ("workload_revision_id", "configuration_key", "implementation_id", "environment_id", "protocol_id", "source_snapshot_id")
    return sorted(tuple(r[n] for n in names) for r in snapshot(db_url)["runs"] if r["superseded_by_id"] is None)


def test_sigkill_leaves_whole_batches_and_a_rerun_finishes(db_url, tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records(0, 2000)))
    before = counts(db_url)["runs"]
    proc = _ingest(db_url, path)
    deadline = time.monotonic() + 120
    rng = random.Random(11)
    target = before + BATCH * rng.randint(1, 5)
    while time.monotonic() < deadline and proc.poll() is None and counts(db_url)["runs"] < target:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    landed = counts(db_url)["runs"] - before
    assert landed % BATCH == 0, f"{landed} runs landed: a batch was half-written"
    rerun = _ingest(db_url, path)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err[-2000:]
    assert counts(db_url)["runs"] - before == 2000
    keys = _run_keys(db_url)
    assert len(keys) == len(set(keys)), "duplicate runs after the re-run"


@pytest.mark.parametrize("order", ["a-first", "b-first"])
def test_overlapping_ingests_at_once_equal_one_after_the_other(db_url, tmp_path, order):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in _records(0, 1000)))
    second.write_text("".join(json.dumps(r) + "\n" for r in _records(500, 1000)))  # 500 runs in common
    before = counts(db_url)["runs"]
    if order == "b-first":
        first, second = second, first
    # Both at once: their batches and deferred record events interleave (they deadlocked before the
    # index lock covered the record events).
    a, b = _ingest(db_url, first), _ingest(db_url, second)
    for proc in (a, b):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
    assert counts(db_url)["runs"] - before == 1500
    keys = _run_keys(db_url)
    assert len(keys) == len(set(keys))
    live = [r for r in snapshot(db_url)["runs"] if r["superseded_by_id"] is None]
    assert len(live) - before == 1500
