"""benchmarks.candidate: a submitted ModelNew measured honestly, against cheat fixtures.

Each fixture in tests/fixtures/candidates/ implements problem_matmul_relu.py (relu(A @ B)); every cheat
must end as a failed record whose reason names the cheat, the honest one must pass. A few run through a
real Sandbox (one zygote for the module), where a hang, a crash and an unbounded allocation become
the sandbox's outcomes.
"""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path

import pytest
import torch

from benchmarks import candidate, problems, timing
from benchmarks.candidate import PayloadError, measure_job
from benchmarks.channel import ProtocolViolation
from benchmarks.records import FORMAT
from benchmarks.sandbox import GiB, Limits, Outcome, Sandbox, describe_sandbox_failure

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "candidates"
SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "run-record.schema.json"
REFERENCE = (FIXTURES / "problem_matmul_relu.py").read_text()
FAST_TIMING = {"warmup": 2, "min_trials": 5, "max_trials": 40, "target_half_width": 0.05, "budget_s": 0.3}
SANDBOX_LIMITS = Limits(wall_s=10, address_space=4 * GiB)

gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def payload(name: str | None = None, *, source: str | None = None, **changes) -> dict:
    text = source if source is not None else (FIXTURES / f"{name}.py").read_text() if name else None
    slug = (name or "inline").replace("_", "-")
    base = {
        "workload_slug": "fixture-matmul-relu",
        "source_sha256": None,
        "reference_source": REFERENCE,
        "reference_filename": "problem_matmul_relu.py",
        "implementation": {"slug": f"fixture-{slug}", "title": f"fixture {slug}", "role": "candidate",
                           "framework": "PyTorch", "language": "python", "licence": None, "source_url": None,
                           "source_availability": "mirrored"},
        "builtin": None,
        "candidate_source": text,
        "candidate_filename": f"{name or 'inline'}.py",
        "bindings": {},
        "device": "cpu",
        "baseline": False,
        "correctness_sets": 5,
        "tolerance": None,
        "timing": dict(FAST_TIMING),
        "provider": None,
        "label": None,
    }
    base.update(changes)
    return base


def only_record(result: dict) -> dict:
    (record,) = result["records"]
    return record


def validator():
    jsonschema = pytest.importorskip("jsonschema")
    return jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))


# ---------------------------------------------------------------- the honest candidate


def test_honest_candidate_passes_with_a_plausible_latency_and_an_adaptive_protocol():
    result = measure_job(payload("honest"))
    record = only_record(result)
    assert record["status"] == "passed", record["failure_reason"]
    validator().validate(record)
    assert record["format"] == FORMAT and record["evidence"] == "measured"
    assert record["implementation"]["slug"] == "fixture-honest"
    assert record["configuration"] == {"bindings": {"M": 32, "K": 48, "N": 40}, "dtype": "fp32"}
    # a 32x48 @ 48x40 matmul and a relu on a CPU: microseconds, not nanoseconds and not seconds
    assert 0.0005 < record["statistics"]["mean"] < 50
    protocol = record["protocol"]
    assert protocol["name"] == "kernelindex-candidate-cpu-perf-counter" and protocol["version"] == "4"
    assert protocol["trials"] == record["statistics"]["num_trials"] == len(record["samples_ms"])
    assert FAST_TIMING["min_trials"] <= protocol["trials"] <= FAST_TIMING["max_trials"]
    assert "adaptive" in protocol["timer"] and "half-width" in protocol["timer"] and "fresh inputs every trial" in protocol["timer"]
    assert "separate harness process" in protocol["timer"]
    assert record["correctness"]["passed"] is True and record["correctness"]["atol"] == 1e-4
    checks = result["checks"]["implementations"][0]
    assert [entry["passed"] for entry in checks["correctness_sets"]] == [True] * 6  # five sets, then the held-out one
    assert "seed 42" in checks["correctness_sets"][0]["set"] and "held-out" in checks["correctness_sets"][-1]["set"]
    assert checks["timed_outputs"] and all(entry["passed"] for entry in checks["timed_outputs"])
    assert checks["timing"]["stop_reason"] in ("converged", "max_trials", "budget")
    # every timed trial had inputs of its own, and the samples agreed with the second clock
    assert checks["timing"]["distinct_inputs"] == checks["timing"]["trials_run"]
    assert checks["timing"]["unexplained_ms_per_trial"] <= checks["timing"]["clock_tolerance_ms"]
    # microsecond calls come in blocks of many: each block after the first led by a trial that is not kept
    assert checks["timing"]["block_size"] >= timing.LEAD_MIN_BLOCK
    assert checks["timing"]["lead_trials"] == timing.LEAD_CALLS * checks["timing"]["blocks"] - 1
    # preempted outliers are excused only up to their cap (the machine decides how many there are)
    assert 0 <= checks["timing"]["preempted_trials"] <= timing.PREEMPTED_MAX_FRACTION * checks["timing"]["trials_run"]
    assert "waited for the CPU" in protocol["timer"]
    assert result["checks"]["freshened_inputs"] == []  # randn inputs: nothing to freshen
    assert result["environment"]["details"]["device_type"] == "cpu"
    json.dumps(result, allow_nan=False)  # what the sandbox sends back must be strict JSON


def test_baseline_first_then_the_candidate_in_the_same_environment():
    result = measure_job(payload("honest", baseline=True))
    baseline, submitted = result["records"]
    assert baseline["implementation"]["slug"] == "torch_eager" and baseline["implementation"]["role"] == "baseline"
    assert submitted["implementation"]["slug"] == "fixture-honest"
    assert baseline["status"] == submitted["status"] == "passed", (baseline["failure_reason"], submitted["failure_reason"])
    assert baseline["environment"] == submitted["environment"] == result["environment"]
    assert baseline["protocol"]["name"] == submitted["protocol"]["name"]


def test_a_builtin_implementation_is_measured_by_the_same_checks():
    job = payload(candidate_source=None, builtin="torch_eager",
                  implementation={"slug": "torch_eager", "role": "baseline"})
    record = only_record(measure_job(job))
    assert record["status"] == "passed", record["failure_reason"]
    assert record["implementation"]["title"] == "PyTorch eager"


def test_bindings_change_the_configuration_measured():
    record = only_record(measure_job(payload("honest", bindings={"M": 8})))
    assert record["status"] == "passed", record["failure_reason"]
    assert record["configuration"]["bindings"]["M"] == 8


