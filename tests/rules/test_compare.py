"""compare-v1: field-by-field differences, a winner inside one cohort, or why there is none."""

from __future__ import annotations

import pytest

from kernelindex.rules.compare import COMPARE_VERSION, compare_runs
from tests.rules.factories import RESNET18, environment, hardware, protocol, run, seed_world

SXM = hardware(id=1, sku="NVIDIA H100 SXM5 80GB", short_name="H100 SXM")
PCIE = hardware(id=2, sku="NVIDIA H100 PCIe 80GB", short_name="H100 PCIe")
ENV = environment(id=1, hw=SXM, provider="Modal", torch_version="2.6.0", cuda_version="12.4")


def _by_field(c):
    return {f.field: f for f in c.fields}


def test_version():
    assert COMPARE_VERSION == "compare-v1"


@pytest.mark.parametrize("n", [0, 1, 9])
def test_two_to_eight_runs(n):
    with pytest.raises(ValueError):
        compare_runs([run(i, 1.0) for i in range(n)])


def test_eight_runs_are_accepted():
    assert len(compare_runs([run(i, 1.0 + i / 10, env=ENV) for i in range(8)]).run_ids) == 8


def test_one_cohort_has_a_winner_and_the_field_list():
    a, b = run(1, 1.2, env=ENV, std_ms=0.01), run(2, 1.0, env=ENV, std_ms=0.01)
    c = compare_runs([a, b])
    assert c.comparable and c.winner is b and c.incomparable_because is None
    assert c.tied_with_winner == ()
    assert [f.field for f in c.fields] == [
        "hardware", "provider", "torch_version", "cuda_version", "driver_version", "python_version", "triton_version",
        "protocol_name", "protocol_version", "bindings", "dtype", "source_name", "source_revision", "workload_revision",
    ]
    assert c.differences == ()
    assert _by_field(c)["hardware"].as_dict() == {
        "field": "hardware", "values": ["NVIDIA H100 SXM5 80GB", "NVIDIA H100 SXM5 80GB"], "differs": False,
    }
    assert _by_field(c)["torch_version"].values == ("2.6.0", "2.6.0")


def test_winner_names_the_runs_tied_with_it():
    # 1.00 ± 0.098 and 1.05 ± 0.098 overlap: 1.00 wins on the mean, 1.05 shares rank 1
    c = compare_runs([run(1, 1.05, env=ENV, std_ms=0.5), run(2, 1.0, env=ENV, std_ms=0.5)])
    assert c.winner.id == 2 and c.tied_with_winner == (1,)


def test_failed_runs_do_not_win():
    c = compare_runs([run(1, None, env=ENV, status="failed"), run(2, 1.5, env=ENV)])
    assert c.winner.id == 2
    none = compare_runs([run(1, None, env=ENV, status="failed"), run(2, None, env=ENV, status="failed")])
    assert none.comparable and none.winner is None


def test_different_hardware():
    c = compare_runs([run(1, 1.0, env=environment(id=1, hw=SXM)), run(2, 0.9, env=environment(id=2, hw=PCIE))])
    assert not c.comparable and c.winner is None
    assert c.incomparable_because == "different hardware: NVIDIA H100 SXM5 80GB vs NVIDIA H100 PCIe 80GB"
    assert [f.field for f in c.differences] == ["hardware"]


def test_the_seed_runs_of_one_implementation_on_two_gpus():
    _, runs = seed_world()[RESNET18]
    eager = [r for r in runs if r.implementation.slug == "torch_eager"]
    c = compare_runs(eager)
    assert c.incomparable_because == "different hardware: NVIDIA H100 PCIe 80GB vs NVIDIA H100 SXM5 80GB"
    assert _by_field(c)["provider"].values == ("Lambda Labs", "Modal")
    assert {f.field for f in c.differences} == {"hardware", "provider"}


def test_provider_then_software_on_the_same_hardware():
    a = run(1, 1.0, env=environment(id=1, hw=SXM, provider="Modal", torch_version="2.6.0"))
    b = run(2, 1.0, env=environment(id=2, hw=SXM, provider="Lambda Labs", torch_version="2.7.0"))
    assert compare_runs([a, b]).incomparable_because == "different provider: Modal vs Lambda Labs"
    c = run(3, 1.0, env=environment(id=3, hw=SXM, provider="Modal", torch_version="2.7.0"))
    assert compare_runs([a, c]).incomparable_because == "different torch: 2.6.0 vs 2.7.0"
    d = run(4, 1.0, env=environment(id=4, hw=SXM, provider="Modal", torch_version="2.6.0", label="pool-4"))
    assert compare_runs([a, d]).incomparable_because == "different environment: environment 1 vs pool-4"


def test_a_missing_value_reads_unknown():
    a = run(1, 1.0, env=environment(id=1, hw=SXM, cuda_version="12.4"))
    b = run(2, 1.0, env=environment(id=2, hw=SXM))
    assert compare_runs([a, b]).incomparable_because == "different CUDA: 12.4 vs unknown"


def test_order_workload_revision_first():
    a = run(1, 1.0, env=environment(id=1, hw=SXM))
    b = run(2, 1.0, env=environment(id=2, hw=PCIE), revision_id=9, bindings={"batch_size": 4}, proto=protocol(id=2))
    assert compare_runs([a, b]).incomparable_because == "different workload revisions: 10 vs 9"


def test_order_configuration_before_protocol_and_environment():
    a = run(1, 1.0, env=environment(id=1, hw=SXM))
    b = run(2, 1.0, env=environment(id=2, hw=PCIE), dtype="fp16", proto=protocol(id=2, name="KernelIndex", version="2"))
    c = compare_runs([a, b])
    assert c.incomparable_because == "different configuration: batch_size=2, fp32 vs batch_size=2, fp16"
    assert {f.field for f in c.differences} == {"hardware", "protocol_name", "protocol_version", "dtype"}


def test_order_protocol_before_environment():
    a = run(1, 1.0, env=environment(id=1, hw=SXM))
    b = run(2, 1.0, env=environment(id=2, hw=PCIE), proto=protocol(id=2, name="KernelIndex", version="2"))
    assert compare_runs([a, b]).incomparable_because == "different protocol: KernelBench timing scripts 1 vs KernelIndex 2"
    same_words = run(3, 1.0, proto=protocol(id=3))
    assert compare_runs([run(4, 1.0), same_words]).incomparable_because == (
        "different protocol: KernelBench timing scripts 1 (protocol 1) vs KernelBench timing scripts 1 (protocol 3)"
    )


def test_three_runs_list_distinct_values_once():
    envs = [environment(id=i, hw=h) for i, h in ((1, SXM), (2, PCIE), (3, SXM))]
    c = compare_runs([run(i, 1.0, env=e) for i, e in enumerate(envs, start=1)])
    # runs 1 and 3 share the SKU but not the environment; the first difference is still the hardware
    assert c.incomparable_because == "different hardware: NVIDIA H100 SXM5 80GB vs NVIDIA H100 PCIe 80GB"
    assert _by_field(c)["hardware"].values == (SXM.sku, PCIE.sku, SXM.sku)


def test_bindings_compare_regardless_of_key_order():
    a = run(1, 1.0, env=ENV, bindings={"a": 1, "b": 2})
    b = run(2, 1.1, env=ENV, bindings={"b": 2, "a": 1})
    c = compare_runs([a, b])
    assert not _by_field(c)["bindings"].differs
    assert c.comparable and c.winner is a
