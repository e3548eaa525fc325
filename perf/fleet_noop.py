"""A measurement that measures nothing: the sandbox function of perf.fleet_queue's workers.

``measure(payload)`` takes the payload a fleet worker hands ``benchmarks.candidate:measure_job``
(kernelindex/fleet/worker.py, ``FleetWorker._measure``) and returns at once what a real measurement
returns, ``{"records": [record]}``: one passed, schema-valid run record of the job's workload,
implementation and configuration, on a fixed CPU environment, with fixed samples. So a worker running
it costs what the queue, the sandbox's fresh process and the storing of one run cost, and nothing more.

Imported inside the sandbox's zygote (the repository root is on its path): the standard library and
benchmarks.records only, never torch, so the zygote starts in milliseconds and every job is forked
from it warm.
"""

from __future__ import annotations

from typing import Any

from benchmarks.records import build_record

# What the runs are "measured" on: a CPU by name, so the worker declares it in the catalogue
# (benchmarks.records.cpu_hardware_line reads details.device_type) before storing the first run.
ENVIRONMENT: dict[str, Any] = {
    "hardware": {"product_name": "perf no-op CPU"},
    "provider": None,
    "label": "perf.fleet_noop",
    "software": {"torch": None, "cuda": None, "driver": None, "python": None, "triton": None},
    "details": {"device_type": "cpu", "machine": "x86_64", "fingerprint": "perf-fleet-noop"},
}
PROTOCOL: dict[str, Any] = {
    "name": "perf-noop", "version": "1", "timer": "none: a no-op measurement of the queue's own overhead",
    "warmup": 0, "trials": 5, "statistic": "mean", "l2_flush": False,
}
SAMPLES_MS = [1.0, 1.01, 0.99, 1.02, 0.98]
# The payload keys this function reads; a worker that stops sending one is a bug to hear about.
REQUIRED = ("workload_slug", "source_sha256", "implementation", "bindings")


def measure(payload: dict[str, Any]) -> dict[str, Any]:
    """One passed record for the job in ``payload``; ValueError naming the key when one is missing."""
    if not isinstance(payload, dict):
        raise ValueError(f"payload: expected a JSON object, got {type(payload).__name__}")
    missing = [key for key in REQUIRED if key not in payload]
    if missing:
        raise ValueError(f"payload: missing key(s) {', '.join(missing)}")
    implementation = payload["implementation"]
    if not isinstance(implementation, dict) or not implementation.get("slug"):
        raise ValueError("payload: implementation must be an object with a slug")
    record = build_record(
        workload_slug=payload["workload_slug"], source_sha256=payload["source_sha256"],
        bindings=dict(payload["bindings"] or {}), dtype="fp32", implementation=implementation,
        environment=ENVIRONMENT, protocol=PROTOCOL, status="passed", samples_ms=list(SAMPLES_MS),
        correctness={"passed": True, "atol": 1e-4, "rtol": 1e-4, "max_abs_diff": 0.0},
    )
    return {"records": [record]}
