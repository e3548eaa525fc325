"""ranking-v3: shared ranks for rows whose 95% intervals (stats-v2, Student's t) overlap, and the verdict with
its interval; no interval and no verdict for one trial."""

from __future__ import annotations

import math

import pytest

from kernelindex.rules.ranking import eligible_runs, records_by_environment
from kernelindex.rules.stats import Interval
from kernelindex.rules.ties import (
    RANKING_V2,
    RANKING_V3,
    TIES_VERSION,
    baseline_verdict,
    interval_verdict,
    run_interval,
    tied_ranks,
)
from tests.rules.factories import RESNET18, VGG19, baseline_impl, candidate_impl, run, seed_world

WORLD = seed_world()
EAGER = baseline_impl(1)
INDUCTOR = candidate_impl(2)


def _cohort(slug, short_name):
    w, runs = WORLD[slug]
    for record in records_by_environment(eligible_runs(runs, w)):
        if record.run.environment.hardware.short_name == short_name:
            return [row.run for row in record.cohort]
    raise AssertionError(short_name)


def _display(rows):
    return [(row.run.id, row.rank_display) for row in rows]


def test_version():
    assert RANKING_V2 == "ranking-v2"
    assert TIES_VERSION == RANKING_V3 == "ranking-v3"


# --- the reference pages ----------------------------------------------------------------------


def test_resnet18_pcie_intervals_do_not_overlap():
    eager, inductor = _cohort(RESNET18, "H100 PCIe")
    # t(0.975, 99) = 1.984217
    # eager 1.39 ± 1.984217·0.0868/10 = 1.39 ± 0.017223 → [1.372777, 1.407223]
    # inductor 1.52 ± 1.984217·0.0211/10 = 1.52 ± 0.004187 → [1.515813, 1.524187]
    assert run_interval(eager).low == pytest.approx(1.372777, abs=1e-6)
    assert run_interval(eager).high == pytest.approx(1.407223, abs=1e-6)
    assert run_interval(inductor).low == pytest.approx(1.515813, abs=1e-6)
    assert run_interval(inductor).high == pytest.approx(1.524187, abs=1e-6)
    rows = tied_ranks([inductor, eager])
    assert [(r.run.implementation.slug, r.rank, r.rank_display, r.shared) for r in rows] == [
        ("torch_eager", 1, "1", False),
        ("torch_compile_inductor", 2, "2", False),
    ]


def test_vgg19_sxm_intervals_do_not_overlap():
    inductor, eager = _cohort(VGG19, "H100 SXM")
    # inductor 2.43 ± 0.002123 → [2.427877, 2.432123]; eager 3.88 ± 0.004643 → [3.875357, 3.884643]
    rows = tied_ranks([eager, inductor])
    assert [(r.run.implementation.slug, r.rank_display) for r in rows] == [
        ("torch_compile_inductor", "1"),
        ("torch_eager", "2"),
    ]
    assert rows[1].vs_first == pytest.approx(3.88 / 2.43)


def test_resnet18_pcie_verdict_keeps_the_page_sentence():
    eager, inductor = _cohort(RESNET18, "H100 PCIe")
    v = baseline_verdict(inductor, eager)
    # speedup 1.39 / 1.52 = 0.914474; var of log = (0.0868/1.39)²/100 + (0.0211/1.52)²/100 = 4.0922e-5;
    # Welch–Satterthwaite df 108.76, t = 1.981865; t·√var = 0.012678 → [0.902952, 0.926142];
    # as a slowdown 1/0.926142–1/0.902952 = 1.0797–1.1075 (stats-v1: 1.0799–1.1073): 1.08–1.11 either way
    assert v.speedup == pytest.approx(0.914474, abs=1e-6)
    assert v.interval is not None
    assert v.interval.low == pytest.approx(0.902952, abs=1e-6)
    assert v.interval.high == pytest.approx(0.926142, abs=1e-6)
    assert not v.indistinguishable
    assert v.page_sentence == "1.09× slower than the baseline."
    assert v.sentence == "1.09× slower than the baseline (95% CI 1.08–1.11×)."
    assert (v.run_id, v.baseline_run_id) == (inductor.id, eager.id)


