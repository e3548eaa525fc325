"""trust-v1 and the verdict sentences."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kernelindex.rules import verdicts
from kernelindex.rules.trust_labels import (
    BASELINE_CAVEAT,
    REPORTED_CAVEAT,
    STALE_AFTER_DAYS,
    availability_detail,
    availability_label,
    caveats,
    evidence_word,
    implementation_line,
    install_label,
    is_stale,
    package_label,
    trust_label,
)
from tests.rules.factories import baseline_impl, candidate_impl, implementation, run

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def test_trust_label_reported_with_source():
    assert trust_label("reported", implementation(licence="MIT", source_availability="mirrored")) == "Reported · MIT · source"
    assert trust_label("measured", implementation(licence="Apache-2.0", source_availability="upstream")) == "Measured · Apache-2.0 · source"


def test_trust_label_without_source():
    assert trust_label("reported", implementation(source_availability="none")) == "Reported · MIT · no source"


def test_trust_label_with_unknown_licence():
    assert trust_label("reported", implementation(licence=None)) == "Reported · licence unknown · source"
    assert availability_label(implementation(licence=None, source_availability="none")) == "licence unknown · no source"


def test_evidence_word():
    assert evidence_word("reported") == "Reported"
    assert evidence_word("measured") == "Measured"
    assert evidence_word("derived") == "Derived"


def test_availability_and_install_words():
    assert availability_detail(implementation(source_availability="mirrored")) == "source mirrored"
    assert availability_detail(implementation(source_availability="upstream")) == "source upstream"
    assert availability_detail(implementation(source_availability="none")) == "no public source"
    assert install_label(implementation()) == "no install recipe"
    assert install_label(implementation(install_recipe="pip install x")) == "pip install x"
    assert package_label(implementation()) == "No package · vendor the source"
    assert package_label(implementation(install_recipe="pip install x")) == "Install recipe available"
    assert implementation_line(implementation()) == "PyTorch · MIT · python"


def test_stale_boundary_is_exclusive_at_180_days():
    assert STALE_AFTER_DAYS == 180
    assert not is_stale(NOW - timedelta(days=180), NOW)
    assert is_stale(NOW - timedelta(days=181), NOW)
    assert is_stale(NOW - timedelta(days=180, seconds=1), NOW)
    assert not is_stale(NOW, NOW)
    assert not is_stale(NOW - timedelta(days=10), NOW, after_days=10)
    assert is_stale(NOW - timedelta(days=11), NOW, after_days=10)


def test_seed_observation_is_stale_on_the_pages():
    observed = datetime(2026, 3, 5, tzinfo=UTC)
    assert is_stale(observed, NOW)
    assert not is_stale(observed, datetime(2026, 4, 1, tzinfo=UTC))


def test_caveats_for_a_reported_baseline():
    assert caveats(run(1, 1.0, impl=baseline_impl(), evidence="reported")) == [BASELINE_CAVEAT, REPORTED_CAVEAT]


def test_caveats_for_a_reported_candidate():
    assert caveats(run(1, 1.0, impl=candidate_impl(), evidence="reported")) == [REPORTED_CAVEAT]


def test_caveats_for_a_measured_baseline():
    assert caveats(run(1, 1.0, impl=baseline_impl(), evidence="measured")) == [BASELINE_CAVEAT]


def test_no_caveat_for_a_measured_candidate():
    assert caveats(run(1, 1.0, impl=candidate_impl(), evidence="measured")) == []


# --- verdicts ---------------------------------------------------------------------------------


def test_headline_labels():
    assert verdicts.headline_label(True, "reported") == "Source baseline · unbeaten"
    assert verdicts.headline_label(True, "measured") == "Source baseline · unbeaten"
    assert verdicts.headline_label(False, "reported") == "Fastest reported"
    assert verdicts.headline_label(False, "measured") == "Fastest measured"


@pytest.mark.parametrize(
    "speedup, text",
    [
        (3.88 / 2.43, "1.60× faster than the baseline."),
        (1.39 / 1.52, "1.09× slower than the baseline."),
        (0.5, "2.00× slower than the baseline."),
        (1.0, "As fast as the baseline."),
    ],
)
def test_verdict_vs_baseline(speedup, text):
    assert verdicts.verdict_vs_baseline(speedup) == text


def test_headline_speedup_and_other_sentences():
    assert verdicts.headline_speedup(3.88 / 2.43) == "1.60× faster than baseline"
    assert verdicts.not_measured("B200") == "Not measured on B200 for this workload."
    assert verdicts.evidence_line("reported", "2026-03-05") == "Reported evidence · last observed 2026-03-05."
    assert verdicts.evidence_line("measured", None) == "Measured evidence."
