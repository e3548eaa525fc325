"""perf.fleet_noop, the measurement of perf.fleet_queue's workers: what it returns must be what the fleet
worker stores (a record the one checker accepts, on a CPU the worker can declare), and it must stay
torch-free so that the sandbox's zygote starts at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.records import cpu_hardware_line
from kernelindex.ingest.hardware import hardware_problem
from kernelindex.ingest.records import check_record
from perf.fleet_noop import measure

REPO = Path(__file__).resolve().parents[2]
PAYLOAD = {
    "workload_slug": "perf-fleet-noop-x", "source_sha256": "ab" * 32, "bindings": {"N": 49},
    "implementation": {"slug": "submitted-0123456789abcdef", "title": "no-op 1", "framework": "PyTorch",
                       "language": "python", "role": "candidate", "licence": None, "source_url": None,
                       "source_availability": "mirrored"},
    "builtin": None, "device": "cpu",
}


def test_it_returns_one_passed_record_the_checker_accepts_for_the_job_asked():
    records = measure(dict(PAYLOAD))["records"]
    assert len(records) == 1
    record = records[0]
    assert check_record(record) == []
    assert record["status"] == "passed" and record["statistics"]["num_trials"] == 5
    assert record["workload"] == {"slug": "perf-fleet-noop-x", "source_sha256": "ab" * 32}
    assert record["implementation"]["slug"] == "submitted-0123456789abcdef"
    assert record["configuration"]["bindings"] == {"N": 49}
    line = cpu_hardware_line(record["environment"])
    assert line is not None and line["sku"] == "perf no-op CPU" and hardware_problem(line) is None


@pytest.mark.parametrize("missing", ["workload_slug", "implementation", "bindings"])
def test_a_payload_without_a_key_it_reads_is_refused_by_name(missing):
    with pytest.raises(ValueError, match=missing):
        measure({k: v for k, v in PAYLOAD.items() if k != missing})


def test_it_imports_without_torch():
    probe = "import sys, perf.fleet_noop; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
