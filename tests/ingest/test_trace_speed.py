"""Recurrent layers are traced from their shapes (problem_trace.RecurrentShortcut), and agree with the
step-by-step meta run they replace: the same output shapes, the same FLOPs, the same errors."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kernelindex.ingest.problem_trace import ProblemTraceError, trace_problem  # noqa: E402

RECURRENT = Path(__file__).resolve().parents[1] / "fixtures" / "recurrent"

SMALL = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.{layer}(input_size, hidden_size, num_layers, bias={bias}, batch_first={batch_first},
                              bidirectional={bidirectional}{extra})
        self.head = nn.Linear(hidden_size, 3)

    def forward(self, x{state_args}):
        output, state = self.rnn(x{state_call})
        states = state if isinstance(state, tuple) else (state,)
        return (output, *states, self.head(states[0][-1]))


batch_size = 3
seq_len = 5
input_size = 4
hidden_size = 6
num_layers = 2
directions = {directions}
proj_size = {proj}


def get_inputs():
    x = torch.randn({x_shape})
    states = [torch.randn(num_layers * directions, {batch}{h_out})]
    if {lstm}:
        states.append(torch.randn(num_layers * directions, {batch}hidden_size))
    return [x, *states] if {with_state} else [x]


def get_init_inputs():
    return []
"""


def _source(layer: str, *, bidirectional: bool, batch_first: bool, with_state: bool, bias: bool = True,
            proj: int = 0, unbatched: bool = False, nonlinearity: str | None = None) -> str:
    lstm = layer == "LSTM"
    extra = f", proj_size={proj}" if proj else ""
    if nonlinearity:
        extra += f", nonlinearity={nonlinearity!r}"
    if unbatched:
        x_shape, batch = "seq_len, input_size", ""
    else:
        x_shape = "batch_size, seq_len, input_size" if batch_first else "seq_len, batch_size, input_size"
        batch = "batch_size, "
    if with_state:
        state_args, state_call = (", h0, c0", ", (h0, c0)") if lstm else (", h0", ", h0")
    else:
        state_args = state_call = ""
    # The head reads the last layer's final hidden state; with a projection that has proj_size features.
    source = SMALL.format(
        layer=layer, bias=bias, batch_first=batch_first, bidirectional=bidirectional, extra=extra,
        state_args=state_args, state_call=state_call, directions=2 if bidirectional else 1, proj=proj,
        x_shape=x_shape, batch=batch, h_out="proj_size" if proj else "hidden_size", lstm=lstm, with_state=with_state,
    )
    if proj:
        source = source.replace("nn.Linear(hidden_size, 3)", "nn.Linear(proj_size, 3)")
    return source


CASES = [
    dict(layer=layer, bidirectional=bidirectional, batch_first=batch_first, with_state=with_state)
    for layer, bidirectional, batch_first, with_state in itertools.product(
        ("LSTM", "GRU", "RNN"), (False, True), (False, True), (False, True)
    )
] + [
    dict(layer="LSTM", bidirectional=True, batch_first=True, with_state=True, proj=2),
    dict(layer="LSTM", bidirectional=False, batch_first=False, with_state=False, proj=3),
    dict(layer="GRU", bidirectional=True, batch_first=False, with_state=True, bias=False),
    dict(layer="LSTM", bidirectional=False, batch_first=True, with_state=False, bias=False, proj=2),
    dict(layer="RNN", bidirectional=True, batch_first=True, with_state=False, nonlinearity="relu"),
    dict(layer="LSTM", bidirectional=True, batch_first=False, with_state=True, unbatched=True),
    dict(layer="GRU", bidirectional=False, batch_first=True, with_state=False, unbatched=True),
]


def _case_id(case: dict) -> str:
    return "-".join(f"{k}={v}" if not isinstance(v, bool) else (k if v else f"no_{k}") for k, v in case.items())


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_analytic_recurrent_trace_equals_the_stepwise_one(case):
    source = _source(**case)
    fast = trace_problem(source, "rnn.py")
    slow = trace_problem(source, "rnn.py", stepwise_recurrent=True)
    assert fast.to_json() == slow.to_json()
    assert fast.flops_by_class["matmul"] > 0


