"""The two reference pages' figures, reproduced from the eight seed runs built as facts."""

from __future__ import annotations

import pytest

from kernelindex.rules import verdicts
from kernelindex.rules.display import format_latency, format_plus_minus, format_ratio, plural
from kernelindex.rules.headroom_v1 import headroom_v1
from kernelindex.rules.ranking import (
    baseline_of,
    eligible_runs,
    implementation_bests,
    records_by_environment,
    speedup_vs_baseline,
)
from kernelindex.rules.stats import ci95_half_width
from kernelindex.rules.trust_labels import caveats, trust_label
from tests.rules.factories import RESNET18, VGG19, seed_catalogue, seed_workloads, seed_world

WORLD = seed_world()
CATALOGUE = seed_catalogue()


def _page(slug):
    w, runs = WORLD[slug]
    eligible = eligible_runs(runs, w)
    records = records_by_environment(eligible)
    return w, eligible, records


def _figures(run):
    return (run.environment.hardware.short_name, run.implementation.slug, run.mean_ms)


def test_seed_runs_are_the_expected_eight():
    figures = {slug: sorted(_figures(r) for r in runs) for slug, (_, runs) in WORLD.items()}
    assert figures[RESNET18] == sorted([
        ("H100 PCIe", "torch_eager", 1.39),
        ("H100 SXM", "torch_eager", 1.67),
        ("H100 PCIe", "torch_compile_inductor", 1.52),
        ("H100 SXM", "torch_compile_inductor", 1.47),
    ])
    assert figures[VGG19] == sorted([
        ("H100 PCIe", "torch_eager", 5.55),
        ("H100 SXM", "torch_eager", 3.88),
        ("H100 PCIe", "torch_compile_inductor", 3.64),
        ("H100 SXM", "torch_compile_inductor", 2.43),
    ])
    for _, runs in WORLD.values():
        assert {r.num_trials for r in runs} == {100}
        assert {r.environment.hardware.family for r in runs} == {"NVIDIA H100"}


@pytest.mark.parametrize("slug", [RESNET18, VGG19])
def test_all_four_seed_runs_are_eligible(slug):
    _, eligible, records = _page(slug)
    assert plural(len(eligible), "eligible run") == "4 eligible runs"
    assert [r.run_count for r in records] == [2, 2]


# --- ResNet18 ---------------------------------------------------------------------------------


def test_resnet18_current_records():
    _, _, records = _page(RESNET18)
    rows = [
        (r.environment_label, format_latency(r.run.mean_ms), r.run.implementation.title, r.run_count,
         r.run.environment.hardware.short_name)
        for r in records
    ]
    assert rows == [
        ("NVIDIA H100 · env 1", "1.39 ms", "PyTorch eager", 2, "H100 PCIe"),
        ("NVIDIA H100 · env 2", "1.47 ms", "torch.compile (inductor)", 2, "H100 SXM"),
    ]


def test_resnet18_headline_is_the_unbeaten_baseline():
    _, _, records = _page(RESNET18)
    record = records[0].run
    assert record.implementation.is_baseline
    assert verdicts.headline_label(record.implementation.is_baseline, record.evidence) == "Source baseline · unbeaten"
    half = ci95_half_width(record.std_ms, record.num_trials)
    # stats-v2: t(0.975, 99)·0.0868/10 = 0.017223 (stats-v1's 1.96 gave 0.017013): the page still reads ± 0.02
    assert half == pytest.approx(0.017223, abs=1e-6)
    assert f"{format_latency(record.mean_ms)} {format_plus_minus(half, record.mean_ms)}" == "1.39 ms ± 0.02"
    assert f"{record.protocol.statistic} of {record.num_trials}" == "mean of 100"
    assert baseline_of(records[0].cohort).run is record


def test_resnet18_comparison_table():
    _, _, records = _page(RESNET18)
    cohort = records[0].cohort
    base = baseline_of(cohort)
    table = [
        (row.rank, row.run.implementation.title, format_latency(row.run.mean_ms),
         format_plus_minus(ci95_half_width(row.run.std_ms, row.run.num_trials), row.run.mean_ms),
         format_ratio(row.vs_first), trust_label(row.run.evidence, row.run.implementation))
        for row in cohort
    ]
    assert table == [
        (1, "PyTorch eager", "1.39 ms", "± 0.02", "1.00×", "Reported · MIT · source"),
        (2, "torch.compile (inductor)", "1.52 ms", "± 0.00", "1.09×", "Reported · MIT · source"),
    ]
    assert verdicts.verdict_vs_baseline(speedup_vs_baseline(cohort[1].run, base.run)) == "1.09× slower than the baseline."
    assert caveats(cohort[0].run) == [
        "The source's designated baseline implementation.",
        "Reported by source; not independently reproduced.",
    ]
    assert caveats(cohort[1].run) == ["Reported by source; not independently reproduced."]