# ---------------------------------------------------------------- cheats and faults, each with its reason


CHEATS = {
    "constant": ["constant output", "every element 0", "correctness set 0"],
    "cache_first": ["same output", "cached or stale", "correctness set 1"],
    "alias_input": ["aliases an input"],
    "expanded": ["lazy view", "stride 0"],
    "wrong_dtype": ["dtype torch.float64", "reference torch.float32"],
    "wrong_shape": ["shape (40, 32)", "reference (32, 40)"],
    "patch_clock": ["the candidate replaced time.perf_counter_ns", "torch.cuda.Event.elapsed_time"],
    "memory_reader": ["decoy", "read the harness's memory"],
    "stale_when_timed": ["while timed", "timed trial", "stale or cached"],
    "pointer_cache": ["while timed", "timed trial", "stale or cached"],
    "graph_replay": ["while timed", "timed trial", "stale or cached"],
    "init_raises": ["ModelNew.__init__ failed", "RuntimeError: kernel build failed", "init_raises.py:7"],
    "forward_raises": ["ModelNew.forward on correctness set 0 failed", "ValueError: unsupported shape"],
    "no_modelnew": ["defines no ModelNew class"],
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_each_cheat_fails_with_a_reason_that_names_it(name):
    record = only_record(measure_job(payload(name)))
    assert record["status"] == "failed"
    reason = record["failure_reason"]
    assert "\n" not in reason
    for words in CHEATS[name]:
        assert words in reason, reason
    assert record["statistics"] is None and record["samples_ms"] is None
    validator().validate(record)


def test_a_replaced_clock_is_put_back_and_the_harness_never_used_it():
    original = time.perf_counter_ns
    record = only_record(measure_job(payload("patch_clock")))
    assert "time.perf_counter_ns" in record["failure_reason"]
    assert time.perf_counter_ns is original
    assert torch.cuda.Event.elapsed_time is timing._event_elapsed_time
    # the next job in the same process is measured with the real clock
    assert only_record(measure_job(payload("honest")))["status"] == "passed"


def test_replacing_a_function_the_reference_uses_is_caught():
    source = (
        "import torch\nimport torch.nn as nn\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        torch.matmul = lambda a, b: torch.zeros(a.shape[0], b.shape[1])\n"
        "    def forward(self, A, B):\n"
        "        return torch.zeros(A.shape[0], B.shape[1])\n"
    )
    original = torch.matmul
    record = only_record(measure_job(payload(source=source)))
    assert record["status"] == "failed"
    assert "the candidate replaced torch.matmul" in record["failure_reason"]
    assert torch.matmul is original


@pytest.mark.parametrize(
    ("target", "replacement"),
    [
        ("torch.Tensor.__eq__", "lambda self, other: torch.ones(self.shape, dtype=torch.bool)"),
        ("torch.allclose", "lambda *args, **kwargs: True"),
        ("torch.cuda.synchronize", "lambda *args, **kwargs: None"),
        ("torch.cuda.Event.record", "lambda self, stream=None: None"),
        ("torch.cuda.Stream.synchronize", "lambda self: None"),
        ("time.monotonic", "lambda: 0.0"),
        ("benchmarks.timing._perf_counter_ns", "lambda: 0"),
    ],
)
def test_every_function_the_harness_relies_on_is_watched(target, replacement):
    owner, name = target.rsplit(".", 1)
    source = (
        "import time, torch\nimport torch.nn as nn\nimport benchmarks.timing\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        setattr({owner}, {name!r}, {replacement})\n"
        "    def forward(self, A, B):\n"
        "        return torch.relu(A @ B)\n"
    )
    holder = {"torch.Tensor": torch.Tensor, "torch": torch, "torch.cuda": torch.cuda, "torch.cuda.Event": torch.cuda.Event,
              "torch.cuda.Stream": torch.cuda.Stream, "time": time, "benchmarks.timing": timing}[owner]
    original = vars(holder).get(name)
    record = only_record(measure_job(payload(source=source)))
    assert record["status"] == "failed"
    assert f"the candidate replaced {target}" in record["failure_reason"]
    assert vars(holder).get(name) is original  # put back


def test_changing_a_global_torch_setting_is_caught_and_undone():
    source = (
        "import torch\nimport torch.nn as nn\n"
        "class ModelNew(nn.Module):\n"
        "    def forward(self, A, B):\n"
        "        torch.set_float32_matmul_precision('medium')\n"
        "        return torch.relu(A @ B)\n"
    )
    before = torch.get_float32_matmul_precision()
    record = only_record(measure_job(payload(source=source)))
    assert "changed torch's global settings" in record["failure_reason"]
    assert "float32_matmul_precision" in record["failure_reason"]
    assert torch.get_float32_matmul_precision() == before


def test_a_profile_function_running_inside_the_harness_is_caught():
    # sys.setprofile runs its function at every call the harness makes: a way to work outside the timed region.
    source = (
        "import sys, torch\nimport torch.nn as nn\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        sys.setprofile(lambda frame, event, arg: None)\n"
        "    def forward(self, A, B):\n"
        "        return torch.relu(A @ B)\n"
    )
    record = only_record(measure_job(payload(source=source)))
    assert record["status"] == "failed" and "sys.getprofile()" in record["failure_reason"], record["failure_reason"]


def test_the_candidate_changing_its_inputs_changes_nothing_for_the_reference():
    # The candidate zeroes its inputs in place: the reference process makes its own from the same seed.
    source = (
        "import torch\nimport torch.nn as nn\n"
        "class ModelNew(nn.Module):\n"
        "    def forward(self, A, B):\n"
        "        A.zero_()\n"
        "        return torch.relu(A @ B)\n"
    )
    record = only_record(measure_job(payload(source=source)))
    assert record["status"] == "failed" and "constant output" in record["failure_reason"]


def test_a_harness_method_replaced_by_the_candidate_is_caught():
    source = (
        "import torch\nimport torch.nn as nn\nimport benchmarks.candidate as harness\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        harness._Remote.compare = lambda *args: None\n"
        "    def forward(self, A, B):\n"
        "        return torch.zeros(A.shape[0], B.shape[1])\n"
    )
    original = candidate._Remote.compare
    record = only_record(measure_job(payload(source=source)))
    assert "the candidate replaced benchmarks.candidate._Remote.compare" in record["failure_reason"]
    assert candidate._Remote.compare is original  # the coordinator's own never changed: another process


def test_no_reference_output_exists_while_the_candidate_runs():
    # A candidate that counts, at each correctness call, the tensors shaped like the output that it did not
    # make: only the harness's decoy may be there (the reference lives in another process), else it fails.
    source = (
        "import gc, torch\nimport torch.nn as nn\n"
        "class ModelNew(nn.Module):\n"
        "    calls = 0\n"
        "    def forward(self, A, B):\n"
        "        self.calls += 1\n"
        "        shape = torch.Size([A.shape[0], B.shape[1]])\n"
        "        seen = sum(1 for o in gc.get_objects() if type(o) is torch.Tensor and o.shape == shape)\n"
        "        if self.calls <= 5 and seen != 1:\n"
        "            raise ValueError(f'saw {seen} output-shaped tensors')\n"
        "        return torch.relu(A @ B)\n"
    )
    record = only_record(measure_job(payload(source=source, timing={**FAST_TIMING, "max_trials": 5})))
    assert record["status"] == "passed", record["failure_reason"]


def test_a_slow_candidate_that_spends_the_budget_still_keeps_trials():
    # Calls slower than the whole budget (blocks of one, the first timed trial discarded): the budget ends the
    # timing only after two kept trials, never with a passed run and no sample (seen in a full test run, where
    # the gc scan above made each call slower than FAST_TIMING's 0.3 s budget).
    source = (
        "import time, torch\nimport torch.nn as nn\n"
        "class ModelNew(nn.Module):\n"
        "    def forward(self, A, B):\n"
        "        time.sleep(0.35)\n"
        "        return torch.relu(A @ B)\n"
    )
    record = only_record(measure_job(payload(source=source, timing={**FAST_TIMING, "warmup": 1, "max_trials": 5})))
    assert record["status"] == "passed", record["failure_reason"]
    assert len(record["samples_ms"]) >= 2 and min(record["samples_ms"]) >= 350


def test_a_tensor_subclass_output_is_rejected():
    source = (
        "import torch\nimport torch.nn as nn\n"
        "class Lazy(torch.Tensor):\n    pass\n"
        "class ModelNew(nn.Module):\n"
        "    def forward(self, A, B):\n"
        "        return torch.relu(A @ B).as_subclass(Lazy)\n"
    )
    reason = only_record(measure_job(payload(source=source)))["failure_reason"]
    assert "tensor subclass" in reason and "Lazy" in reason


def test_a_problem_that_cannot_run_fails_every_record_with_its_reason():
    broken = REFERENCE.replace("def get_inputs():", "def get_inputs():\n    raise RuntimeError('no inputs today')")
    result = measure_job(payload("honest", reference_source=broken, baseline=True))
    assert [r["status"] for r in result["records"]] == ["failed", "failed"]
    assert all("no inputs today" in r["failure_reason"] for r in result["records"])


# ---------------------------------------------------------------- issue 28: the attacks seen, each a fixture



def test_a_candidate_writing_its_own_result_fails_as_forged():
    # It writes a passed record at 0.301 ms (and a torch_eager one) to every descriptor it has, then exits:
    # the only one it has leads to the coordinator, which reads it as a malformed message.
    record = only_record(measure_job(payload("forge_result_pipe")))
    assert record["status"] == "failed"
    assert record["failure_reason"].startswith("the candidate forged results: "), record["failure_reason"]
    assert record["samples_ms"] is None and record["implementation"]["slug"] == "fixture-forge-result-pipe"


def test_records_for_other_implementations_are_a_message_the_protocol_refuses():
    result = measure_job(payload("forge_protocol", baseline=True))
    baseline, submitted = result["records"]
    assert submitted["status"] == "failed"
    reason = submitted["failure_reason"]
    assert reason.startswith("the candidate forged results: an unexpected message (records)"), reason
    # the baseline was measured before, in a process of its own, and stands
    assert baseline["implementation"]["slug"] == "torch_eager" and baseline["status"] == "passed"
    assert [r["implementation"]["slug"] for r in result["records"]] == ["torch_eager", "fixture-forge-protocol"]


def test_the_baseline_is_measured_where_the_candidate_never_runs():
    result = measure_job(payload("edit_baseline", baseline=True))
    baseline, submitted = result["records"]
    assert baseline["status"] == submitted["status"] == "passed", (baseline["failure_reason"], submitted["failure_reason"])
    # what it found and edited were copies in its own process
    assert baseline["implementation"]["title"] == "PyTorch eager"
    assert baseline["statistics"]["mean"] == pytest.approx(sum(baseline["samples_ms"]) / len(baseline["samples_ms"]))


@pytest.mark.parametrize(("name", "words"), [
    ("reference_forward", "the candidate replaced the problem's Model.forward"),  # its own copy of the class
    ("reference_forward_instance", "incorrect output"),
])
def test_a_replaced_reference_forward_changes_nothing(name, words):
    # The reference model lives in a process the candidate never runs in: its patch finds nothing to change.
    record = only_record(measure_job(payload(name)))
    assert record["status"] == "failed"
    assert words in record["failure_reason"] and "correctness set 0" in record["failure_reason"] or \
        record["failure_reason"].startswith(words), record["failure_reason"]


def test_the_reference_is_fingerprinted_by_code_and_attributes():
    job = candidate.parse_payload(payload("honest"))
    context = candidate._Context(job, torch.device("cpu"))
    context.prepare()
    inputs = context.inputs(7)
    expected = context.reference(inputs)
    model = context.reference_model
    model.forward = lambda A, B: torch.zeros(A.shape[0], B.shape[1])  # on the instance
    with pytest.raises(candidate.CandidateFailure, match="code or attributes"):
        context.reference(inputs)
    del model.forward
    assert torch.equal(context.reference(inputs), expected)
    model.scale = 0.5  # a plain attribute the forward could read
    with pytest.raises(candidate.CandidateFailure, match="code or attributes"):
        context.reference(inputs)


def test_a_cache_keyed_on_input_values_never_hits():
    # Fresh inputs every trial: the fixture raises on its sixth hit, so passing means it (almost) never hit.
    result = measure_job(payload("value_cache"))
    record = only_record(result)
    assert record["status"] == "passed", record["failure_reason"]
    timing_checks = result["checks"]["implementations"][0]["timing"]
    assert timing_checks["distinct_inputs"] == timing_checks["trials_run"] > 5


def test_predicting_which_timed_outputs_are_checked_fails():
    # No chooser exists in its process to copy; it skips work on the trials it guessed unchecked and a check
    # drawn after the trials ran (the last one's at least) finds a stale output.
    record = only_record(measure_job(payload("predict_checks")))
    assert record["status"] == "failed"
    reason = record["failure_reason"]
    assert reason.startswith("while timed,") and "work skipped on trials it guessed would not be checked" in reason, reason


def test_a_clock_swapped_while_timed_and_put_back_fails_by_the_second_clock():
    result = measure_job(payload("clock_swap"))
    record = only_record(result)
    assert record["status"] == "failed"
    assert record["failure_reason"].startswith("the timed samples disagree with the harness's own clock"), record["failure_reason"]
    # it was timed twice: a cheat's shortfall is in every timing loop, so the second disagreed as the first did
    retry = result["checks"]["implementations"][0]["clock_retry"]
    assert retry["first"].startswith("the timed samples disagree") and retry["timing"]["unexplained_ms_per_trial"] > retry["timing"]["clock_tolerance_ms"]


def test_the_stopping_rule_is_applied_after_every_trial_not_only_after_a_block():
    # A microsecond candidate's blocks are 128 trials; an interval target it meets at once (100% of the mean) stops
    # the timing at min_trials kept trials, as the harness before blocks did: the block's later trials ran (and were
    # timed by the second clock with the rest) but are not kept, and the last kept trial's output is checked.
    loop = {**FAST_TIMING, "min_trials": 10, "max_trials": 1000, "target_half_width": 1.0, "budget_s": 60}
    result = measure_job(payload("honest", timing=loop))
    record = only_record(result)
    assert record["status"] == "passed", record["failure_reason"]
    timing_checks = result["checks"]["implementations"][0]["timing"]
    assert timing_checks["stop_reason"] == "converged" and timing_checks["blocks"] == 1
    assert timing_checks["kept_trials"] == len(record["samples_ms"]) == 10
    assert timing_checks["trials_run"] == timing_checks["block_size"] > 12
    timed = [entry["set"] for entry in result["checks"]["implementations"][0]["timed_outputs"]]
    assert "timed trial 11" in timed  # the last kept trial (trials 0 and 1, the block's leads, are discarded)


@pytest.mark.parametrize("aliasing", [
    # Small CPU outputs are checked after every timed trial and copied (the candidate's memory is then free for its
    # next call, as before issue 28): an output aliasing its input fails at the trial that returned it, here the
    # first timed one (trial 0, which the figures discard and no pick would ever check).
    "A[:, : B.shape[1]]",
    # The check after each timed trial reads a few attributes where it can (one dense output, of the reference's
    # dtype and shape) and leaves the rest to check_output: a contiguous view of an input's memory passes every
    # attribute and must still be caught by its address, at the trial that returned it.
    "A.reshape(-1)[: A.shape[0] * B.shape[1]].view(A.shape[0], B.shape[1])",
], ids=["strided view", "contiguous view"])
def test_a_small_timed_output_aliasing_an_input_is_caught_at_the_trial_that_returned_it(aliasing):
    source = (
        "import torch\nimport torch.nn as nn\n"
        "class ModelNew(nn.Module):\n"
        "    calls = 0\n"
        "    def forward(self, A, B):\n"
        "        self.calls += 1\n"
        "        if self.calls <= 5 + 2:  # the correctness sets and the warm-up\n"
        "            return torch.relu(A @ B)\n"
        f"        return {aliasing}\n"
    )
    record = only_record(measure_job(payload(source=source)))
    assert record["status"] == "failed"
    reason = record["failure_reason"]
    assert "aliases an input" in reason and "timed trials 0-" in reason and "trial 0 of the block" in reason, reason


def _quick_setup():
    expected = [candidate.Leaf(True, torch.float32, (4, 5), torch.device("cpu"))]
    buffers = [torch.randn(4, 6), torch.randn(6, 5)]
    copies = torch.zeros(8, 4, 5)
    decoy = torch.randn(4, 5)
    check = candidate._QuickCheck((torch.float32, torch.Size((4, 5)), 80), list(enumerate(buffers)), [decoy, copies])
    return expected, buffers, copies, decoy, check


def test_the_quick_check_passes_only_what_check_output_passes():
    expected, buffers, copies, decoy, check = _quick_setup()
    rows = [[copies[index] for index in range(8)]]
    inputs = [buffer.detach() for buffer in buffers]
    honest = torch.relu(inputs[0] @ inputs[1])
    assert candidate.check_output(honest, expected, inputs, [decoy, copies]) is None
    assert candidate._quick_copy(honest, inputs, check, rows, 3) and torch.equal(copies[3], honest)

    class Sub(torch.Tensor):
        pass

    refused = {
        "input alias": inputs[0].reshape(-1)[:20].view(4, 5),
        "harness alias": copies[2],
        "decoy": decoy.view(4, 5),
        "dtype": honest.double(),
        "shape": honest.t().contiguous(),
        "transposed": honest.t().contiguous().t(),  # an honest non-contiguous output: the full check decides
        "expanded": honest[:1].expand(4, 5),
        "subclass": honest.as_subclass(Sub),
        "tuple": (honest,),
    }
    for name, output in refused.items():
        before = copies[5].clone()
        assert not candidate._quick_copy(output, inputs, check, rows, 5), name
        assert torch.equal(copies[5], before), name  # nothing copied: the full check (copy_output) takes it
    assert candidate.check_output(refused["transposed"], expected, inputs, [decoy, copies]) is None
    # an input no longer where its buffer was (a call resized its storage): the full check, from its real address
    moved = [inputs[0].clone(), inputs[1]]
    assert not candidate._quick_copy(honest, moved, check, rows, 4)
    assert check.changed() is None


def test_a_change_to_the_harness_tensors_a_block_rested_on_fails_the_block():
    _, buffers, copies, decoy, check = _quick_setup()
    decoy.set_(torch.zeros(4, 5))  # only a reader of the harness's memory reaches these
    assert "harness's own tensors" in (check.changed() or "")
    _, buffers, copies, decoy, check = _quick_setup()
    buffers[0].as_strided_((4, 6), (1, 4))
    assert "layout of the harness's input buffers" in (check.changed() or "")


def test_one_disagreement_of_the_second_clock_is_timed_again_not_failed():
    # A loaded machine's hiccup can leave one timing loop unexplained (seen in CI: an honest 0.09 ms candidate
    # read 0.108 ms over against a 0.100 ms tolerance); only a second disagreement fails the job. The fixture
    # hides time in its first loop only (exactly 12 trials: min = max = 10 kept after two leads, and a budget it
    # never reaches).
    loop = {**FAST_TIMING, "min_trials": 10, "max_trials": 10, "budget_s": 60}
    result = measure_job(payload("clock_swap_once", timing=loop))
    record = only_record(result)
    assert record["status"] == "passed", record["failure_reason"]
    checks = result["checks"]["implementations"][0]
    first = checks["clock_retry"]
    assert first["first"].startswith("the timed samples disagree") and first["timing"]["trials_run"] == 12
    assert first["timing"]["unexplained_ms_per_trial"] > first["timing"]["clock_tolerance_ms"]
    assert checks["timing"]["unexplained_ms_per_trial"] <= checks["timing"]["clock_tolerance_ms"]
    assert checks["timing"]["trials_run"] == 12 and len(record["samples_ms"]) == 10



def test_uniform_inputs_are_freshened_so_a_shortcut_on_them_never_runs():
    constant = (FIXTURES / "problem_constant_inputs.py").read_text()
    result = measure_job(payload("uniform_shortcut", reference_source=constant, reference_filename="problem_constant_inputs.py"))
    record = only_record(result)
    assert record["status"] == "passed", record["failure_reason"]
    assert result["checks"]["freshened_inputs"] == [0, 1]
    # what every check and trial sees: never uniform, different for every seed, the same in every process
    job = candidate.parse_payload(payload("honest", reference_source=constant))
    context = candidate._Context(job, torch.device("cpu"))
    context.prepare()
    first, again, other = context.inputs(11), context.inputs(11), context.inputs(12)
    for a, b, c in zip(first, again, other):
        assert a.min() < a.max() and torch.equal(a, b) and not torch.equal(a, c)
        assert 0.5 < a.mean().item() < 1.5  # ones, moved by a tenth of their magnitude


def test_a_constant_output_cannot_pass_where_the_reference_varies():
    small = (FIXTURES / "problem_small_outputs.py").read_text()
    record = only_record(measure_job(payload("zeros", reference_source=small, reference_filename="problem_small_outputs.py")))
    assert record["status"] == "failed"
    assert "constant output (every element 0) where the reference varies" in record["failure_reason"], record["failure_reason"]
    # the honest candidate passes the same workload
    honest = (FIXTURES / "honest.py").read_text().replace("return (A @ B).clamp_min(0.0)", "return (A @ B).clamp_min(0.0) * 1e-7")
    assert only_record(measure_job(payload(source=honest, reference_source=small)))["status"] == "passed"


def test_work_in_a_thread_of_its_own_fails_by_the_cpu_account():
    if candidate._CpuAccount(os.getpid()).fd is None:
        pytest.skip("this kernel gives no /proc/PID/schedstat")
    # about a second of timed trials (the thread burns two thirds of it), far past the 50 ms allowed
    endless = {**FAST_TIMING, "max_trials": 100_000, "target_half_width": 1e-9, "budget_s": 1.0}
    record = only_record(measure_job(payload("background_thread", timing=endless)))
    assert record["status"] == "failed"
    assert "while it was not answering the harness" in record["failure_reason"], record["failure_reason"]


# ---------------------------------------------------------------- timing


def test_adaptive_timing_stops_by_each_rule():
    timer = timing.make_adaptive_timer("cpu")

    def inputs_for(trial):
        return [trial]

    def sleep(_inputs):
        time.sleep(0.002)

    converged = timer.run(sleep, inputs_for, timing.AdaptiveSettings(warmup=0, min_trials=4, max_trials=50,
                                                                     target_half_width=0.5, budget_s=5))
    assert converged.stop_reason == "converged" and 4 <= len(converged.samples_ms) < 50
    assert converged.half_width is not None and converged.half_width < 0.5
    capped = timer.run(sleep, inputs_for, timing.AdaptiveSettings(warmup=0, min_trials=2, max_trials=6,
                                                                  target_half_width=1e-12, budget_s=5))
    assert capped.stop_reason == "max_trials" and len(capped.samples_ms) == 6 and capped.trials_run == 7
    spent = timer.run(sleep, inputs_for, timing.AdaptiveSettings(warmup=0, min_trials=2, max_trials=10_000,
                                                                 target_half_width=1e-12, budget_s=0.03))
    assert spent.stop_reason == "budget" and 1 <= len(spent.samples_ms) < 100
    # the samples fit inside the wall clock around them, and cover most of it for a call this long
    for result in (converged, capped, spent):
        assert result.timed_ms <= result.wall_ms
        assert result.timed_ms > 0.5 * result.wall_ms
        assert all(1.5 < s < 200 for s in result.samples_ms)


def test_each_trial_gets_its_own_inputs_and_outputs_are_seen_outside_the_timed_region():
    timer = timing.make_adaptive_timer("cpu")
    given, seen = [], []
    timer.run(lambda inputs: given.append(inputs[0]) or inputs[0] * 10, lambda trial: [trial],
              timing.AdaptiveSettings(warmup=1, min_trials=3, max_trials=3, target_half_width=1e-12, budget_s=5),
              on_output=lambda trial, output, last: seen.append((trial, output, last)))
    assert given == [0, 0, 1, 2, 3]  # warm-up, then the timed trials (the first discarded)
    assert seen == [(1, 10, False), (2, 20, False), (3, 30, True)]


def test_adaptive_settings_are_checked():
    with pytest.raises(ValueError, match="min_trials"):
        timing.AdaptiveSettings(min_trials=1)
    with pytest.raises(ValueError, match="max_trials"):
        timing.AdaptiveSettings(min_trials=10, max_trials=5)
    with pytest.raises(ValueError, match="budget_s"):
        timing.AdaptiveSettings(budget_s=0)


def test_samples_are_checked_against_the_second_clock():
    # per trial, the time the samples and the harness's calibrated work leave unexplained, block by block
    assert candidate.clock_disagreement([0.001, -0.002, 0.003], 1.0)[2] is None
    unexplained, tolerance, why = candidate.clock_disagreement([0.6, 0.55, 0.7], 0.3)
    assert unexplained == pytest.approx(0.55) and tolerance == pytest.approx(0.15)  # the lower quartile; half of 0.3 ms
    assert why is not None and "disagree with the harness's own clock" in why
    # the tolerance grows with the sample: half of a 10 ms call
    assert candidate.clock_disagreement([4.0, 4.2, 4.4], 10.0)[2] is None
    assert candidate.clock_disagreement([6.0, 6.2, 5.9], 10.0)[2] is not None
    # blocks slowed by a loaded machine move the lower quartile not at all; a shortfall in every block does
    assert candidate.clock_disagreement([0.001, 0.002, 500.0, 400.0], 1.0)[2] is None
    assert candidate.clock_disagreement([0.6, 0.61, 0.59, 0.65], 1.0, harness_ms_per_trial=0.1)[2] is not None
    assert candidate.clock_disagreement([0.6, 0.61, 0.59, 0.65], 1.0, harness_ms_per_trial=0.7)[2] is None


def test_a_blocks_lead_samples_explain_the_second_clock_only_up_to_a_cap():
    # Leads (a block's first trials, not kept) pay the wake-up after the harness's messages: up to twice the
    # block's slowest other sample each + LEAD_WAKE_MS counts as explained; beyond it, the time is unexplained (held
    # against the clock's tolerance like any other), so samples nobody keeps cannot hide a block's time.
    wake = candidate.LEAD_WAKE_MS
    assert candidate.lead_beyond_cap([0.1, 0.01, 0.005, 0.006], 2) == 0.0  # a 100 us wake-up for 5 us calls
    assert candidate.lead_beyond_cap([0.5, 0.01, 0.005, 0.006], 2) == pytest.approx(0.51 - (2 * 2 * 0.006 + wake))
    assert candidate.lead_beyond_cap([0.5, 0.005, 0.006], 1) == pytest.approx(0.5 - (2 * 0.006 + wake))
    assert candidate.lead_beyond_cap([0.5, 0.01, 0.005, 0.006], 0) == 0.0  # the first block: lazy set-up is honest
    assert candidate.lead_beyond_cap([0.5, 0.4], 2) == 0.0  # a block of leads only has nothing to compare with
    # a forger reporting 1 us calls and the block's real 640 us in the leads leaves ~0.44 ms unexplained
    assert candidate.lead_beyond_cap([0.32, 0.32] + [0.001] * 126, 2) == pytest.approx(0.64 - 0.004 - wake)


def test_only_an_outlier_whose_wait_for_the_cpu_explains_it_is_excused():
    # The kernel showed the thread waiting 4 ms in a trial of a 6 us call: the machine's time, not the call's.
    assert candidate.preempted(4.006, 4.0, 0.006)
    # A wait while the trial's inputs were made, then a call as fast as the others: kept.
    assert not candidate.preempted(0.0061, 4.0, 0.006)
    # Slow without having waited (the call's own cost, or the hypervisor's): kept.
    assert not candidate.preempted(0.5, 0.0, 0.006)
    # A wakeup's few microseconds of wait cannot excuse a trial 0.5 ms slow: kept.
    assert not candidate.preempted(0.5, 0.005, 0.006)
    # Under twice the median is the ordinary spread, whatever the wait.
    assert not candidate.preempted(0.011, 0.01, 0.006)
    assert candidate.preempted(0.0121, 0.0031, 0.006)


def test_claimed_waits_are_held_against_the_kernels_account_of_the_thread():
    verified = candidate._Remote.verified_waits
    # (CPU ms, run-queue wait ms, timeslices) before and after the block, as /proc/PID/schedstat gives them.
    before, after = (10.0, 1.0, 100), (12.0, 5.5, 103)
    assert verified([0.0, 4.0, 0.5, 0.0], before, after, "p") == [0.0, 4.0, 0.5, 0.0]
    with pytest.raises(ProtocolViolation, match="waited 4.600 ms for the CPU where the kernel saw the implementation's thread wait 4.500 ms"):
        verified([0.0, 4.1, 0.5, 0.0], before, after, "p")
    with pytest.raises(ProtocolViolation, match="4 trials said to have waited for the CPU where the kernel saw the implementation's thread scheduled 3 times"):
        verified([1.0, 1.0, 1.0, 1.0], before, after, "p")
    # Nothing to hold them against (no /proc), or the executor could not read its own: no trial is excused.
    assert verified([0.0, 4.0], None, after, "p") == [0.0, 0.0]
    assert verified([None, 4.0], before, after, "p") == [0.0, 0.0]


def test_a_duration_is_a_finite_non_negative_number_and_not_a_bool():
    for good in (0, 0.0, 1, 4.25, 1e9):
        assert candidate._is_duration(good), good
    for bad in (True, False, -0.001, float("nan"), float("inf"), "1.0", None, [1.0]):
        assert not candidate._is_duration(bad), bad


def test_schedstat_is_read_by_one_parser_for_both_sides(tmp_path):
    # The executor's thread and the coordinator's view of the executor read the same three fields: the
    # wait check compares the two, so they must parse alike.
    path = tmp_path / "schedstat"
    path.write_text("12000000 4500000 103\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert candidate._read_schedstat(fd) == (12_000_000, 4_500_000, 103)
        path.write_text("garbage\n")
        assert candidate._read_schedstat(fd) is None
    finally:
        os.close(fd)
    assert candidate._read_schedstat(None) is None
    if os.path.exists("/proc/thread-self/schedstat"):
        thread = candidate._ThreadSchedstat()
        assert isinstance(thread.wait_ns(), int)
        account = candidate._CpuAccount(os.getpid())
        run_ms, wait_ms, slices = account.schedstat()
        assert run_ms > 0 and wait_ms >= 0 and slices > 0
        account.close()


def test_a_candidate_claiming_its_trials_waited_for_the_cpu_fails_as_forged():
    record = only_record(measure_job(payload("forge_waits")))
    assert record["status"] == "failed"
    reason = record["failure_reason"]
    assert reason.startswith("the candidate forged results: trials said to have waited"), reason
    assert "where the kernel saw the implementation's thread wait" in reason


def test_timed_inputs_are_fresh_values_in_memory_reused_from_trial_to_trial():
    # The executor writes each trial's inputs into buffers made once (a block keeps its outputs, so inputs
    # allocated per trial would land in memory out of the cache): the values are make()'s, as the reference
    # process makes them, and each trial gets a tensor object of its own over the same memory.
    module = problems.load_module(REFERENCE, "problem_matmul_relu.py")
    made = candidate.TrialInputs(module, [], torch.device("cpu"))
    buffers = candidate.InputBuffers()
    write = made.writer(buffers, 11)
    first = write(3)
    addresses = [t.data_ptr() for t in first]
    values = [t.clone() for t in first]
    assert all(torch.equal(a, b) for a, b in zip(first, made.make(11, 3)))
    second = write(65_535)  # the last offset the coordinator draws
    assert [t.data_ptr() for t in second] == addresses and second[0] is not first[0]
    assert all(torch.equal(a, b) for a, b in zip(second, made.make(11, 65_535)))
    assert not any(torch.equal(a, b) for a, b in zip(second, values))
    # what candidate code does to its tensor objects, or to their memory, never reaches the next block
    second[0].set_(torch.zeros(1))
    first[1].untyped_storage().resize_(0)
    third = made.writer(buffers, 12)(5)
    assert third[0].data_ptr() == addresses[0] and third[1].untyped_storage().nbytes() == third[1].numel() * 4
    assert all(torch.equal(a, b) for a, b in zip(third, made.make(12, 5)))
    # sets made ahead (inputs that cannot take noise) are copied in the same way
    ahead = made.make(13, None)
    filled = buffers.fill(ahead)
    assert [t.data_ptr() for t in filled][0] == addresses[0]
    assert all(torch.equal(a, b) for a, b in zip(filled, ahead))


def test_a_blocks_picked_outputs_travel_in_one_message_and_are_each_checked():
    # The executor ships every pick of a block at once (one wake-up per block): split back per output, each held
    # to the reference's structure, and a message with a missing output or tensor is a protocol violation.
    expected = [candidate.Leaf(True, torch.float32, (2, 3), torch.device("cpu"))]
    first, second = torch.randn(2, 3), torch.randn(2, 3)
    (head_1, blobs_1), (head_2, blobs_2) = candidate.pack_output(first), candidate.pack_output(second)
    got = candidate.split_outputs([head_1, head_2], blobs_1 + blobs_2, expected, 2)
    assert torch.equal(got[0][0], first) and torch.equal(got[1][0], second)
    with pytest.raises(ProtocolViolation, match="1 outputs where 2"):
        candidate.split_outputs([head_1], blobs_1 + blobs_2, expected, 2)
    with pytest.raises(ProtocolViolation, match="1 tensors for 2 outputs"):
        candidate.split_outputs([head_1, head_2], blobs_1, expected, 2)
    with pytest.raises(ProtocolViolation, match="arrived with"):
        candidate.split_outputs([head_1, head_2], [blobs_1[0], blobs_2[0][:4]], expected, 2)


def test_block_sizes_follow_the_call_time_and_the_memory_kept():
    assert candidate.block_size(0.01, 1000) == candidate.MAX_BLOCK
    assert candidate.block_size(2.0, 1000) == 25  # 50 ms of calls
    assert candidate.block_size(80.0, 1000) == 1
    assert candidate.block_size(0.01, candidate.KEPT_OUTPUT_BYTES // 3) == 3


def test_an_output_a_background_thread_fills_in_later_is_caught():
    # forward hands back an uninitialised tensor at once and a thread fills it in after: checked as returned.
    source = (
        "import threading, time, torch\nimport torch.nn as nn\n"
        "class ModelNew(nn.Module):\n"
        "    def forward(self, A, B):\n"
        "        out = torch.empty(A.shape[0], B.shape[1])\n"
        "        def work():\n"
        "            time.sleep(0.005)\n"
        "            out.copy_(torch.relu(A @ B))\n"
        "        thread = threading.Thread(target=work)\n"
        "        thread.start()\n"
        "        self.thread = thread\n"
        "        return out\n"
    )
    record = only_record(measure_job(payload(source=source)))
    assert record["status"] == "failed"
    # caught on a correctness set: as a wrong output, or (when the allocator hands back the memory of the
    # previous set's output) as the same output for other inputs; which depends on what the memory held
    assert "correctness set" in record["failure_reason"]
    assert "incorrect output" in record["failure_reason"] or "NaN" in record["failure_reason"]


def test_work_left_on_another_stream_fails_by_its_tail():
    assert "side stream" in candidate.side_stream_problem([3.0] * 10, 0.01, 1.0)
    assert candidate.side_stream_problem([0.012] * 10, 0.01, 1.0) is None


def test_relative_half_width_uses_student_t():
    from benchmarks.stats import relative_half_width, t_95

    assert t_95(1) == pytest.approx(12.7062, abs=1e-3)
    assert t_95(9) == pytest.approx(2.2622, abs=1e-3)
    samples = [1.0, 1.1, 0.9, 1.0]
    std = (sum((s - 1.0) ** 2 for s in samples) / 3) ** 0.5
    assert relative_half_width(samples) == pytest.approx(t_95(3) * std / 2)
    assert relative_half_width([1.0]) is None


# ---------------------------------------------------------------- payloads


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"device": "tpu"}, "device must be one of"),
        ({"builtin": "torch_eager"}, "exactly one of builtin and candidate_source"),
        ({"builtin": "nonsense", "candidate_source": None}, "builtin 'nonsense'"),
        ({"bindings": {"M": "8"}}, "bindings.M must be an integer"),
        ({"correctness_sets": 0}, "correctness_sets must be between"),
        ({"timing": {"min_trials": 1}}, "min_trials"),
        ({"timing": {"trials": 5}}, "timing has unknown keys: trials"),
        ({"source_sha256": "0" * 64}, "source_sha256 is not the sha256"),
        ({"workload_slug": None}, "workload_slug is required"),
        ({"baseline": "yes"}, "baseline must be a boolean"),
    ],
)
def test_a_malformed_payload_raises_naming_the_key(change, words):
    job = payload("honest")
    job.update(change)
    with pytest.raises(PayloadError, match=words):
        measure_job(job)


