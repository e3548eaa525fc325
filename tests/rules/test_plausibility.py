"""plausibility-v2: unchecked runs below their floor or >10× faster than the baseline are held for review;
the source's baseline never is, and a correct run under a floor is the floor's defect."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from kernelindex.rules.headroom_v1 import headroom_v1
from kernelindex.rules.headroom_v2 import roofline_floor
from kernelindex.rules.plausibility import (
    BELOW_FLOOR,
    IMPLAUSIBLE_SPEEDUP,
    PLAUSIBILITY_VERSION,
    SUSPICIOUS,
    Flag,
    HeldRun,
    Review,
    flag_holds,
    flags_for,
    floor_for_run,
    held_summary,
    holding_flags,
    is_current,
    is_held_for_review,
    latest_review,
    status_words,
)
from tests.rules.factories import RESNET18, baseline_impl, candidate_impl, run, seed_catalogue, seed_world
from tests.rules.test_headroom_v2 import RESNET18 as RESNET18_ANALYSIS

EAGER = baseline_impl(1)
INDUCTOR = candidate_impl(2)
T0 = datetime(2026, 4, 1, tzinfo=UTC)


def test_version():
    assert PLAUSIBILITY_VERSION == "plausibility-v2"


def test_an_ordinary_run_has_no_flags():
    base = run(1, 1.39, impl=EAGER)
    assert flags_for(run(2, 1.0, impl=INDUCTOR), base, floor_ns=14_694.5) == []
    assert is_held_for_review([], []) is False
    assert status_words([], []) is None


def test_below_floor():
    # 0.010 ms = 10,000 ns < 14,694.5 ns
    flags = flags_for(run(2, 0.010, impl=INDUCTOR), None, floor_ns=14_694.5)
    assert [(f.code, f.words, f.label) for f in flags] == [(BELOW_FLOOR, "faster than its estimated floor", SUSPICIOUS)]
    assert flags[0].detail == "10.0 µs is below the estimated floor of 14.7 µs"
    assert flags[0].run_id == 2
    # at the floor exactly is not below it
    assert flags_for(run(3, 0.0146945, impl=INDUCTOR), None, floor_ns=14_694.5) == []


def test_implausible_speedup_is_more_than_ten_times():
    # 1.0 / 0.1 = 10.0× exactly (in floating point too): not flagged
    assert 1.0 / 0.1 == 10.0
    assert flags_for(run(2, 0.1, impl=INDUCTOR), run(1, 1.0, impl=EAGER), None) == []
    base = run(1, 1.39, impl=EAGER)
    # 1.39 / 0.1389 = 10.007×: flagged
    flags = flags_for(run(3, 0.1389, impl=INDUCTOR), base, None)
    assert [f.code for f in flags] == [IMPLAUSIBLE_SPEEDUP]
    assert flags[0].words == "more than 10× faster than the baseline"
    assert flags[0].detail == "0.139 ms is 10.01× faster than the baseline's 1.39 ms"


def test_both_flags_in_order():
    base = run(1, 1.39, impl=EAGER)
    flags = flags_for(run(2, 0.010, impl=INDUCTOR), base, floor_ns=14_694.5)
    assert [f.code for f in flags] == [BELOW_FLOOR, IMPLAUSIBLE_SPEEDUP]


def test_the_baseline_is_not_compared_with_itself_and_missing_inputs_flag_nothing():
    base = run(1, 0.01, impl=EAGER)
    assert flags_for(base, base, None) == []
    assert flags_for(run(2, None, impl=INDUCTOR), base, 1e9) == []
    assert flags_for(run(3, 1.0, impl=INDUCTOR), run(1, None, impl=EAGER), None) == []


def test_floor_for_run_prefers_v2():
    assert floor_for_run(14_694.5, 359.5) == (14_694.5, "headroom-v3")
    assert floor_for_run(None, 359.5) == (359.5, "headroom-v1")
    assert floor_for_run(None, None) == (None, None)


def test_seed_runs_are_not_flagged():
    # The v2 floor on each run's own SKU: 14.7 µs (SXM) and 23.5 µs (PCIe); every record is far above.
    by_sku = {h.sku: h for h in seed_catalogue()}
    _, runs = seed_world()[RESNET18]
    for r in runs:
        floor = roofline_floor(RESNET18_ANALYSIS, by_sku[r.environment.hardware.sku]).floor_ns
        base = next(b for b in runs if b.implementation.is_baseline and b.environment.id == r.environment.id)
        assert flags_for(r, base, floor) == []


def test_v1_floor_is_used_without_v2():
    # headroom-v1 for ResNet18 on H100: 359.47 ns; a 0.0003 ms (300 ns) run sits below it
    h = headroom_v1({"inputs": [{"dtype": "fp32", "shape": ["batch_size", 3, 224, 224]}]}, {"batch_size": 2},
                    "NVIDIA H100", seed_catalogue(), None)
    floor, method = floor_for_run(None, h.floor_ns)
    assert method == "headroom-v1" and floor == pytest.approx(359.4698, abs=1e-3)
    assert [f.code for f in flags_for(run(2, 0.0003, impl=INDUCTOR), None, floor)] == [BELOW_FLOOR]


# --- reviews ----------------------------------------------------------------------------------


def _flags():
    return flags_for(run(2, 0.010, impl=INDUCTOR), None, floor_ns=14_694.5)


def test_flagged_and_unreviewed_is_held():
    assert is_held_for_review(_flags(), []) is True
    assert status_words(_flags(), []) == "suspicious: needs review"


def test_approved_is_eligible_again_and_rejected_stays_out():
    assert is_held_for_review(_flags(), [Review(2, "approved")]) is False
    assert status_words(_flags(), [Review(2, "approved")]) == "approved after review"
    assert is_held_for_review(_flags(), [Review(2, "rejected")]) is True
    assert status_words(_flags(), [Review(2, "rejected")]) == "rejected after review"


def test_the_latest_review_decides():
    approve_then_reject = [Review(2, "approved", T0), Review(2, "rejected", T0 + timedelta(days=1))]
    assert is_held_for_review(_flags(), approve_then_reject) is True
    # given out of order, the time still decides
    assert is_held_for_review(_flags(), list(reversed(approve_then_reject))) is True
    # without times, the given order decides
    assert is_held_for_review(_flags(), [Review(2, "rejected"), Review(2, "approved")]) is False
    # a timed review is newer than an untimed one
    assert latest_review([Review(2, "approved", T0), Review(2, "rejected")], 2).decision == "approved"


def test_reviews_of_other_runs_do_not_count():
    assert is_held_for_review(_flags(), [Review(99, "approved")]) is True
    assert latest_review([Review(99, "approved")], 2) is None


def test_a_review_is_approved_or_rejected():
    with pytest.raises(ValueError):
        Review(2, "maybe")


def test_flags_of_two_runs_are_refused():
    mixed = _flags() + flags_for(run(3, 0.010, impl=INDUCTOR), None, floor_ns=14_694.5)
    with pytest.raises(ValueError):
        is_held_for_review(mixed, [])


# --- plausibility-v2: the baseline and correct runs -------------------------------------------


def test_the_source_baseline_is_never_flagged():
    # Under its floor and (against a faster baseline run of another implementation) "implausible":
    # the designated baseline is the reference itself, so nothing holds it.
    slow_base = run(1, 100.0, impl=EAGER)
    fast_base = run(2, 0.001, impl=EAGER)
    assert flags_for(fast_base, slow_base, floor_ns=14_694.5) == []
    assert flag_holds(BELOW_FLOOR, True, None) is False
    assert flag_holds(IMPLAUSIBLE_SPEEDUP, True, None) is False


def test_a_correct_run_under_its_floor_is_not_held():
    checked = replace(run(2, 0.010, impl=INDUCTOR), correctness_passed=True)
    assert flags_for(checked, None, floor_ns=14_694.5) == []
    # an unchecked one still is, and a failed check is no better than none
    assert [f.code for f in flags_for(run(3, 0.010, impl=INDUCTOR), None, floor_ns=14_694.5)] == [BELOW_FLOOR]
    failed = replace(run(4, 0.010, impl=INDUCTOR), correctness_passed=False)
    assert [f.code for f in flags_for(failed, None, floor_ns=14_694.5)] == [BELOW_FLOOR]
    # a correct run >10× faster than the baseline is still held for that
    assert [f.code for f in flags_for(checked, run(1, 1.39, impl=EAGER), floor_ns=14_694.5)] == [IMPLAUSIBLE_SPEEDUP]


def test_stored_v1_flags_hold_only_what_v2_would_hold():
    """A below_floor flag stored under plausibility-v1 stays as history and holds nothing on the
    baseline or a correct run; an implausible_speedup flag still holds a candidate."""
    below = Flag(2, BELOW_FLOOR, "faster than its estimated floor", "…")
    speedup = Flag(2, IMPLAUSIBLE_SPEEDUP, "more than 10× faster than the baseline", "…")
    base = run(2, 0.010, impl=EAGER)
    assert holding_flags(base, [below, speedup]) == []
    assert is_held_for_review(holding_flags(base, [below]), []) is False
    correct = replace(run(2, 0.010, impl=INDUCTOR), correctness_passed=True)
    assert holding_flags(correct, [below, speedup]) == [speedup]
    unchecked = run(2, 0.010, impl=INDUCTOR)
    assert holding_flags(unchecked, [below, speedup]) == [below, speedup]
    assert status_words(holding_flags(base, [below]), []) is None


def test_held_summary_counts_in_words():
    assert held_summary([]) is None
    assert held_summary([HeldRun(7, (IMPLAUSIBLE_SPEEDUP,), True)]) == "1 faster run held for review: implausible speedup"
    assert held_summary([HeldRun(7, (IMPLAUSIBLE_SPEEDUP,), False), HeldRun(8, (IMPLAUSIBLE_SPEEDUP,), False)]) == (
        "2 runs held for review: implausible speedup"
    )
    assert held_summary([
        HeldRun(7, (BELOW_FLOOR, IMPLAUSIBLE_SPEEDUP), True), HeldRun(8, (IMPLAUSIBLE_SPEEDUP,), True),
        HeldRun(9, (BELOW_FLOOR,), False),
    ]) == "2 faster runs and 1 other held for review: below its estimated floor, implausible speedup"


def test_below_floor_flags_of_v1_were_judged_against_an_older_floor():
    stale = Flag(2, BELOW_FLOOR, "faster than its estimated floor", "…", rule_version="plausibility-v1")
    current = Flag(2, BELOW_FLOOR, "faster than its estimated floor", "…")
    old_speedup = Flag(2, IMPLAUSIBLE_SPEEDUP, "more than 10× faster than the baseline", "…", rule_version="plausibility-v1")
    unchecked = run(2, 0.010, impl=INDUCTOR)
    assert current.rule_version == PLAUSIBILITY_VERSION
    assert holding_flags(unchecked, [stale, old_speedup]) == [old_speedup]
    assert holding_flags(unchecked, [current]) == [current]
    assert (is_current(stale), is_current(current), is_current(old_speedup)) == (False, True, True)
    assert flag_holds(BELOW_FLOOR, False, None, "plausibility-v1") is False