def test_vgg19_sxm_verdict_keeps_the_page_sentence():
    inductor, eager = _cohort(VGG19, "H100 SXM")
    v = baseline_verdict(inductor, eager)
    # 3.88 / 2.43 = 1.596708; var = (0.0234/3.88)²/100 + (0.0107/2.43)²/100 = 5.5761e-7; df 181.19,
    # t = 1.973 → ±0.1473% → [1.594357, 1.599062] (stats-v1: [1.594373, 1.599046])
    assert v.interval is not None
    assert v.interval.low == pytest.approx(1.594357, abs=1e-6)
    assert v.interval.high == pytest.approx(1.599062, abs=1e-6)
    assert v.page_sentence == "1.60× faster than the baseline."
    assert v.sentence == "1.60× faster than the baseline (95% CI 1.59–1.60×)."


# --- hand-made cohorts ------------------------------------------------------------------------


def test_no_rows():
    assert tied_ranks([]) == []


def test_a_single_run_is_rank_1_unshared():
    rows = tied_ranks([run(1, 1.0, std_ms=0.1)])
    assert [(r.rank, r.rank_display, r.shared, r.vs_first) for r in rows] == [(1, "1", False, 1.0)]


def test_all_rows_tied():
    # std 0.5, n 100 → half width 0.0992: [0.901, 1.099], [0.951, 1.149], [1.001, 1.199]; each meets the first.
    rows = tied_ranks([run(3, 1.1, std_ms=0.5), run(1, 1.0, std_ms=0.5), run(2, 1.05, std_ms=0.5)])
    assert _display(rows) == [(1, "1="), (2, "1="), (3, "1=")]
    assert {r.group_first_id for r in rows} == {1}


def test_dense_ranks_with_a_shared_middle():
    # 0.5 (no std: a point) | 1.0 [0.901, 1.099] and 1.05 [0.951, 1.149] overlap | 1.5 [1.401, 1.599]
    rows = tied_ranks([run(1, 0.5), run(2, 1.0, std_ms=0.5), run(3, 1.05, std_ms=0.5), run(4, 1.5, std_ms=0.5)])
    assert _display(rows) == [(1, "1"), (2, "2="), (3, "2="), (4, "3")]
    assert [r.rank for r in rows] == [1, 2, 2, 3]


def test_ties_do_not_chain_past_the_groups_first_row():
    # half width 0.0992 each: A 1.00 [0.9008, 1.0992]; B 1.15 [1.0508, 1.2492] meets A; C 1.19 [1.0908, 1.2892]
    # meets A (1.0908 ≤ 1.0992); D 1.25 [1.1508, 1.3492] meets B and C but not A → opens group 2.
    runs = [run(i, m, std_ms=0.5) for i, m in ((1, 1.0), (2, 1.15), (3, 1.19), (4, 1.25))]
    rows = tied_ranks(runs)
    assert _display(rows) == [(1, "1="), (2, "1="), (3, "1="), (4, "2")]
    assert rows[3].interval.overlaps(rows[2].interval)  # a chained rule would have tied it


def test_missing_std_gives_a_zero_width_interval():
    a, b = run(1, 1.0, std_ms=None), run(2, 1.01, std_ms=None)
    assert run_interval(a) == Interval(1.0, 1.0)
    assert _display(tied_ranks([a, b])) == [(1, "1"), (2, "2")]
    assert run_interval(run(3, 1.0, std_ms=0.1, num_trials=None)) == Interval(1.0, 1.0)


def test_equal_zero_width_intervals_touch_and_tie():
    rows = tied_ranks([run(1, 1.0), run(2, 1.0)])
    assert _display(rows) == [(1, "1="), (2, "1=")]


def test_interval_from_raw_samples_when_stored():
    # samples 1.0, 1.2, 1.4: mean 1.2, s 0.2, n 3 → 1.2 ± t(0.975, 2)·0.2/√3 = 1.2 ± 4.302653·0.115470 = 1.2 ± 0.496828
    r = run(1, 1.2, std_ms=None, num_trials=3, samples_ms=(1.0, 1.2, 1.4))
    i = run_interval(r)
    half = 4.302652729749752 * 0.2 / math.sqrt(3)
    assert i.low == pytest.approx(1.2 - half) and i.high == pytest.approx(1.2 + half)
    # the stored std (None) would have tied nothing; the samples tie it with a run at 1.4 (zero width)
    assert _display(tied_ranks([r, run(2, 1.4)])) == [(1, "1="), (2, "1=")]