def test_a_bad_implementation_object_raises():
    job = payload("honest")
    job["implementation"] = {**job["implementation"], "slug": "Not A Slug"}
    with pytest.raises(PayloadError, match="implementation.slug"):
        measure_job(copy.deepcopy(job))


# ---------------------------------------------------------------- the sandbox's verdicts in words


def test_describe_sandbox_failure_gives_one_line_per_status():
    limits = Limits(wall_s=10, address_space=4 * GiB)
    assert describe_sandbox_failure(Outcome("timeout", None, "no result within 10 s; killed"), limits) == "timed out after 10 s (killed)"
    assert describe_sandbox_failure(Outcome("timeout", None, "no result within 7 s; killed")) == "timed out after 7 s (killed)"
    assert describe_sandbox_failure(Outcome("crash", None, "killed by SIGSEGV")) == "crashed: SIGSEGV"
    assert describe_sandbox_failure(Outcome("crash", None, "exited with code 3")) == "crashed: exited with code 3"
    assert "possibly out of memory, limit 4 GiB" in describe_sandbox_failure(Outcome("crash", None, "killed by SIGKILL"), limits)
    assert describe_sandbox_failure(Outcome("raised", None, "MemoryError"), limits) == "ran out of memory (limit 4 GiB): MemoryError"
    assert "CPU-time limit" in describe_sandbox_failure(Outcome("cpu-limit", None, "used more than 10 s of CPU time; killed"))
    assert "malformed" in describe_sandbox_failure(Outcome("raised", None, "PayloadError: payload: device must be one of cpu"))
    assert "unusable result" in describe_sandbox_failure(Outcome("bad-result", None, "result over 1,048,576 bytes"))
    assert "never ran" in describe_sandbox_failure(Outcome("sandbox-error", None, "unshare: EPERM"))
    with pytest.raises(ValueError):
        describe_sandbox_failure(Outcome("ok", {}, ""))


