"""Every timing entry of a KernelBench import is accounted for, once, with its reason.

inserted + unchanged + superseded + failed + skipped + rejected = entries found, whatever the files
hold: null entries (the source timed nothing), files of an unknown configuration, levels not asked
for, problems missing from the checkout, problems whose trace failed or timed out.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

from tests.ingest.conftest import FIXTURES, entry, snapshot, write_timing

ARGS = ("--revision", "abc1234", "--observed", "2026-06-01")
OUTCOMES = ("runs inserted", "runs unchanged", "runs superseded", "failed (no timing recorded)", "skipped", "rejected")


def table(out: str) -> dict[str, int]:
    rows = {}
    for line in out.splitlines():
        if line.strip():
            label, value = line.rsplit(None, 1)
            rows[label.strip()] = int(value.replace(",", ""))
    return rows


def accounted(rows: dict[str, int]) -> int:
    return sum(rows[o] for o in OUTCOMES)


def runs_of(db_url: str, slug: str) -> list[dict]:
    data = snapshot(db_url)
    (workload,) = [w for w in data["workloads"] if w["slug"] == slug]
    return [r for r in data["runs"] if r["workload_id"] == workload["id"]]


def test_null_entry_is_a_failed_run_and_unknown_configuration_is_counted(cli, db_url, checkout, capsys):
    write_timing(checkout, "H100_Modal", "torch", {"level1": {"2_ReLU.py": None, "1_Square_matrix_multiplication_.py": entry(0.02)}})
    write_timing(checkout, "H100_Modal", "torch_matx2", {"level1": {"2_ReLU.py": entry(0.01), "9_Other.py": entry(0.3)}})
    write_timing(checkout, "H100_Modal", "cleaned", {"level1": {"2_ReLU.py": entry(0.01)}, "level2": {"1_Conv2d_ReLU_BiasAdd.py": None}})
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    captured = capsys.readouterr()
    rows = table(captured.out)
    assert rows["timing entries"] == 6 == accounted(rows)
    assert rows["runs inserted"] == 1 and rows["failed (no timing recorded)"] == 1 and rows["rejected"] == 0
    assert rows["skipped"] == 4
    assert rows["timing file of an unknown configuration (torch_matx2)"] == 2
    assert rows["timing file of an unknown configuration (cleaned)"] == 2
    assert "timing entries: 6 found = 1 inserted + 0 unchanged + 0 superseded + 1 failed + 4 skipped + 0 rejected" in captured.err
    (failed,) = runs_of(db_url, "kernelbench-l1-p2-relu")
    assert failed["status"] == "failed" and failed["failure_reason"] == "the source recorded no timing"
    assert failed["mean_ms"] is None

    # Again: nothing new, and the same accounting.
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    rows = table(capsys.readouterr().out)
    assert rows["runs inserted"] == 0 and rows["runs unchanged"] == 1 and rows["failed (no timing recorded)"] == 1
    assert accounted(rows) == rows["timing entries"] == 6
    assert len(runs_of(db_url, "kernelbench-l1-p2-relu")) == 1


def test_levels_not_asked_for_are_counted_not_warned(cli, db_url, checkout, capsys):
    timings = {f"level{level}": {f"{n}_P{n}.py": entry(0.1 + n / 1000) for n in range(1, 101)} for level in (1, 2, 4)}
    timings["level3"] = {"1_MLP.py": entry(0.5)}
    write_timing(checkout, "H100_Modal", "torch", timings)
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--levels", "3") == 0
    captured = capsys.readouterr()
    rows = table(captured.out)
    assert rows["timing entries"] == 301 == accounted(rows)
    assert rows["level not imported (--levels)"] == 300 and rows["runs inserted"] == 1
    # One line says it, with a few examples: not one warning per entry.
    assert len(captured.err.splitlines()) < 20
    assert re.search(r"skipped 300 timing entries: level not imported \(--levels\): .*\(and 290 more\)", captured.err)


def test_failed_trace_stores_no_runs_at_a_guessed_configuration(cli, db_url, checkout, capsys):
    """A problem whose trace fails (or times out) and whose configuration its source does not state either (no
    get_inputs: these two never get past their import) has no known configuration: its entries are skipped,
    nothing is stored at a guess, and importing again adds nothing. (A failed trace of a problem that does state
    its configuration keeps its timings: tests/ingest/test_untraced_problems.py.)"""
    level2 = checkout / "KernelBench" / "level2"
    shutil.copy(FIXTURES / "kernelbench_bad" / "raises_on_import.py", level2 / "7_RaisesOnImport.py")
    shutil.copy(FIXTURES / "kernelbench_bad" / "hangs.py", level2 / "8_Hangs.py")
    write_timing(
        checkout, "H100_Modal", "torch",
        {"level2": {"7_RaisesOnImport.py": entry(0.3), "8_Hangs.py": entry(0.4), "1_Conv2d_ReLU_BiasAdd.py": entry(0.2)}},
    )
    for _ in range(2):
        assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--timeout", "5") == 0
        captured = capsys.readouterr()
        rows = table(captured.out)
        assert rows["timing entries"] == 3 == accounted(rows)
        assert rows["problem whose configuration is unknown (its trace failed and its constants cannot be read without "
                    "running it)"] == 2
        assert "level2/8_Hangs.py" in captured.err
        assert runs_of(db_url, "kernelbench-l2-p7-raisesonimport") == []
        assert runs_of(db_url, "kernelbench-l2-p8-hangs") == []
        assert len(runs_of(db_url, "kernelbench-l2-p1-conv2d-relu-biasadd")) == 1


def test_malformed_entries_are_rejected_with_their_place(cli, db_url, checkout, capsys):
    write_timing(checkout, "H100_Modal", "torch", {"level1": {"2_ReLU.py": "fast", "1_Square_matrix_multiplication_.py": entry(0.02)}, "notes": "x"})
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 1
    captured = capsys.readouterr()
    rows = table(captured.out)
    assert rows["timing entries"] == 3 == accounted(rows)
    assert rows["rejected"] == 2 and rows["runs inserted"] == 1
    assert "results/timing/H100_Modal/baseline_time_torch.json: level1/2_ReLU.py: expected an object" in captured.err
    assert "baseline_time_torch.json: notes: expected 'levelN'" in captured.err


def test_a_timed_out_trace_is_retried_on_the_next_import(cli, db_url, checkout, capsys):
    """A trace cut short by the timeout (a loaded machine) leaves the problem without semantics, its run stored
    at the configuration its constants state; the next import, given the time (a timeout is never kept as the
    file's outcome), traces the same file, and the run is the one at the traced configuration."""
    relu = (checkout / "KernelBench" / "level1" / "2_ReLU.py").read_text()
    slow = checkout / "KernelBench" / "level1" / "3_SlowReLU.py"
    slow.write_text("import time\ntime.sleep(4)  # a trace that takes longer than --timeout\n" + relu)
    write_timing(checkout, "H100_Modal", "torch", {"level1": {"3_SlowReLU.py": entry(0.05)}})
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--timeout", "1") == 0
    captured = capsys.readouterr()
    assert "imported without semantics: level1/3_SlowReLU.py" in captured.err
    (untraced,) = runs_of(db_url, "kernelbench-l1-p3-slowrelu")
    revisions = [r for r in snapshot(db_url)["workload_revisions"] if r["source_filename"] == "3_SlowReLU.py"]
    assert len(revisions) == 1 and revisions[0]["semantics"] is None
    assert json.loads(revisions[0]["canonical_bindings"]) == {"batch_size": 16, "dim": 128}  # as its constants state
    assert untraced["configuration_key"] == revisions[0]["canonical_configuration_key"]

    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--timeout", "60") == 0
    capsys.readouterr()
    (run,) = runs_of(db_url, "kernelbench-l1-p3-slowrelu")
    revisions = [r for r in snapshot(db_url)["workload_revisions"] if r["source_filename"] == "3_SlowReLU.py"]
    assert len(revisions) == 1 and revisions[0]["semantics"] is not None  # the same revision, traced now
    assert run["workload_revision_id"] == revisions[0]["id"]
    assert run["configuration_key"] == revisions[0]["canonical_configuration_key"]
    assert run["bindings"] == revisions[0]["canonical_bindings"]
    assert run["id"] == untraced["id"]  # the traced configuration is the one its constants stated: the same run


# --- hostile checkouts: problem files and timing files ----------------------------------------------------


def _spec(level: int, filename: str):
    from kernelindex.ingest.kernelbench import ProblemFile
    from kernelindex.ingest.workloads import WorkloadSpec

    problem = ProblemFile(level, 1, "P", Path("/nowhere") / filename, b"", "")
    spec = WorkloadSpec(
        suite="kernelbench", level=level, problem_number=1, name="P", reference_source="", source_filename=filename,
        upstream_revision="abc1234", source_sha256="0" * 64, source_size=0,
    )
    spec.canonical_bindings = {"batch_size": 16}
    spec.canonical_dtype = "fp32"
    return problem, spec


def test_problem_files_that_are_not_plain_files_inside_the_checkout_are_refused(tmp_path, checkout):
    from kernelindex.ingest.kernelbench import MAX_PROBLEM_BYTES, discover_problems

    level1 = checkout / "KernelBench" / "level1"
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0\n")
    (level1 / "3_Link_outside.py").symlink_to(secret)
    (level1 / "4_Link_inside.py").symlink_to(level1 / "2_ReLU.py")
    os.mkfifo(level1 / "5_Fifo.py")
    (level1 / "6_Huge.py").write_bytes(b"#" * (MAX_PROBLEM_BYTES + 1))
    (level1 / "99999999999_Big_number.py").write_text((level1 / "2_ReLU.py").read_text())
    (level1 / "0_Zero.py").write_text((level1 / "2_ReLU.py").read_text())
    (level1 / "7_Folder.py").mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "1_Elsewhere.py").write_text("x = 1\n")
    (checkout / "KernelBench" / "level4").rename(tmp_path / "old_level4")
    (checkout / "KernelBench" / "level4").symlink_to(outside)

    refused = []
    found = discover_problems(checkout, [1, 2, 3, 4], refused)

    assert sorted(p.path.name for p in found if p.level == 1) == ["1_Square_matrix_multiplication_.py", "2_ReLU.py"]
    assert all(p.level != 4 for p in found)
    reasons = {r.file: r.reason for r in refused}
    assert all(r.where == "file" for r in refused)
    assert reasons == {
        "KernelBench/level1/3_Link_outside.py": "a symbolic link (a problem file must be a regular file inside the checkout)",
        "KernelBench/level1/4_Link_inside.py": "a symbolic link (a problem file must be a regular file inside the checkout)",
        "KernelBench/level1/5_Fifo.py": "not a regular file (a FIFO)",
        "KernelBench/level1/6_Huge.py": f"{MAX_PROBLEM_BYTES + 1:,} bytes, over the {MAX_PROBLEM_BYTES:,}-byte limit",
        "KernelBench/level1/7_Folder.py": "not a regular file (a directory)",
        "KernelBench/level1/99999999999_Big_number.py": "problem number 99999999999 is outside 1..9999",
        "KernelBench/level1/0_Zero.py": "problem number 0 is outside 1..9999",
        "KernelBench/level4": "the level folder leads outside the checkout",
    }
    assert not any("root:x" in p.source for p in found)


