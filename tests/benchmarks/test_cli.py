"""python -m benchmarks and the helper scripts, on the CPU with eager only (no compile here)."""

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from benchmarks import gpu_check, overhead
from benchmarks.__main__ import main
from benchmarks.records import read_jsonl

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "bench"
SCHEMA = json.loads((ROOT / "schemas" / "run-record.schema.json").read_text(encoding="utf-8"))


def run_cli(*arguments, tmp_path):
    out = tmp_path / "runs.jsonl"
    status = main([*arguments, "--device", "cpu", "--trials", "3", "--warmup", "1", "--out", str(out)])
    return status, read_jsonl(out)


def test_set_batch_size_changes_the_bindings_recorded(tmp_path):
    status, records = run_cli(
        "--file", str(FIXTURES / "tiny_mlp.py"), "--slug", "my-slug", "--impl", "torch_eager",
        "--set", "batch_size=5", tmp_path=tmp_path,
    )
    assert status == 0
    (record,) = records
    jsonschema.validate(record, SCHEMA)
    assert record["workload"]["slug"] == "my-slug"
    assert record["configuration"]["bindings"] == {"batch_size": 5, "in_features": 16}
    assert record["status"] == "passed"


def test_set_of_a_derived_constant_and_several_files(tmp_path):
    status, records = run_cli(
        "--file", str(FIXTURES / "tiny_conv.py"), "--file", str(FIXTURES / "inputs_error.py"),
        "--impl", "torch_eager", "--set", "height=6", tmp_path=tmp_path,
    )
    assert status == 1  # one run failed
    conv, failing = records
    assert conv["workload"]["slug"] == "tiny-conv"
    assert conv["configuration"]["bindings"] == {"batch_size": 2, "in_channels": 3, "height": 6, "width": 6}
    # inputs_error has no height: asking for one is an error for that problem, not a silent no-op
    assert failing["status"] == "failed" and "height" in failing["failure_reason"]


@pytest.mark.parametrize(
    "arguments",
    [
        ["--set", "batch_size=many"],
        ["--set", "=3"],
        ["--impl", "no_such_impl"],
        ["--trials", "0"],
    ],
)
def test_bad_arguments_are_usage_errors(arguments, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["--file", str(FIXTURES / "tiny_mlp.py"), "--device", "cpu", "--out", str(tmp_path / "x"), *arguments])
    assert exit_info.value.code == 2


def test_list_impls(capsys):
    assert main(["--list-impls"]) == 0
    listed = capsys.readouterr().out
    for slug in ("torch_eager", "torch_compile_inductor", "torch_compile_inductor_reduce-overhead",
                 "torch_compile_inductor_max-autotune", "torch_compile_inductor_max-autotune-no-cudagraphs"):
        assert slug in listed


def test_module_entry_point_writes_records_to_stdout():
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--file", str(FIXTURES / "tiny_mlp.py"), "--impl", "torch_eager",
         "--device", "cpu", "--trials", "2", "--warmup", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    (line,) = completed.stdout.splitlines()
    jsonschema.validate(json.loads(line), SCHEMA)
    assert "tiny-mlp" in completed.stderr and "passed" in completed.stderr  # the table


def test_overhead_script_runs(capsys):
    assert overhead.main(["--device", "cpu", "--trials", "50", "--spread-trials", "5", "--repeats", "3",
                          "--warmup", "2"]) == 0
    printed = capsys.readouterr().out
    assert "bare loop" in printed and "coefficient of variation" in printed
    assert printed.count("   run ") == 3


def test_gpu_check_script_runs_as_a_cpu_smoke_test(tmp_path):
    status = gpu_check.main([
        "--device", "cpu", "--out", str(tmp_path), "--trials", "3", "--impl", "torch_eager",
        "--workload", f"tiny-mlp,{FIXTURES / 'tiny_mlp.py'},6",
    ])
    assert status == 0
    (record,) = read_jsonl(tmp_path / "h200_runs.jsonl")
    jsonschema.validate(record, SCHEMA)
    assert record["configuration"]["bindings"]["batch_size"] == 6
    summary = json.loads((tmp_path / "h200_summary.json").read_text(encoding="utf-8"))
    figures = summary["workloads"]["tiny-mlp"]["torch_eager"]
    assert figures["runner"]["mean_ms"] > 0 and figures["crosscheck"]["mean_ms"] > 0
    assert figures["ratio_runner_over_crosscheck"] == pytest.approx(
        figures["runner"]["mean_ms"] / figures["crosscheck"]["mean_ms"])


def test_gpu_check_records_a_missing_reference_file(tmp_path):
    gpu_check.main(["--device", "cpu", "--out", str(tmp_path), "--trials", "2", "--impl", "torch_eager",
                    "--workload", f"absent,{tmp_path / 'absent.py'},2"])
    summary = json.loads((tmp_path / "h200_summary.json").read_text(encoding="utf-8"))
    assert summary["errors"] and "absent" in summary["errors"][0]


def test_gpu_check_retries_a_tolerance_failure_at_kernelbench_tolerance(tmp_path, monkeypatch):
    from benchmarks import runners

    def slightly_off(model):
        return lambda *inputs: model(*inputs) + 1e-3  # fails 1e-4, passes 1e-2

    monkeypatch.setitem(runners.IMPLEMENTATIONS, "slightly-off",
                        runners.custom_implementation("slightly-off", slightly_off))
    status = gpu_check.main([
        "--device", "cpu", "--out", str(tmp_path), "--trials", "3", "--impl", "slightly-off",
        "--workload", f"tiny-mlp,{FIXTURES / 'tiny_mlp.py'},4",
    ])
    assert status == 1
    (failed,) = read_jsonl(tmp_path / "h200_runs.jsonl")
    assert failed["status"] == "failed" and failed["correctness"]["atol"] == 1e-4
    (retried,) = read_jsonl(tmp_path / "h200_runs_kernelbench_tolerance.jsonl")
    jsonschema.validate(retried, SCHEMA)
    assert retried["status"] == "passed" and retried["correctness"]["atol"] == 1e-2
    summary = json.loads((tmp_path / "h200_summary.json").read_text(encoding="utf-8"))
    figures = summary["workloads"]["tiny-mlp"]["slightly-off"]
    assert figures["runner"]["status"] == "failed"
    assert figures["runner_at_kernelbench_tolerance"]["status"] == "passed"
    assert "no independent timing" in figures["crosscheck"]["error"]
