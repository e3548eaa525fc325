import asyncio
import json
import resource
import sys
import time
from pathlib import Path

import pytest

from kernelindex.ingest.problem_trace import (
    ASSUMED_SETTINGS,
    ProblemTrace,
    ProblemTraceError,
    trace_problem,
    trace_problems_isolated,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = REPO_ROOT / "tests" / "fixtures" / "kernelbench_checkout" / "KernelBench"
BAD = REPO_ROOT / "tests" / "fixtures" / "kernelbench_bad"
REFERENCE = REPO_ROOT / "seeds" / "reference"


def trace_file(path: Path, filename: str | None = None, **kwargs) -> ProblemTrace:
    return trace_problem(path.read_text(), filename or path.name, **kwargs)


def shapes(entries):
    return [entry["shape"] for entry in entries]


def test_square_matmul_names_both_axes_after_its_constant():
    trace = trace_file(CHECKOUT / "level1" / "1_Square_matrix_multiplication_.py")
    assert trace.constants == {"N": 64}
    assert trace.bindings == {"N": 64}
    assert trace.dtype == "fp32"
    assert [e["name"] for e in trace.inputs] == ["input_1", "input_2"]
    assert shapes(trace.inputs) == [["N", "N"], ["N", "N"]]
    assert trace.inputs[0]["concrete_shape"] == [64, 64]
    assert trace.outputs == [{"name": "out", "dtype": "fp32", "shape": ["N", "N"], "concrete_shape": [64, 64]}]
    assert trace.flops_by_class == {"conv": 0, "matmul": 2 * 64**3, "other": 0}
    assert trace.input_bytes == 2 * 64 * 64 * 4
    assert trace.output_bytes == 64 * 64 * 4
    assert trace.param_count == trace.param_bytes == trace.buffer_bytes == 0


def test_relu_binds_batch_size_and_dim():
    trace = trace_file(CHECKOUT / "level1" / "2_ReLU.py")
    assert trace.bindings == {"batch_size": 16, "dim": 128}
    assert shapes(trace.inputs) == [["batch_size", "dim"]]
    assert shapes(trace.outputs) == [["batch_size", "dim"]]
    assert trace.flops == 0


def test_conv_fusion_names_axes_by_position_in_get_inputs():
    # in_channels == kernel_size == 3 and height == width == 16: only the randn(...) call can tell them apart.
    trace = trace_file(CHECKOUT / "level2" / "1_Conv2d_ReLU_BiasAdd.py")
    assert shapes(trace.inputs) == [["batch_size", "in_channels", "height", "width"]]
    assert trace.bindings == {"batch_size": 4, "in_channels": 3, "height": 16, "width": 16}
    assert trace.constants["kernel_size"] == 3 and "bias_shape" not in trace.constants
    # out_channels is not bound (no input has it), so the channel axis of the output stays an int.
    assert trace.outputs[0]["shape"] == ["batch_size", 8, 14, 14]
    assert trace.param_count == 8 * 3 * 3 * 3 + 8 + 8
    assert trace.flops_by_class == {"conv": 2 * (4 * 8 * 14 * 14) * (3 * 3 * 3), "matmul": 0, "other": 0}


def test_mlp_counts_linear_layers_as_matmul():
    trace = trace_file(CHECKOUT / "level3" / "1_MLP.py")
    assert trace.bindings == {"batch_size": 2, "input_size": 32}
    assert trace.outputs[0]["shape"] == ["batch_size", 10]
    assert trace.param_count == (32 * 64 + 64) + (64 * 32 + 32) + (32 * 10 + 10)
    assert trace.param_bytes == 4 * trace.param_count
    assert trace.flops_by_class == {"conv": 0, "matmul": 2 * 2 * (32 * 64 + 64 * 32 + 32 * 10), "other": 0}


def test_attention_classifies_sdpa_as_matmul_and_keeps_fp16():
    trace = trace_file(CHECKOUT / "level4" / "1_TinyAttention.py")
    assert trace.dtype == "fp16"
    assert trace.inputs[0]["dtype"] == trace.outputs[0]["dtype"] == "fp16"
    assert shapes(trace.inputs) == [["batch_size", "seq_len", "embed_dim"]]
    assert shapes(trace.outputs) == [["batch_size", "seq_len", "embed_dim"]]
    assert trace.param_bytes == 2 * trace.param_count
    tokens, embed, heads, head_dim = 2 * 16, 32, 4, 8
    projections = 2 * tokens * embed * (3 * embed) + 2 * tokens * embed * embed
    attention = 2 * (2 * 2 * heads * 16 * 16 * head_dim)  # QK^T and PV
    assert trace.flops_by_class == {"conv": 0, "matmul": projections + attention, "other": 0}


def test_overrides_rebind_constants_and_reject_unknown_names():
    trace = trace_file(CHECKOUT / "level1" / "2_ReLU.py", overrides={"batch_size": 3})
    assert trace.constants == {"batch_size": 3, "dim": 128}
    assert trace.inputs[0]["concrete_shape"] == [3, 128]
    assert trace.inputs[0]["shape"] == ["batch_size", "dim"]
    with pytest.raises(ValueError, match="no module-level int constant"):
        trace_file(CHECKOUT / "level1" / "2_ReLU.py", overrides={"seq_len": 3})


def test_equal_constants_named_by_call_position_and_scalars_and_devices():
    source = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Linear(8, 8).cuda()

    def forward(self, A, B, alpha):
        return self.scale(A @ B) * alpha, (A + 1).sum()

M = 8
K = 8
N = 8
enabled = True

def get_inputs():
    A = torch.randn(M, K, device="cuda")
    B = torch.randn(K, N).cuda()
    return [A, B, 0.5]

def get_init_inputs():
    return []
"""
    trace = trace_problem(source, "7_Equal_dims.py")
    assert trace.constants == {"M": 8, "K": 8, "N": 8}
    assert shapes(trace.inputs) == [["M", "K"], ["K", "N"], []]
    assert trace.inputs[2]["dtype"] == "scalar"
    assert [e["name"] for e in trace.outputs] == ["output_1", "output_2"]
    assert trace.outputs[1]["shape"] == [] and trace.outputs[1]["dtype"] == "fp32"
    assert not any(name.startswith("kernelbench_problem_") for name in sys.modules)


def test_to_json_is_plain_json_and_detached():
    trace = trace_file(CHECKOUT / "level3" / "1_MLP.py")
    document = trace.to_json()
    assert json.loads(json.dumps(document)) == document
    assert document["assumed_settings"] == ASSUMED_SETTINGS == {
        "cudnn.allow_tf32": True,
        "float32_matmul_precision": "highest",
    }
    assert document["flops"] == sum(document["flops_by_class"].values())
    assert document["torch_version"]
    document["inputs"][0]["shape"].append(1)
    assert trace.inputs[0]["shape"] == ["batch_size", "input_size"]


def test_resnet18_reference():
    trace = trace_file(REFERENCE / "resnet18.py", "9_ResNet18.py")
    assert trace.param_count == 11_689_512
    assert trace.bindings == {"batch_size": 2}
    assert trace.inputs[0]["shape"] == ["batch_size", 3, 224, 224]
    assert trace.outputs[0]["shape"] == ["batch_size", 1000]
    macs_per_image = trace.flops / 2 / trace.constants["batch_size"]
    assert macs_per_image == pytest.approx(1.814e9, rel=0.005)
    assert trace.flops_by_class["matmul"] / 2 / 2 == 512 * 1000
    assert trace.flops_by_class["conv"] == trace.flops - trace.flops_by_class["matmul"]
    assert trace.flops_by_class["other"] == 0


def test_vgg19_reference():
    trace = trace_file(REFERENCE / "vgg19.py", "12_VGG19.py")
    assert trace.param_count == 143_667_240
    assert trace.bindings == {"batch_size": 10}
    macs_per_image = trace.flops / 2 / trace.constants["batch_size"]
    assert macs_per_image == pytest.approx(19.63e9, rel=0.005)
    assert trace.flops_by_class["matmul"] / 2 / 10 == 512 * 7 * 7 * 4096 + 4096 * 4096 + 4096 * 1000


def test_huge_inputs_exist_only_on_meta():
    max_rss_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    trace = trace_file(BAD / "huge_inputs.py")
    assert time.perf_counter() - started < 5
    assert trace.input_bytes == trace.output_bytes == 100_000_000_000
    assert trace.inputs[0]["concrete_shape"] == [25_000_000_000]
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - max_rss_before_kib
    assert grown_kib < 500 * 1024


@pytest.mark.parametrize(
    ("name", "stage", "cause"),
    [
        ("raises_on_import.py", "import", "RuntimeError: this problem refuses to import"),
        ("syntax_error.py", "import", "SyntaxError"),
        ("forward_fails.py", "forward", "RuntimeError"),
    ],
)
def test_bad_problem_reports_file_and_stage(name, stage, cause):
    with pytest.raises(ProblemTraceError) as caught:
        trace_file(BAD / name)
    error = caught.value
    assert (error.filename, error.stage) == (name, stage)
    assert cause in error.message and "\n" not in error.message
    assert str(error).startswith(f"{name}: {stage}: ")
    assert error.to_json() == {"filename": name, "stage": stage, "message": error.message}


def test_sys_exit_is_reported_not_obeyed():
    with pytest.raises(ProblemTraceError) as caught:
        trace_problem("import sys\nsys.exit(2)\n", "quits.py")
    assert caught.value.stage == "import" and caught.value.message == "SystemExit: 2"


async def test_isolated_runner_survives_hangs_exits_and_memory_hogs():
    named = [
        (CHECKOUT / "level1" / "2_ReLU.py").read_text(),
        (BAD / "hangs.py").read_text(),
        (CHECKOUT / "level3" / "1_MLP.py").read_text(),
        (BAD / "exits.py").read_text(),
        (BAD / "raises_on_import.py").read_text(),
        # Above the worker's address-space cap, so it fails at once instead of paging the machine.
        "blob = bytearray(16 * 1024**3)\n",
        (BAD / "huge_inputs.py").read_text(),
        (CHECKOUT / "level1" / "1_Square_matrix_multiplication_.py").read_text(),
    ]
    filenames = [
        "2_ReLU.py",
        "hangs.py",
        "1_MLP.py",
        "exits.py",
        "raises_on_import.py",
        "memory_hog.py",
        "huge_inputs.py",
        "1_Square_matrix_multiplication_.py",
    ]
    results = await asyncio.to_thread(trace_problems_isolated, list(zip(named, filenames)), timeout_s=3, workers=2)

    assert [r.filename for r in results] == filenames
    outcome = [r.stage if isinstance(r, ProblemTraceError) else "ok" for r in results]
    assert outcome == ["ok", "timeout", "ok", "crash", "import", "import", "ok", "ok"]
    assert "code 3" in results[3].message
    assert results[5].message.startswith("MemoryError")
    assert results[0].bindings == {"batch_size": 16, "dim": 128}
    assert results[6].input_bytes == 100_000_000_000
    assert results[7].flops_by_class["matmul"] == 2 * 64**3


def test_isolated_runner_with_nothing_to_do():
    assert trace_problems_isolated([]) == []


def test_a_process_lost_to_the_machine_gets_one_more_try_a_real_crash_stays_a_crash(monkeypatch):
    """A job whose process died or could not be set up is traced once more in a fresh process (the
    machine may be to blame, not the problem); a problem that kills its process every time stays a crash."""
    from benchmarks import sandbox
    from kernelindex.ingest.problem_trace import ProblemTrace, ProblemTraceError, trace_problems_isolated

    relu = (CHECKOUT / "level1" / "2_ReLU.py").read_text()
    exits = "import os\nos._exit(3)\n"
    real_map = sandbox.Sandbox.map
    calls: list[int] = []

    def flaky_map(self, function, payloads, on_done=None):
        payloads = list(payloads)
        outcomes = real_map(self, function, payloads, on_done)
        calls.append(len(payloads))
        if len(calls) == 1:  # the first round loses the ReLU's process to the "machine"
            outcomes[0] = sandbox.Outcome("sandbox-error", None, "clone: Resource temporarily unavailable")
        return outcomes

    monkeypatch.setattr(sandbox.Sandbox, "map", flaky_map)
    relu_trace, crash = trace_problems_isolated([(relu, "2_ReLU.py"), (exits, "9_Exits.py")], timeout_s=60)
    assert calls == [2, 2]  # both retried once: the lost one and the one that ended its process
    assert isinstance(relu_trace, ProblemTrace) and relu_trace.bindings == {"batch_size": 16, "dim": 128}
    assert isinstance(crash, ProblemTraceError) and crash.stage == "crash"


# A model whose construction reads values, as KernelBench's Swin models do (level 3, 29 and 30: each block's
# stochastic depth from `[x.item() for x in torch.linspace(0, rate, sum(depths))]`): on the meta device alone
# it could not be traced ("Tensor.item() cannot be called on meta tensors").
READS_WHILE_BUILDING = '''
import torch
import torch.nn as nn

depths = [2, 2, 6, 2]
batch_size = 4
width = 32

class Block(nn.Module):
    def __init__(self, width, rate):
        super().__init__()
        self.rate = rate
        self.fc = nn.Linear(width, width) if rate > 0.05 else nn.Identity()

    def forward(self, x):
        return self.fc(x)

class Model(nn.Module):
    def __init__(self, width):
        super().__init__()
        rates = [x.item() for x in torch.linspace(0, 0.1, sum(depths))]
        self.blocks = nn.Sequential(*[Block(width, r) for r in rates])
        table = torch.arange(6).reshape(2, 3)
        table[0, 0] = 40                      # written in place: the value read is the one written
        self.extra = int(table.sum())         # 40 + 1 + 2 + 3 + 4 + 5
        self.head = nn.Linear(width, self.extra)

    def forward(self, x):
        return self.head(self.blocks(x))

def get_inputs():
    return [torch.randn(batch_size, width)]

def get_init_inputs():
    return [width]
'''


def test_a_model_that_reads_small_values_while_it_is_built_traces():
    """kernelindex.ingest.problem_trace.SmallValues: values the model reads while it is built come from CPU twins
    of the small tensors they were computed from; the model, its parameters and its FLOPs are what the values
    make it (the first six of 12 blocks skip their layer: rate ≤ 0.05), counted on meta as ever."""
    trace = trace_problem(READS_WHILE_BUILDING, "reads.py")
    rates = [0.1 * i / 11 for i in range(12)]
    layers = sum(rate > 0.05 for rate in rates)
    assert layers == 6
    assert trace.param_count == layers * (32 * 32 + 32) + 32 * 55 + 55
    assert trace.flops_by_class["matmul"] == 2 * 4 * (layers * 32 * 32 + 32 * 55)  # the twins' arithmetic is not counted
    assert trace.outputs[0]["concrete_shape"] == [4, 55]


@pytest.mark.parametrize(
    ("step", "why"),
    [
        # A value written from what has no twin (a parameter) cannot be known: the read fails as it did.
        ("t = torch.arange(4).float()\n        t.copy_(nn.Linear(2, 2).weight.flatten())\n        n = int(t.sum())", "meta"),
        # Nor one written through an alias without a twin: nn.Parameter(t) shares t's storage (read: 0, not 15).
        ("t = torch.zeros(3)\n        p = nn.Parameter(t)\n        nn.init.constant_(p, 5.0)\n        n = int(t.sum())", "meta"),
        # Random values have no twin.
        ("n = int(torch.rand(3).sum() > 0)", "meta"),
        # Nor does anything large.
        ("n = int(torch.ones(1 << 17).sum())", "meta"),
    ],
)
def test_values_without_a_twin_still_cannot_be_read(step, why):
    source = f'''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        {step}

    def forward(self, x):
        return x

def get_inputs():
    return [torch.randn(2, 2)]

def get_init_inputs():
    return []
'''
    with pytest.raises(ProblemTraceError) as caught:
        trace_problem(source, "unreadable.py")
    assert caught.value.stage == "construct" and why in caught.value.message


def test_a_value_read_in_the_forward_pass_still_fails():
    """The twins are made while the model is built, not in the forward pass (FLOPs are counted there)."""
    source = READS_WHILE_BUILDING.replace("return self.head(self.blocks(x))", "return self.head(self.blocks(x)) * torch.arange(3).sum().item()")
    with pytest.raises(ProblemTraceError) as caught:
        trace_problem(source, "reads_in_forward.py")
    assert caught.value.stage == "forward" and "meta" in caught.value.message
