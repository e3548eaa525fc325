"""The one ingest pipeline (kernelindex.ingest.pipeline, issue 24 point 1): `ingest runs` and `ingest
kernelbench` write through it, with one meaning of default, --strict and --dry-run."""

from __future__ import annotations

import asyncio
import json

import pytest

from kernelindex.ingest import pipeline as pipeline_module
from kernelindex.ingest.errors import IngestAborted
from kernelindex.ingest.pipeline import Mode
from tests.ingest.conftest import counts, entry, snapshot, write_timing

ARGS = ("--revision", "abc1234", "--observed", "2026-06-01")
UNKNOWN_GPU = "NVIDIA Z9000 96GB"


def _good_then_bad(checkout):
    """Two good timing entries, then (in a file read later) one naming hardware the catalogue lacks:
    the reader takes it (its shape is right), the writer refuses it, in the last batch."""
    write_timing(checkout, "H100_Modal", "torch",
                 {"level1": {"1_Square_matrix_multiplication_.py": entry(0.02), "2_ReLU.py": entry(0.05)}})
    write_timing(checkout, "Z9_TestCloud", "torch", {"level1": {"2_ReLU.py": entry(0.07, hardware=UNKNOWN_GPU)}})


@pytest.mark.parametrize("batch_size", [None, "1"], ids=["default-batches", "batches-of-1"])
def test_kernelbench_strict_writes_nothing_when_a_later_batch_has_a_problem(cli, db_url, checkout, capsys, batch_size):
    """--strict writes nothing: not the snapshot (workloads, revisions), not the batches before the
    one with the problem (they used to be committed before the abort)."""
    _good_then_bad(checkout)
    extra = ("--batch-size", batch_size) if batch_size else ()
    before = snapshot(db_url)
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--strict", *extra) == 3
    assert snapshot(db_url) == before
    err = capsys.readouterr().err
    assert "Z9_TestCloud/baseline_time_torch.json: level1/2_ReLU.py" in err
    assert "nothing written" in err
    # The same input by default: the good entries written, the bad one alone rejected.
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, *extra) == 1
    after = counts(db_url)
    assert after["runs"] == len(before["runs"]) + 2
    assert after["workloads"] > len(before["workloads"])


def test_kernelbench_dry_run_writes_nothing_and_tells_what_a_real_run_would(cli, db_url, checkout, capsys):
    _good_then_bad(checkout)
    before = snapshot(db_url)
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--dry-run", "--batch-size", "1") == 1
    assert snapshot(db_url) == before
    dry = capsys.readouterr()
    assert "dry run: nothing was written" in dry.err
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--batch-size", "1") == 1
    real = capsys.readouterr()

    def table(out):
        return {line.rsplit(None, 1)[0].strip(): line.rsplit(None, 1)[1] for line in out.splitlines() if line.strip()}

    told, done = table(dry.out), table(real.out)
    assert told["runs that would be inserted"] == done["runs inserted"] == "2"
    assert told["rejected"] == done["rejected"] == "1"
    assert told["workloads inserted"] == done["workloads inserted"]


def test_both_verbs_write_through_the_pipeline_with_one_meaning_of_each_mode(db_url, checkout, tmp_path, monkeypatch):
    """The records `ingest kernelbench` makes of a checkout, written as a file of run records and
    ingested by `ingest runs`, give the same outcome in every mode: the same counts, the same
    problems, and --strict and --dry-run write nothing through either verb."""
    from kernelindex.ingest.kernelbench import import_kernelbench
    from kernelindex.ingest.runs import ingest_runs_file

    seen: list[tuple[Mode, int]] = []
    handed: list[dict] = []
    real_write = pipeline_module.Pipeline.write

    async def write(self, records, **kwargs):
        seen.append((self.mode, len(records)))
        handed.extend(r.data for r in records)
        return await real_write(self, records, **kwargs)

    monkeypatch.setattr(pipeline_module.Pipeline, "write", write)
    # The workloads first (a real import), then one entry changed: a dry run supersedes it.
    _good_then_bad(checkout)
    import_kernelbench(db_url, checkout, revision="abc1234", observed="2026-06-01", progress=False)
    write_timing(checkout, "H100_Modal", "torch",
                 {"level1": {"1_Square_matrix_multiplication_.py": entry(0.02), "2_ReLU.py": entry(0.06)}})
    seen.clear()
    handed.clear()

    def outcome(summary):
        return (summary.new, summary.unchanged, summary.superseded, summary.rejected,
                [problem.reason for problem in summary.problems])

    by_kernelbench = import_kernelbench(db_url, checkout, revision="abc1234", observed="2026-06-01", dry_run=True,
                                        progress=False)
    assert {mode for mode, _ in seen} == {Mode.DRY_RUN}
    runs_file = tmp_path / "runs.jsonl"
    runs_file.write_text("".join(json.dumps(record) + "\n" for record in handed))
    assert len(handed) == 3
    seen.clear()
    by_runs = asyncio.run(ingest_runs_file(db_url, runs_file, "runs.jsonl", dry_run=True, progress=False))
    assert {mode for mode, _ in seen} == {Mode.DRY_RUN}
    assert outcome(by_kernelbench) == outcome(by_runs) == (0, 1, 1, 1, [by_runs.problems[0].reason])
    assert UNKNOWN_GPU in by_runs.problems[0].reason

    before = snapshot(db_url)
    seen.clear()
    with pytest.raises(IngestAborted) as kernelbench_abort:
        import_kernelbench(db_url, checkout, revision="abc1234", observed="2026-06-01", strict=True, progress=False)
    with pytest.raises(IngestAborted) as runs_abort:
        asyncio.run(ingest_runs_file(db_url, runs_file, "runs.jsonl", strict=True, progress=False))
    assert {mode for mode, _ in seen} == {Mode.STRICT}
    assert [p.reason for p in kernelbench_abort.value.problems] == [p.reason for p in runs_abort.value.problems]
    assert snapshot(db_url) == before

    seen.clear()
    by_kernelbench = import_kernelbench(db_url, checkout, revision="abc1234", observed="2026-06-01", progress=False)
    by_runs = asyncio.run(ingest_runs_file(db_url, runs_file, "runs.jsonl", progress=False))
    assert {mode for mode, _ in seen} == {Mode.DEFAULT}
    # kernelbench superseded the changed run; the same records again through `ingest runs` are unchanged.
    assert outcome(by_kernelbench)[:4] == (0, 1, 1, 1)
    assert outcome(by_runs)[:4] == (0, 2, 0, 1)


def test_mode_of_flags():
    assert Mode.of() is Mode.DEFAULT
    assert Mode.of(strict=True) is Mode.STRICT
    assert Mode.of(dry_run=True) is Mode.DRY_RUN
    assert Mode.of(strict=True, dry_run=True) is Mode.DRY_RUN  # a dry run writes nothing, whatever else is asked

