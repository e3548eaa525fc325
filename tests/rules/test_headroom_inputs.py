"""What the headroom floors are set against: the overall record for headroom-v1, the best record per SKU
for headroom-v2."""

from __future__ import annotations

from kernelindex.rules.headroom_inputs import best_latency_by_hardware, record_headroom_v1
from kernelindex.rules.headroom_v1 import headroom_v1
from kernelindex.rules.ranking import CohortRecord
from tests.rules.factories import RESNET18, environment, hardware, run, seed_catalogue, seed_workloads

CATALOGUE = seed_catalogue()
SEMANTICS = seed_workloads()[RESNET18]["semantics"]
H100 = next(h for h in CATALOGUE if h.family == "NVIDIA H100")


def _record(run_id: int, mean_ms: float, env_id: int, hw) -> CohortRecord:
    return CohortRecord(run=run(run_id, mean_ms, env=environment(id=env_id, hw=hw)), run_count=1,
                        environment_label=hw.family, cohort=[])


def test_headroom_v1_is_bounded_on_the_record_family_against_the_record_latency():
    record = _record(1, 1.39, 1, H100)
    result = record_headroom_v1(SEMANTICS, {"batch_size": 2}, record, CATALOGUE)
    assert result == headroom_v1(SEMANTICS, {"batch_size": 2}, H100.family, CATALOGUE, 1.39)
    assert result.record_ms == 1.39 and result.floor_ns is not None


def test_without_a_record_headroom_v1_has_no_hardware():
    result = record_headroom_v1(SEMANTICS, {"batch_size": 2}, None, CATALOGUE)
    assert result == headroom_v1(SEMANTICS, {"batch_size": 2}, None, CATALOGUE, None)
    assert result.floor_ns is None and result.unavailable_reason


def test_the_best_latency_per_sku_is_the_fastest_of_its_environments():
    other = hardware(id=2, sku="NVIDIA B200", short_name="B200", family="NVIDIA B200")
    records = [_record(1, 1.2, 1, H100), _record(2, 1.0, 2, H100), _record(3, 0.7, 3, other)]
    assert best_latency_by_hardware(records) == {H100.id: 1.0, 2: 0.7}
    assert best_latency_by_hardware([]) == {}