@pytest.fixture(scope="module")
def box():
    with Sandbox(preload=["torch", "benchmarks.candidate"], workers=2, limits=SANDBOX_LIMITS) as sandbox:
        yield sandbox


def test_through_the_sandbox_honest_passes_and_hang_crash_and_memory_fail(box):
    names = ["honest", "hang", "segfault", "exits", "memory_hog", "constant", "forge_result_pipe"]
    outcomes = box.map("benchmarks.candidate:measure_job", [payload(name) for name in names])
    by_name = dict(zip(names, outcomes))

    honest = by_name["honest"]
    assert honest.status == "ok", honest.detail
    record = only_record(honest.value)
    assert record["status"] == "passed", record["failure_reason"]
    validator().validate(record)

    assert by_name["hang"].status == "timeout"
    assert describe_sandbox_failure(by_name["hang"], SANDBOX_LIMITS) == "timed out after 10 s (killed)"
    # A crash ends the candidate's own process; the coordinator writes the failed record.
    assert only_record(by_name["segfault"].value)["failure_reason"].startswith(
        "crashed: the implementation's process killed by SIGSEGV (correctness set 0)")
    assert "exited with code 3" in only_record(by_name["exits"].value)["failure_reason"]
    # Whatever the candidate writes to the descriptors it can find reaches the coordinator as a message.
    forged = by_name["forge_result_pipe"]
    assert forged.status == "ok", forged.detail
    assert only_record(forged.value)["failure_reason"].startswith("the candidate forged results")

    # The address-space limit makes the allocation fail inside forward: the job survives and says so.
    hog = by_name["memory_hog"]
    assert hog.status == "ok", hog.detail
    reason = only_record(hog.value)["failure_reason"]
    assert reason.startswith("out of memory during ModelNew.forward on correctness set 0"), reason

    assert "constant output" in only_record(by_name["constant"].value)["failure_reason"]


