"""The sentences that state a verdict: headline, comparison with the baseline, coverage gaps."""

from __future__ import annotations

from kernelindex.rules.display import format_ratio
from kernelindex.rules.trust_labels import evidence_word

BASELINE_UNBEATEN = "Source baseline · unbeaten"


def headline_label(record_is_baseline: bool, evidence: str) -> str:
    """'Source baseline · unbeaten', or 'Fastest reported' / 'Fastest measured'."""
    return BASELINE_UNBEATEN if record_is_baseline else f"Fastest {evidence_word(evidence).lower()}"


def headline_speedup(speedup: float) -> str:
    """'1.60× faster than baseline' under a headline."""
    return f"{format_ratio(speedup)} faster than baseline"


def verdict_vs_baseline(speedup: float) -> str:
    """'1.60× faster than the baseline' or '1.09× slower than the baseline' (speedup = baseline/run)."""
    if speedup > 1:
        return f"{format_ratio(speedup)} faster than the baseline."
    if speedup < 1:
        return f"{format_ratio(1 / speedup)} slower than the baseline."
    return "As fast as the baseline."


def not_measured(short_name: str) -> str:
    return f"Not measured on {short_name} for this workload."


def evidence_line(evidence: str, last_observed: str | None) -> str:
    """'Reported evidence · last observed 2026-03-05.'"""
    line = f"{evidence_word(evidence)} evidence"
    return f"{line} · last observed {last_observed}." if last_observed else f"{line}."
