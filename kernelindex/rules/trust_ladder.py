"""The trust ladder: how strongly a run's figure is backed, strongest first.

trust-v2, first match wins. Rungs come from the fleet alone: a KernelIndex measurement is a run a
fleet worker stored under its registered identity (evidence "measured" with the worker's registered
machine, kernelindex.fleet.registry). A record from outside (submitRuns, `ingest runs`, seeds) is
stored "reported" whatever its own `evidence` said, and names no worker, so it never climbs past
Reproducible, however many machines it invents.
- Replicated: a KernelIndex measurement (passed, correctness passed) with at least one other such
  live run of the same workload revision, configuration and implementation, stored by a worker on
  a DIFFERENT registered machine with the same hardware SKU, that agrees with it: their 95%
  confidence intervals overlap, or their means are within 3% of each other (|a − b| ≤ 3% of the
  smaller);
- Verified: a KernelIndex measurement that passed, with correctness passed;
- Reproducible: the implementation's source is available (mirrored or upstream) and the run's raw
  samples are stored;
- Reported: everything else (a figure a source published).

Cross-check: a reported figure is compared with the latest live, passed KernelIndex measurement of
the same workload revision, configuration and implementation on the same SKU; within 5% it is
confirmed, otherwise contradicted, and both numbers are shown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from kernelindex.rules.display import format_latency
from kernelindex.rules.facts import RunFacts
from kernelindex.rules.ties import run_interval
from kernelindex.rules.trust_labels import has_source

TRUST_V2 = "trust-v2"
EVIDENCE_VERSION = TRUST_V2

REPLICATION_TOLERANCE_PERCENT = 3.0
CROSS_CHECK_TOLERANCE_PERCENT = 5.0


class TrustLevel(IntEnum):
    """Ordered: a larger value is stronger evidence."""

    REPORTED = 0
    REPRODUCIBLE = 1
    VERIFIED = 2
    REPLICATED = 3

    @property
    def word(self) -> str:
        return LEVEL_WORDS[self]

    @property
    def description(self) -> str:
        return LEVEL_DESCRIPTIONS[self]


LEVEL_WORDS = {
    TrustLevel.REPORTED: "Reported",
    TrustLevel.REPRODUCIBLE: "Reproducible",
    TrustLevel.VERIFIED: "Verified",
    TrustLevel.REPLICATED: "Replicated",
}
LEVEL_DESCRIPTIONS = {
    TrustLevel.REPORTED: "Reported by a source; not independently reproduced.",
    TrustLevel.REPRODUCIBLE: "Source available and raw samples stored, so anyone can check it.",
    TrustLevel.VERIFIED: "Measured by a registered KernelIndex fleet worker; correctness checked.",
    TrustLevel.REPLICATED: "Measured by registered KernelIndex fleet workers on two or more machines of the same GPU, agreeing.",
}


def _is_live(run: RunFacts) -> bool:
    return not run.retracted and not run.superseded


def is_fleet_measurement(run: RunFacts) -> bool:
    """Stored by a registered fleet worker as its own measurement. Both halves are asked: the
    database holds 'measured' to a worker (ck_runs_measured_by_fleet), and facts built elsewhere
    must not climb on the word alone."""
    return run.evidence == "measured" and run.fleet_machine_id is not None


def is_verified_measurement(run: RunFacts) -> bool:
    """Measured by a registered fleet worker, passed, correctness passed."""
    return is_fleet_measurement(run) and run.status == "passed" and run.correctness_passed is True and run.mean_ms is not None


def _same_subject(a: RunFacts, b: RunFacts) -> bool:
    return (
        a.workload_revision_id == b.workload_revision_id
        and a.configuration_key == b.configuration_key
        and a.implementation.id == b.implementation.id
    )


def percent_apart(a: float, b: float) -> float:
    """|a − b| as a percentage of the smaller."""
    return abs(a - b) / min(a, b) * 100


def agree(a: RunFacts, b: RunFacts) -> bool:
    """95% intervals overlap (touching counts), or means within 3% of each other."""
    if run_interval(a).overlaps(run_interval(b)):
        return True
    # Rounded so a difference of exactly 3% is not lost to floating point.
    return round(percent_apart(a.latency_ms, b.latency_ms), 9) <= REPLICATION_TOLERANCE_PERCENT


def replicas(run: RunFacts, all_runs: Iterable[RunFacts]) -> list[RunFacts]:
    """The other live verified measurements that replicate this one: same workload revision,
    configuration and implementation, same SKU, stored from a different registered machine,
    agreeing. Empty unless the run is itself a verified measurement. Machines, not environments:
    an environment is whatever a record describes; a machine is a registered worker's."""
    if not is_verified_measurement(run):
        return []
    sku = run.environment.hardware.sku
    return [
        other
        for other in all_runs
        if other.id != run.id
        and _is_live(other)
        and is_verified_measurement(other)
        and _same_subject(run, other)
        and other.environment.hardware.sku == sku
        and other.fleet_machine_id != run.fleet_machine_id
        and agree(run, other)
    ]


