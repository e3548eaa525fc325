"""The runner on the CPU: eager and inductor on a tiny model, failures, correctness, records."""

import datetime
import hashlib
import io
import json
from pathlib import Path

import jsonschema
import pytest
import torch

from benchmarks.problems import Problem
from benchmarks.records import build_record, read_jsonl, write_jsonl
from benchmarks.runners import compare_outputs, custom_implementation
from benchmarks.sweep import TablePrinter, run_sweep

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "bench"
SCHEMA = json.loads((ROOT / "schemas" / "run-record.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())

TRIALS = 5
WARMUP = 1
WRONG_OFFSET = 1e-2


def assert_valid(record):
    errors = sorted(VALIDATOR.iter_errors(record), key=lambda error: list(error.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


class CountingWrong:
    """Adds a constant to the eager output; counts calls to prove it is never timed."""

    def __init__(self):
        self.calls = 0

    def build(self, model):
        def run(*inputs):
            self.calls += 1
            return model(*inputs) + WRONG_OFFSET

        return run


def exploding_build(model):
    raise RuntimeError("this implementation cannot be built")


@pytest.fixture(scope="module")
def sweep():
    """One sweep shared by the tests: the only inductor compile in this module."""
    wrong = CountingWrong()
    implementations = [
        "torch_eager",
        "torch_compile_inductor",
        custom_implementation("deliberately-wrong", wrong.build, title="Off by 1e-2"),
        custom_implementation("exploding", exploding_build),
    ]
    problems = [
        Problem.from_file(FIXTURES / "import_error.py"),
        Problem.from_file(FIXTURES / "tiny_mlp.py"),
        (  # a plain (slug, source, filename) tuple, as the database loader passes them
            "inputs-error",
            (FIXTURES / "inputs_error.py").read_text(encoding="utf-8"),
            str(FIXTURES / "inputs_error.py"),
        ),
    ]
    events = []
    table = io.StringIO()
    printer = TablePrinter(table, is_tty=False)

    def progress(event):
        events.append(event)
        printer(event)

    records = list(
        run_sweep(problems, implementations, device="cpu", trials=TRIALS, warmup=WARMUP, progress_callback=progress)
    )
    return {"records": records, "events": events, "table": table.getvalue(), "wrong": wrong}


def pick(records, workload, implementation):
    (record,) = [
        r for r in records if r["workload"]["slug"] == workload and r["implementation"]["slug"] == implementation
    ]
    return record


def test_every_record_is_valid_under_the_schema(sweep):
    assert len(sweep["records"]) == 3 * 4
    for record in sweep["records"]:
        assert_valid(record)
        assert record["format"] == "kernelindex.run/1"
        assert record["evidence"] == "measured"
        assert record["source"] == {"name": "KernelIndex runner", "url": None, "licence": None, "revision": "benchmarks/1"}
        assert record["observed_at"].endswith("Z")
        observed = datetime.datetime.fromisoformat(record["observed_at"].replace("Z", "+00:00"))
        assert observed.utcoffset() == datetime.timedelta(0)


def test_eager_is_measured_and_has_no_compile_time(sweep):
    record = pick(sweep["records"], "tiny-mlp", "torch_eager")
    assert record["status"] == "passed", record["failure_reason"]
    assert record["compile_time_ms"] is None
    assert len(record["samples_ms"]) == TRIALS
    assert record["statistics"]["num_trials"] == TRIALS
    assert record["statistics"]["mean"] == pytest.approx(sum(record["samples_ms"]) / TRIALS)
    assert record["correctness"]["passed"] is True
    assert record["correctness"]["max_abs_diff"] == 0.0
    assert record["configuration"] == {"bindings": {"batch_size": 4, "in_features": 16}, "dtype": "fp32"}
    assert record["implementation"] == {
        "slug": "torch_eager",
        "title": "PyTorch eager",
        "framework": "PyTorch",
        "language": "python",
        "runtime_id": "torch_eager",
        "role": "baseline",
        "licence": "BSD-3-Clause",
        "source_availability": "upstream",
        "source_url": "https://github.com/pytorch/pytorch",
    }
    source = (FIXTURES / "tiny_mlp.py").read_text(encoding="utf-8")
    assert record["workload"] == {"slug": "tiny-mlp", "source_sha256": hashlib.sha256(source.encode()).hexdigest()}
    protocol = record["protocol"]
    assert protocol["name"] == "kernelindex-cpu-perf-counter"
    assert (protocol["trials"], protocol["warmup"], protocol["l2_flush"]) == (TRIALS, WARMUP, False)


def test_inductor_reports_compile_time_apart_from_latency(sweep):
    record = pick(sweep["records"], "tiny-mlp", "torch_compile_inductor")
    assert record["status"] == "passed", record["failure_reason"]
    assert record["compile_time_ms"] > 0
    # the compiling call is not one of the samples: it takes far longer than any of them
    assert record["compile_time_ms"] > record["statistics"]["max"]
    assert len(record["samples_ms"]) == TRIALS
    assert record["correctness"]["passed"] is True
    assert record["correctness"]["atol"] == record["correctness"]["rtol"] == 1e-4
    assert record["implementation"]["compile_mode"] == "default"
    assert record["implementation"]["runtime_id"] == "torch_compile_inductor"
    assert record["implementation"]["title"] == "torch.compile (inductor)"
    assert record["implementation"]["role"] == "candidate"


def test_a_wrong_implementation_fails_the_correctness_check_and_is_never_timed(sweep):
    record = pick(sweep["records"], "tiny-mlp", "deliberately-wrong")
    assert record["status"] == "failed"
    assert record["statistics"] is None and record["samples_ms"] is None
    assert "max_abs_diff" in record["failure_reason"]
    correctness = record["correctness"]
    assert correctness["passed"] is False
    assert correctness["max_abs_diff"] == pytest.approx(WRONG_OFFSET, rel=1e-3)
    assert correctness["max_rel_diff"] > 0
    assert sweep["wrong"].calls == 1  # the checked call only: no warm-up, no trials


def test_an_implementation_that_raises_is_a_failed_run(sweep):
    record = pick(sweep["records"], "tiny-mlp", "exploding")
    assert record["status"] == "failed"
    assert "RuntimeError" in record["failure_reason"] and "cannot be built" in record["failure_reason"]


def test_a_module_that_raises_fails_every_implementation_and_the_sweep_goes_on(sweep):
    records = sweep["records"]
    assert [r["workload"]["slug"] for r in records[:4]] == ["import-error"] * 4
    for record in records[:4]:
        assert record["status"] == "failed"
        assert "ModuleNotFoundError" in record["failure_reason"]
        assert record["statistics"] is None
        assert record["configuration"]["bindings"] == {}
    # the next problem was measured
    assert pick(records, "tiny-mlp", "torch_eager")["status"] == "passed"
    for record in records[-4:]:
        assert record["workload"]["slug"] == "inputs-error"
        assert record["status"] == "failed"
        assert "get_inputs" in record["failure_reason"] and "always fails" in record["failure_reason"]
        assert record["configuration"]["bindings"] == {"batch_size": 3}


def test_progress_is_reported_for_every_measurement(sweep):
    events = sweep["events"]
    assert [e.kind for e in events] == ["started", "finished"] * 12
    assert [e.index for e in events if e.kind == "finished"] == list(range(1, 13))
    assert all(e.total == 12 for e in events)
    lines = sweep["table"].splitlines()
    assert lines[0].startswith("workload")
    assert len(lines) == 1 + 12
    eager_line = next(line for line in lines if "tiny-mlp" in line and "torch_eager" in line)
    assert "passed" in eager_line and "±" in eager_line and " ms" in eager_line
    compiled_line = next(line for line in lines if "torch_compile_inductor" in line and "tiny-mlp" in line)
    assert compiled_line.rstrip().split()[-1] == "s"  # the compile column


def test_records_round_trip_through_json_lines(sweep, tmp_path):
    path = tmp_path / "runs.jsonl"
    assert write_jsonl(sweep["records"], path) == 12
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 12
    assert read_jsonl(path) == sweep["records"]


def test_record_builder_refuses_inconsistent_records():
    common = dict(
        workload_slug="w",
        source_sha256=None,
        bindings={},
        dtype="fp32",
        implementation={"slug": "torch_eager"},
        environment={"hardware": {"product_name": "cpu"}},
        protocol={"name": "p", "version": "1"},
    )
    with pytest.raises(ValueError):
        build_record(**common, status="failed")
    with pytest.raises(ValueError):
        build_record(**common, status="passed")
    failed = build_record(**common, status="failed", failure_reason="boom", samples_ms=[1.0])
    assert failed["samples_ms"] is None and failed["statistics"] is None
    assert_valid(failed)
    assert "source_sha256" not in failed["workload"]


def test_compare_outputs_handles_structure_shape_and_nan():
    a = torch.ones(3)
    passed, reason = compare_outputs((a, a * 2), (a, a * 2), 1e-4, 1e-4)
    assert passed["passed"] and reason is None
    failed, reason = compare_outputs(torch.ones(2, 3), torch.ones(3, 2), 1e-4, 1e-4)
    assert not failed["passed"] and "shape" in reason
    failed, reason = compare_outputs((a,), (a, a), 1e-4, 1e-4)
    assert not failed["passed"] and "values" in reason
    failed, reason = compare_outputs(torch.tensor([1.0, float("nan")]), torch.ones(2), 1e-4, 1e-4)
    assert not failed["passed"] and "NaN" in reason and failed["max_abs_diff"] is None
    # the relative difference skips the reference's zeros; the absolute one covers them
    close, reason = compare_outputs(torch.tensor([5e-5, 2.0]), torch.tensor([0.0, 2.0]), 1e-4, 1e-4)
    assert close["passed"] and close["max_rel_diff"] == 0.0 and close["max_abs_diff"] == pytest.approx(5e-5)
    close, reason = compare_outputs(torch.tensor([0.0, 2.0]), torch.tensor([5e-5, 2.0]), 1e-4, 1e-4)
    assert close["passed"] and close["max_rel_diff"] == pytest.approx(1.0)
    half, _ = compare_outputs(torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.float16), 1e-2, 1e-2)
    assert half["passed"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_eager_on_cuda_gives_a_valid_record_timed_with_events():
    (record,) = run_sweep([Problem.from_file(FIXTURES / "tiny_mlp.py")], ["torch_eager"], device="cuda",
                          trials=TRIALS, warmup=WARMUP)
    assert_valid(record)
    assert record["status"] == "passed", record["failure_reason"]
    assert record["protocol"]["name"] == "kernelindex-cuda-events"
    assert record["protocol"]["l2_flush"] is True
    assert record["environment"]["hardware"]["product_name"] == torch.cuda.get_device_name(0)


def test_out_of_memory_is_a_failed_run_and_the_next_implementation_still_runs():
    def out_of_memory(model):
        def run(*inputs):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")

        return run

    records = list(run_sweep([Problem.from_file(FIXTURES / "tiny_mlp.py")],
                             [custom_implementation("oom", out_of_memory), "torch_eager"],
                             device="cpu", trials=2, warmup=0))
    oom, eager = records
    assert_valid(oom)
    assert oom["status"] == "failed"
    assert oom["failure_reason"].startswith("out of memory during the first call")
    assert eager["status"] == "passed"


def test_a_broken_forward_or_sys_exit_fails_the_problem_not_the_sweep():
    forward_raises = (
        "import torch\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x.no_such_method()\n"
        "batch_size = 2\n"
        "def get_inputs():\n"
        "    return [torch.randn(batch_size, 3, dtype=torch.float16)]\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    exits = "import sys\nsys.exit(3)\n"
    records = list(run_sweep([("forward-raises", forward_raises, None), ("exits", exits, None),
                              Problem.from_file(FIXTURES / "tiny_mlp.py")],
                             ["torch_eager"], device="cpu", trials=2, warmup=0))
    broken, exited, fine = records
    assert broken["status"] == "failed"
    assert "eager reference" in broken["failure_reason"] and "<problem forward-raises>:4" in broken["failure_reason"]
    # the inputs were built, so what was going to be measured is still recorded
    assert broken["configuration"] == {"bindings": {"batch_size": 2}, "dtype": "fp16"}
    assert exited["status"] == "failed" and "SystemExit" in exited["failure_reason"]
    assert fine["status"] == "passed"
    for record in records:
        assert_valid(record)