def _expected_flops(layer: str, *, bidirectional: bool, steps: int, batch: int, features: int, hidden: int,
                    layers: int, head: tuple[int, int]) -> int:
    """Matmul FLOPs of a recurrent stack and a linear head, written out from the layer sizes."""
    gates = {"LSTM": 4, "GRU": 3}[layer]
    directions = 2 if bidirectional else 1
    total = 0
    for index in range(layers):
        inputs = features if index == 0 else directions * hidden
        total += directions * steps * batch * 2 * gates * hidden * (inputs + hidden)
    return total + 2 * head[0] * head[1] * batch


KERNELBENCH_RECURRENT = {
    # file: (layer, bidirectional, output shape, FLOPs the step-by-step meta run counted)
    "35_LSTM.py": ("LSTM", False, [10, 10], 30_870_128_640),
    "36_LSTMHn.py": ("LSTM", False, [6, 10, 256], 30_870_128_640),
    "37_LSTMCn.py": ("LSTM", False, [6, 10, 256], 30_870_128_640),
    "38_LSTMBidirectional.py": ("LSTM", True, [10, 10], 88_583_802_880),
    "39_GRU.py": ("GRU", False, [512, 10, 256], 23_152_558_080),
    "40_GRUHidden.py": ("GRU", False, [6, 10, 256], 23_152_558_080),
    "41_GRUBidirectional.py": ("GRU", True, [512, 10, 512], 66_437_775_360),
    "42_GRUBidirectionalHidden.py": ("GRU", True, [12, 10, 256], 66_437_775_360),
}


@pytest.mark.parametrize("filename", sorted(KERNELBENCH_RECURRENT))
def test_kernelbench_sized_recurrent_problems_trace_in_well_under_a_second(filename):
    layer, bidirectional, shape, stepwise_flops = KERNELBENCH_RECURRENT[filename]
    source = (RECURRENT / filename).read_text()
    trace_problem(source, filename)  # torch's lazy first-use imports, not the tracer's cost
    start = time.perf_counter()
    trace = trace_problem(source, filename)
    elapsed = time.perf_counter() - start
    # Stepped through on meta these took 30 s to 3 min each on a 2-core machine.
    assert elapsed < 2.0, f"{filename} took {elapsed:.2f} s"
    assert [o["concrete_shape"] for o in trace.outputs] == [shape]
    head = (0, 0) if filename not in ("35_LSTM.py", "36_LSTMHn.py", "37_LSTMCn.py", "38_LSTMBidirectional.py") else (
        256 * (2 if bidirectional else 1), 10)
    assert trace.flops_by_class == {
        "conv": 0, "other": 0,
        "matmul": _expected_flops(layer, bidirectional=bidirectional, steps=512, batch=10, features=128, hidden=256,
                                  layers=6, head=head),
    }
    assert trace.flops == stepwise_flops


def test_a_recurrent_call_torch_refuses_fails_the_same_way():
    # Weights in fp64, input in fp32: the shortcut does not recognise the call, torch's op raises.
    source = _source("GRU", bidirectional=False, batch_first=True, with_state=False).replace(
        "self.head = nn.Linear(hidden_size, 3)", "self.head = nn.Linear(hidden_size, 3)\n        self.rnn.double()")
    errors = []
    for stepwise in (False, True):
        with pytest.raises(ProblemTraceError) as caught:
            trace_problem(source, "rnn.py", stepwise_recurrent=stepwise)
        errors.append((caught.value.stage, caught.value.message))
    assert errors[0] == errors[1] and errors[0][0] == "forward"


def test_the_shortcut_is_gone_after_a_trace():
    before = dict(vars(torch._VF))
    trace_problem((RECURRENT / "39_GRU.py").read_text(), "39_GRU.py")
    assert dict(vars(torch._VF)) == before
    assert "gru" not in vars(torch._VF)  # torch's own op answers again
