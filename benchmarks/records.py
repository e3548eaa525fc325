"""Run records in KernelIndex's ingest format (schemas/run-record.schema.json), as JSON Lines."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from .stats import summarize

FORMAT = "kernelindex.run/1"
HARDWARE_FORMAT = "kernelindex.hardware/1"
RUNNER_NAME = "KernelIndex runner"
# Bump when a change to the runner could move the numbers it reports.
RUNNER_REVISION = "benchmarks/1"


def utc_now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def build_record(
    *,
    workload_slug: str,
    source_sha256: str | None,
    bindings: Mapping[str, int],
    dtype: str,
    implementation: Mapping[str, Any],
    environment: Mapping[str, Any],
    protocol: Mapping[str, Any],
    status: str,
    failure_reason: str | None = None,
    samples_ms: list[float] | None = None,
    compile_time_ms: float | None = None,
    correctness: Mapping[str, Any] | None = None,
    observed_at: str | None = None,
) -> dict[str, Any]:
    """One run record. A passed run needs samples (its statistics are computed from them);
    a failed run needs a reason and carries neither statistics nor samples."""
    if status not in ("passed", "failed"):
        raise ValueError(f"status must be passed or failed, not {status!r}")
    if status == "failed":
        if not failure_reason:
            raise ValueError("a failed run needs a failure_reason")
        statistics = None
        samples_ms = None
    else:
        if not samples_ms:
            raise ValueError("a passed run needs samples")
        statistics = summarize(samples_ms)
        failure_reason = None

    workload: dict[str, Any] = {"slug": workload_slug}
    if source_sha256:
        workload["source_sha256"] = source_sha256

    return {
        "format": FORMAT,
        "workload": workload,
        "configuration": {"bindings": dict(bindings), "dtype": dtype},
        "implementation": dict(implementation),
        "environment": dict(environment),
        "protocol": dict(protocol),
        "status": status,
        "failure_reason": failure_reason,
        "statistics": statistics,
        "samples_ms": list(samples_ms) if samples_ms else None,
        "compile_time_ms": compile_time_ms,
        "correctness": dict(correctness) if correctness is not None else None,
        "observed_at": observed_at or utc_now_iso(),
        "evidence": "measured",
        "source": {"name": RUNNER_NAME, "url": None, "licence": None, "revision": RUNNER_REVISION},
    }


def dumps_record(record: Mapping[str, Any]) -> str:
    # NaN and Infinity are not JSON; refusing them here beats an ingest that cannot parse the line.
    return json.dumps(record, allow_nan=False, ensure_ascii=False)


class JsonlWriter:
    """Appends records one line at a time, flushed, so a sweep cut short keeps what it measured."""

    def __init__(self, target: str | Path | IO[str], append: bool = False):
        if isinstance(target, (str, Path)):
            self._file: IO[str] = open(target, "a" if append else "w", encoding="utf-8")
            self._owns_file = True
        else:
            self._file = target
            self._owns_file = False
        self.count = 0

    def write(self, record: Mapping[str, Any]) -> None:
        self._file.write(dumps_record(record) + "\n")
        self._file.flush()
        self.count += 1

    def close(self) -> None:
        if self._owns_file:
            self._file.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def write_jsonl(records: Iterable[Mapping[str, Any]], target: str | Path | IO[str]) -> int:
    """Write records as JSON Lines; returns how many were written."""
    with JsonlWriter(target) as writer:
        for record in records:
            writer.write(record)
        return writer.count


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def cpu_hardware_line(environment: Mapping[str, Any]) -> dict[str, Any] | None:
    """The catalogue line for the CPU a run was measured on, or None for a GPU run.

    The index takes new hardware only from catalogue lines, and its catalogue lists GPUs: a run on
    this machine's CPU names the CPU by its model string, so the runner declares it, with no
    datasheet figures (it has none to give)."""
    details = environment.get("details") or {}
    if details.get("device_type") != "cpu":
        return None
    name = " ".join(str(environment["hardware"]["product_name"]).split())
    vendor = next((v for v in ("Intel", "AMD", "Apple", "Ampere", "ARM") if v.lower() in name.lower()), "unknown vendor")
    return {
        "format": HARDWARE_FORMAT,
        "sku": name,
        "short_name": name,
        "family": "CPU",
        "vendor": vendor,
        "architecture": details.get("machine") or None,
        "driver_product_names": [name],
    }
