"""One summary for every way in (kernelindex.ingest.summary, issue 24 point 1): what each found is accounted
for once, `found = inserted + unchanged + superseded + failed + skipped + rejected`, checked by the way in
itself (an AssertionError otherwise), and told by one printer (kernelindex.cli.ingest.report).

One test per way in: `ingest runs` (default, batches of one, dry run, and again through the known-lines
path), `ingest kernelbench` (including runs that supersede, which the two summaries it had before counted
twice), a source file (`ingest kernelindex-export`), `submitRuns` (tests/api/test_tokens.py, beside its
fixtures), the fleet worker's write and the seed."""

from __future__ import annotations

import asyncio
import re

import pytest

from kernelindex.db.engine import in_own_transaction
from kernelindex.ingest.errors import InputProblem
from kernelindex.ingest.summary import IngestSummary
from tests.api.helpers import seed_record, synthetic_records, write_records
from tests.ingest.conftest import entry, write_timing
from tests.ingest.sources.test_kernelindex_export import small_export, write
from tests.ingest.test_ingest_runs import _mixed_file

IDENTITY = re.compile(
    r"kernelindex: (?P<unit>[a-z ]+): (?P<found>[\d,]+) found = (?P<new>[\d,]+) inserted \+ (?P<unchanged>[\d,]+) unchanged"
    r" \+ (?P<superseded>[\d,]+) superseded \+ (?P<failed>[\d,]+) failed \+ (?P<skipped>[\d,]+) skipped"
    r" \+ (?P<rejected>[\d,]+) rejected$", re.M,
)


def identity(err: str) -> dict[str, int | str]:
    """The identity line a command printed, its terms as numbers; that they add up is asserted here."""
    (match,) = list(IDENTITY.finditer(err))
    terms: dict[str, int | str] = {k: int(v.replace(",", "")) for k, v in match.groupdict().items() if k != "unit"}
    terms["unit"] = match["unit"]
    assert terms["found"] == sum(int(terms[k]) for k in ("new", "unchanged", "superseded", "failed", "skipped", "rejected"))
    return terms


def rows(out: str) -> dict[str, int]:
    table = {}
    for line in out.splitlines():
        label, _, value = line.rpartition(" ")
        if label.strip() and value.replace(",", "").isdigit():
            table[label.strip()] = int(value.replace(",", ""))
    return table


# -- the type itself ----------------------------------------------------------------------------------


def test_a_summary_that_does_not_add_up_is_an_internal_error():
    summary = IngestSummary(unit="timing entries", found=4, inserted=2, superseded=1, unchanged=1)
    summary.skip("level not imported (--levels)", "a.json: level1/1_A.py")
    summary.reject([InputProblem("a.json", "level1/2_B.py", "expected an object")])
    assert summary.found == 5 and summary.accounted == 5  # 1 new + 1 superseded + 1 unchanged + 1 skipped + 1 rejected
    assert summary.check() is summary
    summary.unchanged += 1  # counted twice
    with pytest.raises(AssertionError, match="timing entries: 5 found but 6 accounted for"):
        summary.check()


def test_the_table_under_what_was_found_adds_up_to_it_and_a_dry_run_says_would():
    summary = IngestSummary(unit="entries", found=4, inserted=2, superseded=1, unchanged=1, failed=1)
    table = dict((label.strip(), value) for label, value in summary.check().table())
    assert table["entries"] == 4 == sum(table[k] for k in ("runs inserted", "runs unchanged", "runs superseded",
                                                           "failed (no timing recorded)", "skipped", "rejected"))
    dry = [label.strip() for label, _ in summary.table(dry_run=True)]
    assert "runs that would be inserted" in dry and "runs inserted" not in dry


def test_batches_add_up_with_their_examples_and_problems_kept_under_the_caps():
    whole = IngestSummary()
    for n in range(3):
        part = IngestSummary(found=2, inserted=1, unchanged=1, inserted_run_ids=[n])
        part.skip("a reason", *(f"example {n}.{i}" for i in range(8)), count=8)
        part.found += 8
        whole.add_part(part)
    assert (whole.found, whole.skipped_count, whole.inserted_run_ids) == (30, 24, [])
    assert len(whole.skipped_examples["a reason"]) == 10  # MAX_SKIP_EXAMPLES
    whole.check()


# -- ingest runs ---------------------------------------------------------------------------------------


def test_ingest_runs_accounts_for_every_line_in_every_mode(cli, db_url, tmp_path, capsys):
    path = _mixed_file(tmp_path, bad=True)
    with open(path, "a") as handle:
        handle.write("not json\n\n")  # a bad line (rejected) and a blank one (nothing found)
    # catalogue lines take effect and are not runs; the eight records and the bad line are found
    expected = {"unit": "records", "found": 9, "new": 5, "unchanged": 1, "superseded": 1, "failed": 0, "skipped": 0,
                "rejected": 2}
    assert cli("ingest", "runs", "--dry-run", path) == 1
    assert identity(capsys.readouterr().err) == expected
    assert cli("ingest", "runs", "--batch-size", "1", path) == 1
    captured = capsys.readouterr()
    assert identity(captured.err) == expected
    # the closing table is the runs table it was (its "runs inserted" counts the superseding run too)
    assert (rows(captured.out)["runs inserted"], rows(captured.out)["runs superseded"]) == (6, 1)
    # again: the very lines are known (not checked again), and every one is still accounted for
    assert cli("ingest", "runs", path) == 1
    assert identity(capsys.readouterr().err) == {**expected, "new": 0, "superseded": 0, "unchanged": 7}