def test_a_run_without_a_mean_cannot_be_placed():
    with pytest.raises(ValueError):
        run_interval(run(1, None))


# --- verdicts ---------------------------------------------------------------------------------


def test_interval_exactly_touching_one_is_indistinguishable():
    assert interval_verdict(1.1, Interval(1.0, 1.2)) == "Indistinguishable from the baseline (95% CI 1.00–1.20×)."
    assert interval_verdict(0.9, Interval(0.8, 1.0)) == "Indistinguishable from the baseline (95% CI 0.80–1.00×)."
    assert interval_verdict(1.1, Interval(1.0001, 1.2)) == "1.10× faster than the baseline (95% CI 1.00–1.20×)."
    # a slowdown's interval is written as slowdowns: 1/0.9999 – 1/0.8 = 1.0001 – 1.25
    assert interval_verdict(0.9, Interval(0.8, 0.9999)) == "1.11× slower than the baseline (95% CI 1.00–1.25×)."


def test_overlapping_noise_is_indistinguishable():
    base = run(1, 1.0, std_ms=0.1, impl=EAGER)
    cand = run(2, 1.01, std_ms=0.1, impl=INDUCTOR)
    v = baseline_verdict(cand, base)
    # 1/1.01 = 0.990099; var = 0.1²/100 + (0.1/1.01)²/100 = 1.9803e-4 → ±2.758% → [0.963, 1.018]
    assert v.indistinguishable
    assert v.sentence == "Indistinguishable from the baseline (95% CI 0.96–1.02×)."
    assert v.page_sentence == "1.01× slower than the baseline."


def test_no_verdict_without_std():
    v = baseline_verdict(run(2, 1.0, impl=INDUCTOR, std_ms=None), run(1, 1.2, impl=EAGER, std_ms=None))
    assert v.interval is None and not v.indistinguishable
    assert v.speedup == pytest.approx(1.2)
    assert v.sentence == v.page_sentence == "No verdict (no spread reported: no interval)."
    same = baseline_verdict(run(2, 1.0, impl=INDUCTOR), run(1, 1.0, impl=EAGER))
    assert same.interval is None
    assert same.sentence == "No verdict (no spread reported: no interval)."


def test_one_trial_has_no_interval_and_no_verdict():
    one = run(2, 1.0, impl=INDUCTOR, std_ms=0.0, num_trials=1)
    base = run(1, 1.2, impl=EAGER, std_ms=0.1)
    v = baseline_verdict(one, base)
    assert v.interval is None and not v.indistinguishable
    assert v.sentence == v.page_sentence == "No verdict (one trial: no interval)."
    against_one = baseline_verdict(base, run(3, 1.1, impl=EAGER, std_ms=0.1, num_trials=1))
    assert against_one.sentence == "No verdict (the baseline: one trial: no interval)."
    # a single raw sample is one trial too
    sampled = run(4, 1.0, impl=INDUCTOR, std_ms=None, num_trials=1, samples_ms=(1.0,))
    assert baseline_verdict(sampled, base).sentence == "No verdict (one trial: no interval)."


def test_a_one_trial_row_is_placed_at_its_mean_and_says_it_has_no_interval():
    rows = tied_ranks([run(1, 1.0, std_ms=0.0, num_trials=1), run(2, 1.05, std_ms=0.5), run(3, 2.0, std_ms=0.1)])
    assert _display(rows) == [(1, "1="), (2, "1="), (3, "2")]
    assert [r.no_interval for r in rows] == ["one trial: no interval", None, None]
    assert rows[0].interval == Interval(1.0, 1.0)


def test_two_trials_use_t_with_one_degree_of_freedom():
    # n 2, std 0.1 → half width 12.706205·0.1/√2 = 0.898464: far wider than 1.96 would say (0.138593)
    i = run_interval(run(1, 1.0, std_ms=0.1, num_trials=2))
    assert i.high - 1.0 == pytest.approx(0.898464, abs=1e-6)
    assert _display(tied_ranks([run(1, 1.0, std_ms=0.1, num_trials=2), run(2, 1.5, std_ms=0.1, num_trials=2)])) == [
        (1, "1="), (2, "1=")]
