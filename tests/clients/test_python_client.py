"""The typed Python client (clients/python): its generated code is what ariadne-codegen makes of the schema
and the saved operations today (a stale client fails here), and it pages, tabulates and exports against a
live server.

ariadne-codegen runs from its own virtual environment (.venv-codegen, made by `make client-tool`: it needs
graphql-core < 3.3 and the server needs 3.3), or KERNELINDEX_TEST_ARIADNE_CODEGEN; without it the
staleness tests fail saying what to run, never skip.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import shutil
import subprocess
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

from kernelindex_client import (
    RUN_COLUMNS,
    RUN_FILTERS,
    Evidence,
    KernelIndex,
    RunStatus,
    export_url,
    pages,
)

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"
# The build step that picks the client's operations (clients/python/select_operations.py), a script, not a module.
_spec = importlib.util.spec_from_file_location("select_operations", CLIENT / "select_operations.py")
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
select_operations = _module.select_operations
GENERATED = CLIENT / "kernelindex_client" / "generated"
INSTALL = "run `make client-tool` (a virtual environment .venv-codegen with clients/python/codegen-requirements.txt)"


def codegen() -> str:
    tool = os.environ.get("KERNELINDEX_TEST_ARIADNE_CODEGEN") or str(ROOT / ".venv-codegen" / "bin" / "ariadne-codegen")
    if not Path(tool).is_file():
        pytest.fail(f"ariadne-codegen not found at {tool}: {INSTALL}")
    return tool


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string, for these ASCII values
    raise TypeError(value)


def generate(into: Path, queries: Path | None = None) -> Path:
    """Run ariadne-codegen with clients/python's configuration, its paths made absolute and its output
    sent to `into` (and its operations read from `queries` when given); returns the generated package."""
    config = tomllib.loads((CLIENT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ariadne-codegen"]
    selected = into / "operations"
    select_operations(queries or ROOT / "examples" / "operations", selected)  # as `make client` does
    config = {**config, "schema_path": str((CLIENT / config["schema_path"]).resolve()),
              "queries_path": str(selected), "target_package_path": str(into)}
    scalars = config.pop("scalars")
    lines = ["[tool.ariadne-codegen]", *(f"{k} = {_toml(v)}" for k, v in config.items())]
    for name, scalar in scalars.items():
        lines += [f"[tool.ariadne-codegen.scalars.{name}]", *(f"{k} = {_toml(v)}" for k, v in scalar.items())]
    path = into / "codegen.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run([codegen(), "client", "--config", str(path)], capture_output=True, text=True, timeout=120, cwd=into)
    assert done.returncode == 0, done.stdout + done.stderr
    return into / config["target_package_name"]


def differences(fresh: Path, committed: Path) -> list[str]:
    """The files that differ between two generated packages (missing on either side, or other bytes)."""
    names = {p.name for p in fresh.glob("*.py")} | {p.name for p in committed.glob("*.py")}
    return sorted(n for n in names if not (fresh / n).is_file() or not (committed / n).is_file()
                  or (fresh / n).read_bytes() != (committed / n).read_bytes())


def test_the_committed_client_is_what_ariadne_codegen_generates(tmp_path):
    stale = differences(generate(tmp_path), GENERATED)
    assert stale == [], f"clients/python/kernelindex_client/generated is stale ({', '.join(stale)}): run `make client`"


def test_a_changed_operation_makes_the_client_stale(tmp_path):
    operations = tmp_path / "operations"
    shutil.copytree(ROOT / "examples" / "operations", operations)
    table = operations / "research-tables.graphql"
    table.write_text(table.read_text(encoding="utf-8").replace("  retracted\n}", "  retracted\n  upstreamId\n}"),
                     encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    assert "fragments.py" in differences(generate(out, operations), GENERATED)


def test_export_urls_check_their_filters():
    api = "http://127.0.0.1:8000/"
    assert export_url(api) == "http://127.0.0.1:8000/exports/runs.csv"
    url = export_url(api, "runs.parquet", workload="kernelbench-l3-p9-resnet18", status=RunStatus.PASSED, stale=False,
                     level=3, observed_since=datetime(2026, 1, 2, tzinfo=UTC), names="graphql", hardware=None)
    assert url == ("http://127.0.0.1:8000/exports/runs.parquet?workload=kernelbench-l3-p9-resnet18&status=PASSED"
                   "&stale=false&level=3&observed_since=2026-01-02T00%3A00%3A00%2B00%3A00&names=graphql")
    assert export_url(api, "catalog.jsonl", revisions="all", eligibleOnly=True).endswith("?revisions=all&eligibleOnly=true")
    for export, filters, words in [
        ("runs.csv", {"worklaod": "x"}, "takes no filter 'worklaod'"),
        ("runs.csv", {"revisions": "all"}, "takes no filter 'revisions'"),  # catalog.jsonl's, not runs.csv's
        ("runs.csv", {"names": "snake"}, "names must be one of csv, graphql"),
        ("runs.xlsx", {}, "unknown export 'runs.xlsx'"),
        ("runs.csv", {"observed_since": datetime(2026, 1, 2)}, "needs a time zone"),
    ]:
        with pytest.raises(ValueError, match=words):
            export_url(api, export, **filters)  # type: ignore[arg-type]


def _csv_rows(body: bytes) -> dict[int, dict[str, str]]:
    return {int(r["run_id"]): r for r in csv.DictReader(io.StringIO(body.decode()))}


def test_the_client_pages_tabulates_and_exports_against_a_live_server(live_server):
    with KernelIndex(live_server) as index:
        # Two runs a page, so the seed's runs take several pages.
        assert len(list(pages(lambda after: index.graphql.run_table(first=2, after=after).runs))) > 2
        runs = list(index.runs(page_size=2))
        exported = _csv_rows(index.download("runs.csv"))
        assert sorted(r.database_id for r in runs) == sorted(exported)
        assert len(runs) > 4

        frame = index.runs_frame(page_size=2)
        assert list(frame.columns) == [c.name for c in RUN_COLUMNS]
        dtypes = {name: str(dtype) for name, dtype in frame.dtypes.items()}
        assert {k: dtypes[k] for k in ("run_id", "level", "mean_ms", "observed_at", "status", "stale", "bindings")} == {
            "run_id": "Int64", "level": "Int64", "mean_ms": "float64", "observed_at": "datetime64[us, UTC]",
            "status": "string", "stale": "boolean", "bindings": "string"}
        # The same figures as the export, column for column where both publish one.
        for row in frame.itertuples(index=False):
            published = exported[row.run_id]
            assert row.workload == published["workload"] and row.hardware_sku == published["hardware_sku"]
            assert (pd.isna(row.mean_ms) and published["mean_ms"] == "") or row.mean_ms == float(published["mean_ms"])
            assert row.observed_at == pd.Timestamp(published["observed_at"])
            assert row.status.lower() == published["status"] and json.loads(row.bindings) == json.loads(published["bindings"])

        resnet = {"workload": "kernelbench-l3-p9-resnet18", "status": RunStatus.PASSED}
        polars = index.runs_frame(backend="polars", **resnet)
        assert polars.schema["run_id"] == pl.Int64 and polars.schema["observed_at"] == pl.Datetime("us", "UTC")
        assert polars.schema["stale"] == pl.Boolean and polars.schema["mean_ms"] == pl.Float64
        filtered = _csv_rows(index.download("runs.csv", **resnet))
        assert sorted(polars["run_id"].to_list()) == sorted(filtered) and 0 < len(filtered) < len(exported)


def test_records_as_a_frame_and_every_filter_in_an_export(live_server):
    with KernelIndex(live_server) as index:
        # One workload a page: the seed's H100 records span two.
        records = index.records_frame(hardware="NVIDIA H100", page_size=1)
        assert sorted(zip(records["workload"], records["latency_ms"])) == [
            ("kernelbench-l3-p12-vgg19", 2.43), ("kernelbench-l3-p12-vgg19", 3.64),
            ("kernelbench-l3-p9-resnet18", 1.39), ("kernelbench-l3-p9-resnet18", 1.47)]
        assert str(records["run_id"].dtype) == "Int64" and str(records["observed_at"].dtype) == "datetime64[us, UTC]"
        one = index.records_frame(workload="kernelbench-l3-p9-resnet18", backend="polars")
        assert set(one["workload"]) == {"kernelbench-l3-p9-resnet18"} and one.schema["environment_id"] == pl.Int64
        assert {1.39, 1.47} <= set(one["latency_ms"].to_list())

        # Every filter the client knows is one the server takes (an unknown one would be its 400).
        every = {"workload": "kernelbench-l3-p9-resnet18", "implementation": "torch_eager", "hardware": "NVIDIA H100",
                 "level": 3, "evidence": Evidence.REPORTED, "licence": "BSD-3-Clause", "status": RunStatus.PASSED,
                 "stale": False, "observed_since": datetime(2020, 1, 1, tzinfo=UTC), "eligible_only": False,
                 "include_superseded": True}
        assert set(every) == RUN_FILTERS
        assert index.download("runs.csv", **every, names="graphql").startswith(b"databaseId,workloadSlug,")
        assert index.download("catalog.jsonl", **every, revisions="all")
