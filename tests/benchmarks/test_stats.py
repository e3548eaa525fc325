import math

import pytest

from benchmarks.stats import percentile, summarize

SAMPLES = [1.0, 2.0, 3.0, 4.0, 10.0]


def test_summary_of_a_fixed_sample_list_matches_hand_computation():
    summary = summarize(SAMPLES)
    # mean = (1 + 2 + 3 + 4 + 10) / 5 = 20 / 5 = 4.0
    assert summary["mean"] == 4.0
    # deviations from 4.0: -3, -2, -1, 0, 6; squares: 9, 4, 1, 0, 36; sum = 50
    # sample variance (ddof=1) = 50 / (5 - 1) = 12.5; std = sqrt(12.5) = 3.5355339059...
    assert summary["std"] == pytest.approx(3.5355339059327378, rel=1e-12)
    # median: rank (5 - 1) * 0.50 = 2.0 -> the third sorted value, 3.0
    assert summary["median"] == 3.0
    # p5: rank (5 - 1) * 0.05 = 0.2 -> 1.0 + 0.2 * (2.0 - 1.0) = 1.2
    assert summary["p5"] == pytest.approx(1.2, abs=1e-12)
    # p95: rank (5 - 1) * 0.95 = 3.8 -> 4.0 + 0.8 * (10.0 - 4.0) = 8.8
    assert summary["p95"] == pytest.approx(8.8, abs=1e-12)
    assert summary["min"] == 1.0
    assert summary["max"] == 10.0
    assert summary["num_trials"] == 5


def test_order_of_samples_does_not_matter():
    assert summarize([10.0, 3.0, 1.0, 4.0, 2.0]) == summarize(SAMPLES)


def test_even_count_median_interpolates_between_the_middle_values():
    # rank (4 - 1) * 0.5 = 1.5 -> 2.0 + 0.5 * (3.0 - 2.0) = 2.5
    assert summarize([4.0, 1.0, 3.0, 2.0])["median"] == 2.5


def test_one_sample_has_zero_std_and_every_percentile_equal_to_it():
    summary = summarize([0.25])
    assert summary["std"] == 0.0
    assert summary["mean"] == summary["median"] == summary["p5"] == summary["p95"] == 0.25
    assert summary["num_trials"] == 1


def test_percentile_edges_are_min_and_max():
    ordered = sorted(SAMPLES)
    assert percentile(ordered, 0) == 1.0
    assert percentile(ordered, 100) == 10.0
    # rank 4 * 0.25 = 1.0 -> exactly the second value
    assert percentile(ordered, 25) == 2.0


def test_invalid_input_is_refused():
    with pytest.raises(ValueError):
        summarize([])
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_std_of_equal_samples_is_exactly_zero():
    summary = summarize([0.1] * 7)
    assert summary["std"] == 0.0
    assert math.isclose(summary["mean"], 0.1)
