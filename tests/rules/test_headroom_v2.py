"""headroom-v3 (kernelindex.rules.headroom_v2): the roofline floor on an exact SKU, from the traced analysis
and the datasheet peaks, at the fastest math each FLOP class may use."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelindex.rules.headroom_v2 import (
    DEFAULT_SETTINGS,
    HEADROOM_V3,
    analysis_bytes,
    floors_for_catalogue,
    math_by_class,
    roofline_floor,
)
from tests.rules.factories import hardware, seed_catalogue

CATALOGUE = seed_catalogue()
BY_SHORT = {h.short_name: h for h in CATALOGUE}
SXM, PCIE, H200, B200, T4 = (BY_SHORT[n] for n in ("H100 SXM", "H100 PCIe", "H200", "B200", "T4"))

# What ProblemTrace.to_json() stores for the two reference problems (traced on the meta device;
# test_traced_analyses_match_the_pinned_dicts re-traces them and compares).
SETTINGS = {"cudnn.allow_tf32": True, "float32_matmul_precision": "highest"}
RESNET18 = {
    "bindings": {"batch_size": 2}, "dtype": "fp32",
    "param_count": 11_689_512, "param_bytes": 46_758_048,
    # 38,560 buffer bytes: 20 BatchNorm2d layers with 4,800 channels in all, running mean and var in fp32
    # (2 × 4 × 4,800 = 38,400) plus one int64 num_batches_tracked each (20 × 8 = 160).
    "buffer_bytes": 38_560,
    "input_bytes": 1_204_224,  # 2 × 3 × 224 × 224 × 4
    "output_bytes": 8_000,  # 2 × 1000 × 4
    "flops_by_class": {"conv": 7_254_245_376, "matmul": 2_048_000, "other": 0},
    "assumed_settings": SETTINGS,
}
VGG19 = {
    "bindings": {"batch_size": 10}, "dtype": "fp32",
    "param_count": 143_667_240, "param_bytes": 574_668_960,  # 143,667,240 × 4
    "buffer_bytes": 0,  # no BatchNorm in VGG19
    "input_bytes": 6_021_120,  # 10 × 3 × 224 × 224 × 4
    "output_bytes": 40_000,  # 10 × 1000 × 4
    "flops_by_class": {"conv": 390_168_576_000, "matmul": 2_472_673_280, "other": 0},
    "assumed_settings": SETTINGS,
}


# --- the traced analyses ----------------------------------------------------------------------


def test_traced_analyses_match_the_pinned_dicts():
    pytest.importorskip("torch")
    from kernelindex.ingest.problem_trace import trace_problem

    seeds = Path(__file__).resolve().parents[2] / "seeds" / "reference"
    for pinned, path, name in ((RESNET18, "resnet18.py", "9_ResNet18.py"), (VGG19, "vgg19.py", "12_VGG19.py")):
        traced = trace_problem((seeds / path).read_text(), name).to_json()
        assert {k: traced[k] for k in pinned} == pinned


def test_hand_counted_macs_per_image():
    # FLOPs = 2 × MACs. ResNet18, batch 2: conv 7,254,245,376 / 2 / 2 = 1,813,561,344 MACs per image;
    # fc 2,048,000 / 2 / 2 = 512,000 (512 × 1000); total 1,814,073,344 ≈ 1.814 G.
    per_image = sum(RESNET18["flops_by_class"].values()) / 2 / 2
    assert per_image == 1_814_073_344
    assert round(per_image / 1e9, 3) == 1.814
    # VGG19, batch 10: conv 390,168,576,000 / 2 / 10 = 19,508,428,800; fc 2,472,673,280 / 2 / 10
    # = 123,633,664 (25088·4096 + 4096·4096 + 4096·1000); total 19,632,062,464 ≈ 19.63 G.
    assert RESNET18["flops_by_class"]["matmul"] / 2 / 2 == 512 * 1000
    assert VGG19["flops_by_class"]["matmul"] / 2 / 10 == 25088 * 4096 + 4096 * 4096 + 4096 * 1000
    per_image = sum(VGG19["flops_by_class"].values()) / 2 / 10
    assert per_image == 19_632_062_464
    assert round(per_image / 1e9, 2) == 19.63


def test_param_bytes_are_four_per_fp32_parameter():
    assert RESNET18["param_bytes"] == 4 * RESNET18["param_count"]
    assert VGG19["param_bytes"] == 4 * VGG19["param_count"]


# --- ResNet18 and VGG19 on H100 SXM -----------------------------------------------------------


def test_resnet18_floor_on_h100_sxm():
    # bytes   = 1,204,224 + 8,000 + 46,758,048 + 38,560 = 48,008,832
    # memory  = 48,008,832 B / 3,350 GB/s = 14,330.99 ns
    # conv    = 7,254,245,376 FLOPs / 494.7 TFLOPS (TF32) = 7,254,245,376 / 494,700 ns = 14,663.93 ns
    # matmul  = 2,048,000 / 494.7 TFLOPS (TF32: the fastest math an fp32 matmul may use) = 4.14 ns
    # compute = 14,668.07 ns > memory → compute-bound, floor 14.7 µs
    # record 1.47 ms (the SXM cohort record) → 1,470,000 / 14,668.07 = 100.22×
    f = roofline_floor(RESNET18, SXM, record_ms=1.47)
    assert f.method == HEADROOM_V3 == "headroom-v3"
    assert f.bytes == analysis_bytes(RESNET18) == 48_008_832
    assert f.memory_ns == pytest.approx(14_330.9946, abs=1e-3)
    assert [(t.flop_class, t.math, t.peak_tflops) for t in f.compute_terms] == [("conv", "TF32", 494.7), ("matmul", "TF32", 494.7)]
    assert f.compute_terms[0].time_ns == pytest.approx(14_663.9283, abs=1e-3)
    assert f.compute_terms[1].time_ns == pytest.approx(4.1399, abs=1e-3)
    assert f.compute_ns == pytest.approx(14_668.0683, abs=1e-3)
    assert f.floor_ns == f.compute_ns
    assert f.bound == "compute"
    assert f.ratio_above == pytest.approx(100.2177, abs=1e-3)
    assert not f.below_floor and f.defect is None
    assert f.floor_display == "14.7 µs"
    assert f.summary == "Estimated floor 14.7 µs · compute-bound on H100 SXM · record 100.22× above it"
    assert f.terms_line == "DRAM 14.3 µs · compute 14.7 µs"
    assert f.basis_line == (
        "48,008,832 bytes cross DRAM once at 3,350 GB/s; convolutions at 494.7 TFLOPS TF32; "
        "matmuls at 494.7 TFLOPS TF32 · H100 SXM datasheet"
    )
    assert f.compute_terms[0].line == "convolutions 7,254,245,376 FLOPs at 494.7 TFLOPS (TF32 tensor cores): 14.7 µs"
    assert f.assumed_settings == SETTINGS
    assert f.settings_line == (
        "assumed: the fastest math allowed (convolutions TF32, matmuls TF32, other operations FP32); "
        "the reference ran with cudnn.allow_tf32=True, float32_matmul_precision=highest"
    )
    assert f.notes == () and f.unavailable_reason is None


def test_vgg19_floor_on_h100_sxm():
    # bytes   = 6,021,120 + 40,000 + 574,668,960 + 0 = 580,730,080
    # memory  = 580,730,080 / 3,350 = 173,352.26 ns
    # conv    = 390,168,576,000 / 494,700 = 788,697.34 ns
    # matmul  = 2,472,673,280 / 494,700 = 4,998.33 ns
    # compute = 793,695.67 ns → compute-bound, floor 794 µs; record 2.43 ms → 3.06×
    f = roofline_floor(VGG19, SXM, record_ms=2.43)
    assert f.bytes == 580_730_080
    assert f.memory_ns == pytest.approx(173_352.2627, abs=1e-3)
    assert f.compute_terms[0].time_ns == pytest.approx(788_697.3439, abs=1e-3)
    assert f.compute_terms[1].time_ns == pytest.approx(4_998.3288, abs=1e-3)
    assert f.compute_ns == pytest.approx(793_695.6727, abs=1e-3)
    assert f.bound == "compute"
    assert f.summary == "Estimated floor 794 µs · compute-bound on H100 SXM · record 3.06× above it"


def test_resnet18_on_h100_pcie_is_memory_bound():
    # memory 48,008,832 / 2,039 = 23,545.28 ns; compute 7,254,245,376 / 378,000 + 2,048,000 / 378,000
    # = 19,191.13 + 5.42 = 19,196.54 ns → memory-bound, 23.5 µs; record 1.39 ms → 59.04×
    f = roofline_floor(RESNET18, PCIE, record_ms=1.39)
    assert f.memory_ns == pytest.approx(23_545.2830, abs=1e-3)
    assert f.compute_ns == pytest.approx(19_196.5433, abs=1e-3)
    assert f.bound == "memory" and f.floor_ns == f.memory_ns
    assert f.summary == "Estimated floor 23.5 µs · memory-bound on H100 PCIe · record 59.04× above it"


@pytest.mark.parametrize(
    "sku, analysis, memory_ns, compute_ns, bound, display",
    [
        # H200: same peaks as H100 SXM, 4,800 GB/s: memory 48,008,832 / 4,800 = 10,001.84 ns.
        ("H200", RESNET18, 10_001.84, 14_668.0683, "compute", "14.7 µs"),
        # B200: 7,700 GB/s, TF32 1,100: memory 6,234.91; compute (7,254,245,376 + 2,048,000) / 1,100,000
        # = 6,594.77 + 1.86 = 6,596.63 ns.
        ("B200", RESNET18, 6_234.9132, 6_596.6303, "compute", "6.60 µs"),
        # T4: no TF32, so conv at FP32 8.1: 7,256,293,376 / 8,100 = 895,838.69 ns; memory 48,008,832 / 320.
        ("T4", RESNET18, 150_027.6, 895_838.6884, "compute", "896 µs"),
        ("H200", VGG19, 120_985.4333, 793_695.6727, "compute", "794 µs"),
        # B200: 390,168,576,000 / 1,100,000 + 2,472,673,280 / 1,100,000 = 354,698.71 + 2,247.88
        ("B200", VGG19, 75_419.4909, 356_946.5903, "compute", "357 µs"),
        # T4: 392,641,249,280 / 8,100 = 48,474,228.31 ns
        ("T4", VGG19, 1_814_781.5, 48_474_228.3062, "compute", "48.5 ms"),
    ],
)
def test_pinned_floors_on_other_skus(sku, analysis, memory_ns, compute_ns, bound, display):
    f = roofline_floor(analysis, BY_SHORT[sku])
    assert f.memory_ns == pytest.approx(memory_ns, abs=1e-3)
    assert f.compute_ns == pytest.approx(compute_ns, abs=1e-3)
    assert f.bound == bound
    assert f.floor_display == display
    assert f.ratio_above is None
    assert f.summary == f"Estimated floor {display} · {bound}-bound on {sku}"


# --- missing peaks ----------------------------------------------------------------------------


def test_t4_without_tf32_falls_back_to_fp32_and_says_so():
    f = roofline_floor(RESNET18, T4, record_ms=1.0)
    assert T4.tf32_tflops is None
    conv = f.compute_terms[0]
    assert (conv.math, conv.peak_tflops, conv.fell_back) == ("FP32", 8.1, True)
    matmul = f.compute_terms[1]
    assert (matmul.math, matmul.fell_back) == ("FP32", True)  # TF32 was the fastest an fp32 matmul may use
    assert f.notes == ("no TF32 tensor cores on T4: convolutions and matmuls bounded at the FP32 peak",)
    # 1,000,000 / 895,838.69 = 1.1163
    assert f.summary == "Estimated floor 896 µs · compute-bound on T4 · record 1.12× above it"


def test_a_sku_with_tf32_has_no_fallback_note():
    assert roofline_floor(RESNET18, SXM).notes == ()


def test_bf16_on_t4_falls_back_for_convolutions_and_matmuls():
    f = roofline_floor({**RESNET18, "dtype": "bf16"}, T4)
    assert [(t.math, t.fell_back) for t in f.compute_terms] == [("FP32", True), ("FP32", True)]
    assert f.notes == ("no BF16 tensor cores on T4: convolutions and matmuls bounded at the FP32 peak",)


def test_sku_without_bandwidth_gives_the_compute_bound_only():
    hw = hardware(id=50, short_name="X", dram_bandwidth_gbps=None, fp32_tflops=10, tf32_tflops=100)
    # compute = (7,254,245,376 + 2,048,000) / 100,000 = 72,542.45 + 20.48 = 72,562.93 ns
    f = roofline_floor(RESNET18, hw, record_ms=0.1)
    assert f.memory_ns is None and f.bandwidth_gbps is None
    assert f.compute_ns == pytest.approx(72_562.9338, abs=1e-3)
    assert f.floor_ns == f.compute_ns and f.bound == "compute"
    assert f.notes == ("no datasheet DRAM bandwidth for X: compute bound only",)
    assert f.terms_line == "compute 72.6 µs"
    assert f.basis_line == "convolutions at 100 TFLOPS TF32; matmuls at 100 TFLOPS TF32 · X datasheet"


def test_sku_without_compute_peaks_gives_the_bandwidth_bound_only():
    hw = hardware(id=51, short_name="Y", dram_bandwidth_gbps=1000)
    f = roofline_floor(RESNET18, hw)
    assert f.compute_ns is None and f.compute_terms == ()
    assert f.floor_ns == pytest.approx(48_008.832) and f.bound == "memory"
    assert f.notes == ("no TF32 tensor cores on Y: convolutions bounded at the FP32 peak",
                       "no datasheet FP32 peak for Y: bandwidth bound only")


def test_sku_without_either_has_no_floor():
    hw = hardware(id=52, short_name="Z", dram_bandwidth_gbps=None)
    f = roofline_floor(RESNET18, hw, record_ms=1.0)
    assert f.floor_ns is None and f.bound is None and f.ratio_above is None
    assert f.unavailable_reason == "no datasheet DRAM bandwidth for Z and no datasheet FP32 peak for Z"
    assert f.summary is None and f.basis_line is None and f.floor_display is None


def test_no_analysis_no_floor():
    f = roofline_floor(None, SXM, record_ms=1.0)
    assert f.floor_ns is None
    assert f.unavailable_reason == "no traced analysis for this workload revision"


def test_bindings_other_than_the_traced_ones_give_no_floor():
    f = roofline_floor(RESNET18, SXM, bindings={"batch_size": 64})
    assert f.floor_ns is None
    assert f.unavailable_reason == "analysis traced at batch_size=2, not at batch_size=64"
    assert roofline_floor(RESNET18, SXM, bindings={"batch_size": 2}).floor_ns == pytest.approx(14_668.0683, abs=1e-3)


def test_nothing_to_move_or_compute():
    f = roofline_floor({"dtype": "fp32", "flops_by_class": {}}, SXM)
    assert f.floor_ns is None and f.unavailable_reason == "nothing to move or compute"


def test_no_flops_is_memory_bound():
    f = roofline_floor({"dtype": "fp32", "input_bytes": 3350, "output_bytes": 0}, SXM)
    assert f.compute_ns == 0 and f.floor_ns == pytest.approx(1.0) and f.bound == "memory"


# --- dtypes and settings ----------------------------------------------------------------------


def test_math_is_the_fastest_each_class_may_use():
    assert math_by_class("fp32") == {"conv": "TF32", "matmul": "TF32", "other": "FP32"}
    assert math_by_class("fp16") == {"conv": "FP16", "matmul": "FP16", "other": "FP32"}
    assert math_by_class("bf16") == {"conv": "BF16", "matmul": "BF16", "other": "FP32"}
    assert math_by_class("fp64") == {"conv": "FP32", "matmul": "FP32", "other": "FP32"}
    assert math_by_class("int8") is None
    assert DEFAULT_SETTINGS == SETTINGS


def test_a_protocol_that_states_ieee_fp32_matmuls_is_honoured():
    assert math_by_class("fp32", {"matmul": "FP32"}) == {"conv": "TF32", "matmul": "FP32", "other": "FP32"}
    f = roofline_floor(RESNET18, SXM, protocol_math={"matmul": "FP32"})
    # headroom-v2's figure: matmul 2,048,000 / 67,000 = 30.57 ns; compute 14,694.50 ns
    assert f.compute_ns == pytest.approx(14_694.4956, abs=1e-3)
    with pytest.raises(ValueError, match="unknown FLOP class 'softmax'"):
        math_by_class("fp32", {"softmax": "FP32"})
    with pytest.raises(ValueError, match="unknown math 'FP8' for matmul"):
        math_by_class("fp32", {"matmul": "FP8"})


def test_attention_in_fp32_is_bounded_on_tf32_tensor_cores():
    """KernelBench level 1 problem 97 (ScaledDotProductAttention, 32×32×512×1024 fp32): headroom-v2 put its
    floor at 16.4 ms on the H100 SXM (1.0995e12 FLOPs at the FP32 peak), and the eager run took 8.45 ms.
    At TF32 the floor is 2.22 ms: a lower bound again."""
    analysis = {
        "dtype": "fp32", "bindings": {"batch_size": 32, "num_heads": 32, "sequence_length": 512, "embedding_dimension": 1024},
        "input_bytes": 6_442_450_944, "output_bytes": 2_147_483_648, "param_bytes": 0, "buffer_bytes": 0,
        "flops_by_class": {"conv": 0, "matmul": 1_099_511_627_776, "other": 0}, "assumed_settings": SETTINGS,
    }
    f = roofline_floor(analysis, SXM, record_ms=8.45)
    # 1,099,511,627,776 / 494,700 = 2,222,582.63 ns; memory 8,589,934,592 / 3,350 = 2,564,159.58 ns
    assert f.compute_ns == pytest.approx(2_222_582.6314, abs=1e-3)
    assert f.memory_ns == pytest.approx(2_564_159.5797, abs=1e-3)
    assert f.bound == "memory" and f.floor_display == "2.56 ms"
    assert not f.below_floor and f.defect is None
    old = roofline_floor(analysis, SXM, record_ms=8.45, protocol_math={"matmul": "FP32"})
    assert old.floor_display == "16.4 ms" and old.below_floor


def test_fp16_workload_uses_the_fp16_tensor_peak():
    analysis = {"dtype": "fp16", "flops_by_class": {"conv": 989_400_000, "matmul": 989_400_000, "other": 67_000}}
    f = roofline_floor(analysis, SXM)
    # conv 989,400,000 / 989,400 = 1,000 ns; matmul the same; other 67,000 / 67,000 = 1 ns
    assert [(t.math, t.time_ns) for t in f.compute_terms] == [("FP16", 1000.0), ("FP16", 1000.0), ("FP32", 1.0)]
    assert f.compute_ns == pytest.approx(2001.0)


def test_explicit_fp16_scales_the_traced_fp32_bytes_and_uses_tensor_peaks():
    f = roofline_floor(RESNET18, SXM, dtype="fp16")
    assert f.dtype == "fp16"
    assert f.bytes == 48_008_832 // 2
    assert f.notes == ("bytes scaled from fp32 to fp16 (×0.5)",)
    # 7,254,245,376 / 989,400 + 2,048,000 / 989,400 = 7,331.96 + 2.07 = 7,334.03 ns
    assert f.compute_ns == pytest.approx(7_334.0341, abs=1e-3)
    # memory 24,004,416 / 3,350 = 7,165.50 ns < compute
    assert f.bound == "compute"


def test_the_reference_settings_are_reported_not_bounded_by():
    """The settings the reference was traced under bind the reference, not every implementation."""
    f = roofline_floor({**RESNET18, "assumed_settings": {"cudnn.allow_tf32": False}}, SXM)
    assert f.compute_ns == pytest.approx(14_668.0683, abs=1e-3)
    assert f.assumed_settings == {"cudnn.allow_tf32": False, "float32_matmul_precision": "highest"}
    assert f.settings_line.endswith("the reference ran with cudnn.allow_tf32=False, float32_matmul_precision=highest")


def test_int8_has_only_a_bandwidth_bound():
    f = roofline_floor({**RESNET18, "dtype": "int8"}, SXM)
    assert f.bound == "memory" and f.compute_ns is None
    assert f.notes == ("no datasheet peak for int8 arithmetic: bandwidth bound only",)


# --- records against the floor ----------------------------------------------------------------


def test_a_record_faster_than_the_floor_is_a_defect_of_the_floor():
    # 0.010 ms = 10,000 ns against 14,668.07 ns: 0.68×
    f = roofline_floor(RESNET18, SXM, record_ms=0.010)
    assert f.ratio_above == pytest.approx(0.6818, abs=1e-4)
    assert f.below_floor
    assert f.summary == "Estimated floor 14.7 µs · compute-bound on H100 SXM · record 0.68× the floor: a floor defect"
    assert f.defect == "record 10.0 µs is under this floor of 14.7 µs: the floor is wrong (a count or a peak), not the run"
    assert roofline_floor(RESNET18, SXM).defect is None  # no record, nothing beats it


def test_with_record_keeps_everything_else():
    f = roofline_floor(RESNET18, SXM)
    g = f.with_record(1.47)
    assert g.record_ms == 1.47 and g.floor_ns == f.floor_ns and f.record_ms is None


# --- the catalogue ----------------------------------------------------------------------------


def test_floors_for_catalogue_cover_every_sku_in_order():
    floors = floors_for_catalogue(RESNET18, CATALOGUE)
    assert [f.hardware.sku for f in floors] == [h.sku for h in CATALOGUE]
    assert all(f.record_ms is None for f in floors)
    # Every SKU with a figure has a floor; the two with none (the H20 has no datasheet, and a source's
    # 'NVIDIA H100' does not say which H100) keep their place and say why.
    assert [f.hardware.short_name for f in floors if f.floor_ns is None] == ["H20", "H100 (variant not stated)"]
    assert all(f.unavailable_reason for f in floors if f.floor_ns is None)
    by_sku = {f.hardware.short_name: f for f in floors}
    assert by_sku["H100 SXM"].floor_display == "14.7 µs"
    assert by_sku["T4"].notes == ("no TF32 tensor cores on T4: convolutions and matmuls bounded at the FP32 peak",)
    # the T4 and the MI355X (CDNA 4) lack a TF32 figure; an A100 of unstated variant has no bandwidth
    assert [f.hardware.short_name for f in floors if f.notes and f.floor_ns is not None] == [
        "T4", "MI355X", "A100 (variant not stated)"]
    assert by_sku["A100 (variant not stated)"].bound == "compute"


def test_floors_for_catalogue_keep_skus_without_a_floor():
    floors = floors_for_catalogue(RESNET18, [SXM, hardware(id=60, short_name="Z", dram_bandwidth_gbps=None)])
    assert [f.floor_ns is None for f in floors] == [False, True]
    assert floors_for_catalogue(RESNET18, []) == []
