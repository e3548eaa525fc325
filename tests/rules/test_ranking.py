"""ranking-v1 on hand-made runs: eligibility, cohorts, order, records, labels, baselines."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kernelindex.rules import ranking
from kernelindex.rules.ranking import (
    baseline_of,
    cohorts,
    eligible_runs,
    environment_labels,
    implementation_bests,
    ineligibility_reason,
    rank_cohort,
    records_by_environment,
    speedup_vs_baseline,
)
from tests.rules.factories import (
    OBSERVED,
    baseline_impl,
    candidate_impl,
    environment,
    hardware,
    protocol,
    run,
    workload,
)

W = workload()
SXM = hardware(id=1, sku="NVIDIA H100 SXM5 80GB", short_name="H100 SXM", family="NVIDIA H100")
PCIE = hardware(id=2, sku="NVIDIA H100 PCIe 80GB", short_name="H100 PCIe", family="NVIDIA H100")
B200 = hardware(id=3, sku="NVIDIA B200 180GB", short_name="B200", family="NVIDIA B200")
ENV_SXM = environment(id=1, hw=SXM)
ENV_PCIE = environment(id=2, hw=PCIE)
ENV_B200 = environment(id=3, hw=B200)
EAGER = baseline_impl(1)
INDUCTOR = candidate_impl(2)


# --- eligibility ------------------------------------------------------------------------------


def test_passed_live_current_canonical_run_is_eligible():
    r = run(1, 1.0)
    assert ineligibility_reason(r, W) is None
    assert eligible_runs([r], W) == [r]


@pytest.mark.parametrize(
    "kw, reason",
    [
        ({"status": "failed"}, "failed"),
        ({"status": "error"}, "failed"),
        ({"retracted": True}, "retracted"),
        ({"superseded": True}, "superseded"),
        ({"revision_id": 9}, "older workload revision"),
        ({"bindings": {"batch_size": 4}}, "not the canonical configuration"),
        ({"dtype": "fp16"}, "not the canonical configuration"),
    ],
)
def test_each_ineligible_run_is_excluded_with_its_reason(kw, reason):
    bad = run(2, 0.5, **kw)
    good = run(1, 1.0)
    assert ineligibility_reason(bad, W) == reason
    assert eligible_runs([bad, good], W) == [good]


def test_failure_is_reported_before_retraction_and_supersession():
    r = run(1, 1.0, status="failed", retracted=True, superseded=True, revision_id=1)
    assert ineligibility_reason(r, W) == "failed"


def test_retraction_is_reported_before_supersession():
    assert ineligibility_reason(run(1, 1.0, retracted=True, superseded=True), W) == "retracted"


def test_workload_without_a_current_revision_has_no_eligible_run():
    w = workload(current_revision_id=None)
    assert ineligibility_reason(run(1, 1.0), w) == "older workload revision"


def test_canonical_configuration_does_not_depend_on_binding_order():
    w = workload(bindings={"m": 4, "n": 8})
    r = run(1, 1.0, bindings={"n": 8, "m": 4})
    assert ineligibility_reason(r, w) is None


# --- cohorts ----------------------------------------------------------------------------------


def test_cohorts_separate_environments_and_protocols():
    p1, p2 = protocol(id=1), protocol(id=2, name="other timer")
    runs = [
        run(1, 1.0, env=ENV_SXM, proto=p1),
        run(2, 1.1, env=ENV_SXM, proto=p1, impl=INDUCTOR),
        run(3, 1.2, env=ENV_PCIE, proto=p1),
        run(4, 0.9, env=ENV_SXM, proto=p2),
    ]
    groups = cohorts(runs)
    assert len(groups) == 3
    by_ids = sorted(sorted(r.id for r in members) for members in groups.values())
    assert by_ids == [[1, 2], [3], [4]]
    for key, members in groups.items():
        assert all(r.cohort_key == key for r in members)


def test_cohorts_of_nothing_is_empty():
    assert cohorts([]) == {}


# --- order inside a cohort --------------------------------------------------------------------


def test_rank_order_is_by_mean():
    rows = rank_cohort([run(1, 3.0), run(2, 1.0), run(3, 2.0)])
    assert [(r.rank, r.run.id) for r in rows] == [(1, 2), (2, 3), (3, 1)]


def test_equal_means_are_ordered_by_earlier_observation():
    late = run(1, 1.0, observed_at=OBSERVED + timedelta(days=1))
    early = run(2, 1.0, observed_at=OBSERVED)
    rows = rank_cohort([late, early])
    assert [r.run.id for r in rows] == [2, 1]
    assert [r.rank for r in rows] == [1, 2]
    assert [r.vs_first for r in rows] == [1.0, 1.0]


def test_equal_means_and_times_are_ordered_by_id():
    rows = rank_cohort([run(7, 1.0), run(3, 1.0), run(5, 1.0)])
    assert [r.run.id for r in rows] == [3, 5, 7]
    assert [r.rank for r in rows] == [1, 2, 3]


def test_vs_first_is_latency_over_the_leader():
    rows = rank_cohort([run(1, 1.5), run(2, 1.2), run(3, 2.4)])
    assert [r.vs_first for r in rows] == pytest.approx([1.0, 1.25, 2.0])


def test_rank_of_one_run():
    rows = rank_cohort([run(1, 1.39)])
    assert len(rows) == 1
    assert rows[0].rank == 1
    assert rows[0].vs_first == 1.0


def test_rank_of_nothing():
    assert rank_cohort([]) == []


# --- records by environment -------------------------------------------------------------------


def test_one_record_per_cohort_fastest_first_with_run_counts():
    runs = [
        run(1, 2.0, env=ENV_SXM),
        run(2, 1.5, env=ENV_SXM, impl=INDUCTOR),
        run(3, 1.0, env=ENV_B200),
        run(4, 1.8, env=ENV_PCIE),
        run(5, 2.5, env=ENV_PCIE, impl=INDUCTOR),
        run(6, 2.9, env=ENV_PCIE, impl=candidate_impl(3, "x", "X")),
    ]
    records = records_by_environment(runs)
    assert [r.run.id for r in records] == [3, 2, 4]
    assert [r.run_count for r in records] == [1, 2, 3]
    assert [len(r.cohort) for r in records] == [1, 2, 3]
    assert [row.run.id for row in records[2].cohort] == [4, 5, 6]
    for record in records:
        assert record.run is record.cohort[0].run


def test_records_when_a_family_repeats_are_numbered_by_record_latency():
    runs = [run(1, 2.0, env=ENV_SXM), run(2, 1.0, env=ENV_PCIE), run(3, 1.5, env=ENV_B200)]
    records = records_by_environment(runs)
    assert [(r.run.id, r.environment_label) for r in records] == [
        (2, "NVIDIA H100 · env 1"),
        (3, "NVIDIA B200"),
        (1, "NVIDIA H100 · env 2"),
    ]


def test_a_family_that_does_not_repeat_is_labelled_bare():
    records = records_by_environment([run(1, 1.0, env=ENV_SXM), run(2, 0.8, env=ENV_B200)])
    assert [r.environment_label for r in records] == ["NVIDIA B200", "NVIDIA H100"]


def test_environment_labels_keep_one_number_per_environment():
    # Two cohorts in the same environment (two protocols) do not make the family "repeat".
    p2 = protocol(id=2, name="other")
    runs = [run(1, 1.0, env=ENV_SXM), run(2, 1.2, env=ENV_SXM, proto=p2)]
    labels = environment_labels(runs)
    assert labels == {ENV_SXM.id: "NVIDIA H100"}


def test_environment_labels_follow_the_given_order():
    labels = environment_labels([run(1, 1.0, env=ENV_PCIE), run(2, 2.0, env=ENV_SXM)])
    assert labels == {ENV_PCIE.id: "NVIDIA H100 · env 1", ENV_SXM.id: "NVIDIA H100 · env 2"}


def test_records_of_a_workload_with_no_runs():
    assert records_by_environment([]) == []
    assert records_by_environment(eligible_runs([], W)) == []
    assert environment_labels([]) == {}


def test_records_ignore_nothing_themselves_so_callers_pass_eligible_runs():
    all_runs = [run(1, 0.1, status="failed"), run(2, 1.0)]
    records = records_by_environment(eligible_runs(all_runs, W))
    assert [r.run.id for r in records] == [2]


# --- baselines --------------------------------------------------------------------------------


def test_baseline_of_is_the_fastest_baseline_row():
    rows = rank_cohort([run(1, 1.0, impl=INDUCTOR), run(2, 2.0, impl=EAGER), run(3, 1.5, impl=EAGER)])
    base = baseline_of(rows)
    assert base is not None
    assert base.run.id == 3
    assert base.rank == 2


def test_baseline_of_a_cohort_without_the_baseline_is_none():
    rows = rank_cohort([run(1, 1.0, impl=INDUCTOR), run(2, 1.1, impl=candidate_impl(3, "x", "X"))])
    assert baseline_of(rows) is None
    assert baseline_of([]) is None


def test_speedup_vs_baseline_is_baseline_over_run():
    base = run(1, 3.0, impl=EAGER)
    fast = run(2, 1.5, impl=INDUCTOR)
    slow = run(3, 6.0, impl=INDUCTOR)
    assert speedup_vs_baseline(fast, base) == pytest.approx(2.0)
    assert speedup_vs_baseline(slow, base) == pytest.approx(0.5)
    assert speedup_vs_baseline(base, base) == 1.0


# --- implementation bests ---------------------------------------------------------------------


def test_implementation_bests_take_the_best_over_all_environments():
    runs = [
        run(1, 2.0, env=ENV_SXM, impl=EAGER),
        run(2, 1.0, env=ENV_PCIE, impl=EAGER),
        run(3, 1.2, env=ENV_SXM, impl=INDUCTOR),
        run(4, 3.0, env=ENV_PCIE, impl=INDUCTOR),
    ]
    bests = implementation_bests(runs)
    assert [(b.run.implementation.slug, b.run.id) for b in bests] == [("torch_eager", 2), ("torch_compile_inductor", 3)]
    assert [b.vs_best for b in bests] == pytest.approx([1.0, 1.2])


def test_implementation_bests_list_the_baseline_first_then_by_title():
    runs = [
        run(1, 1.0, impl=candidate_impl(2, "b", "Beta")),
        run(2, 2.0, impl=EAGER),
        run(3, 1.5, impl=candidate_impl(3, "a", "Alpha")),
    ]
    bests = implementation_bests(runs)
    assert [b.run.implementation.title for b in bests] == ["PyTorch eager", "Alpha", "Beta"]
    assert [b.vs_best for b in bests] == pytest.approx([2.0, 1.5, 1.0])


def test_implementation_bests_break_ties_by_earlier_observation():
    late = run(1, 1.0, env=ENV_SXM, observed_at=OBSERVED + timedelta(days=2))
    early = run(2, 1.0, env=ENV_PCIE, observed_at=OBSERVED)
    (best,) = implementation_bests([late, early])
    assert best.run.id == 2
    assert best.vs_best == 1.0


def test_implementation_bests_of_one_run_and_of_none():
    (only,) = implementation_bests([run(1, 4.2)])
    assert only.vs_best == 1.0
    assert implementation_bests([]) == []


def test_ranking_version():
    assert ranking.RANKING_VERSION == "ranking-v1"
