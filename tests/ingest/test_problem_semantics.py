"""One owner of problem semantics: the runner (benchmarks.problems) and the importer's tracer
(kernelindex.ingest.problem_trace) agree on a problem's canonical configuration, and axes are found by
varying the constants, not by matching values."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.naming import problem_name, slug_for_path
from benchmarks.problems import Problem, find_axes, instantiate, load_module, problem_bindings
from kernelindex.ingest.problem_trace import trace_problem
from kernelindex.ingest.workloads import workload_slug
from tests.conftest import SHARED_KERNELBENCH

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = REPO_ROOT / "tests" / "fixtures" / "kernelbench_checkout" / "KernelBench"
PROBLEM_FILES = sorted(CHECKOUT.glob("level*/*.py")) + sorted((REPO_ROOT / "seeds" / "reference").glob("*.py"))


def shapes(entries):
    return [entry["shape"] for entry in entries]


@pytest.mark.parametrize("path", PROBLEM_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_runner_records_the_canonical_configuration_the_importer_stores(path):
    traced = trace_problem(path.read_text(), path.name)
    instance = instantiate(Problem.from_file(path), "cpu")
    assert instance.bindings == traced.bindings
    assert list(instance.bindings) == list(traced.bindings)  # same order too
    assert instance.dtype == traced.dtype


# L1 P95 kind: the class count sizes an input only through a tuple derived from it at import.
CROSS_ENTROPY = """
import torch
import torch.nn.functional as F

class Model(torch.nn.Module):
    def forward(self, predictions, targets):
        return F.cross_entropy(predictions, targets)

batch_size = 32
num_classes = 10
input_shape = (num_classes,)
dim = 1

def get_inputs():
    return [torch.randn(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]

def get_init_inputs():
    return []
"""

# L2 P26 kind: stride sizes the second input only through products (D * stride), and D * stride equals
# batch_size, which value matching used to name it.
TRANSPOSED_CONV_ADD = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride, padding, output_padding)

    def forward(self, x, add_input):
        x = self.conv(x) + add_input
        return x * torch.nn.functional.hardswish(x)

batch_size = 8
in_channels = 3
out_channels = 5
D, H, W = 4, 5, 6
kernel_size = 3
stride = 2
padding = 1
output_padding = 1

def get_inputs():
    return [torch.randn(batch_size, in_channels, D, H, W),
            torch.randn(batch_size, out_channels, D * stride, H * stride, W * stride)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding]
"""

# L2 P1 kind: out_channels == batch_size, and height == width.
CONV_SAME_COUNT = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return torch.relu(self.conv(x))

batch_size = 16
in_channels = 3
out_channels = 16
height = width = 10
kernel_size = 3

def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
"""

# The same, with out_channels an axis (it sizes the bias input): the output's channel axis is named after it.
CONV_WITH_BIAS_INPUT = CONV_SAME_COUNT.replace(
    "def forward(self, x):\n        return torch.relu(self.conv(x))",
    "def forward(self, x, bias):\n        return torch.relu(self.conv(x)) + bias",
).replace(
    "return [torch.randn(batch_size, in_channels, height, width)]",
    "return [torch.randn(batch_size, in_channels, height, width), torch.randn(out_channels, 1, 1)]",
)


def both_sides(source: str, filename: str):
    traced = trace_problem(source, filename)
    instance = instantiate(Problem("synthetic", source, filename), "cpu")
    assert instance.bindings == traced.bindings == problem_bindings(source, filename)
    return traced


def test_a_constant_sizing_inputs_through_a_derived_tuple_is_an_axis_on_both_sides():
    traced = both_sides(CROSS_ENTROPY, "95_CrossEntropyLoss.py")
    assert traced.bindings == {"batch_size": 32, "num_classes": 10}
    assert shapes(traced.inputs) == [["batch_size", "num_classes"], ["batch_size"]]


def test_a_constant_sizing_inputs_through_a_product_is_an_axis_and_names_nothing():
    traced = both_sides(TRANSPOSED_CONV_ADD, "26_ConvTranspose3d_Add_HardSwish.py")
    assert traced.bindings == {
        "batch_size": 8, "in_channels": 3, "out_channels": 5, "D": 4, "H": 5, "W": 6, "stride": 2,
    }
    # D * stride == 8 == batch_size, H * stride == 10, W * stride == 12: no axis follows them alone.
    assert shapes(traced.inputs) == [
        ["batch_size", "in_channels", "D", "H", "W"],
        ["batch_size", "out_channels", 8, 10, 12],
    ]
    assert shapes(traced.outputs) == [["batch_size", "out_channels", 8, 10, 12]]


def test_out_channels_equal_to_batch_size_is_not_named_batch_size():
    traced = both_sides(CONV_SAME_COUNT, "1_Conv2d_ReLU.py")
    assert traced.bindings == {"batch_size": 16, "in_channels": 3, "height": 10, "width": 10}
    assert shapes(traced.inputs) == [["batch_size", "in_channels", "height", "width"]]
    # out_channels sizes only the weights: not an axis, so its dimension stays the integer.
    assert shapes(traced.outputs) == [["batch_size", 16, 8, 8]]


def test_an_output_axis_is_named_after_the_axis_it_follows():
    traced = both_sides(CONV_WITH_BIAS_INPUT, "1_Conv2d_ReLU_Bias.py")
    assert traced.bindings == {"batch_size": 16, "in_channels": 3, "out_channels": 16, "height": 10, "width": 10}
    assert shapes(traced.inputs) == [["batch_size", "in_channels", "height", "width"], ["out_channels", 1, 1]]
    assert shapes(traced.outputs) == [["batch_size", "out_channels", 8, 8]]


def test_an_override_moves_one_name_of_a_chained_assignment():
    module = load_module(CONV_SAME_COUNT, overrides={"height": 12})
    assert (module.height, module.width) == (12, 10)


def test_derived_constants_follow_and_the_last_defined_names_the_dimension():
    source = """
import torch

class Model(torch.nn.Module):
    def forward(self, a, b):
        return a @ b

M = 8
N = M
K = 4

def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]

