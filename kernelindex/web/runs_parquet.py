"""GET /exports/runs.parquet: the runs and columns of runs.csv (exports.RunRows, the one definition
of both, with its filters, `names` and errors), typed, as Parquet written while the rows stream.

Each column has the Arrow type of its Kind: timestamp[us, UTC], float64, int64, bool, text, and
the small vocabularies (the enums, SKUs, sources, labels) dictionary<int32, string>, so pandas reads
them as categories and polars as Categorical. A column without a value is null, where runs.csv
writes nothing.

Memory stays bounded whatever the export's size: rows become Arrow arrays ARROW_ROWS at a time, a
row group is written once ROW_GROUP_ROWS of them are in, and its bytes are sent before the next one
is read; the database hands rows over a server-side cursor (exports._statement). The route runs
under the exports' bounds (exports.BoundedExport: its slot, its pool, its total and idle limits).

pyarrow is imported by the first Parquet export, not with the server: it costs a process about
50 MB of resident memory (perf.parquet_export: 93 MB started, 144 MB after an export of no runs),
which a server that never serves Parquet need not carry.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from kernelindex.web.exports import BATCH, RUN_COLUMNS, Kind, RunRows, in_turns, run_rows
from kernelindex.web.state import server_state

if TYPE_CHECKING:
    import pyarrow as pa

# The media type IANA registered for Parquet.
MEDIA_TYPE = "application/vnd.apache.parquet"

# Rows per row group: large enough that a reader's scan is efficient and each column's dictionary and
# statistics cover many rows, small enough that the row group held before it is written stays in the
# tens of megabytes (Arrow's pool peaked at 24 MB writing 50,000 rows of 48 columns).
ROW_GROUP_ROWS = 50_000
# Rows turned into Arrow arrays at a time: a row as Python objects (48 of them) takes several times the
# memory of the same row in Arrow, so they are converted often; not every BATCH, since each conversion
# costs a call per column.
ARROW_ROWS = 1_000


def arrow_schema(names: Sequence[str]) -> pa.Schema:
    """The file's schema: RUN_COLUMNS named `names`, each typed by its Kind."""
    import pyarrow as pa

    types = {
        Kind.TEXT: pa.string(),
        Kind.CATEGORY: pa.dictionary(pa.int32(), pa.string()),
        Kind.INTEGER: pa.int64(),
        Kind.FLOAT: pa.float64(),
        Kind.BOOLEAN: pa.bool_(),
        Kind.TIMESTAMP: pa.timestamp("us", tz="UTC"),
    }
    return pa.schema([pa.field(name, types[column.kind]) for name, column in zip(names, RUN_COLUMNS, strict=True)])


class _Sink(io.RawIOBase):
    """Where the Parquet writer writes: the bytes since the last take(), and the position in the whole
    file (the footer records each column chunk's offset, so tell() must count what was taken too)."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        part = bytes(data)
        self._parts.append(part)
        self._position += len(part)
        return len(part)

    def tell(self) -> int:
        return self._position

    def take(self) -> bytes:
        taken = b"".join(self._parts)
        self._parts.clear()
        return taken


def _record_batch(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    columns = list(zip(*rows, strict=True))
    return pa.RecordBatch.from_arrays([pa.array(values, type=field.type) for values, field in zip(columns, schema, strict=True)],
                                      schema=schema)


async def parquet_chunks(runs: RunRows) -> AsyncIterator[bytes]:
    """The Parquet file of `runs`, a row group per chunk (the last one ends with the footer). Between
    row groups it yields an empty chunk every BATCH rows: nothing to send, the export turn for others."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(runs.header)
    sink = _Sink()
    writer = pq.ParquetWriter(pa.PythonFile(sink, mode="w"), schema)
    rows: list[tuple[Any, ...]] = []
    batches: list[pa.RecordBatch] = []
    held = 0  # rows in `batches`

    async def write_row_group() -> bytes:
        nonlocal batches, held
        # One dictionary per column for the whole row group: batches with dictionaries of their own
        # would make the writer give up dictionary encoding for the rest of the column chunk.
        table = pa.Table.from_batches(batches, schema).unify_dictionaries()
        batches, held = [], 0
        # Encoding and compressing tens of thousands of rows is pyarrow's work without the GIL: done
        # in a thread, the event loop answers everyone else meanwhile. Never closed on the way out of a
        # cancelled export: the thread may still be writing; the writer goes when it is done.
        await asyncio.to_thread(writer.write_table, table, row_group_size=table.num_rows)
        return sink.take()

    async for row in runs.rows():
        rows.append(row)
        if len(rows) % BATCH:
            continue
        if len(rows) >= ARROW_ROWS:
            batches.append(_record_batch(rows, schema))
            held += len(rows)
            rows = []
            if held >= ROW_GROUP_ROWS:
                yield await write_row_group()
                continue
        yield b""
    if rows:
        batches.append(_record_batch(rows, schema))
    last = await write_row_group() if batches else b""
    writer.close()
    yield last + sink.take()  # the footer


async def runs_parquet(request: Request) -> Response:
    """Not kept in the response cache, which holds text: a Parquet file is what a bulk pull asks for,
    seldom twice between writes."""
    runs = await run_rows(request)
    if isinstance(runs, Response):
        return runs
    return StreamingResponse(in_turns(server_state(request).export_slots.turn, parquet_chunks(runs)), media_type=MEDIA_TYPE,
                             headers={"content-disposition": 'attachment; filename="runs.parquet"'})
