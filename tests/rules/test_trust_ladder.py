"""trust-v2: Replicated > Verified > Reproducible > Reported, and cross-checks of reported figures."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kernelindex.rules.ties import run_interval
from kernelindex.rules.trust_ladder import (
    TRUST_V2,
    TrustLevel,
    agree,
    cross_check,
    implementation_level,
    replicas,
    trust_level,
)
from tests.rules.factories import OBSERVED, environment, hardware, implementation, run, seed_world

SXM = hardware(id=1, sku="NVIDIA H100 SXM5 80GB", short_name="H100 SXM")
PCIE = hardware(id=2, sku="NVIDIA H100 PCIe 80GB", short_name="H100 PCIe", dram_bandwidth_gbps=2039)
ENV_A = environment(id=1, hw=SXM, provider="Modal")
ENV_B = environment(id=2, hw=SXM, provider="Lambda Labs")
ENV_PCIE = environment(id=3, hw=PCIE)
NO_SOURCE = implementation(id=7, source_availability="none")


def measured(id, mean, env=ENV_A, **kw):
    """A fleet measurement: by default one registered machine per environment."""
    kw.setdefault("correctness_passed", True)
    kw.setdefault("std_ms", 0.01)
    kw.setdefault("fleet_machine_id", f"machine-{env.id}")
    return run(id, mean, env=env, evidence="measured", **kw)


def claimed(id, mean, env=ENV_A, **kw):
    """A record from outside that said "measured": stored reported, the claim kept."""
    kw.setdefault("correctness_passed", True)
    kw.setdefault("std_ms", 0.01)
    return run(id, mean, env=env, evidence="reported", claimed_evidence="measured", **kw)


def test_version_and_order():
    assert TRUST_V2 == "trust-v2"
    assert TrustLevel.REPLICATED > TrustLevel.VERIFIED > TrustLevel.REPRODUCIBLE > TrustLevel.REPORTED
    assert [level.word for level in sorted(TrustLevel)] == ["Reported", "Reproducible", "Verified", "Replicated"]
    assert TrustLevel.REPORTED.description == "Reported by a source; not independently reproduced."


# --- the seed runs ----------------------------------------------------------------------------


def test_every_seed_run_is_reported():
    for _, runs in seed_world().values():
        for r in runs:
            assert (r.evidence, r.implementation.source_availability, r.samples_ms) == ("reported", "mirrored", None)
            assert trust_level(r, runs).word == "Reported"
        assert implementation_level(runs) is TrustLevel.REPORTED


# --- each rung --------------------------------------------------------------------------------


def test_reported_without_samples():
    assert trust_level(run(1, 1.0), []) is TrustLevel.REPORTED


def test_reproducible_needs_source_and_samples():
    r = run(1, 1.0, samples_ms=(0.99, 1.01))
    assert trust_level(r, []) is TrustLevel.REPRODUCIBLE
    assert trust_level(run(2, 1.0, impl=NO_SOURCE, samples_ms=(0.99, 1.01)), []) is TrustLevel.REPORTED
    upstream = implementation(id=8, source_availability="upstream")
    assert trust_level(run(3, 1.0, impl=upstream, samples_ms=()), []) is TrustLevel.REPRODUCIBLE  # stored, even if empty


def test_verified_needs_a_passed_correctness_check():
    assert trust_level(measured(1, 1.0), []) is TrustLevel.VERIFIED
    assert trust_level(measured(2, 1.0, correctness_passed=None), []) is TrustLevel.REPORTED
    assert trust_level(measured(3, 1.0, correctness_passed=False), []) is TrustLevel.REPORTED
    # a failed correctness check still leaves stored samples of available source Reproducible
    assert trust_level(measured(4, 1.0, correctness_passed=False, samples_ms=(1.0,)), []) is TrustLevel.REPRODUCIBLE
    assert trust_level(measured(5, 1.0, status="failed"), []) is TrustLevel.REPORTED


def test_replicated_by_another_registered_machine_of_the_same_sku():
    # 1.00 ± 1.96·0.01/10 = [0.99804, 1.00196]; 1.002 ± 0.00196 = [1.00004, 1.00396] → overlap
    a, b = measured(1, 1.0, ENV_A), measured(2, 1.002, ENV_B)
    assert agree(a, b)
    assert replicas(a, [a, b]) == [b]
    assert trust_level(a, [a, b]) is TrustLevel.REPLICATED
    assert trust_level(b, [a, b]) is TrustLevel.REPLICATED


def test_replicated_within_three_percent_without_overlap():
    # 1.00 vs 1.03: intervals [0.99804, 1.00196] and [1.02804, 1.03196] are apart; 0.03/1.00 = 3.0% → agree
    a, b = measured(1, 1.0, ENV_A), measured(2, 1.03, ENV_B)
    assert not run_interval(a).overlaps(run_interval(b))
    assert agree(a, b)
    assert trust_level(a, [b]) is TrustLevel.REPLICATED
    # 1.00 vs 1.031: 3.1% apart and intervals apart → only Verified
    c = measured(3, 1.031, ENV_B)
    assert not agree(a, c)
    assert trust_level(a, [c]) is TrustLevel.VERIFIED


def test_not_replicated_in_the_same_environment():
    a, b = measured(1, 1.0, ENV_A), measured(2, 1.0, ENV_A)
    assert trust_level(a, [a, b]) is TrustLevel.VERIFIED


def test_not_replicated_by_one_machine_in_two_environments():
    # Environments are what records describe; only a second registered machine replicates.
    a, b = measured(1, 1.0, ENV_A, fleet_machine_id="m1"), measured(2, 1.0, ENV_B, fleet_machine_id="m1")
    assert replicas(a, [a, b]) == []
    assert trust_level(a, [a, b]) is TrustLevel.VERIFIED
    c = measured(3, 1.0, ENV_A, fleet_machine_id="m2")  # another machine, even in the same environment
    assert trust_level(a, [a, b, c]) is TrustLevel.REPLICATED


# --- rungs come from the fleet alone ----------------------------------------------------------


def test_a_claim_from_outside_is_never_verified():
    assert trust_level(claimed(1, 1.0), []) is TrustLevel.REPORTED
    assert trust_level(claimed(2, 1.0, samples_ms=(1.0,)), []) is TrustLevel.REPRODUCIBLE  # what its source allows


def test_two_claims_on_invented_machines_are_not_replicated():
    a, b = claimed(1, 1.0, ENV_A), claimed(2, 1.0, ENV_B)
    assert replicas(a, [a, b]) == []
    assert trust_level(a, [a, b]) is TrustLevel.REPORTED and trust_level(b, [a, b]) is TrustLevel.REPORTED
    # nor does a claim replicate a fleet measurement, or a fleet measurement lift a claim
    m = measured(3, 1.0, ENV_B)
    assert trust_level(m, [a, m]) is TrustLevel.VERIFIED
    assert trust_level(a, [a, m]) is TrustLevel.REPORTED


def test_the_word_measured_without_a_registered_machine_climbs_nothing():
    # Facts saying "measured" with no fleet worker behind them (the database refuses such a row:
    # ck_runs_measured_by_fleet) are not taken at their word.
    a = measured(1, 1.0, ENV_A, fleet_machine_id=None)
    b = measured(2, 1.0, ENV_B, fleet_machine_id=None)
    assert trust_level(a, [a, b]) is TrustLevel.REPORTED
    assert cross_check(run(3, 1.0, env=ENV_B), [a]) is None


def test_not_replicated_on_a_different_sku():
    a, b = measured(1, 1.0, ENV_A), measured(2, 1.0, ENV_PCIE)
    assert trust_level(a, [b]) is TrustLevel.VERIFIED


def test_not_replicated_by_a_reported_a_retracted_or_another_implementation():
    a = measured(1, 1.0, ENV_A)
    reported = run(2, 1.0, env=ENV_B, correctness_passed=True)
    retracted = measured(3, 1.0, ENV_B, retracted=True)
    superseded = measured(4, 1.0, ENV_B, superseded=True)
    other_impl = measured(5, 1.0, ENV_B, impl=implementation(id=9, slug="x", title="X", role="candidate"))
    other_config = measured(6, 1.0, ENV_B, bindings={"batch_size": 4})
    unchecked = measured(7, 1.0, ENV_B, correctness_passed=None)
    assert trust_level(a, [reported, retracted, superseded, other_impl, other_config, unchecked]) is TrustLevel.VERIFIED


def test_a_reported_run_is_not_replicated_by_two_measurements():
    r = run(1, 1.0, env=ENV_A)
    assert trust_level(r, [measured(2, 1.0, ENV_A), measured(3, 1.0, ENV_B)]) is TrustLevel.REPORTED


def test_implementation_level_is_the_strongest():
    runs = [run(1, 1.0), run(2, 1.0, samples_ms=(1.0,)), measured(3, 1.0)]
    assert implementation_level(runs) is TrustLevel.VERIFIED
    assert implementation_level(runs + [measured(4, 1.0, ENV_B)]) is TrustLevel.REPLICATED
    assert implementation_level([]) is None


# --- cross-checks -----------------------------------------------------------------------------


def test_cross_check_confirms_within_five_percent():
    reported = run(1, 1.39, env=ENV_A)
    c = cross_check(reported, [measured(2, 1.41, ENV_B)])
    # (1.41 − 1.39) / 1.39 = +1.439%
    assert c.kind == "confirmation" and c.confirmed
    assert (c.reported_ms, c.measured_ms, c.measured_run_id) == (1.39, 1.41, 2)
    assert c.difference_percent == pytest.approx(1.4388, abs=1e-4)
    assert c.sentence == "Confirmed by a KernelIndex measurement on H100 SXM: 1.41 ms vs 1.39 ms reported (+1.4%)."


def test_cross_check_contradicts_beyond_five_percent():
    c = cross_check(run(1, 1.39, env=ENV_A), [measured(2, 1.62, ENV_A)])
    # (1.62 − 1.39) / 1.39 = +16.547%
    assert c.kind == "contradiction" and not c.confirmed
    assert c.difference_percent == pytest.approx(16.5468, abs=1e-4)
    assert c.sentence == "Contradicted by a KernelIndex measurement on H100 SXM: 1.62 ms vs 1.39 ms reported (+16.5%)."
    faster = cross_check(run(1, 1.39, env=ENV_A), [measured(2, 1.20, ENV_A)])
    assert faster.sentence == "Contradicted by a KernelIndex measurement on H100 SXM: 1.20 ms vs 1.39 ms reported (-13.7%)."


def test_cross_check_boundary_of_five_percent():
    assert cross_check(run(1, 1.0), [measured(2, 1.05)]).kind == "confirmation"  # exactly +5%
    assert cross_check(run(1, 1.0), [measured(2, 0.95)]).kind == "confirmation"  # exactly −5%
    assert cross_check(run(1, 1.0), [measured(2, 1.0501)]).kind == "contradiction"


def test_cross_check_uses_the_latest_measurement():
    old = measured(2, 1.62, ENV_A, observed_at=OBSERVED)
    new = measured(3, 1.40, ENV_B, observed_at=OBSERVED + timedelta(days=3))
    c = cross_check(run(1, 1.39, env=ENV_A), [new, old])
    assert c.measured_run_id == 3 and c.confirmed


def test_no_cross_check_without_a_matching_measurement():
    reported = run(1, 1.39, env=ENV_A)
    assert cross_check(reported, []) is None
    assert cross_check(reported, [measured(2, 1.39, ENV_PCIE)]) is None  # another SKU
    assert cross_check(reported, [measured(2, 1.39, bindings={"batch_size": 4})]) is None  # another configuration
    assert cross_check(reported, [run(2, 1.39)]) is None  # reported, not measured
    assert cross_check(reported, [measured(2, 1.39, retracted=True)]) is None
    assert cross_check(reported, [measured(2, 1.39, status="failed")]) is None
    assert cross_check(reported, [measured(2, 1.39, correctness_passed=False)]) is None
    assert cross_check(measured(1, 1.39), [measured(2, 1.39, ENV_B)]) is None  # not a reported figure
    assert cross_check(reported, [claimed(2, 1.39, ENV_B)]) is None  # a claim from outside checks nothing
