"""Runs and catalogue rows written out in the ingest formats (kernelindex.ingest.records), so an export
re-imports as it was.

A run is written in one of the run-record format's two forms: the measured form (statistics: a mean
latency with its trials, or a failed run) for a run that came in as a record, the stated form (figure,
with its bounds, quantiles, the source's speedup and id) for a run a source adapter imported, or any
the measured form cannot state. Which: the form whose content digest is the one stored, so the run
read back is the very same run (unchanged when ingested again where it came from)."""

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
from kernelindex.ingest.digests import FIGURE_FIELDS, add_stated_extras, stated_content_digest
from kernelindex.ingest.records import HARDWARE_FORMAT, RECORD_FORMAT, WORKLOAD_FORMAT
from kernelindex.rules.identity import configuration_key
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
    canonical: dict[str, Any] = {"bindings": rev.canonical_bindings, "dtype": rev.canonical_dtype}
    if rev.canonical_configuration_key != configuration_key(rev.canonical_bindings or {}, rev.canonical_dtype):
        canonical["configuration_key"] = rev.canonical_configuration_key  # a source's case (source_import)
    line: dict[str, Any] = {
        "format": WORKLOAD_FORMAT, "suite": w.suite, "level": w.level, "problem_number": w.problem_number,
        "name": w.name, "slug": w.slug, "kind": w.kind, "description": w.description,
        "reference_source": rev.reference_source, "source_filename": rev.source_filename,
        "upstream_revision": rev.upstream_revision,
        "canonical": canonical,
        "semantics": rev.semantics, "semantics_error": rev.semantics_error, "analysis": rev.analysis,
        "source_sha256": rev.source_sha256, "source_size": rev.source_size, "stand_in": rev.stand_in,
        "current": rev.id == w.current_revision_id,
        "snapshots": [snapshot_entry(s) for s in sorted(snapshots, key=lambda s: (s.revision_date or date.min, s.upstream_revision))],
    }
    if w.suite_key is not None:
        # A workload its suite names by its own key, as the source states it.
        line.update(suite_key=w.suite_key, family=w.family, reference=w.reference, aliases=list(w.aliases or []))
    return line


def stated_figure(run: Run, protocol: Protocol) -> dict[str, Any] | None:
    """The figure of a run as its source stated it, from the stored columns: every one of FIGURE_FIELDS
    (kernelindex.ingest.stage._stated_run stores them back as they are)."""
    if run.figure is None:
        return None
    latency = protocol.metric == "latency"
    return {
        "value": run.figure, "low": run.figure_low, "high": run.figure_high,
        "quantiles": None if run.low_quantile is None or run.high_quantile is None else [run.low_quantile, run.high_quantile],
        "min": run.min_ms if latency else None, "max": run.max_ms if latency else None, "std": run.std_ms if latency else None,
        "mean": run.mean_ms if latency and protocol.statistic != "mean" else None,
        "samples": run.num_trials if latency else None,
    }


def measured_form_states(run: Run, protocol: Protocol) -> bool:
    """Whether the measured form states the run whole: a failed run, or a mean latency with its trials
    and nothing a source alone states."""
    if run.upstream_id or run.source_speedup is not None or run.low_quantile is not None or run.figure_low is not None:
        return False
    if run.status == "failed":
        return run.figure is None
    return (protocol.metric == "latency" and run.mean_ms is not None and run.num_trials is not None
            and run.figure == run.mean_ms)


def _stated_digest(run: Run, figure: dict[str, Any] | None) -> str:
    return stated_content_digest(run.status, run.failure_reason, run.observed_at, figure, run.correctness,
                                 run.source_speedup, run.upstream_id or None)


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
    # The upstream source's terms, where it states them (as `sources` holds them).
    record["source"].update({k: v for k, v in (("key", source.key), ("kind", source.kind), ("terms", source.terms),
                                               ("attribution", source.attribution), ("route", snapshot.route)) if v is not None})
    if snapshot.whole:
        record["source"]["whole"] = True
    if protocol.metric != "latency" or protocol.unit != "ms":
        record["protocol"].update(metric=protocol.metric, unit=protocol.unit)
    record["protocol"].update({k: v for k, v in (("harness", protocol.harness), ("comparator", protocol.comparator),
                                                 ("family", protocol.family), ("notes", protocol.notes)) if v is not None})
    record["implementation"].update({k: v for k, v in (
        ("authors", list(impl.authors or [])), ("project", impl.project), ("target_architectures", list(impl.target_architectures or [])),
        ("artifact_sha256", impl.artifact_sha256), ("artifact_bytes", impl.artifact_bytes), ("version", impl.version),
    ) if v not in (None, [])})
    figure = stated_figure(run, protocol)
    if run.content_sha256 == _stated_digest(run, figure) or not measured_form_states(run, protocol):
        _stated_form(record, run, env, figure)
    elif run.configuration_key != configuration_key(run.bindings, run.dtype):
        record["configuration"]["key"] = run.configuration_key
    return record


def _stated_form(record: dict[str, Any], run: Run, env: Environment, figure: dict[str, Any] | None) -> None:
    """The record in the stated form: the figure (only the fields stated), the source's speedup, id and
    correctness check, the stored configuration key, and the environment as the adapter keyed it."""
    for key in ("statistics", "samples_ms", "compile_time_ms", "correctness"):
        record.pop(key)
    record["figure"] = None if figure is None else {k: figure[k] for k in FIGURE_FIELDS if figure[k] is not None}
    add_stated_extras(record, run.source_speedup, run.upstream_id, run.correctness)
    if run.configuration_key != configuration_key(run.bindings, run.dtype):
        record["configuration"]["key"] = run.configuration_key
    record["environment"]["fingerprint"] = env.fingerprint