def test_an_empty_file_is_one_entry_rejected(cli, db_url, tmp_path, capsys):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    assert cli("ingest", "runs", str(path)) == 1
    assert identity(capsys.readouterr().err)["rejected"] == 1


# -- ingest kernelbench ----------------------------------------------------------------------------------

ARGS = ("--revision", "abc1234", "--observed", "2026-06-01")
SQUARE, RELU = "1_Square_matrix_multiplication_.py", "2_ReLU.py"


def test_kernelbench_entries_that_supersede_are_counted_once(cli, db_url, checkout, capsys):
    """A timing that changes at the same upstream revision supersedes its run, one entry (the two summaries
    the import had counted a superseding run as inserted and superseded both: 2 of 1 entry). A null entry
    that gains a timing is a new run (a null entry names no device: another environment), and a timed one
    that loses it is a failed entry, whether its failed run is new or already stored."""
    outcomes = ("runs inserted", "runs unchanged", "runs superseded", "failed (no timing recorded)", "skipped", "rejected")
    steps = [
        ({SQUARE: entry(0.02), RELU: None}, {"new": 1, "failed": 1}),
        ({SQUARE: entry(0.03), RELU: entry(0.01)}, {"new": 1, "superseded": 1}),
        ({SQUARE: None, RELU: entry(0.01)}, {"unchanged": 1, "failed": 1}),
        ({SQUARE: None, RELU: entry(0.01)}, {"unchanged": 1, "failed": 1}),
    ]
    for timings, counted in steps:
        write_timing(checkout, "H100_Modal", "torch", {"level1": timings})
        assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--levels", "1") == 0
        captured = capsys.readouterr()
        terms = identity(captured.err)
        zero = dict.fromkeys(("new", "unchanged", "superseded", "failed", "skipped", "rejected"), 0)
        assert terms == {"unit": "timing entries", "found": 2, **zero, **counted}, captured.err
        table = rows(captured.out)
        assert table["timing entries"] == 2 == sum(table[o] for o in outcomes)


# -- a source file ---------------------------------------------------------------------------------------


def test_a_source_file_accounts_for_its_runs_and_the_lines_it_skipped_or_refused(cli, db_url, tmp_path, capsys):
    lines = [*small_export(), {"table": "kernel_traces", "row": {"id": "kt1"}}]
    run = next(line for line in lines if line.get("table") == "benchmark_runs")
    run["row"]["hardwareModel"] = "NVIDIA Z9000"  # a run the import refuses
    path = write(tmp_path, lines)
    assert cli("ingest", "kernelindex-export", str(path)) == 1
    captured = capsys.readouterr()
    # four run parts (one refused), four lines of tables not modelled, one line of a table unknown
    assert identity(captured.err) == {"unit": "entries", "found": 9, "new": 3, "unchanged": 0, "superseded": 0,
                                      "failed": 0, "skipped": 4, "rejected": 2}
    assert re.search(r"skipped 2 entries: (record_events|serving_runs): not modelled", captured.err)
    assert "lines: " in captured.err and "+ 4 skipped + 1 refused" in captured.err


# -- the writer's callers: submitRuns, the fleet worker, the seed ----------------------------------------------


def test_the_fleet_worker_s_write_is_accounted(db_url):
    """The worker stores its measurement through RunWriter.write with its identity, as write_records does."""
    records = synthetic_records(3)
    first = asyncio.run(write_records(db_url, records))
    changed = {**records[2], "statistics": {**records[2]["statistics"], "mean": 1.3, "min": 1.29, "max": 1.31}}
    again = asyncio.run(write_records(db_url, [*records[:2], changed]))
    assert (first.found, first.inserted) == (3, 3) and first.check() is first
    assert (again.found, again.unchanged, again.superseded, again.new) == (3, 2, 1, 0) and again.check() is again


async def test_the_seed_is_accounted(session):
    from kernelindex.ingest.seed import load_seed

    summary = await load_seed(session)
    assert (summary.runs.found, summary.runs.unchanged) == (8, 8)
    assert summary.runs.check() is summary.runs


def test_the_seed_command_tells_its_runs_identity(cli, db_url, capsys):
    assert cli("seed") == 0
    assert identity(capsys.readouterr().err) == {"unit": "records", "found": 8, "new": 0, "unchanged": 8, "superseded": 0,
                                                 "failed": 0, "skipped": 0, "rejected": 0}


def test_one_record_as_submit_runs_and_the_worker_hand_it_to_the_writer(db_url):
    """The writer's summary of one record, as submitRuns and the worker hand it one: found, and unchanged."""
    from kernelindex.ingest.records import RunRecord
    from kernelindex.ingest.writer import RunWriter

    async def work(session):
        return await RunWriter().write(session, [RunRecord(seed_record(0), "submitRuns", "0")])

    summary = asyncio.run(in_own_transaction(db_url, work))
    assert (summary.found, summary.unchanged, summary.accounted) == (1, 1, 1)
