"""Staging: a batch's runs, as typed rows, into a temporary table of the writer's connection by COPY.

A batch's runs travel to PostgreSQL by COPY (binary) into `ingest_stage`, and kernelindex.ingest.merge
merges them into `runs` with set-based statements. The natural keys an import has staged (to refuse a
run stated twice, however far apart the lines) live in `ingest_keys`, and lines whose very bytes may
be live runs already in `ingest_lines`: temporary tables of the one connection, so the writer's
memory does not grow with the input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.copy import copy_rows, driver_connection
from kernelindex.db.engine import decode_json
from kernelindex.db.scratch import SCRATCH, emptied
from kernelindex.ingest.digests import FIGURE_FIELDS, configuration_key_memo, content_digest, stated_content_digest
from kernelindex.ingest.resolve import DimensionIds, ResolvedRecord
from kernelindex.services.facts import NewRun, RunValues


class StagedRun(NamedTuple):
    """One run as staged: a row of `ingest_stage`, its fields in the table's column order (a
    NamedTuple, so the row goes to COPY as it is). Every field but `ord` and `place` goes into `runs`."""

    ord: int  # its position in the stage: the order of the batch's resolved records
    place: str  # where the input stated it ("line 12"), to name the first statement of a repeated key
    workload_id: int
    workload_revision_id: int
    bindings: str  # JSON text
    dtype: str
    configuration_key: str
    implementation_id: int
    environment_id: int
    protocol_id: int
    source_snapshot_id: int
    status: str
    failure_reason: str | None
    mean_ms: float | None
    std_ms: float | None
    min_ms: float | None
    max_ms: float | None
    median_ms: float | None
    p5_ms: float | None
    p95_ms: float | None
    num_trials: int | None
    samples_ms: list[float] | None
    compile_time_ms: float | None
    correctness: str | None  # JSON text
    observed_at: datetime
    evidence: str
    content_sha256: str
    line_sha: bytes | None
    claimed_evidence: str | None
    fleet_worker_id: int | None
    fleet_machine_id: str | None
    figure: float | None  # the headline figure: a measured record's is its mean latency (kernelindex.run/1)
    # What a source states (a source adapter's run, kernelindex.ingest.source_import, or a record in the
    # stated form): None for a measured record.
    figure_low: float | None = None
    figure_high: float | None = None
    low_quantile: float | None = None
    high_quantile: float | None = None
    source_speedup: float | None = None
    upstream_id: str = ""  # part of the natural key: '' for a run record (it names none)


# The SQL type of each StagedRun field, in its order.
_STAGE_TYPES = {
    "ord": "int", "place": "text", "workload_id": "int", "workload_revision_id": "int", "bindings": "jsonb", "dtype": "text",
    "configuration_key": "text", "implementation_id": "int", "environment_id": "int", "protocol_id": "int",
    "source_snapshot_id": "int", "status": "text", "failure_reason": "text", "mean_ms": "float8",
    "std_ms": "float8", "min_ms": "float8", "max_ms": "float8", "median_ms": "float8", "p5_ms": "float8",
    "p95_ms": "float8", "num_trials": "int", "samples_ms": "float8[]", "compile_time_ms": "float8",
    "correctness": "jsonb", "observed_at": "timestamptz", "evidence": "text", "content_sha256": "text",
    "line_sha": "bytea", "claimed_evidence": "text", "fleet_worker_id": "bigint", "fleet_machine_id": "text",
    "figure": "float8", "figure_low": "float8", "figure_high": "float8", "low_quantile": "float8",
    "high_quantile": "float8", "source_speedup": "float8", "upstream_id": "text",
}
assert tuple(_STAGE_TYPES) == StagedRun._fields, "every staged field has its SQL type, in order"
STAGE_NAMES = StagedRun._fields
RUN_NAMES = STAGE_NAMES[2:]  # every staged column but the order and the place in the input goes into runs

# A run's natural key, as its columns.
KEY_COLUMNS = (
    "workload_revision_id", "configuration_key", "implementation_id", "environment_id", "protocol_id", "source_snapshot_id",
    "upstream_id",
)
KEYS = ", ".join(KEY_COLUMNS)

_CREATE_STAGE = (
    f"CREATE TEMPORARY TABLE IF NOT EXISTS ingest_stage ({', '.join(f'{n} {t}' for n, t in _STAGE_TYPES.items())}) {SCRATCH}",
    # The keys staged so far (by this batch, or by every batch of an import: track_keys) and where: kept
    # across an import's commits, so not a scratch table.
    "CREATE TEMPORARY TABLE IF NOT EXISTS ingest_keys (workload_revision_id int, configuration_key text, "
    "implementation_id int, environment_id int, protocol_id int, source_snapshot_id int, upstream_id text, ord int, place text, "
    f"PRIMARY KEY ({KEYS}))",
    # Lines whose very bytes may be a live run already (skip_known): their digest and the revision they name.
    f"CREATE TEMPORARY TABLE IF NOT EXISTS ingest_lines (ord int, place text, line_sha bytea, workload_revision_id int) {SCRATCH}",
)


class KnownLineCandidate(NamedTuple):
    """A line whose bytes may be a live run already: a row of `ingest_lines`."""

    ord: int  # its index among the lines looked at
    place: str
    line_sha: bytes
    workload_revision_id: int


def _float(value: Any) -> float | None:
    """A JSON number as the double its column holds (an integer-valued 5 arrives as an int)."""
    return None if value is None else float(value)


# JSON text for a jsonb column (the database parses it: spacing, key order and number spelling do not count).
_JSON = msgspec.json.Encoder()


def _jsonb(value: Any) -> str:
    return _JSON.encode(value).decode("utf-8")


def in_stated_form(data: Mapping[str, Any]) -> bool:
    """A record in the stated form (a source's own figure, as the source adapters stage theirs): its row and
    content digest are _stated_run's; any other record's digest is content_digest of the record alone."""
    return "figure" in data


def staged_run(ord_: int, item: ResolvedRecord, ids: DimensionIds, fleet_worker: tuple[int, str] | None) -> StagedRun:
    """The row a resolved record stages as; built here and nowhere else."""
    rec = item.record
    data = rec.data
    if in_stated_form(data):
        return _stated_run(ord_, item, ids, fleet_worker)
    get = data.get
    config = data["configuration"]
    bindings = config["bindings"]
    stats = get("statistics") or {}
    stat = stats.get
    mean, std, low, high, median, p5, p95 = (
        stat("mean"), stat("std"), stat("min"), stat("max"), stat("median"), stat("p5"), stat("p95"),
    )
    correctness = get("correctness")
    samples = get("samples_ms")
    compile_time = get("compile_time_ms")
    # Where the route decides the stored evidence (trust-v2: rungs come from the fleet alone).
    # Only a registered fleet worker stores its record's evidence as is; from any other route
    # (submitRuns, ingest runs, seeds) the run is 'reported' and a "measured" is kept as the
    # source's claim. The content digest keeps hashing the record as stated, so the same
    # record ingested again is unchanged.
    evidence, claim = _evidence(data, fleet_worker)
    worker_id, machine_id = fleet_worker or (None, None)
    mean = None if mean is None else float(mean)
    return StagedRun(
        ord_, rec.where, item.workload.id, item.revision_id, _jsonb(bindings), config["dtype"],
        config.get("key") or configuration_key_memo(bindings, config["dtype"]), ids.implementation_id, ids.environment_id,
        ids.protocol_id, ids.source_snapshot_id, data["status"], get("failure_reason"), mean,
        None if std is None else float(std), None if low is None else float(low), None if high is None else float(high),
        None if median is None else float(median), None if p5 is None else float(p5), None if p95 is None else float(p95),
        stat("num_trials"), None if samples is None else [float(v) for v in samples],
        None if compile_time is None else float(compile_time), None if correctness is None else _jsonb(correctness),
        rec.observed_at, evidence, rec.content_sha or content_digest(data), rec.line_sha, claim, worker_id, machine_id, mean,
    )


def _evidence(data: dict[str, Any], fleet_worker: tuple[int, str] | None) -> tuple[str, str | None]:
    """The stored evidence and the claim kept (see staged_run)."""
    if fleet_worker is None and data["evidence"] != "reported":
        return "reported", data["evidence"]
    return data["evidence"], None


def _stated_run(ord_: int, item: ResolvedRecord, ids: DimensionIds, fleet_worker: tuple[int, str] | None) -> StagedRun:
    """The row of a record in the stated form, as the source adapters stage theirs
    (kernelindex.ingest.source_import): the figure with its bounds and quantiles, the ms columns of a
    latency figure only where it states that very statistic, the source's speedup and id, its
    correctness check, and the content digest an adapter gives the same run."""
    rec = item.record
    data = rec.data
    config = data["configuration"]
    protocol = data["protocol"]
    figure = data["figure"]
    stated = None if figure is None else {name: figure.get(name) for name in FIGURE_FIELDS}
    latency = figure is not None and (protocol.get("metric") or "latency") == "latency"
    statistic = protocol.get("statistic") or "mean"
    value = None if figure is None else _float(figure["value"])

    def stat(name: str) -> float | None:
        return _float(figure.get(name)) if latency else None

    mean = (value if statistic == "mean" else stat("mean")) if latency else None
    median = value if latency and statistic == "median" else None
    quantiles = (figure or {}).get("quantiles")
    correctness = data.get("source_correctness")
    evidence, claim = _evidence(data, fleet_worker)
    worker_id, machine_id = fleet_worker or (None, None)
    return StagedRun(
        ord_, rec.where, item.workload.id, item.revision_id, json.dumps(config["bindings"]), config["dtype"],
        config.get("key") or configuration_key_memo(config["bindings"], config["dtype"]), ids.implementation_id,
        ids.environment_id, ids.protocol_id, ids.source_snapshot_id, data["status"],
        data.get("failure_reason") if data["status"] != "passed" else None, mean, stat("std"), stat("min"), stat("max"),
        median, None, None, (figure or {}).get("samples") if latency else None, None, None,
        None if correctness is None else json.dumps(correctness), rec.observed_at, evidence,
        stated_content_digest(data["status"], data.get("failure_reason"), rec.observed_at, stated, correctness,
                              data.get("source_speedup"), data.get("upstream_id")),
        rec.line_sha, claim, worker_id, machine_id, value, _float((figure or {}).get("low")), _float((figure or {}).get("high")),
        None if quantiles is None else float(quantiles[0]), None if quantiles is None else float(quantiles[1]),
        _float(data.get("source_speedup")), data.get("upstream_id") or "",
    )


def new_run(run_id: int, row: StagedRun) -> NewRun:
    """A staged row the merge inserted as run `run_id`, as the cohort refresh judges it: its columns
    as reading the run back would give them (the JSON columns decoded as the engine decodes them, the
    samples as float8[] holds them), so its facts need not be read back
    (kernelindex.services.records.refresh_after_arrivals)."""
    return NewRun(RunValues(
        id=run_id, workload_id=row.workload_id, workload_revision_id=row.workload_revision_id,
        bindings=decode_json(row.bindings), dtype=row.dtype, configuration_key=row.configuration_key, status=row.status,
        failure_reason=row.failure_reason, mean_ms=row.mean_ms, std_ms=row.std_ms, min_ms=row.min_ms, max_ms=row.max_ms,
        median_ms=row.median_ms, p5_ms=row.p5_ms, p95_ms=row.p95_ms, num_trials=row.num_trials,
        samples_ms=None if row.samples_ms is None else [float(v) for v in row.samples_ms],
        compile_time_ms=row.compile_time_ms, correctness=None if row.correctness is None else decode_json(row.correctness),
        observed_at=row.observed_at, evidence=row.evidence, superseded_at=None, retracted_at=None,
        fleet_machine_id=row.fleet_machine_id, claimed_evidence=row.claimed_evidence, figure=row.figure,
        figure_low=row.figure_low, figure_high=row.figure_high, low_quantile=row.low_quantile,
        high_quantile=row.high_quantile, source_speedup=row.source_speedup, upstream_id=row.upstream_id,
    ), row.implementation_id, row.environment_id, row.protocol_id, row.source_snapshot_id)


class Stage:
    """The temporary tables of one writer, on one connection."""

    def __init__(self, *, track_keys: bool = False):
        """track_keys: the natural keys staged are kept across batches (an import's), so a key an
        earlier batch staged is refused as stated twice; without it, only within a batch."""
        self.track_keys = track_keys
        self._connection: Any = None

    async def runs(self, session: AsyncSession, rows: list[StagedRun]) -> None:
        """The batch's rows into a fresh stage, by COPY."""
        connection = await driver_connection(session)
        if self.track_keys and self._connection is not None and connection is not self._connection:
            # The keys staged by earlier batches are in the old connection's temporary table.
            raise RuntimeError("the import's database connection changed between batches: run it again (it is idempotent)")
        self._connection = connection
        await create_stage(session, emptied("ingest_stage") if self.track_keys else emptied("ingest_stage", "ingest_keys"))
        await copy_rows(session, "ingest_stage", STAGE_NAMES, rows)

    async def lines(self, session: AsyncSession, candidates: list[KnownLineCandidate]) -> None:
        """Lines that may be live runs already into a fresh `ingest_lines`, by COPY."""
        await create_stage(session, emptied("ingest_lines"))
        await copy_rows(session, "ingest_lines", KnownLineCandidate._fields, candidates)


async def create_stage(session: AsyncSession, *then: str) -> None:
    """The stage's tables, then the statements `then` (emptying some), in one round trip: a script
    of statements without parameters, sent on the driver connection in the session's transaction.
    Every time: a stage made in a transaction that rolled back is gone with it."""
    connection = await driver_connection(session)
    await connection.execute(";\n".join((*_CREATE_STAGE, *then)))
