"""The researcher examples run against a live server, and what they print is what the API says."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(script: str, *args: str) -> str:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, check=True, timeout=60,
        cwd=EXAMPLES,
    ).stdout


def _api(url: str, query: str, variables: dict | None = None) -> dict:
    """Ask the live server directly, so each test compares the example's output with the API's own answer."""
    body = httpx.post(f"{url}/graphql", json={"query": query, "variables": variables or {}}, timeout=30).json()
    assert not body.get("errors"), body["errors"]
    return body["data"]


# Each level-3 cohort with its environment and rows, as the API ranks them (the seed has 2 workloads: one page).
COHORTS = """
{ workloads(level: 3, first: 20) { pageInfo { hasNextPage } nodes { slug comparisons(first: 20) {
    environment { databaseId provider hardware { sku } }
    rows(first: 20) { latencyMs isBaseline speedupVsBaseline speedupInterval implementation { slug } } } } } }
"""


def _cohorts(url: str) -> list[tuple[str, dict]]:
    workloads = _api(url, COHORTS)["workloads"]
    assert not workloads["pageInfo"]["hasNextPage"]
    return [(w["slug"], c) for w in workloads["nodes"] for c in w["comparisons"]]


def _fastest(cohort: dict, implementation: str) -> dict | None:
    return next((r for r in cohort["rows"] if r["implementation"]["slug"] == implementation), None)


def test_h100_records_csv(live_server):
    rows = list(csv.DictReader(io.StringIO(_run("h100_records_csv.py", "--api", live_server))))
    assert sorted((r["workload"], float(r["latency_ms"])) for r in rows) == [
        ("kernelbench-l3-p12-vgg19", 2.43), ("kernelbench-l3-p12-vgg19", 3.64),
        ("kernelbench-l3-p9-resnet18", 1.39), ("kernelbench-l3-p9-resnet18", 1.47),
    ]


def test_compare_implementations_names_sku_and_provider_apart(live_server):
    out = _run("compare_implementations.py", "torch_eager", "torch_compile_inductor", "--api", live_server)
    lines = [line for line in out.splitlines()[1:] if line.strip()]
    both = [(slug, c) for slug, c in _cohorts(live_server)
            if _fastest(c, "torch_eager") and _fastest(c, "torch_compile_inductor")]
    assert len(lines) == len(both) == 4  # two workloads × two environments
    for slug, cohort in both:
        env = cohort["environment"]
        # The exact SKU and the provider, each in its own column, on the cohort's line (found by env id).
        line = next(line for line in lines if line.startswith(slug) and f" {env['databaseId']:>5} " in line)
        assert f" {env['hardware']['sku']:<26} {env['provider'] or '-':<12} " in line
    assert "(Modal)" not in out  # the old "NVIDIA H100 (Modal)" label, which hid the SKU
    vgg_modal = next(line for line in lines if "vgg19" in line and " Modal " in line)
    assert "3.880ms" in vgg_modal and "2.430ms" in vgg_modal and "1.60×" in vgg_modal


def test_plot_speedups_plots_the_apis_speedup(live_server, tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed: pip install -e '.[plot]'")
    png, data = tmp_path / "speedups.png", tmp_path / "speedups.json"
    out = _run("plot_speedups.py", "torch_compile_inductor", "--api", live_server, "--out", str(png),
               "--data", str(data))
    assert png.read_bytes().startswith(PNG_MAGIC)
    points = json.loads(data.read_text())
    expected = {(slug, c["environment"]["databaseId"]): _fastest(c, "torch_compile_inductor")
                for slug, c in _cohorts(live_server)}
    expected = {key: row for key, row in expected.items() if row and row["speedupVsBaseline"] is not None}
    assert len(points) == len(expected) == 4
    for p in points:
        row = expected[(p["workload"], p["environmentId"])]
        assert p["speedupVsBaseline"] == row["speedupVsBaseline"]  # the API's float, untouched
        assert p["speedupInterval"] == row["speedupInterval"]
    # A known row: vgg19 on Modal, torch_eager 3.88 ms as the baseline, inductor 2.43 ms.
    vgg_modal = next(p for p in points if p["workload"] == "kernelbench-l3-p12-vgg19" and p["provider"] == "Modal")
    assert vgg_modal["baseline"] == "torch_eager"
    assert vgg_modal["speedupVsBaseline"] == pytest.approx(3.88 / 2.43)
    line = next(line for line in out.splitlines()
                if line.startswith("kernelbench-l3-p12-vgg19") and f" {vgg_modal['environmentId']:>5} " in line)
    assert f" {vgg_modal['sku']:<26} Modal " in line
    assert f"{vgg_modal['speedupVsBaseline']:.3f}×" in line


RECORDS = """
query ($after: String) { records(hardware: "NVIDIA H100", first: 1, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes { workload { slug } records(first: 100) {
        latencyMs implementation { slug } environment { databaseId hardware { sku family } } run { databaseId } } } } }
