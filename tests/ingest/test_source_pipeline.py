"""A source file's runs are written by the one pipeline's batches (kernelindex.ingest.pipeline, issue 24
point 1): `ingest kernelindex-export` hands every run it keeps to Pipeline.write as a run record in the
stated form, with its file and line, so the pipeline's batching, events and summary apply to them as to
`ingest runs`; and the file still lands whole or not at all, in any batch size."""

from __future__ import annotations

import pytest

from kernelindex.ingest import pipeline as pipeline_module
from tests.ingest.conftest import counts, snapshot
from tests.ingest.sources.test_kernelindex_export import small_export, write


def _handed(monkeypatch, *, batch_size: int | None = None) -> list[tuple[pipeline_module.Mode, list]]:
    """Every Pipeline.write call (its mode and its records), the pipeline cut into batches of batch_size."""
    calls: list[tuple[pipeline_module.Mode, list]] = []
    real_write = pipeline_module.Pipeline.write

    async def write_(self, records, **kwargs):
        calls.append((self.mode, list(records)))
        if batch_size is not None:
            self.batch_size = batch_size
        return await real_write(self, records, **kwargs)

    monkeypatch.setattr(pipeline_module.Pipeline, "write", write_)
    return calls


def _told(err: str) -> str:
    return next(line for line in err.splitlines() if "entries:" in line and "found =" in line)


def test_the_runs_go_through_pipeline_write_as_stated_records_with_file_and_line(cli, db_url, tmp_path, capsys, monkeypatch):
    calls = _handed(monkeypatch)
    path = write(tmp_path, small_export())
    assert cli("ingest", "kernelindex-export", str(path)) == 0
    (mode, records), = calls
    assert mode is pipeline_module.Mode.DEFAULT
    assert len(records) == 4  # every run of the export, all of them kept
    assert {r.file for r in records} == {path.name}
    assert all(r.where == f"line {r.line}" for r in records)
    lines = path.read_text().splitlines()
    assert all('"benchmark_runs"' in lines[r.line - 1] for r in records)  # each names the line it was read from
    assert all("figure" in r.data and r.data["source"]["whole"] for r in records)  # the stated form, a whole snapshot
    assert "4 inserted" in _told(capsys.readouterr().err)


@pytest.mark.parametrize("batch_size", [1, 3])
def test_a_failure_after_the_batches_writes_nothing_in_any_batch_size(cli, db_url, tmp_path, capsys, monkeypatch, batch_size):
    """Batches are savepoints of the file's one transaction, not transactions of their own: a failure
    after the last batch (here, the record events) leaves the database as it was."""
    calls = _handed(monkeypatch, batch_size=batch_size)

    async def failing_finish(self):
        raise RuntimeError("the disk is gone")

    monkeypatch.setattr(pipeline_module.Pipeline, "finish", failing_finish)
    before = snapshot(db_url)
    assert cli("ingest", "kernelindex-export", str(write(tmp_path, small_export()))) == 2
    assert "the disk is gone" in capsys.readouterr().err
    assert calls and len(calls[0][1]) == 4
    assert snapshot(db_url) == before


@pytest.mark.parametrize("batch_size", [1, 3])
def test_in_batches_the_counts_and_the_refusal_are_those_of_one_batch(cli, db_url, tmp_path, capsys, monkeypatch, batch_size):
    lines = small_export()
    next(line for line in lines if line.get("table") == "benchmark_runs")["row"]["hardwareModel"] = "NVIDIA Z9000"
    path = write(tmp_path, lines)
    _handed(monkeypatch, batch_size=batch_size)
    before = counts(db_url)
    assert cli("ingest", "kernelindex-export", "--dry-run", str(path)) == 1
    dry = capsys.readouterr().err
    assert counts(db_url) == before
    assert cli("ingest", "kernelindex-export", str(path)) == 1
    real = capsys.readouterr().err
    told = "entries: 8 found = 3 inserted + 0 unchanged + 0 superseded + 0 failed + 4 skipped + 1 rejected"
    assert told in dry and told in real
    assert "[hardware]" in real and "Z9000" in real
    assert counts(db_url)["runs"] == before["runs"] + 3


def test_a_source_files_runs_make_their_record_history_in_observed_order(cli, db_url, tmp_path):
    """The pipeline's record events apply to a source file's runs as to `ingest runs`' (history-v1: the
    new runs replayed in observed order, whatever the batches): two implementations timed in one cohort,
    the slower one first, make a record and then its improvement, in batches of one or in one batch."""
    from tests.ingest.conftest import fetch
    from tests.ingest.sources.test_kernelindex_export import implementation, measurement, run

    lines = small_export()
    first = next(line for line in lines if line.get("table") == "benchmark_runs" and line["row"]["id"] == "run-lat")
    later = run("run-lat-2", "case-gm", "impl-03", "src-gm", "gpumode-kernelbot", value=39756)
    for row in (later["row"], later["row"]["manifest"]["run"]["spec"]):
        row["observedAt"] = "2025-06-09T08:47:43.496Z"
    at = lines.index(first)
    lines[at + 1:at + 1] = [later, measurement("m9", "run-lat-2", "mean", 39756)]
    lines.insert(lines.index(first), implementation("impl-03", "op-gm", "prj-u", "kernelbot-fp8-mm-20001"))
    assert cli("ingest", "kernelindex-export", str(write(tmp_path, lines))) == 0
    events = fetch(db_url, "SELECT e.kind, i.slug, p.slug AS previous, e.improvement_percent FROM record_events e "
                           "JOIN runs r ON r.id = e.run_id JOIN implementations i ON i.id = r.implementation_id "
                           "LEFT JOIN runs pr ON pr.id = e.previous_run_id LEFT JOIN implementations p ON p.id = pr.implementation_id "
                           "JOIN workloads w ON w.id = e.workload_id WHERE w.suite = 'gpumode-kernelbot' ORDER BY e.id")
    def impl(slug):  # the implementation's slug as the export names it (the index adds its own suffix)
        return None if slug is None else "kernelbot-fp8-mm-20001" if "20001" in slug else "kernelbot-fp8-mm-18667"

    assert [(e["kind"], impl(e["slug"]), impl(e["previous"])) for e in events] == [
        ("new_record", "kernelbot-fp8-mm-18667", None),
        ("new_record", "kernelbot-fp8-mm-20001", "kernelbot-fp8-mm-18667"),
    ]
    assert round(events[1]["improvement_percent"], 1) == round((49756 - 39756) / 49756 * 100, 1)
