"""Runs and catalogue rows written out in the ingest formats (kernelindex.ingest.records), so an export
re-imports as it was."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from kernelindex.db.models import (
    Environment,
    Hardware,
    Implementation,
    Protocol,
    Run,
    Source,
    SourceSnapshot,
    SuiteSnapshot,
    Workload,
    WorkloadRevision,
)
from kernelindex.ingest.records import HARDWARE_FORMAT, RECORD_FORMAT, WORKLOAD_FORMAT
from kernelindex.rules.instants import as_utc

HARDWARE_FIELDS = (
    "sku", "short_name", "family", "vendor", "architecture", "priority", "reference_for_family", "memory_gb",
    "dram_bandwidth_gbps", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops", "l2_mb", "sm_count", "tdp_w",
    "datasheet_source", "datasheet_url",
)


def hardware_line(h: Hardware) -> dict[str, Any]:
    line = {"format": HARDWARE_FORMAT, **{f: getattr(h, f) for f in HARDWARE_FIELDS}}
    line["driver_product_names"] = list(h.driver_product_names or [])
    return line


def snapshot_entry(snapshot: SuiteSnapshot) -> dict[str, Any]:
    """A suite snapshot as a workload line carries it (kernelindex.ingest.catalog reads it back)."""
    return {
        "upstream_revision": snapshot.upstream_revision,
        "revision_date": snapshot.revision_date.isoformat() if snapshot.revision_date else None,
        "complete": snapshot.complete,
    }


def workload_line(w: Workload, rev: WorkloadRevision, snapshots: Sequence[SuiteSnapshot] = ()) -> dict[str, Any]:
    """One revision of a workload, with its identity digest and the upstream snapshots that hold it,
    so that a re-import decides the same current revision (revisions-v1) in any order."""
    return {
        "format": WORKLOAD_FORMAT, "suite": w.suite, "level": w.level, "problem_number": w.problem_number,
        "name": w.name, "slug": w.slug, "kind": w.kind, "description": w.description,
        "reference_source": rev.reference_source, "source_filename": rev.source_filename,
        "upstream_revision": rev.upstream_revision,
        "canonical": {"bindings": rev.canonical_bindings, "dtype": rev.canonical_dtype},
        "semantics": rev.semantics, "semantics_error": rev.semantics_error, "analysis": rev.analysis,
        "source_sha256": rev.source_sha256, "source_size": rev.source_size, "stand_in": rev.stand_in,
        "current": rev.id == w.current_revision_id,
        "snapshots": [snapshot_entry(s) for s in sorted(snapshots, key=lambda s: (s.revision_date or date.min, s.upstream_revision))],
    }


def run_record(
    run: Run, impl: Implementation, env: Environment, hw: Hardware, protocol: Protocol,
    snapshot: SourceSnapshot, source: Source, workload_slug: str, source_sha256: str,
) -> dict[str, Any]:
    def stat(name: str) -> float | None:
        value: float | None = getattr(run, f"{name}_ms")
        return value

    software = {
        k: v for k, v in (("torch", env.torch_version), ("cuda", env.cuda_version), ("driver", env.driver_version),
                          ("python", env.python_version), ("triton", env.triton_version)) if v is not None
    }
    record: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "workload": {"slug": workload_slug, "source_sha256": source_sha256},
        "configuration": {"bindings": run.bindings, "dtype": run.dtype},
        "implementation": {
            "slug": impl.slug, "title": impl.title, "framework": impl.framework, "language": impl.language,
            "runtime_id": impl.runtime_id, "role": impl.role, "licence": impl.licence,
            "source_availability": impl.source_availability, "source_url": impl.source_url,
            "install_recipe": impl.install_recipe, "compile_mode": impl.compile_mode,
        },
        "environment": {
            "hardware": {"sku": hw.sku} if hw.has_datasheet else {"product_name": hw.sku},
            "provider": env.provider, "label": env.label, "software": software, "details": env.details or {},
        },
        "protocol": {
            "name": protocol.name, "version": protocol.version, "timer": protocol.timer, "warmup": protocol.warmup,
            "trials": protocol.trials, "statistic": protocol.statistic, "l2_flush": protocol.l2_flush,
        },
        "status": run.status,
        "failure_reason": run.failure_reason,
        # Only the statistics stored: a null would read as "stated as null" (the content digest treats
        # both alike, but a re-import should look like the record it came from).
        "statistics": None if run.mean_ms is None else {
            k: v for k, v in (
                ("mean", run.mean_ms), ("std", stat("std")), ("min", stat("min")), ("max", stat("max")),
                ("median", stat("median")), ("p5", stat("p5")), ("p95", stat("p95")), ("num_trials", run.num_trials),
            ) if v is not None
        },
        "samples_ms": list(run.samples_ms) if run.samples_ms else None,
        "compile_time_ms": run.compile_time_ms,
        "correctness": run.correctness,
        "observed_at": as_utc(run.observed_at).isoformat().replace("+00:00", "Z"),
        # As the record stated it (an outside "measured" is stored reported with the claim kept), so a
        # re-import is unchanged; whatever it says, the importing route decides what is stored.
        "evidence": run.claimed_evidence or run.evidence,
        "source": {
            "name": source.name, "url": source.url, "licence": source.licence, "revision": snapshot.revision or None,
            "revision_date": snapshot.revision_date.isoformat() if snapshot.revision_date else None,
        },
    }
    return record