def test_resnet18_implementations():
    _, eligible, _ = _page(RESNET18)
    rows = [(b.run.implementation.title, format_latency(b.run.mean_ms), format_ratio(b.vs_best))
            for b in implementation_bests(eligible)]
    assert rows == [("PyTorch eager", "1.39 ms", "1.00×"), ("torch.compile (inductor)", "1.47 ms", "1.06×")]


def test_resnet18_headroom():
    w, _, records = _page(RESNET18)
    semantics = seed_workloads()[RESNET18]["semantics"]
    record = records[0].run
    h = headroom_v1(semantics, w.canonical_bindings, record.environment.hardware.family, CATALOGUE, record.mean_ms)
    assert h.bytes == 1_204_224
    assert h.summary == "Estimated floor 359 ns · record 3866.81× above it"
    assert h.bound_line == "DRAM 359 ns · bandwidth-bound on H100 SXM"
    assert h.basis_line == "every declared tensor crosses HBM exactly once (3,350 GB/s, H100 SXM datasheet)"


# --- VGG19 ------------------------------------------------------------------------------------


def test_vgg19_current_records():
    _, _, records = _page(VGG19)
    rows = [
        (r.environment_label, format_latency(r.run.mean_ms), r.run.implementation.title, r.run_count,
         r.run.environment.hardware.short_name)
        for r in records
    ]
    assert rows == [
        ("NVIDIA H100 · env 1", "2.43 ms", "torch.compile (inductor)", 2, "H100 SXM"),
        ("NVIDIA H100 · env 2", "3.64 ms", "torch.compile (inductor)", 2, "H100 PCIe"),
    ]


def test_vgg19_headline_is_fastest_reported():
    _, _, records = _page(VGG19)
    record = records[0]
    run = record.run
    base = baseline_of(record.cohort)
    assert base is not None and base.run is not run
    speedup = speedup_vs_baseline(run, base.run)
    assert speedup == pytest.approx(3.88 / 2.43)
    assert verdicts.headline_label(run.implementation.is_baseline, run.evidence) == "Fastest reported"
    assert verdicts.headline_speedup(speedup) == "1.60× faster than baseline"
    half = ci95_half_width(run.std_ms, run.num_trials)
    assert f"{format_latency(run.mean_ms)} {format_plus_minus(half, run.mean_ms)}" == "2.43 ms ± 0.00"


def test_vgg19_comparison_table():
    _, _, records = _page(VGG19)
    cohort = records[0].cohort
    base = baseline_of(cohort)
    table = [(row.rank, row.run.implementation.title, format_latency(row.run.mean_ms), format_ratio(row.vs_first))
             for row in cohort]
    assert table == [
        (1, "torch.compile (inductor)", "2.43 ms", "1.00×"),
        (2, "PyTorch eager", "3.88 ms", "1.60×"),
    ]
    assert base is cohort[1]
    assert verdicts.verdict_vs_baseline(speedup_vs_baseline(cohort[0].run, base.run)) == "1.60× faster than the baseline."
    assert caveats(cohort[0].run) == ["Reported by source; not independently reproduced."]


def test_vgg19_implementations():
    _, eligible, _ = _page(VGG19)
    rows = [(b.run.implementation.title, format_latency(b.run.mean_ms), format_ratio(b.vs_best),
             b.run.environment.hardware.short_name)
            for b in implementation_bests(eligible)]
    assert rows == [
        ("PyTorch eager", "3.88 ms", "1.60×", "H100 SXM"),
        ("torch.compile (inductor)", "2.43 ms", "1.00×", "H100 SXM"),
    ]


def test_vgg19_headroom():
    w, _, records = _page(VGG19)
    semantics = seed_workloads()[VGG19]["semantics"]
    record = records[0].run
    h = headroom_v1(semantics, w.canonical_bindings, record.environment.hardware.family, CATALOGUE, record.mean_ms)
    assert h.bytes == 6_021_120
    assert h.floor_display == "1.80 µs"
    assert h.summary == "Estimated floor 1.80 µs · record 1351.99× above it"
    assert h.bound_line == "DRAM 1.80 µs · bandwidth-bound on H100 SXM"
