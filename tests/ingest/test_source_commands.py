"""`kernelindex ingest kernelindex-export` (and the suites and sources it fills), on a small export made
here: exit statuses, --strict and --dry-run meaning exactly what they say, a refusal naming file, line
and field, a truncated .zst as one error, and what the suites and sources queries then say."""

from __future__ import annotations

import asyncio

from kernelindex.db.engine import in_own_transaction
from kernelindex.services.suites import source_overviews, suite_overviews
from tests.ingest.conftest import counts
from tests.ingest.sources.test_kernelindex_export import NAME, small_export, write


def _line_of_run(lines: list[dict], run_id: str) -> int:
    return next(i for i, line in enumerate(lines, 1) if line.get("table") == "benchmark_runs" and line["row"]["id"] == run_id)


def test_an_export_lands_and_again_changes_nothing(cli, db_url, tmp_path, capsys):
    path = write(tmp_path, small_export(), compress=True)
    assert cli("ingest", "kernelindex-export", str(path)) == 0
    out, err = capsys.readouterr()
    assert "entries: 8 found = 4 inserted + 0 unchanged + 0 superseded + 0 failed + 4 skipped + 0 rejected" in err
    assert "skipped (record_events: not modelled)" in out and "skipped (serving_runs: not modelled)" in out
    after = counts(db_url)
    assert cli("ingest", "kernelindex-export", str(path)) == 0
    err = capsys.readouterr().err
    # the very same bytes: known unchanged from the digest, unread
    assert "entries: 8 found = 0 inserted + 4 unchanged + 0 superseded + 0 failed + 4 skipped + 0 rejected" in err and "is the very file imported on" in err
    assert counts(db_url) == after
    # the same content in other bytes (plain, not compressed) is read and found unchanged run by run
    plain = write(tmp_path, small_export())
    assert cli("ingest", "kernelindex-export", str(plain)) == 0
    err = capsys.readouterr().err
    assert "very file" not in err and "entries: 8 found = 0 inserted + 4 unchanged + 0 superseded + 0 failed + 4 skipped + 0 rejected" in err
    assert counts(db_url) == after

    suites = {s.suite: s for s in asyncio.run(in_own_transaction(db_url, suite_overviews))}
    assert suites["gpumode-kernelbot"].workload_count == 1 and suites["gpumode-kernelbot"].run_count == 2
    assert suites["flashinfer-bench"].workload_count == 2 and suites["flashinfer-bench"].run_count == 2
    assert suites["flashinfer-bench"].latest_revision == NAME.split("-")[-1].split(".")[0]
    # the latency run on the MI300X holds the record; the score is kept apart
    assert suites["gpumode-kernelbot"].eligible_run_count == 1
    sources = {s.key: s for s in asyncio.run(in_own_transaction(db_url, source_overviews))}
    assert sources["gpumode-kernelbot"].licence == "June 9 Researcher Reciprocity License v1.0"
    assert sources["gpumode-kernelbot"].attribution == "GPU Mode and the KernelBot dataset"
    assert sources["flashinfer-bench"].latest_route == path.name and sources["flashinfer-bench"].run_count == 2


def test_a_gpu_the_catalogue_lacks_is_a_refusal_naming_file_line_and_field(cli, db_url, tmp_path, capsys):
    lines = small_export()
    run = next(line for line in lines if line.get("table") == "benchmark_runs" and line["row"]["id"] == "run-lat")
    run["row"]["hardwareModel"] = "NVIDIA Z9000"
    path = write(tmp_path, lines)
    assert cli("ingest", "kernelindex-export", str(path)) == 1
    err = capsys.readouterr().err
    assert f"{path.name}: line {_line_of_run(lines, 'run-lat')} [hardware]:" in err and "Z9000" in err
    assert "entries: 8 found = 3 inserted + 0 unchanged + 0 superseded + 0 failed + 4 skipped + 1 rejected" in err
    # a file with a refusal is read again (its problems are told again), not known unchanged
    assert cli("ingest", "kernelindex-export", str(path)) == 1
    err = capsys.readouterr().err
    assert "very file" not in err and "[hardware]" in err


