from pathlib import Path

import pytest
import torch

from benchmarks.problems import (
    Problem,
    ProblemError,
    as_problem,
    infer_dtype,
    instantiate,
    load_module,
    source_sha256,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench"


def fixture_problem(name: str) -> Problem:
    return Problem.from_file(FIXTURES / f"{name}.py")


def test_problem_from_file_takes_its_slug_from_the_file_name():
    problem = fixture_problem("tiny_mlp")
    assert problem.slug == "tiny-mlp"
    assert problem.source_sha256 == source_sha256((FIXTURES / "tiny_mlp.py").read_text(encoding="utf-8"))
    assert Problem.from_file(FIXTURES / "tiny_mlp.py", "given-slug").slug == "given-slug"


def test_a_tuple_is_accepted_as_a_problem():
    source = (FIXTURES / "tiny_mlp.py").read_text(encoding="utf-8")
    assert as_problem(("s", source, None)) == Problem("s", source, None)
    assert as_problem(("s", source)) == Problem("s", source)


def test_instantiate_builds_inputs_and_reports_the_constants_that_size_them():
    instance = instantiate(fixture_problem("tiny_mlp"), "cpu")
    assert [tuple(x.shape) for x in instance.inputs] == [(4, 16)]
    # hidden_features and out_features size only the weights, not the inputs
    assert instance.bindings == {"batch_size": 4, "in_features": 16}
    assert instance.dtype == "fp32"


def test_batch_size_override_changes_the_input_shape_and_the_bindings():
    instance = instantiate(fixture_problem("tiny_mlp"), "cpu", {"batch_size": 8})
    assert [tuple(x.shape) for x in instance.inputs] == [(8, 16)]
    # out_features is also 8 now, but it does not size the inputs and must not be reported
    assert instance.bindings == {"batch_size": 8, "in_features": 16}
    assert instance.new_model()(*instance.inputs).shape == (8, 8)


def test_an_override_reaches_constants_derived_from_it():
    instance = instantiate(fixture_problem("tiny_conv"), "cpu", {"height": 20})
    assert [tuple(x.shape) for x in instance.inputs] == [(2, 3, 20, 20)]
    assert instance.bindings == {"batch_size": 2, "in_channels": 3, "height": 20, "width": 20}


def test_overriding_something_that_is_not_an_integer_constant_is_refused():
    source = fixture_problem("tiny_conv").source_text
    with pytest.raises(ProblemError, match="not_there"):
        load_module(source, overrides={"not_there": 3})
    with pytest.raises(ProblemError, match="use_bias"):
        load_module(source, overrides={"use_bias": 0})  # a bool, not a size
    with pytest.raises(ProblemError):
        load_module(source, overrides={"batch_size": 2.5})


def test_inputs_and_weights_are_seeded_like_kernelbench():
    first = instantiate(fixture_problem("tiny_mlp"), "cpu")
    torch.manual_seed(1234)  # whatever ran before must not matter
    second = instantiate(fixture_problem("tiny_mlp"), "cpu")
    assert torch.equal(first.inputs[0], second.inputs[0])
    torch.manual_seed(42)
    assert torch.equal(first.inputs[0], torch.randn(4, 16))
    for a, b in zip(first.new_model().parameters(), second.new_model().parameters()):
        assert torch.equal(a, b)


def test_each_load_is_a_fresh_namespace():
    source = fixture_problem("tiny_mlp").source_text
    first = load_module(source)
    first.batch_size = 99
    assert load_module(source).batch_size == 4
    assert first.__name__ != load_module(source).__name__


def test_errors_raised_by_the_module_propagate():
    with pytest.raises(ModuleNotFoundError):
        load_module(fixture_problem("import_error").source_text)
    with pytest.raises(ValueError, match="always fails"):
        instantiate(fixture_problem("inputs_error"), "cpu")


def test_a_module_without_the_kernelbench_functions_is_refused():
    with pytest.raises(ProblemError, match="get_inputs"):
        instantiate(Problem("empty", "import torch\nclass Model(torch.nn.Module):\n    pass\n"), "cpu")


def test_dtype_inference():
    assert infer_dtype([torch.zeros(2, dtype=torch.float16)]) == "fp16"
    assert infer_dtype([torch.zeros(2, dtype=torch.int64), torch.zeros(2, dtype=torch.bfloat16)]) == "bf16"
    assert infer_dtype([torch.zeros(2, dtype=torch.float64)]) == "fp64"
    # integer inputs (token ids) with floating weights: the weights say what is computed
    assert infer_dtype([torch.zeros(2, dtype=torch.int64)], torch.nn.Embedding(4, 4)) == "fp32"
    assert infer_dtype([torch.zeros(2, dtype=torch.int64)]) == "int64"
    assert infer_dtype([3, "text"]) == "fp32"