def test_a_malformed_payload_through_the_sandbox_is_a_raised_outcome(box):
    outcome = box.run("benchmarks.candidate:measure_job", {**payload("honest"), "device": "tpu"})
    assert outcome.status == "raised" and "PayloadError" in outcome.detail
    assert describe_sandbox_failure(outcome).startswith("the job's payload is malformed")


# ---------------------------------------------------------------- CUDA
#
# Through a sandbox of their own: its zygote never touched CUDA, while this test process has (the
# skip condition's torch.cuda.is_available() initialises the driver), and a fork of a process that did
# cannot use the GPU; the harness forks its reference process and executors.


@pytest.fixture(scope="module")
def gpu_box():
    limits = Limits(wall_s=120, address_space=None, processes=256, open_files=1024, result_bytes=16 * 1024**2)
    with Sandbox(preload=["torch", "benchmarks.candidate"], workers=1, limits=limits) as sandbox:
        yield sandbox


def on_gpu(box, name=None, **changes) -> dict:
    outcome = box.run("benchmarks.candidate:measure_job", payload(name, device="cuda", **changes))
    assert outcome.status == "ok", outcome.detail
    return only_record(outcome.value)



@gpu
@needs_cuda
def test_cuda_honest_candidate_passes_with_the_candidate_cuda_protocol(gpu_box):
    record = on_gpu(gpu_box, "honest")
    assert record["status"] == "passed", record["failure_reason"]
    assert record["protocol"]["name"] == "kernelindex-candidate-cuda-events" and record["protocol"]["l2_flush"] is True


