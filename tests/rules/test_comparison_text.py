"""The words of a cohort comparison: its title and the order of a row's notes."""

from __future__ import annotations

from kernelindex.rules.comparison_text import MIXED_SOURCES_TITLE, SOURCE_NATIVE_TITLE, comparison_title, row_notes
from kernelindex.rules.trust_labels import EXACT_CONFIGURATION_NOTE, caveats
from tests.rules.factories import baseline_impl, candidate_impl, run, source


def test_one_source_is_a_source_native_comparison():
    assert comparison_title([run(1, 1.0), run(2, 1.1)]) == SOURCE_NATIVE_TITLE == "Source-native comparison"


def test_several_sources_are_a_plain_comparison():
    runs = [run(1, 1.0), run(2, 1.1, src=source(id=2, name="Other timings"))]
    assert comparison_title(runs) == MIXED_SOURCES_TITLE == "Comparison"


def test_notes_read_verdict_then_configuration_then_caveats():
    row = run(2, 1.1, impl=candidate_impl())
    verdict = "1.10× slower than the baseline."
    assert row_notes(row, verdict, True) == [verdict, EXACT_CONFIGURATION_NOTE, *caveats(row)]


def test_notes_leave_out_what_does_not_apply():
    row = run(1, 1.0, impl=baseline_impl())
    assert row_notes(row, None, False) == caveats(row)
    assert caveats(row)  # the baseline row still says it is the baseline