def get_init_inputs():
    return []
"""
    traced = both_sides(source, "9_Derived.py")
    assert traced.bindings == {"M": 8, "N": 8, "K": 4}
    assert shapes(traced.inputs) == [["M", "K"], ["K", "N"]]
    assert shapes(traced.outputs) == [["M", "N"]]


def test_batch_size_is_an_axis_even_when_it_sizes_nothing_and_values_never_bind():
    source = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2

batch_size = 7
features = 64
unused = 64

def get_inputs():
    return [torch.randn(features, 7)]

def get_init_inputs():
    return []
"""
    axes = find_axes(source)
    assert axes.bindings == {"batch_size": 7, "features": 64}
    traced = both_sides(source, "3_Scale.py")
    assert shapes(traced.inputs) == [["features", 7]]


def test_slugs_come_from_the_level_folder_and_the_file_name():
    path = CHECKOUT / "level1" / "1_Square_matrix_multiplication_.py"
    assert problem_name(path).slug == slug_for_path(path) == "kernelbench-l1-p1-square-matrix-multiplication"
    assert workload_slug("kernelbench", 1, 1, "Square_matrix_multiplication_") == slug_for_path(path)
    assert Problem.from_file(path).slug == slug_for_path(path)
    assert slug_for_path("elsewhere/1_Thing.py") is None and slug_for_path("level1/thing.py") is None


def test_every_problem_of_a_real_checkout_agrees():
    """The real tree (../shared/kernelbench, upstream 423217d) whenever it is there, or KERNELBENCH_CHECKOUT=/path
    to another checkout: the runner and the importer agree on every problem the runner can load. Where the runner
    cannot (a module it imports is not installed here: transformers), the importer still stores the
    configuration the file's constants state, and the runner's failure must be exactly that missing module. A
    module the project installs excuses nothing: einops comes with the torch extra (`make setup`), so the
    level-3 Mamba2 problems that import it are compared (of the real tree's 270, all but the 20 level-4
    problems that import transformers, which load a model configuration from the Hugging Face hub)."""
    root = os.environ.get("KERNELBENCH_CHECKOUT") or (str(SHARED_KERNELBENCH) if SHARED_KERNELBENCH.is_dir() else None)
    if not root:
        pytest.skip("no ../shared/kernelbench and no KERNELBENCH_CHECKOUT: nothing to compare the runner and the importer on")
    if not Path(root).is_dir():
        pytest.skip(f"KERNELBENCH_CHECKOUT={root} is not a directory")
    from perf.problem_agreement import compare_checkout

    report = compare_checkout(Path(root), workers=2)
    if not report.results:
        pytest.skip(f"no levelN/NN_Name.py problems under {root}")
    print(f"\n{report.summary()}")
    missing = [r for r in report.disagreements
               if isinstance(r.runner, str) and r.runner.startswith("failed (ModuleNotFoundError: No module named")
               and isinstance(r.importer, dict)]
    assert [r for r in report.disagreements if r not in missing] == [], report.text()
    assert [r for r in missing if "No module named 'einops'" in str(r.runner)] == [], report.text()