@gpu
@needs_cuda
def test_cuda_side_stream_work_fails_or_is_counted(gpu_box):
    honest = on_gpu(gpu_box, "honest")
    record = on_gpu(gpu_box, "side_stream")
    if record["status"] == "failed":
        assert "side stream" in record["failure_reason"], record["failure_reason"]
    else:  # counted: 200 extra kernels cannot take less time than the honest single matmul
        assert record["statistics"]["mean"] > 5 * honest["statistics"]["mean"]


@gpu
@needs_cuda
def test_cuda_a_clock_swapped_while_timed_fails_by_the_coordinators_wall_clock(gpu_box):
    # The CUDA twin of clock_swap.py: the harness's elapsed_time swapped for one call, put back at once.
    source = (
        "import sys, torch\nimport torch.nn as nn\nimport benchmarks.timing as timing\n"
        "_real = timing._event_elapsed_time\n"
        "def _fake(start, end):\n"
        "    timing._event_elapsed_time = _real\n"
        "    return _real(start, end) / 20\n"
        "class ModelNew(nn.Module):\n"
        "    def forward(self, A, B):\n"
        "        timed = any(sys._getframe(i).f_code.co_name == '_trial' for i in range(1, 5))\n"
        "        for _ in range(200 if timed else 1):\n"
        "            out = torch.relu(A @ B)\n"
        "        if timed:\n"
        "            timing._event_elapsed_time = _fake\n"
        "        return out\n"
    )
    record = on_gpu(gpu_box, source=source)
    assert record["status"] == "failed"
    assert record["failure_reason"].startswith("the timed samples disagree with the harness's own clock"), record["failure_reason"]


@gpu
@needs_cuda
def test_cuda_the_attacks_fail_on_the_gpu_too(gpu_box):
    for name, words in [("forge_protocol", "the candidate forged results"), ("predict_checks", "while timed,"),
                        ("reference_forward_instance", "incorrect output"), ("graph_replay", "while timed,")]:
        record = on_gpu(gpu_box, name)
        assert record["status"] == "failed" and words in record["failure_reason"], (name, record["failure_reason"])
