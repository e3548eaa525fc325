"""Runs and records as DataFrames, pandas or polars, with a declared type for every column.

Each column is declared once with its kind, so a column of nulls is still Int64, a column of times is
UTC datetimes on either library, and an empty result has the same columns and types as a full one.
The run columns are named as runs.csv publishes them (run_id, mean_ms, ci95_half_width_ms, …), so a
frame and the export read the same; enum values are the GraphQL names (PASSED, MEASURED).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, Literal, TypeVar

from kernelindex_client.generated.fragments import RecordTableRow, RunRow, WorkloadKey

Kind = Literal["int", "float", "str", "bool", "datetime"]
Backend = Literal["pandas", "polars"]
R = TypeVar("R")

# Nullable integers and booleans (a missing level stays missing, not 0.0), NaN for a missing float.
PANDAS_DTYPES: dict[Kind, str] = {"int": "Int64", "float": "float64", "str": "string", "bool": "boolean",
                                  "datetime": "datetime64[us, UTC]"}


@dataclass(frozen=True)
class Column(Generic[R]):
    name: str
    kind: Kind
    value: Callable[[R], Any]


def _name(value: Enum | None) -> str | None:
    return None if value is None else str(value.value)


def _bindings(run: RunRow) -> str:
    # As runs.csv writes them: a JSON object of axis to value, keys sorted.
    return json.dumps({b.axis: b.value for b in run.configuration.bindings}, sort_keys=True)


RUN_COLUMNS: tuple[Column[RunRow], ...] = (
    Column("run_id", "int", lambda r: r.database_id),
    Column("workload", "str", lambda r: r.workload_slug),
    Column("suite", "str", lambda r: r.suite),
    Column("level", "int", lambda r: r.level),
    Column("problem_number", "int", lambda r: r.problem_number),
    Column("workload_name", "str", lambda r: r.workload_name),
    Column("bindings", "str", _bindings),
    Column("dtype", "str", lambda r: r.configuration.dtype),
    Column("implementation", "str", lambda r: r.implementation.slug),
    Column("licence", "str", lambda r: r.implementation.licence),
    Column("hardware_sku", "str", lambda r: r.environment.hardware.sku),
    Column("hardware_family", "str", lambda r: r.environment.hardware.family),
    Column("provider", "str", lambda r: r.environment.provider),
    Column("environment_id", "int", lambda r: r.environment.database_id),
    Column("environment_fingerprint", "str", lambda r: r.environment.fingerprint),
    Column("protocol", "str", lambda r: r.protocol.name),
    Column("protocol_version", "str", lambda r: r.protocol.version),
    Column("statistic", "str", lambda r: r.protocol.statistic),
    Column("status", "str", lambda r: _name(r.status)),
    Column("failure_reason", "str", lambda r: r.failure_reason),
    Column("metric", "str", lambda r: _name(r.metric)),
    Column("figure", "float", lambda r: r.figure),
    Column("figure_unit", "str", lambda r: _name(r.figure_unit)),
    Column("mean_ms", "float", lambda r: r.mean_ms),
    Column("std_ms", "float", lambda r: r.std_ms),
    Column("min_ms", "float", lambda r: r.min_ms),
    Column("max_ms", "float", lambda r: r.max_ms),
    Column("median_ms", "float", lambda r: r.median_ms),
    Column("p5_ms", "float", lambda r: r.p_5_ms),
    Column("p95_ms", "float", lambda r: r.p_95_ms),
    Column("num_trials", "int", lambda r: r.num_trials),
    Column("ci95_half_width_ms", "float", lambda r: r.ci_half_width_ms),
    Column("compile_time_ms", "float", lambda r: r.compile_time_ms),
    Column("observed_at", "datetime", lambda r: r.observed_at),
    Column("evidence", "str", lambda r: _name(r.evidence)),
    Column("trust_level", "str", lambda r: _name(r.trust_level)),
    Column("trust_label", "str", lambda r: r.trust_label),
    Column("source", "str", lambda r: r.source.name),
    Column("source_revision", "str", lambda r: r.source.revision),
    Column("stale", "bool", lambda r: r.stale),
    Column("superseded", "bool", lambda r: r.superseded),
    Column("retracted", "bool", lambda r: r.retracted),
)

# One row per record: a workload's fastest eligible run in one environment.
RecordOf = tuple[WorkloadKey, RecordTableRow]
RECORD_COLUMNS: tuple[Column[RecordOf], ...] = (
    Column("workload", "str", lambda wr: wr[0].slug),
    Column("suite", "str", lambda wr: wr[0].suite),
    Column("level", "int", lambda wr: wr[0].level),
    Column("workload_name", "str", lambda wr: wr[0].name),
    Column("label", "str", lambda wr: wr[1].label),
    Column("hardware_sku", "str", lambda wr: wr[1].environment.hardware.sku),
    Column("hardware_family", "str", lambda wr: wr[1].environment.hardware.family),
    Column("provider", "str", lambda wr: wr[1].environment.provider),
    Column("environment_id", "int", lambda wr: wr[1].environment.database_id),
    Column("implementation", "str", lambda wr: wr[1].implementation.slug),
    Column("metric", "str", lambda wr: _name(wr[1].metric)),
    Column("figure", "float", lambda wr: wr[1].figure),
    Column("figure_unit", "str", lambda wr: _name(wr[1].figure_unit)),
    Column("latency_ms", "float", lambda wr: wr[1].latency_ms),
    Column("run_count", "int", lambda wr: wr[1].run_count),
    Column("run_id", "int", lambda wr: wr[1].run.database_id),
    Column("num_trials", "int", lambda wr: wr[1].run.num_trials),
    Column("ci95_half_width_ms", "float", lambda wr: wr[1].run.ci_half_width_ms),
    Column("evidence", "str", lambda wr: _name(wr[1].run.evidence)),
    Column("trust_level", "str", lambda wr: _name(wr[1].run.trust_level)),
    Column("observed_at", "datetime", lambda wr: wr[1].run.observed_at),
)


def to_frame(rows: Iterable[R], columns: tuple[Column[R], ...], backend: Backend = "pandas") -> Any:
    """A DataFrame of `rows`, one column per entry of `columns`, each of its declared type."""
    rows = list(rows)
    values = {c.name: [c.value(r) for r in rows] for c in columns}
    if backend == "pandas":
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("pandas is not installed: pip install './clients/python[pandas]'") from None
        return pd.DataFrame({c.name: pd.Series(values[c.name], dtype=PANDAS_DTYPES[c.kind]) for c in columns})
    if backend == "polars":
        try:
            import polars as pl
        except ImportError:
            raise ImportError("polars is not installed: pip install './clients/python[polars]'") from None
        types: dict[Kind, Any] = {"int": pl.Int64, "float": pl.Float64, "str": pl.String, "bool": pl.Boolean,
                 "datetime": pl.Datetime("us", "UTC")}
        return pl.DataFrame([pl.Series(c.name, values[c.name], dtype=types[c.kind]) for c in columns])
    raise ValueError(f"backend must be 'pandas' or 'polars', got {backend!r}")


def runs_frame(runs: Iterable[RunRow], backend: Backend = "pandas") -> Any:
    """Runs (the RunTable operation's nodes) as a DataFrame: RUN_COLUMNS."""
    return to_frame(runs, RUN_COLUMNS, backend)


def records_frame(records: Iterable[RecordOf], backend: Backend = "pandas") -> Any:
    """(workload, record) pairs as a DataFrame: RECORD_COLUMNS."""
    return to_frame(records, RECORD_COLUMNS, backend)
