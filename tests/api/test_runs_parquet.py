"""runs.parquet: the runs and columns of runs.csv, typed, read by pandas, polars and DuckDB, streamed a
row group at a time, refused in runs.csv's words.

Each reader's values are compared with runs.csv's text parsed by the csv module (an independent
reading of the same export), cell by cell."""

from __future__ import annotations

import asyncio
import copy
import csv
import io
import math
from datetime import datetime

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kernelindex.web import exports, runs_parquet
from tests.api.helpers import synthetic_records, write_records
from tests.api.test_export_vocabulary import PUBLISHED
from tests.api.test_number_rounding import write_noisy

TIMESTAMPS = {"observed_at"}
INTEGERS = {"run_id", "num_trials", "level", "problem_number"}
BOOLEANS = {"stale", "superseded", "retracted"}
FLOATS = {"mean_ms", "std_ms", "min_ms", "max_ms", "median_ms", "p5_ms", "p95_ms", "ci95_half_width_ms", "compile_time_ms",
          "figure", "figure_low", "figure_high", "low_quantile", "high_quantile", "source_speedup"}
# Free text: a digest, the bindings' JSON, a fingerprint, a failure's words. Every other column is a
# small vocabulary (an enum, a SKU, a source, a label): dictionary-encoded.
TEXT = {"workload_source_sha256", "bindings", "environment_fingerprint", "failure_reason"}
CATEGORIES = set(PUBLISHED) - TIMESTAMPS - INTEGERS - BOOLEANS - FLOATS - TEXT


async def _write_runs(db_url: str) -> None:
    """Runs with every float column stated (the noisy set), and a failed one (nulls where it has no figure)."""
    await write_noisy(db_url)
    failed = copy.deepcopy(synthetic_records(1, start=90)[0])
    failed.update(status="failed", statistics=None, failure_reason="out of memory, \"quoted\", and a comma")
    await write_records(db_url, [failed])


def _rows_of_csv(text: str) -> tuple[list[str], list[list[str]]]:
    header, *rows = list(csv.reader(io.StringIO(text)))
    return header, rows


def _same(cell: str, value: object) -> bool:
    """Whether a reader's value is what runs.csv wrote as `cell`."""
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return cell == ""
    if hasattr(value, "item") and not isinstance(value, datetime):  # numpy scalars
        value = value.item()  # type: ignore[union-attr]
    if isinstance(value, bool):
        return cell.lower() == str(value).lower()  # True in the published columns, true with GraphQL's names
    if isinstance(value, datetime):
        return datetime.fromisoformat(cell) == value
    if isinstance(value, int):
        return cell == str(value)
    if isinstance(value, float):
        return float(cell) == value
    return cell == value


def _pandas(body: bytes, path) -> tuple[list[str], list[list[object]]]:
    frame = pd.read_parquet(io.BytesIO(body))
    return list(frame.columns), [[None if v is pd.NaT else v for v in row] for row in frame.astype(object).itertuples(index=False)]


def _polars(body: bytes, path) -> tuple[list[str], list[list[object]]]:
    frame = pl.read_parquet(io.BytesIO(body))
    return frame.columns, [list(row) for row in frame.iter_rows()]


def _duckdb(body: bytes, path) -> tuple[list[str], list[list[object]]]:
    path.write_bytes(body)
    with duckdb.connect() as db:
        cursor = db.execute("SELECT * FROM read_parquet(?)", [str(path)])
        columns = [d[0] for d in cursor.description]
        return columns, [list(row) for row in cursor.fetchall()]


READERS = {"pandas": _pandas, "polars": _polars, "duckdb": _duckdb}


@pytest.mark.parametrize("names", ["csv", "graphql"])
async def test_pandas_polars_and_duckdb_read_what_runs_csv_holds(client, db_url, tmp_path, names):
    await _write_runs(db_url)
    query = f"names={names}&include_superseded=true&hardware=NVIDIA+H100"
    csv_response = await client.get(f"/exports/runs.csv?{query}")
    response = await client.get(f"/exports/runs.parquet?{query}")
    assert response.status_code == 200 and response.headers["content-type"] == "application/vnd.apache.parquet"
    assert response.headers["content-disposition"] == 'attachment; filename="runs.parquet"'
    header, rows = _rows_of_csv(csv_response.text)
    assert len(rows) >= 12 and any(r[header.index("failure_reason" if names == "csv" else "failureReason")] for r in rows)
    for reader, read in READERS.items():
        columns, values = read(response.content, tmp_path / f"{reader}.parquet")
        assert columns == header, reader
        assert len(values) == len(rows), reader
        for row, got in zip(rows, values, strict=True):
            different = [(column, cell, value) for column, cell, value in zip(header, row, got, strict=True)
                         if not _same(cell, value)]
            assert different == [], (reader, different)


