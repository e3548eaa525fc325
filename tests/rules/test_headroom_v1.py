"""headroom-v1: the bandwidth floor from declared tensors and the family's reference datasheet."""

from __future__ import annotations

import pytest

from kernelindex.rules.display import format_ratio
from kernelindex.rules.headroom_v1 import (
    HEADROOM_V1,
    bound_shape,
    declared_tensor_bytes,
    headroom_v1,
    reference_hardware,
)
from tests.rules.factories import RESNET18, VGG19, hardware, seed_catalogue, seed_workloads

CATALOGUE = seed_catalogue()
WORKLOADS = seed_workloads()
RESNET_SEMANTICS = WORKLOADS[RESNET18]["semantics"]
VGG_SEMANTICS = WORKLOADS[VGG19]["semantics"]


def test_bound_shape():
    assert bound_shape(["batch_size", 3, 224, 224], {"batch_size": 2}) == [2, 3, 224, 224]
    assert bound_shape(["out"], {"batch_size": 2}) is None
    assert bound_shape([], {}) == []
    assert bound_shape([None], {}) is None


def test_resnet18_bytes_exclude_the_unbound_output():
    assert declared_tensor_bytes(RESNET_SEMANTICS, {"batch_size": 2}) == 2 * 3 * 224 * 224 * 4 == 1_204_224


def test_a_bound_output_is_counted():
    semantics = {
        "inputs": [{"name": "x", "dtype": "fp16", "shape": ["n", 8]}],
        "outputs": [{"name": "y", "dtype": "float", "shape": ["n"]}],
    }
    assert declared_tensor_bytes(semantics, {"n": 4}) == 4 * 8 * 2 + 4 * 4


def test_unknown_dtype_and_missing_semantics_count_nothing():
    assert declared_tensor_bytes({"inputs": [{"dtype": "complex32", "shape": [4]}]}, {}) == 0
    assert declared_tensor_bytes(None, {"batch_size": 2}) == 0
    assert declared_tensor_bytes({}, {}) == 0


def test_resnet18_floor_on_h100():
    h = headroom_v1(RESNET_SEMANTICS, {"batch_size": 2}, "NVIDIA H100", CATALOGUE, 1.39)
    assert h.method == HEADROOM_V1 == "headroom-v1"
    assert h.bytes == 1_204_224
    assert h.bytes_display == "1,204,224 bytes"
    assert h.hardware.short_name == "H100 SXM"
    assert h.bandwidth_gbps == 3350
    assert h.floor_ns == pytest.approx(359.4698, abs=1e-3)
    assert h.floor_display == "359 ns"
    assert h.ratio_above == pytest.approx(3866.8055, abs=1e-3)
    assert format_ratio(h.ratio_above) == "3866.81×"
    assert h.summary == "Estimated floor 359 ns · record 3866.81× above it"
    assert h.bound_line == "DRAM 359 ns · bandwidth-bound on H100 SXM"
    assert h.basis_line == "every declared tensor crosses HBM exactly once (3,350 GB/s, H100 SXM datasheet)"
    assert h.unavailable_reason is None


def test_vgg19_floor_on_h100():
    h = headroom_v1(VGG_SEMANTICS, {"batch_size": 10}, "NVIDIA H100", CATALOGUE, 2.43)
    assert h.bytes == 6_021_120
    assert h.floor_ns == pytest.approx(1797.349, abs=1e-3)
    assert h.floor_display == "1.80 µs"
    assert format_ratio(h.ratio_above) == "1351.99×"
    assert h.summary == "Estimated floor 1.80 µs · record 1351.99× above it"


def test_reference_sku_is_chosen_whatever_the_catalogue_order():
    pcie = hardware(id=2, short_name="H100 PCIe", dram_bandwidth_gbps=2039, reference_for_family=False)
    sxm = hardware(id=1, short_name="H100 SXM", dram_bandwidth_gbps=3350, reference_for_family=True)
    assert reference_hardware("NVIDIA H100", [pcie, sxm]) is sxm
    assert reference_hardware("NVIDIA H100", [sxm, pcie]) is sxm


def test_family_without_a_reference_sku_falls_back_to_its_first_member():
    other = hardware(id=9, family="NVIDIA L4", short_name="L4", reference_for_family=True)
    first = hardware(id=3, family="Acme X", short_name="X 40GB", dram_bandwidth_gbps=1000)
    second = hardware(id=4, family="Acme X", short_name="X 80GB", dram_bandwidth_gbps=2000)
    assert reference_hardware("Acme X", [other, first, second]) is first
    h = headroom_v1(RESNET_SEMANTICS, {"batch_size": 2}, "Acme X", [other, first, second], 1.0)
    assert h.hardware is first
    assert h.floor_ns == pytest.approx(1204.224)
    assert h.bound_line == "DRAM 1.20 µs · bandwidth-bound on X 40GB"


def test_unknown_family_has_no_reference():
    assert reference_hardware("Nope", CATALOGUE) is None


def test_hardware_without_datasheet_bandwidth_has_no_floor():
    hw = hardware(id=5, family="Acme Y", short_name="Y", dram_bandwidth_gbps=None)
    h = headroom_v1(RESNET_SEMANTICS, {"batch_size": 2}, "Acme Y", [hw], 1.39)
    assert h.floor_ns is None
    assert h.hardware is hw
    assert h.unavailable_reason == "no datasheet DRAM bandwidth for Acme Y"
    assert h.bytes == 1_204_224
    assert h.ratio_above is None
    assert h.summary is None and h.bound_line is None and h.basis_line is None and h.floor_display is None


def test_no_record_gives_no_floor():
    h = headroom_v1(RESNET_SEMANTICS, {"batch_size": 2}, None, CATALOGUE, None)
    assert h.floor_ns is None
    assert h.hardware is None
    assert h.unavailable_reason == "no record, so no hardware to bound"
    assert h.summary is None and h.bound_line is None and h.basis_line is None


def test_no_bound_tensor_gives_no_floor():
    h = headroom_v1(RESNET_SEMANTICS, {}, "NVIDIA H100", CATALOGUE, 1.39)
    assert h.bytes == 0
    assert h.floor_ns is None
    assert h.unavailable_reason == "no declared tensor is fully bound"


def test_floor_without_record_latency_has_no_ratio():
    h = headroom_v1(RESNET_SEMANTICS, {"batch_size": 2}, "NVIDIA H100", CATALOGUE, None)
    assert h.floor_display == "359 ns"
    assert h.ratio_above is None
    assert h.summary == "Estimated floor 359 ns"