def test_strict_writes_nothing_and_dry_run_writes_nothing(cli, db_url, tmp_path, capsys):
    lines = small_export()
    next(line for line in lines if line.get("table") == "benchmark_runs")["row"]["hardwareModel"] = "NVIDIA Z9000"
    before = counts(db_url)
    assert cli("ingest", "kernelindex-export", "--strict", str(write(tmp_path, lines))) == 3
    assert counts(db_url) == before
    good = write(tmp_path, small_export(), name="catalog-2026-08-17-0123abcd.jsonl")
    assert cli("ingest", "kernelindex-export", "--dry-run", str(good)) == 0
    err = capsys.readouterr().err
    assert "would import" in err and "entries: 8 found = 4 inserted" in err
    assert counts(db_url) == before


def test_a_truncated_zst_is_one_error(cli, db_url, tmp_path, capsys):
    path = write(tmp_path, small_export() * 40, compress=True)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    before = counts(db_url)
    assert cli("ingest", "kernelindex-export", str(path)) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and path.name in err
    assert counts(db_url) == before


def test_a_table_the_format_does_not_carry_is_refused_line_by_line(cli, db_url, tmp_path, capsys):
    """The format's tables the index does not model (record_events, serving_runs) are skipped and counted;
    a table it is not known to carry is a refusal naming file, line and the field `table`: the rest of the
    export lands (exit 1), and --strict writes nothing (exit 3)."""
    lines = [*small_export(), {"table": "kernel_traces", "row": {"id": "kt1", "nsys": "…"}}]
    path = write(tmp_path, lines)
    before = counts(db_url)
    assert cli("ingest", "kernelindex-export", "--strict", str(path)) == 3
    assert counts(db_url) == before
    capsys.readouterr()
    assert cli("ingest", "kernelindex-export", str(path)) == 1
    out, err = capsys.readouterr()
    assert f"{path.name}: line {len(lines)} (kernel_traces) [table]: unknown table 'kernel_traces'" in err
    assert "entries: 9 found = 4 inserted + 0 unchanged + 0 superseded + 0 failed + 4 skipped + 1 rejected" in err and "4 skipped + 1 refused" in err
    assert "skipped (serving_runs: not modelled)" in out and "refused (kernel_traces)" in out
    assert "skipped (kernel_traces" not in out


def test_a_source_file_is_written_through_the_pipeline_in_the_verbs_mode(cli, db_url, tmp_path, capsys, monkeypatch):
    """The source verbs share the one pipeline's modes (kernelindex.ingest.pipeline) with `ingest runs` and
    `ingest kernelbench`: each ingest opens it once, in the mode its flags name."""
    from kernelindex.ingest import pipeline as pipeline_module

    opened: list[pipeline_module.Mode] = []
    real_open = pipeline_module.Pipeline.open

    def recording(database_url, mode, summary, **kwargs):
        opened.append(mode)
        return real_open(database_url, mode, summary, **kwargs)

    monkeypatch.setattr(pipeline_module.Pipeline, "open", recording)
    bad = small_export()
    next(line for line in bad if line.get("table") == "benchmark_runs")["row"]["hardwareModel"] = "NVIDIA Z9000"
    before = counts(db_url)
    assert cli("ingest", "kernelindex-export", "--strict", str(write(tmp_path, bad, name="catalog-2026-08-16-0123abcd.jsonl"))) == 3
    assert cli("ingest", "kernelindex-export", "--dry-run", str(write(tmp_path, small_export()))) == 0
    assert counts(db_url) == before
    assert cli("ingest", "kernelindex-export", str(write(tmp_path, small_export()))) == 0
    assert counts(db_url) != before
    Mode = pipeline_module.Mode
    assert opened == [Mode.STRICT, Mode.DRY_RUN, Mode.DEFAULT]
