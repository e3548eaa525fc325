"""Which runs the trust ladder weighs for a comparison row and for an implementation summary."""

from __future__ import annotations

from kernelindex.rules.trust_context import comparison_context, implementation_context
from tests.rules.factories import baseline_impl, candidate_impl, run

EAGER = baseline_impl()
COMPILE = candidate_impl()


def test_a_row_sees_the_measurements_then_its_cohort_each_run_once():
    measured = [run(1, 1.0, evidence="measured"), run(2, 1.1, evidence="measured")]
    cohort = [run(2, 1.1, evidence="measured"), run(3, 1.2)]
    assert [r.id for r in comparison_context(measured, cohort)] == [1, 2, 3]


def test_a_row_without_measurements_sees_its_cohort():
    assert [r.id for r in comparison_context([], [run(3, 1.2), run(4, 1.3)])] == [3, 4]


def test_an_implementation_sees_its_own_measurements_and_its_best_run():
    measured = [run(1, 1.0, impl=EAGER, evidence="measured"), run(2, 0.9, impl=COMPILE, evidence="measured")]
    best = run(5, 0.8, impl=COMPILE)
    assert [r.id for r in implementation_context(measured, best)] == [2, 5]


def test_a_measured_best_run_is_not_counted_twice():
    best = run(2, 0.9, impl=COMPILE, evidence="measured")
    assert [r.id for r in implementation_context([best], best)] == [2]