async def test_the_columns_are_typed(client, db_url, tmp_path):
    await _write_runs(db_url)
    body = (await client.get("/exports/runs.parquet?include_superseded=true")).content
    schema = pq.read_schema(io.BytesIO(body))
    assert schema.names == list(PUBLISHED)
    dictionary = pa.dictionary(pa.int32(), pa.string())
    for name in PUBLISHED:
        want = (pa.timestamp("us", tz="UTC") if name in TIMESTAMPS else pa.int64() if name in INTEGERS
                else pa.bool_() if name in BOOLEANS else pa.float64() if name in FLOATS else pa.string() if name in TEXT
                else dictionary)
        assert schema.field(name).type == want, name
    # Every enum column is among the dictionary-encoded ones.
    assert {c.csv for c in exports.RUN_COLUMNS if c.enum is not None} <= CATEGORIES
    # ...and the readers see the types: categories, UTC times, doubles, booleans.
    frame = pd.read_parquet(io.BytesIO(body))
    assert str(frame["status"].dtype) == "category" and str(frame["observed_at"].dtype) == "datetime64[us, UTC]"
    assert frame["mean_ms"].dtype == "float64" and frame["stale"].dtype == "bool" and frame["run_id"].dtype == "int64"
    polars = pl.read_parquet(io.BytesIO(body)).schema
    assert polars["evidence"] == pl.Categorical and polars["observed_at"] == pl.Datetime("us", "UTC")
    (tmp_path / "runs.parquet").write_bytes(body)
    with duckdb.connect() as db:
        described = db.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(tmp_path / "runs.parquet")]).fetchall()
    types = {name: type_ for name, type_, *_ in described}
    assert types["observed_at"] == "TIMESTAMP WITH TIME ZONE" and types["mean_ms"] == "DOUBLE"
    assert types["retracted"] == "BOOLEAN" and types["num_trials"] == "BIGINT"


async def test_no_runs_is_a_file_with_the_columns_and_no_rows(client):
    response = await client.get("/exports/runs.parquet?level=1")
    assert response.status_code == 200
    table = pq.read_table(io.BytesIO(response.content))
    assert table.num_rows == 0 and table.schema.names == list(PUBLISHED)


@pytest.mark.parametrize("query", [
    "evidence=rumoured", "status=ok", "colour=blue", "level=three", "stale=maybe", "names=snake", "observed_since=yesterday",
    "hardware=H100x", "workload=kernelbench-l3-p9-resnet19", "implementation=torch_eagre",
])
async def test_a_bad_request_gets_the_answer_runs_csv_gets(client, query):
    parquet = await client.get(f"/exports/runs.parquet?{query}")
    csv_answer = await client.get(f"/exports/runs.csv?{query}")
    assert parquet.status_code == csv_answer.status_code == 400
    assert parquet.json() == csv_answer.json() and parquet.json()["error"]


async def test_row_groups_go_out_as_the_rows_come_in(app, db_url, monkeypatch):
    """Bounded memory: each row group is sent before the rows after it are read, so what the server
    holds is one row group, whatever the export's size. (Small groups here; ROW_GROUP_ROWS in service.)"""
    await write_records(db_url, synthetic_records(30))
    monkeypatch.setattr(runs_parquet, "BATCH", 2)
    monkeypatch.setattr(runs_parquet, "ARROW_ROWS", 4)
    monkeypatch.setattr(runs_parquet, "ROW_GROUP_ROWS", 8)
    read = 0
    rows = exports.RunRows.rows

    async def counted(self):
        nonlocal read
        async for row in rows(self):
            read += 1
            yield row

    monkeypatch.setattr(exports.RunRows, "rows", counted)
    sent: list[tuple[int, bytes]] = []  # (rows read by then, body)

    async def send(message):
        if message["type"] == "http.response.body" and message.get("body"):
            sent.append((read, message["body"]))

    async def receive():  # a client that stays: Starlette listens for its disconnect while it streams
        await asyncio.Event().wait()

    path = "/exports/runs.parquet"
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "headers": [(b"host", b"t")],
             "client": ("127.0.0.1", 1), "server": ("t", 80), "state": {}, "app": app}
    await app(scope, receive, send)
    total = read
    file = pq.ParquetFile(io.BytesIO(b"".join(body for _, body in sent)))
    assert file.metadata.num_rows == total >= 38
    groups = [file.metadata.row_group(i).num_rows for i in range(file.metadata.num_row_groups)]
    assert groups[:-1] == [8] * (len(groups) - 1) and 0 < groups[-1] <= 8
    # A body per row group (the footer with the last), each sent with at most a row group more read.
    assert len(sent) == len(groups)
    assert [at for at, _ in sent[:-1]] == [8 * (i + 1) for i in range(len(groups) - 1)]