"""


def test_h100_records_pandas(live_server, tmp_path):
    missing = [name for name in ("pandas", "matplotlib") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed: pip install -e '.[plot]' (CI installs them with '.[test]')")
    png, table = tmp_path / "h100.png", tmp_path / "h100.csv"
    out = _run("h100_records_pandas.py", "--api", live_server, "--out", str(png), "--csv", str(table))
    assert png.read_bytes().startswith(PNG_MAGIC)
    # The API's own answer, one workload per page, so paging is exercised here as in the example.
    api_rows, after = [], None
    while True:
        page = _api(live_server, RECORDS, {"after": after})["records"]
        api_rows += [(n["workload"]["slug"], r["environment"]["hardware"]["sku"], r["environment"]["databaseId"],
                      r["implementation"]["slug"], r["latencyMs"], r["run"]["databaseId"])
                     for n in page["nodes"] for r in n["records"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    frame = list(csv.DictReader(table.read_text().splitlines()))
    assert list(frame[0]) == ["workload", "level", "sku", "family", "provider", "environment_id", "implementation",
                              "latency_ms", "ci95_ms", "trials", "evidence", "observed_at", "run_id"]
    assert len(frame) == len(api_rows) == 4
    assert sorted((r["workload"], r["sku"], int(r["environment_id"]), r["implementation"], float(r["latency_ms"]),
                   int(r["run_id"])) for r in frame) == sorted(api_rows)
    assert {r["family"] for r in frame} == {"NVIDIA H100"}
    assert out.startswith(f"{len(api_rows)} records on NVIDIA H100")
    for sku in {row[1] for row in api_rows}:
        assert f"  {sku}: " in out


def _export(url: str, **filters: str) -> list[dict[str, str]]:
    response = httpx.get(f"{url}/exports/runs.csv", params=filters, timeout=30)
    assert response.status_code == 200, response.text
    return list(csv.DictReader(io.StringIO(response.text)))


def test_runs_frame_reads_what_the_export_publishes(live_server, tmp_path):
    pl = pytest.importorskip("polars", reason="polars is not installed (CI installs it with '.[test]')")
    filters = {"workload": "kernelbench-l3-p9-resnet18", "status": "PASSED"}
    exported = _export(live_server, **filters)
    assert 0 < len(exported) < len(_export(live_server))  # the filters narrow the runs
    out = _run("runs_frame.py", "--api", live_server, "--workload", filters["workload"], "--status", "PASSED")
    lines = out.splitlines()
    assert lines[0] == (f"the same runs as CSV: {live_server}/exports/runs.csv?workload=kernelbench-l3-p9-resnet18"
                        "&status=PASSED")
    assert lines[1] == f"{len(exported)} runs"
    assert "run_id (Int64)" in lines[2] and "observed_at (datetime64[us, UTC])" in lines[2]
    fastest: dict[tuple[str, str], float] = {}
    for r in exported:
        if r["mean_ms"]:
            key = (r["implementation"], r["hardware_sku"])
            fastest[key] = min(fastest.get(key, float("inf")), float(r["mean_ms"]))
    assert len(lines) == 4 + len(fastest)
    for implementation, sku, mean_ms in (line.rsplit(None, 1)[0].split(None, 1) + [line.rsplit(None, 1)[1]]
                                         for line in lines[4:]):
        assert float(mean_ms) == pytest.approx(fastest[(implementation, sku.strip())], abs=5e-4)

    parquet = tmp_path / "runs.parquet"
    out = _run("runs_frame.py", "--api", live_server, "--workload", filters["workload"], "--status", "PASSED",
               "--polars", "--out", str(parquet))
    assert "run_id (Int64)" in out and f"wrote {parquet}" in out
    frame = pl.read_parquet(parquet)
    assert sorted(frame["run_id"].to_list()) == sorted(int(r["run_id"]) for r in exported)
    assert frame.schema["observed_at"] == pl.Datetime("us", "UTC")
