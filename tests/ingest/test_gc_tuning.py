"""The ingest commands tune the collector as the server does (kernelindex.gc_tuning): an import's decoded
records are garbage by the thousand, and at CPython's default threshold ~40% of checking them went to
collections (issue 24's profile)."""

from __future__ import annotations

import gc

import pytest

from kernelindex import gc_tuning
from kernelindex.ingest.seed import SEEDS_DIR


@pytest.fixture
def untuned(monkeypatch):
    """A process that has not tuned its collector yet (another test may have); put back after."""
    threshold = gc.get_threshold()
    monkeypatch.setattr(gc_tuning, "_tuned", False)
    gc.set_threshold(700, threshold[1], threshold[2])
    yield
    gc.set_threshold(*threshold)


def test_ingest_runs_tunes_the_collector_once(cli, untuned, tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join((SEEDS_DIR / "runs.jsonl").read_text().splitlines()[:2]) + "\n")
    assert gc.get_threshold()[0] == 700
    assert cli("ingest", "runs", str(path)) == 0
    assert gc.get_threshold()[0] == gc_tuning.GC_YOUNG_THRESHOLD
    assert gc.get_freeze_count() > 10_000  # what the command had imported, out of every later collection


def test_tuning_is_once_per_process(untuned):
    gc_tuning.tune_gc()
    gc.set_threshold(700)  # someone else's choice afterwards is not overridden by a second call
    gc_tuning.tune_gc()
    assert gc.get_threshold()[0] == 700