def test_refused_problem_files_are_reported_and_counted_by_the_import(cli, db_url, checkout, capsys):
    level1 = checkout / "KernelBench" / "level1"
    (level1 / "3_Passwd.py").symlink_to("/etc/passwd")
    (level1 / "99999999999_X.py").write_text((level1 / "2_ReLU.py").read_text())
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--levels", "1") == 0
    err = capsys.readouterr()
    assert "refused problem file KernelBench/level1/3_Passwd.py: file: a symbolic link" in err.err
    assert "refused problem file KernelBench/level1/99999999999_X.py: file: problem number 99999999999" in err.err
    assert re.search(r"^kernelindex: sandbox: \w+", err.err, re.M)
    assert table(err.out)["problem files refused"] == 2
    assert table(err.out)["workloads inserted"] == 2


def test_entry_hardware_wins_over_its_folder_and_the_contradiction_is_reported(tmp_path):
    from kernelindex.ingest.kernelbench import timing_records
    from kernelindex.ingest.summary import IngestSummary

    write_timing(tmp_path, "H100_Modal", "torch", {"level1": {
        "1_A.py": entry(1.0, hardware="NVIDIA B200"), "2_B.py": entry(1.1, hardware="NVIDIA B200"),
        "3_C.py": entry(1.2),
    }})
    problems = {(1, name): _spec(1, name) for name in ("1_A.py", "2_B.py", "3_C.py")}
    summary = IngestSummary()
    records, _, rejected = timing_records(tmp_path, problems, set(), {1}, "abc1234", "2026-06-01", summary)

    assert rejected == []
    names = {r.where: r.data["environment"]["hardware"]["product_name"] for r in records}
    assert names == {"level1/1_A.py": "NVIDIA B200", "level1/2_B.py": "NVIDIA B200", "level1/3_C.py": "NVIDIA H100 80GB HBM3"}
    (problem,) = summary.contradictions
    assert (problem.file, problem.key) == ("results/timing/H100_Modal/baseline_time_torch.json", "hardware")
    assert "'NVIDIA B200'" in problem.reason and "H100_Modal says H100" in problem.reason and problem.reason.startswith("2 entries")
    assert summary.warnings == [str(problem)]


def test_building_records_from_a_large_timing_file_is_linear(tmp_path):
    from kernelindex.ingest.kernelbench import timing_records
    from kernelindex.ingest.summary import IngestSummary

    def run(size: int) -> float:
        root = tmp_path / str(size)
        # One entry in ten is a problem of the checkout (a record is built and checked), the rest name
        # problem files it does not have (skipped, with examples): the two paths a big file takes.
        write_timing(root, "H100_Modal", "torch", {"level1": {
            f"{i}_P.py": entry(1.0) for i in range(size)
        }})
        problems = {(1, f"{i}_P.py"): _spec(1, f"{i}_P.py") for i in range(0, size, 10)}
        summary = IngestSummary()
        started = time.process_time()
        records, _, _ = timing_records(root, problems, set(), {1}, "abc1234", "2026-06-01", summary)
        elapsed = time.process_time() - started
        assert summary.found == size and len(records) == size // 10
        assert summary.skipped_count == size - size // 10
        return elapsed

    small = run(20_000)
    large = run(200_000)
    # Ten times the entries: linear is ~10x; quadratic would be ~100x. 3x slack for a busy machine.
    assert large < 30 * max(small, 0.01), (small, large)
