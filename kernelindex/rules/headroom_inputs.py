"""What a workload's headroom floors are set against: the overall record (its hardware family and
latency) for headroom-v1, and the fastest record on each SKU for the roofline (headroom-v3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kernelindex.rules.facts import HardwareFacts, RunFacts
from kernelindex.rules.headroom_v1 import HeadroomV1, headroom_v1
from kernelindex.rules.ranking import CohortRecord, order_key


def record_headroom_v1(
    semantics: dict[str, Any] | None,
    bindings: Mapping[str, int],
    overall_record: CohortRecord | None,
    catalogue: Iterable[HardwareFacts],
) -> HeadroomV1:
    """headroom-v1 for the family of the overall record's hardware, against that record's latency;
    without a record there is no family to bound."""
    family = overall_record.run.environment.hardware.family if overall_record else None
    record_ms = overall_record.run.figure if overall_record else None  # headline records are latency runs (eligibility-v3)
    return headroom_v1(semantics, dict(bindings), family, catalogue, record_ms)


def best_latency_by_hardware(records: Iterable[CohortRecord]) -> dict[int, float]:
    """The fastest record latency (ms) on each hardware id: several environments can share a SKU."""
    best: dict[int, float] = {}
    for record in records:
        hardware_id = record.run.environment.hardware.id
        latency = record.run.figure
        if latency is None:
            continue
        best[hardware_id] = min(best.get(hardware_id, latency), latency)
    return best


def best_record_by_hardware(records: Iterable[CohortRecord]) -> dict[int, RunFacts]:
    """The run of the fastest record on each hardware id (ranking's order breaks ties): the run a
    floor on that SKU is set against, and the one that beats it when it is under the floor."""
    best: dict[int, RunFacts] = {}
    for record in records:
        run = record.run
        if run.figure is None:
            continue
        hardware_id = run.environment.hardware.id
        if hardware_id not in best or order_key(run) < order_key(best[hardware_id]):
            best[hardware_id] = run
    return best
