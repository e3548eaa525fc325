"""KernelIndex: the generated GraphQL client of one API, with the helpers a researcher needs on top:
every run or record page after page, as a DataFrame, and the export URLs for the same filters."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, TypedDict, Unpack, cast

import httpx

from kernelindex_client.exports import Export, export_url
from kernelindex_client.frames import Backend, RecordOf, records_frame, runs_frame
from kernelindex_client.generated.base_client import HttpClient
from kernelindex_client.generated.client import KernelIndexGraphQL
from kernelindex_client.generated.enums import Evidence, RunOrder, RunStatus
from kernelindex_client.generated.fragments import RunRow
from kernelindex_client.paging import nodes, pages

# The server's page size (and the most a page may ask for).
PAGE_SIZE = 100


class RunFilters(TypedDict, total=False):
    """The filters of Query.runs and of the run exports, by the same names."""

    workload: str
    implementation: str
    hardware: str
    level: int
    evidence: Evidence
    licence: str
    status: RunStatus
    stale: bool
    observed_since: datetime
    eligible_only: bool
    include_superseded: bool


class KernelIndex:
    """The API at `api` (its base URL, e.g. http://127.0.0.1:8000). `graphql` is the generated client:
    one typed method per saved operation (examples/operations)."""

    def __init__(self, api: str = "http://127.0.0.1:8000", *, headers: dict[str, str] | None = None,
                 timeout: float = 60.0, http_client: httpx.Client | None = None):
        self.api = api.rstrip("/")
        self.http = http_client if http_client is not None else httpx.Client(headers=headers, timeout=timeout)
        # One httpx client for the queries and the downloads, with a timeout an export can finish in (the
        # generated client's own would have httpx's 5 s). The cast: the generator's HttpClient protocol
        # declares post()'s json positional, httpx keyword-only, so mypy sees no match where there is one.
        self.graphql = KernelIndexGraphQL(url=f"{self.api}/graphql", headers=headers,
                                          http_client=cast(HttpClient, self.http))

    def __enter__(self) -> KernelIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def runs(self, *, page_size: int = PAGE_SIZE, order_by: RunOrder = RunOrder.NEWEST,
             **filters: Unpack[RunFilters]) -> Iterator[RunRow]:
        """Every run matching `filters`, page after page (superseded ones only with include_superseded)."""
        return nodes(lambda after: self.graphql.run_table(first=page_size, after=after, order_by=order_by, **filters).runs)

    def runs_frame(self, *, backend: Backend = "pandas", page_size: int = PAGE_SIZE, order_by: RunOrder = RunOrder.NEWEST,
                   **filters: Unpack[RunFilters]) -> Any:
        """`runs(...)` as a DataFrame (frames.RUN_COLUMNS: runs.csv's names, each column typed)."""
        return runs_frame(self.runs(page_size=page_size, order_by=order_by, **filters), backend)

    def records(self, *, hardware: str | None = None, workload: str | None = None,
                page_size: int = PAGE_SIZE) -> Iterator[RecordOf]:
        """The current records, as (workload, record) pairs: those on a GPU (a SKU, short name or family;
        every page), or those of one workload. Exactly one of `hardware` and `workload`."""
        if (hardware is None) == (workload is None):
            raise ValueError("records() takes exactly one of hardware= and workload=")
        if workload is not None:
            found = self.graphql.workload_record_table(slug=workload).workload
            if found is None:
                raise LookupError(f"no workload {workload!r}")
            return iter([(found, record) for record in found.records])
        assert hardware is not None
        return ((node.workload, record)
                for page in pages(lambda after: self.graphql.hardware_record_table(hardware=hardware, first=page_size,
                                                                                   after=after).records)
                for node in page.nodes for record in node.records)

    def records_frame(self, *, hardware: str | None = None, workload: str | None = None, backend: Backend = "pandas",
                      page_size: int = PAGE_SIZE) -> Any:
        """`records(...)` as a DataFrame (frames.RECORD_COLUMNS, each column typed)."""
        return records_frame(self.records(hardware=hardware, workload=workload, page_size=page_size), backend)

    def export_url(self, export: Export = "runs.csv", **filters: Any) -> str:
        """The URL of an export of this API (runs.csv, runs.parquet, catalog.jsonl) with these filters
        (the run filters, and `names` or `revisions`); an unknown one is a ValueError."""
        return export_url(self.api, export, **filters)

    def download(self, export: Export = "runs.csv", **filters: Any) -> bytes:
        """The body of an export; a refused one (HTTP 4xx/5xx) raises httpx.HTTPStatusError naming the
        server's reason."""
        response = self.http.get(self.export_url(export, **filters))
        if response.is_error:
            reason = response.text[:500]
            raise httpx.HTTPStatusError(f"{response.status_code} from {response.url}: {reason}",
                                        request=response.request, response=response)
        return response.content