def trust_level(run: RunFacts, all_runs: Iterable[RunFacts]) -> TrustLevel:
    """The run's rung; ``all_runs`` are the other live runs of the same workload, configuration and
    implementation (filtered again here, so passing more is harmless; the run itself is skipped)."""
    if replicas(run, all_runs):
        return TrustLevel.REPLICATED
    if is_verified_measurement(run):
        return TrustLevel.VERIFIED
    if has_source(run.implementation) and run.samples_ms is not None:
        return TrustLevel.REPRODUCIBLE
    return TrustLevel.REPORTED


def implementation_level(runs: Iterable[RunFacts]) -> TrustLevel | None:
    """The strongest rung among an implementation's runs; None without runs."""
    runs = list(runs)
    if not runs:
        return None
    return max(trust_level(r, runs) for r in runs)


@dataclass(frozen=True)
class CrossCheck:
    kind: str  # "confirmation" or "contradiction"
    reported_run_id: int
    measured_run_id: int
    reported_ms: float
    measured_ms: float
    difference_percent: float  # (measured − reported) / reported × 100
    hardware_short_name: str
    sentence: str

    @property
    def confirmed(self) -> bool:
        return self.kind == "confirmation"


def cross_check(reported_run: RunFacts, measured_runs: Iterable[RunFacts]) -> CrossCheck | None:
    """Confirm or contradict a reported figure with a KernelIndex measurement on the same SKU.

    The measurement used is the latest (by observation, then run id) live, passed KernelIndex
    measurement of the same workload revision, configuration and implementation on the same SKU,
    whose correctness did not fail. None when there is none, or when the run is itself a measurement.
    """
    if reported_run.mean_ms is None or is_fleet_measurement(reported_run):
        return None
    sku = reported_run.environment.hardware.sku
    candidates = [
        m
        for m in measured_runs
        if m.id != reported_run.id
        and is_fleet_measurement(m)
        and m.status == "passed"
        and m.correctness_passed is not False
        and m.mean_ms is not None
        and _is_live(m)
        and _same_subject(reported_run, m)
        and m.environment.hardware.sku == sku
    ]
    if not candidates:
        return None
    measured = max(candidates, key=lambda m: (m.observed_at, m.id))
    reported_ms, measured_ms = reported_run.mean_ms, measured.latency_ms
    diff = (measured_ms - reported_ms) / reported_ms * 100
    confirmed = round(abs(diff), 9) <= CROSS_CHECK_TOLERANCE_PERCENT
    short = measured.environment.hardware.short_name
    verb = "Confirmed" if confirmed else "Contradicted"
    sentence = (
        f"{verb} by a KernelIndex measurement on {short}: "
        f"{format_latency(measured_ms)} vs {format_latency(reported_ms)} reported ({diff:+.1f}%)."
    )
    return CrossCheck(
        kind="confirmation" if confirmed else "contradiction",
        reported_run_id=reported_run.id,
        measured_run_id=measured.id,
        reported_ms=reported_ms,
        measured_ms=measured_ms,
        difference_percent=diff,
        hardware_short_name=short,
        sentence=sentence,
    )
