"""benchmarks.problem_constants: a problem's configuration read from its source without running it.

Checked against the loader that runs it (benchmarks.problems.int_constants over the executed module) on the
fixture problems and, when present, every problem of the real KernelBench tree: an independent computation
of the same constants."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.problem_constants import StaticConfiguration, UnreadableConfiguration, static_configuration
from kernelindex.ingest.seed import SEEDS_DIR
from tests.conftest import SHARED_KERNELBENCH

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench_checkout" / "KernelBench"


GET_INPUTS = "\ndef get_inputs():\n    return []\n"


def test_arithmetic_over_literals_and_earlier_constants():
    source = "a = 4\nb = a * 2 + 1\nc: int = b // 3\nd = -a ** 2\ne, f = 1 << 4, 7 % 4\nname = 'x'\nflag = True\n_private = 9\n" + GET_INPUTS
    assert static_configuration(source) == StaticConfiguration({"a": 4, "b": 9, "c": 3, "d": -16, "e": 16, "f": 3}, "fp32")


def test_what_is_not_an_int_constant_is_left_out():
    source = "import os\nconfig = load()\nvocab = config.vocab_size\nx = vocab * 2\nsize = 3.5\nn = int('4')\nk = 8\n" + GET_INPUTS
    assert static_configuration(source).bindings == {"k": 8}


def test_rebinding_keeps_the_last_value_and_a_non_int_rebinding_drops_it():
    assert static_configuration("a = 1\na = 2\nb = 3\nb = 'x'\na += 5\n" + GET_INPUTS).bindings == {"a": 7}


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("import sys\nif sys.argv:\n    batch_size = 4\nelse:\n    batch_size = 8\n", "batch_size is assigned under a line-2 if statement"),
        ("for i in range(3):\n    dim = i\n", "dim, i are assigned under a line-1 for statement"),
        ("def get_inputs():\n    return [torch.randn(4, dtype=torch.float16)]\n", "dtype="),
        ("import torch\ntorch.set_default_dtype(torch.float64)\nn = 4\n" + GET_INPUTS, "set_default_dtype"),
        ("n = 4\nwhile True:\n    pass\n", "defines no get_inputs()"),
        ("raise RuntimeError('no')\nbatch_size = 2\n", "defines no get_inputs()"),
        ("def get_inputs():\n    return [torch.randn(4).half()]\n", "'half'"),
        ("def broken(:\n", "does not parse"),
    ],
)
def test_unreadable_configurations_say_why(source, why):
    with pytest.raises(UnreadableConfiguration, match=None) as raised:
        static_configuration(source)
    assert why in str(raised.value)


def test_dtype_words_inside_the_model_do_not_count():
    # The model's own arithmetic (Swin's relative coordinates in float32) does not make the inputs another dtype.
    source = ("class Model:\n    def forward(self, x):\n        return x.to(dtype=torch.float64)\n\nbatch_size = 2\n"
              "def get_inputs():\n    return [torch.randn(batch_size)]\n")
    assert static_configuration(source) == StaticConfiguration({"batch_size": 2}, "fp32")


def test_comments_and_strings_name_no_dtype():
    # Upstream level 1 problem 57: `in_channels = 64  # double channels for heavier compute`.
    source = 'in_channels = 64  # double channels\nnote = "half precision later"\ndef get_inputs():\n    return []\n'
    assert static_configuration(source) == StaticConfiguration({"in_channels": 64}, "fp32")


def test_huge_values_are_not_sizes():
    assert static_configuration("a = 2 ** 10000\nb = 10 ** 70\nc = 1 << 99\nd = 5\n" + GET_INPUTS).bindings == {"d": 5}


def _agrees_with_the_loader(path: Path) -> None:
    from benchmarks.problems import int_constants, load_module

    source = path.read_text()
    try:
        stated = static_configuration(source)
    except UnreadableConfiguration:
        return  # counted by the caller
    module = load_module(source, str(path))
    run = int_constants(module)
    # Every constant read unrun is one the loader reads by running it, with the same value.
    assert {k: run.get(k) for k in stated.bindings} == stated.bindings, path.name


def test_agrees_with_the_loader_on_the_fixture_problems():
    paths = [*sorted(FIXTURES.glob("level*/*.py")), SEEDS_DIR / "reference" / "resnet18.py", SEEDS_DIR / "reference" / "vgg19.py"]
    for path in paths:
        _agrees_with_the_loader(path)


@pytest.mark.skipif(not (SHARED_KERNELBENCH / "KernelBench").is_dir(), reason="../shared/kernelbench is not present")
def test_every_problem_of_the_real_tree_reads_and_agrees_where_it_runs():
    """All 270 problems of upstream 423217d state their configuration readably; where the loader can run a
    problem's module level here (trusted test data; not those importing transformers), it reads the same
    constants."""
    paths = sorted((SHARED_KERNELBENCH / "KernelBench").glob("level*/*.py"))
    assert len(paths) == 270
    unreadable = []
    for path in paths:
        try:
            static_configuration(path.read_text())
        except UnreadableConfiguration as exc:
            unreadable.append(f"{path.name}: {exc}")
    assert unreadable == []
    # Not the ones importing transformers: absent here, and where present their module level fetches a model
    # configuration over the network. (einops comes with the torch extra: the Mamba2 problems run.)
    runnable = [p for p in paths if "import transformers" not in p.read_text() and "from transformers" not in p.read_text()]
    assert len(runnable) == 250
    for path in runnable[::9]:  # a spread over every level: running all of them costs minutes
        _agrees_with_the_loader(path)
