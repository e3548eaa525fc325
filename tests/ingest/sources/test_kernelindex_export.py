"""The kernelindex.com catalogue export reader (kernelindex.ingest.sources.kernelindex_export): small
exports written here cover each rule (what becomes which part, units, statistics, suites, roles, bad
input, unknown tables, .zst and plain); the two shared exports are read when ../shared is present
(those tests skip without it) and checked against counts this file makes from the raw lines itself."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import zstandard

from kernelindex.ingest.seed import SEEDS_DIR
from kernelindex.ingest.sources.kernelindex_export import NO_TABLE, ExportRead, ExportUnreadable, read_export

EXPORTS = Path(__file__).resolve().parents[4] / "shared" / "sources" / "kernelindex-export"
EXPORT_15 = EXPORTS / "catalog-2026-08-15-167a1d6d.jsonl.zst"
EXPORT_16 = EXPORTS / "catalog-2026-08-16-94af2ae7.jsonl.zst"
NAME = "catalog-2026-08-16-94af2ae7.jsonl"
FMT = "kernelindex.dev/v1alpha1"
DIGEST = "sha256:" + "ab" * 32


# -- a small export, shaped as the real ones are ------------------------------------------------------------

def source(id_: str, slug: str, name: str, policy: dict | None) -> dict:
    return {"table": "sources", "row": {"id": id_, "slug": slug, "kind": "leaderboard", "name": name, "policy": policy,
                                       "createdAt": "2026-08-15T02:02:57.440Z"}}


def project(id_: str, slug: str, name: str) -> dict:
    return {"table": "projects", "row": {"id": id_, "slug": slug, "name": name, "licenseExpression": None,
                                        "manifest": {"kind": "SoftwareProject", "apiVersion": FMT, "spec": {"name": name}}}}


def operation(id_: str, slug: str, refs: tuple[str, ...] = ("https://github.com/gpu-mode/reference-kernels/x/task.yml",)) -> dict:
    spec = {
        "family": "gemm",
        "axes": {"m": {"role": "variable", "type": "integer"}, "k": {"role": "constant", "type": "integer", "value": 4096},
                 "k_blocks": {"role": "derived", "type": "integer", "expression": "k // 128"}},
        "inputs": [{"name": "scale", "scalar": {"dtype": "fp32"}},
                   {"name": "a", "tensor": {"dtype": "fp8_e4m3", "shape": ["m", "k"]}},
                   {"name": "s", "tensor": {"dtype": "fp32", "shape": ["m", "k_blocks"]}}],
        "outputs": [{"name": "c", "tensor": {"dtype": "bf16", "shape": ["m", 4096]}}],
        "semantics": {"mutation": "none", "determinism": "deterministic"},
        "reference": {"language": "python"},
    }
    return {"table": "operations", "row": {
        "id": id_, "slug": slug, "family": "gemm", "name": slug.replace("-", "_"), "schemaVersion": FMT,
        "semanticDigest": DIGEST, "tags": [], "supersedesId": None,
        "manifest": {"kind": "OperationSpec", "apiVersion": FMT, "spec": spec,
                     "metadata": {"name": slug, "title": f"{slug} title", "description": "C = A @ B.T",
                                  "sourceRefs": [{"url": u} for u in refs]}}}}


def alias(op_id: str, name: str) -> dict:
    return {"table": "operation_aliases", "row": {"operationId": op_id, "alias": name}}


def case(id_: str, op_id: str, m: int) -> dict:
    return {"table": "workloads", "row": {
        "id": id_, "operationId": op_id, "schemaVersion": FMT, "dtypes": ["fp32", "fp8_e4m3"],
        "manifest": {"kind": "WorkloadCase", "apiVersion": FMT,
                     "spec": {"axes": {"m": m, "k": 4096}, "tensors": {"a": {"dtype": "fp8_e4m3", "shape": [m, 4096]}},
                              "correctness": {"comparator": "kernelbot_eval"}},
                     "metadata": {"name": f"case-{m}", "title": f"m={m}"}}}}


def suite_case(id_: str, op_id: str) -> dict:
    return {"table": "workloads", "row": {
        "id": id_, "operationId": op_id, "schemaVersion": FMT, "dtypes": [],
        "manifest": {"kind": "WorkloadSuite", "apiVersion": FMT,
                     "spec": {"cases": [{"axes": {"m": 1}, "externalId": "0"}, {"axes": {"m": 8}, "externalId": "1"}],
                              "aggregation": {"metric": "score", "statistic": "geomean"}},
                     "metadata": {"name": "suite", "title": "leaderboard suite"}}}}


def implementation(id_: str, op_id: str, project_id: str, slug: str, *, artifact: str | None = None, refs: tuple[str, ...] = (),
                   licence: str | None = None, authors: tuple[str, ...] = ("brandonin",)) -> dict:
    spec: dict[str, Any] = {"callable": {"language": "python"}, "licensing": {}, "operation": {"specDigest": DIGEST},
                            "projectRevision": {"version": "submission-1"},
                            "support": {"dtypes": ["fp32"], "productsTested": ["NVIDIA B200"], "hardwareArchitectures": ["sm_100"]}}
    if artifact:
        spec["source"] = {"fileName": "submission.py", "sizeBytes": 4575, "contentDigest": artifact}
    return {"table": "implementations", "row": {
        "id": id_, "projectId": project_id, "operationId": op_id, "slug": slug, "implementationDigest": "sha256:" + id_[-2:] * 32,
        "sourceRevision": "submission-1", "language": "python", "framework": None, "targetArchitectures": ["sm_100"],
        "licenseExpression": licence, "sourceAvailable": True, "title": f"{slug} title",
        "manifest": {"kind": "ImplementationRevision", "apiVersion": FMT, "spec": spec,
                     "metadata": {"name": slug, "authors": [{"name": a} for a in authors],
                                  "sourceRefs": [{"url": u} for u in refs]}}}}


def artifact(digest: str, size: int = 4575, licence: str = "LicenseRef-GPUMode-Reciprocity-1.0") -> dict:
    return {"table": "artifacts", "row": {"id": "art-" + digest[-4:], "contentDigest": digest, "kind": "source",
                                         "sizeBytes": size, "license": licence}}


PROTOCOL_LATENCY = {"kind": "BenchmarkProtocol", "apiVersion": FMT, "metadata": {"name": "gpumode-kernelbot-eval"},
                    "spec": {"harness": {"name": "reference-kernels eval.py"},
                             "correctness": {"reference": "problem reference implementation", "comparator": "kernelbot_eval"},
                             "measurement": {"timer": "wall_clock", "primaryStatistic": "mean"},
                             "comparability": {"family": "gpumode_kernelbot", "notes": "per case"}}}


def run(id_: str, case_id: str, impl_id: str, source_id: str, source_slug: str, *, metric: str = "latency",
        statistic: str | None = "mean", unit: str | None = "ns", value: float | None = 49756, status: str = "passed",
        protocol: dict | None = None, protocol_key: str = "sha256:p1", native: dict | None = None,
        hardware: str = "AMD Instinct MI300X") -> dict:
    spec: dict[str, Any] = {"status": status, "observedAt": "2025-05-09T08:47:43.496Z",
                            "sourceNative": native or {"source": source_slug, "metrics": {"mean_ns": 49755.65}}}
    return {"table": "benchmark_runs", "row": {
        "id": id_, "implementationId": impl_id, "workloadId": case_id, "sourceId": source_id, "status": status,
        "observedAt": "2025-05-09T08:47:43.496Z", "hardwareVendor": "amd", "hardwareModel": hardware,
        "hardwareArchitecture": "gfx942", "driverMajor": None, "cudaMajor": 12, "protocolKey": protocol_key,
        "primaryMetric": metric, "primaryValue": value, "primaryUnit": unit, "primaryStatistic": statistic,
        "sampleCount": 100, "environmentSummary": "reference-kernels eval.py",
        "manifest": {"run": {"kind": "BenchmarkRun", "apiVersion": FMT, "spec": spec,
                             "metadata": {"name": id_, "labels": {"torch": "2.8.0+rocm6.3"}}},
                     "protocol": protocol or PROTOCOL_LATENCY,
                     "environment": {"kind": "ExecutionEnvironment", "apiVersion": FMT,
                                     "spec": {"hardware": {"product": hardware},
                                              "software": {"cudaToolkit": "12.8", "framework": {"name": "pytorch", "version": "2.9.1"},
                                                           "libraries": {"triton": "3.5.1"}}}}}}}


def measurement(id_: str, run_id: str, statistic: str, value: float, unit: str = "ns", metric: str = "latency") -> dict:
    return {"table": "measurements", "row": {"id": id_, "runId": run_id, "metric": metric, "statistic": statistic,
                                            "unit": unit, "value": value, "sampleCount": 100}}


GPUMODE = source("src-gm", "gpumode-kernelbot", "GPU MODE KernelBot",
                 {"url": "https://huggingface.co/datasets/GPUMODE/kernelbot-data", "license": "June 9 Researcher Reciprocity License v1.0",
                  "terms": "Redistribution permitted with attribution.", "attribution": "GPU Mode and the KernelBot dataset"})
FLASHINFER = source("src-fi", "flashinfer-bench", "FlashInfer-Bench",
                    {"url": "https://huggingface.co/datasets/flashinfer-ai/flashinfer-trace", "license": "Apache-2.0",
                     "terms": "Baseline (human/library) traces only", "attribution": "FlashInfer-Bench"})
SOL = source("src-sol", "sol-execbench", "NVIDIA SOL-ExecBench", None)
FI_REF = "https://huggingface.co/datasets/flashinfer-ai/flashinfer-trace/blob/da91/solutions/baseline/gemm/g/torch_matmul.json"
SCORE_PROTOCOL = {"kind": "BenchmarkProtocol", "apiVersion": FMT, "metadata": {"name": "gpumode-kernelbot-leaderboard-geomean"},
                  "spec": {"harness": {"name": "reference-kernels eval.py"},
                           "correctness": {"reference": "problem reference implementation", "comparator": "kernelbot_eval"},
                           "measurement": {"timer": "wall_clock", "primaryStatistic": "geomean"},
                           "comparability": {"family": "gpumode_kernelbot"}}}
FI_PROTOCOL = {"kind": "BenchmarkProtocol", "apiVersion": FMT, "metadata": {"name": "flashinfer-bench-trace"},
               "spec": {"harness": {"name": "flashinfer-bench"},
                        "correctness": {"reference": "definition reference implementation", "comparator": "flashinfer_bench_eval"},
                        "measurement": {"timer": "harness_reported", "primaryStatistic": "mean"},
                        "comparability": {"family": "flashinfer_bench_trace"}}}


def small_export() -> list[dict]:
    """Three sources; a GPU MODE operation with a case and a suite, measured per case (mean with min, max
    and std) and as a leaderboard score; a FlashInfer operation whose baseline passed once and failed to
    compile once; a FlashInfer definition nobody ran; the opinions and a table this reader does not know.
    A fresh copy each time: the tests spoil rows in place."""
    return copy.deepcopy([
        SOL, GPUMODE, FLASHINFER,
        project("prj-u", "kernelbot-user-brandonin", "brandonin"),
        project("prj-b", "flashinfer-baseline", "FlashInfer-Bench baselines"),
        operation("op-gm", "gpumode-fp8-mm"), alias("op-gm", "fp8-mm"), alias("op-gm", "amd-fp8-mm"),
        operation("op-fi", "gemm-n4096-k4096", refs=("https://huggingface.co/datasets/flashinfer-ai/flashinfer-trace/blob/da91/definitions",)),
        operation("op-idle", "gemm-n128-k2048", refs=("https://huggingface.co/datasets/flashinfer-ai/flashinfer-trace/blob/da91/definitions",)),
        case("case-gm", "op-gm", 1024), suite_case("case-suite", "op-gm"), case("case-fi", "op-fi", 256), case("case-idle", "op-idle", 8),
        artifact("sha256:" + "cd" * 32),
        implementation("impl-01", "op-gm", "prj-u", "kernelbot-fp8-mm-18667", artifact="sha256:" + "cd" * 32),
        implementation("impl-02", "op-fi", "prj-b", "flashinfer-torch-matmul", refs=(FI_REF,), licence="Apache-2.0", authors=("baseline",)),
        run("run-lat", "case-gm", "impl-01", "src-gm", "gpumode-kernelbot"),
        measurement("m1", "run-lat", "mean", 49756), measurement("m2", "run-lat", "min", 48739),
        measurement("m3", "run-lat", "max", 54312), measurement("m4", "run-lat", "std", 819.15),
        run("run-score", "case-suite", "impl-01", "src-gm", "gpumode-kernelbot", metric="score", statistic="geomean", unit="s",
            value=1.0048658277929109e-05, protocol=SCORE_PROTOCOL, protocol_key="sha256:p2"),
        measurement("m5", "run-score", "geomean", 1.0048658277929109e-05, unit="s", metric="score"),
        run("run-fi", "case-fi", "impl-02", "src-fi", "flashinfer-bench", value=49509, protocol=FI_PROTOCOL, protocol_key="sha256:p3",
            hardware="NVIDIA B200",
            native={"source": "flashinfer-bench", "metrics": {"latency_ms": 0.049509, "speedup_factor": 6.86}}),
        measurement("m6", "run-fi", "mean", 49509),
        run("run-fail", "case-fi", "impl-02", "src-fi", "flashinfer-bench", metric="none", statistic=None, unit=None, value=None,
            status="compile_error", protocol=FI_PROTOCOL, protocol_key="sha256:p3", hardware="NVIDIA B200",
            native={"source": "flashinfer-bench"}),
        {"table": "record_events", "row": {"id": "ev1", "runId": "run-lat", "cause": "new_run"}},
        {"table": "record_events", "row": {"id": "ev2", "runId": "run-fi", "cause": "new_run"}},
        {"table": "serving_runs", "row": {"id": "sv1", "tokensPerSecond": 1234}},
        {"table": "serving_runs", "row": "not even an object: an unknown table is not read"},
    ])


def write(tmp_path: Path, lines: list[dict | str], name: str = NAME, compress: bool = False) -> Path:
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode()
    path = tmp_path / (name + (".zst" if compress else ""))
    path.write_bytes(zstandard.ZstdCompressor().compress(text) if compress else text)
    return path


def only(parts: list, **match: Any) -> Any:
    found = [p for p in parts if all(getattr(p, k) == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


def line_of(lines: list[dict], table: str, row_id: str) -> int:
    return next(i for i, line in enumerate(lines, start=1) if line["table"] == table and line["row"].get("id") == row_id)


# -- what becomes which part ----------------------------------------------------------------------------------

def test_a_small_export_is_read_into_parts_and_every_line_is_accounted_for(tmp_path):
    lines = small_export()
    read = read_export(write(tmp_path, lines))
    summary = read.summary

    assert summary.refused == []
    assert summary.accounted()
    assert summary.lines == Counter(line["table"] for line in lines)
    assert summary.skipped == {"record_events": 2, "serving_runs": 2}
    assert summary.read == {t: n for t, n in summary.lines.items() if t not in ("record_events", "serving_runs")}
    assert (read.route, read.route_date.isoformat(), read.revision) == (NAME, "2026-08-16", "94af2ae7")

    sol, gm, fi = (only(read.sources, key=k) for k in ("sol-execbench", "gpumode-kernelbot", "flashinfer-bench"))
    assert (gm.name, gm.licence, gm.attribution) == ("GPU MODE KernelBot", "June 9 Researcher Reciprocity License v1.0",
                                                     "GPU Mode and the KernelBot dataset")
    assert gm.terms == "Redistribution permitted with attribution."
    assert (sol.url, sol.licence, sol.terms) == (None, None, None)  # SOL-ExecBench states no policy
    assert fi.url == "https://huggingface.co/datasets/flashinfer-ai/flashinfer-trace"


def test_an_operation_is_a_workload_with_its_stated_semantics(tmp_path):
    read = read_export(write(tmp_path, small_export()))
    workload = only(read.workloads, key="gpumode-fp8-mm")
    assert workload.suite == "gpumode-kernelbot"  # the source its runs come from
    assert (workload.family, workload.title, workload.digest) == ("gemm", "gpumode-fp8-mm title", DIGEST)
    assert workload.aliases == ("fp8-mm", "amd-fp8-mm")
    assert workload.reference == "problem reference implementation (python)"
    assert [(t.name, t.dtype, t.shape) for t in workload.inputs] == [
        ("scale", "fp32", ()), ("a", "fp8_e4m3", ("m", "k")), ("s", "fp32", ("m", "k_blocks"))]
    assert [(t.name, t.dtype, t.shape) for t in workload.outputs] == [("c", "bf16", ("m", 4096))]
    assert [(a.name, a.role, a.value, a.expression) for a in workload.axes] == [
        ("m", "variable", None, None), ("k", "constant", 4096, None), ("k_blocks", "derived", None, "k // 128")]
    assert (workload.mutates, workload.deterministic) == ((), True)
    assert workload.semantics()["stated"] is True


def test_a_case_is_a_configuration_and_a_suite_lists_its_cases(tmp_path):
    read = read_export(write(tmp_path, small_export()))
    one = only(read.configurations, key="case-gm")
    assert (one.suite, one.workload, one.bindings, one.title, one.cases) == (
        "gpumode-kernelbot", "gpumode-fp8-mm", {"m": 1024, "k": 4096}, "m=1024", ())
    # the primary dtype: the first tensor input's (the scalar before it is not a tensor), as the case states it
    assert one.dtype == "fp8_e4m3"
    suite = only(read.configurations, key="case-suite")
    assert (suite.bindings, suite.cases, suite.dtype) == ({}, ({"m": 1}, {"m": 8}), "fp8_e4m3")


def test_implementations_keep_authors_project_licence_artifact_and_role(tmp_path):
    read = read_export(write(tmp_path, small_export()))
    candidate = only(read.implementations, workload="gpumode-fp8-mm")
    assert candidate.role == "candidate"
    assert (candidate.authors, candidate.project, candidate.language, candidate.target_architectures) == (
        ("brandonin",), "brandonin", "python", ("sm_100",))
    # no licence of its own: its source artifact's
    assert candidate.licence == "LicenseRef-GPUMode-Reciprocity-1.0"
    assert (candidate.artifact_digest, candidate.artifact_bytes) == ("sha256:" + "cd" * 32, 4575)
    assert candidate.key.startswith("kernelbot-fp8-mm-18667-")
    baseline = only(read.implementations, workload="gemm-n4096-k4096")
    assert (baseline.role, baseline.licence, baseline.project) == ("baseline", "Apache-2.0", "FlashInfer-Bench baselines")
    assert baseline.source_url == FI_REF


def test_runs_keep_their_figure_statistic_protocol_environment_and_route(tmp_path):
    read = read_export(write(tmp_path, small_export()))
    latency = only(read.runs, upstream_id="run-lat")
    assert (latency.suite, latency.workload, latency.configuration, latency.bindings) == (
        "gpumode-kernelbot", "gpumode-fp8-mm", "case-gm", {"m": 1024, "k": 4096})
    assert latency.implementation == only(read.implementations, workload="gpumode-fp8-mm").key
    assert (latency.hardware, latency.vendor, latency.architecture) == ("AMD Instinct MI300X", "amd", "gfx942")
    # ns → ms exactly, the statistic as stated, the spread from the run's other measurements
    assert latency.figure is not None
    assert (latency.figure.value, latency.figure.min, latency.figure.max) == (0.049756, 0.048739, 0.054312)
    assert latency.figure.std == pytest.approx(0.00081915)
    assert (latency.figure.mean, latency.figure.samples) == (None, 100)
    protocol = latency.protocol
    assert (protocol.metric, protocol.statistic, protocol.unit) == ("latency", "mean", "ms")
    assert (protocol.harness, protocol.timer, protocol.comparator, protocol.family) == (
        "reference-kernels eval.py", "wall_clock", "kernelbot_eval", "gpumode_kernelbot")
    assert (protocol.name, protocol.notes, protocol.digest) == ("gpumode-kernelbot-eval", "per case", "sha256:p1")
    assert latency.software == {"summary": "reference-kernels eval.py", "cuda": "12", "cuda_toolkit": "12.8", "pytorch": "2.9.1",
                                "triton": "3.5.1", "torch": "2.8.0+rocm6.3"}
    assert (latency.source, latency.route, latency.route_date.isoformat()) == ("gpumode-kernelbot", NAME, "2026-08-16")
    assert latency.observed_at.isoformat() == "2025-05-09T08:47:43.496000+00:00"
    assert (latency.status, latency.failure_reason, latency.source_speedup) == ("passed", None, None)

    score = only(read.runs, upstream_id="run-score")
    assert score.figure is not None
    assert (score.protocol.metric, score.protocol.statistic, score.protocol.unit) == ("score", "geomean", "s")
    assert (score.figure.value, score.configuration, score.bindings) == (1.0048658277929109e-05, "case-suite", {})

    flashinfer = only(read.runs, upstream_id="run-fi")
    assert (flashinfer.source_speedup, flashinfer.source_metrics) == (6.86, {"latency_ms": 0.049509, "speedup_factor": 6.86})
    assert flashinfer.figure is not None and flashinfer.figure.value == 0.049509


def test_a_failed_run_is_failed_with_its_own_word_and_no_figure(tmp_path):
    read = read_export(write(tmp_path, small_export()))
    failed = only(read.runs, upstream_id="run-fail")
    assert (failed.status, failed.failure_reason, failed.figure) == ("failed", "compile_error", None)
    # the run states no metric; its protocol does, through the run that passed under it
    assert (failed.protocol.metric, failed.protocol.statistic) == ("latency", "mean")


def test_plain_and_zstd_exports_read_the_same(tmp_path):
    plain = read_export(write(tmp_path, small_export()))
    packed = read_export(write(tmp_path, small_export(), compress=True))
    assert packed.route == NAME + ".zst"
    assert (packed.route_date, packed.revision) == (plain.route_date, plain.revision)
    for kind in ("sources", "workloads", "configurations", "implementations"):
        assert [_without_file(p) for p in getattr(packed, kind)] == [_without_file(p) for p in getattr(plain, kind)]
    assert [(r.upstream_id, r.figure, r.protocol) for r in packed.runs] == [(r.upstream_id, r.figure, r.protocol) for r in plain.runs]
    assert packed.summary.lines == plain.summary.lines


def _without_file(part: Any) -> Any:
    from dataclasses import replace
    return replace(part, where=replace(part.where, file=""))


def test_a_file_not_named_as_an_export_has_no_route_date(tmp_path):
    read = read_export(write(tmp_path, small_export(), name="mine.jsonl"))
    assert (read.route, read.route_date, read.revision) == ("mine.jsonl", None, None)
    assert {r.route for r in read.runs} == {"mine.jsonl"}


# -- suites -------------------------------------------------------------------------------------------------

def test_an_operation_nobody_ran_takes_the_suite_whose_url_its_references_lie_under(tmp_path):
    read = read_export(write(tmp_path, small_export()))
    idle = only(read.workloads, key="gemm-n128-k2048")
    assert idle.suite == "flashinfer-bench"
    assert idle.reference == "reference implementation (python)"  # no run names its correctness reference
    assert only(read.configurations, key="case-idle").suite == "flashinfer-bench"


def test_an_operation_measured_by_two_sources_is_a_workload_of_each(tmp_path):
    lines = small_export()
    lines.append(run("run-fi-on-gm", "case-gm", "impl-02", "src-fi", "flashinfer-bench", protocol=FI_PROTOCOL, protocol_key="sha256:p3"))
    read = read_export(write(tmp_path, lines))
    assert sorted(w.suite for w in read.workloads if w.key == "gpumode-fp8-mm") == ["flashinfer-bench", "gpumode-kernelbot"]
    assert sorted(c.suite for c in read.configurations if c.key == "case-gm") == ["flashinfer-bench", "gpumode-kernelbot"]
    assert only(read.runs, upstream_id="run-fi-on-gm").suite == "flashinfer-bench"
    assert only(read.runs, upstream_id="run-lat").suite == "gpumode-kernelbot"
    assert read.summary.read["operations"] == 3 and read.summary.accounted()


def test_an_operation_whose_suite_nothing_states_is_refused_with_its_cases(tmp_path):
    lines = small_export() + [operation("op-lost", "lost", refs=("https://example.org/elsewhere",)), case("case-lost", "op-lost", 4)]
    read = read_export(write(tmp_path, lines))
    assert [(r.where.line, r.where.table) for r in read.summary.refused] == [(len(lines) - 1, "operations"), (len(lines), "workloads")]
    assert "suite is not stated" in read.summary.refused[0].reason
    assert read.summary.accounted()
    assert not [w for w in read.workloads if w.key == "lost"]


# -- bad input ------------------------------------------------------------------------------------------------

def _drop(row: dict, key: str) -> None:
    del row[key]


BAD_ROWS = {
    # name: (table, row id, how the row is spoiled, the field named, words of the reason)
    "run missing its hardware": ("benchmark_runs", "run-lat", lambda r: _drop(r, "hardwareModel"), "hardwareModel", "missing"),
    "run with an unknown unit": ("benchmark_runs", "run-fi", lambda r: r.update(primaryUnit="furlongs"), "primaryUnit", "unknown unit"),
    "run with an unknown statistic": ("benchmark_runs", "run-fi", lambda r: r.update(primaryStatistic="p99"), "primaryStatistic",
                                      "unknown statistic"),
    "run with an unknown status": ("benchmark_runs", "run-lat", lambda r: r.update(status="pending"), "status", "unknown status"),
    "run naming an unknown case": ("benchmark_runs", "run-fi", lambda r: r.update(workloadId="case-x"), "workloadId",
                                   "does not hold"),
    "run naming an unknown implementation": ("benchmark_runs", "run-fi", lambda r: r.update(implementationId="impl-x"),
                                             "implementationId", "does not hold"),
    "run naming an unknown source": ("benchmark_runs", "run-fi", lambda r: r.update(sourceId="src-x"), "sourceId", "does not hold"),
    "run whose figure disagrees with its measurement": ("benchmark_runs", "run-fi", lambda r: r.update(primaryValue=50000),
                                                        "primaryValue", "states"),
    "run with a time that is not one": ("benchmark_runs", "run-fi", lambda r: r.update(observedAt="yesterday"), "observedAt",
                                        "not an ISO 8601 time"),
    "run in another format": ("benchmark_runs", "run-fi", lambda r: r["manifest"]["run"].update(apiVersion="kernelindex.dev/v2"),
                              "manifest.run.apiVersion", "format"),
    "measurement with an unknown unit": ("measurements", "m3", lambda r: r.update(unit="furlongs"), "unit", "unknown unit"),
    "measurement with an unknown statistic": ("measurements", "m3", lambda r: r.update(statistic="p99"), "statistic",
                                              "unknown statistic"),
    "case naming an unknown operation": ("workloads", "case-idle", lambda r: r.update(operationId="op-x"), "operationId",
                                         "does not hold"),
    "case binding an axis to a string": ("workloads", "case-idle", lambda r: r["manifest"]["spec"]["axes"].update(m="eight"),
                                         "manifest.spec.axes.m", "str where an integer is required"),
    "operation with an unknown axis role": ("operations", "op-idle",
                                            lambda r: r["manifest"]["spec"]["axes"]["m"].update(role="sometimes"),
                                            "manifest.spec.axes.m.role", "unknown axis role"),
    "implementation missing its slug": ("implementations", "impl-02", lambda r: _drop(r, "slug"), "slug", "missing"),
    "source missing its name": ("sources", "src-sol", lambda r: _drop(r, "name"), "name", "missing"),
}


@pytest.mark.parametrize("case_name", sorted(BAD_ROWS))
def test_a_bad_row_is_one_named_refusal_and_nothing_is_guessed(tmp_path, case_name):
    table, row_id, spoil, key, words = BAD_ROWS[case_name]
    lines = small_export()
    line = line_of(lines, table, row_id)
    spoil(lines[line - 1]["row"])
    read = read_export(write(tmp_path, lines))
    first = read.summary.refused[0]
    assert (first.where.file, first.where.line, first.where.table, first.key) == (NAME, line, table, key)
    assert words in first.reason
    assert NAME in str(first) and f"line {line}" in str(first)
    assert read.summary.accounted()
    # what depended on the refused row is refused with it, saying so; nothing else is
    for later in read.summary.refused[1:]:
        assert "was refused" in later.reason, later
    if table == "benchmark_runs":
        assert row_id not in {r.upstream_id for r in read.runs}
        assert all(r.where.table == "measurements" for r in read.summary.refused[1:])


def test_a_run_refused_takes_its_measurements_with_it(tmp_path):
    lines = small_export()
    lines[line_of(lines, "benchmark_runs", "run-lat") - 1]["row"]["primaryUnit"] = "furlongs"
    read = read_export(write(tmp_path, lines))
    assert [(r.where.table, r.key) for r in read.summary.refused] == [("benchmark_runs", "primaryUnit")] + [("measurements", "runId")] * 4
    assert read.summary.refused_by_table == {"benchmark_runs": 1, "measurements": 4}
    assert read.summary.accounted()


def test_a_measurement_of_a_run_the_export_does_not_hold_is_refused(tmp_path):
    lines = small_export() + [measurement("m-x", "run-x", "mean", 1)]
    read = read_export(write(tmp_path, lines))
    [refusal] = read.summary.refused
    assert (refusal.where.line, refusal.key) == (len(lines), "runId")
    assert "does not hold" in refusal.reason


@pytest.mark.parametrize("bad_line, key, words", [
    ("{this is not json", None, "not JSON"),
    ("", None, "a blank line"),
    ("[1, 2, 3]", "table", "not a"),
    ('{"row": {"id": "x"}}', "table", "not a"),
    ('{"table": "benchmark_runs"}', "row", "not a"),
    ('{"table": "benchmark_runs", "row": [1]}', "row", "list where an object is required"),
])
def test_a_line_that_is_not_a_table_row_is_one_named_refusal(tmp_path, bad_line, key, words):
    lines: list[dict | str] = [*small_export()]
    lines.insert(3, bad_line)
    read = read_export(write(tmp_path, lines))
    [refusal] = read.summary.refused
    assert (refusal.where.line, refusal.key) == (4, key)
    assert words in refusal.reason
    assert refusal.where.table in (NO_TABLE, "benchmark_runs")
    assert read.summary.accounted()
    assert len(read.runs) == 4  # the rest is read


def test_a_repeated_id_is_refused_the_second_time(tmp_path):
    lines = small_export()
    lines.append(copy.deepcopy(lines[line_of(lines, "benchmark_runs", "run-fi") - 1]))
    read = read_export(write(tmp_path, lines))
    [refusal] = read.summary.refused
    assert (refusal.where.line, refusal.key) == (len(lines), "id")
    assert "repeats line" in refusal.reason


def test_no_value_in_any_field_of_any_row_crashes_the_reader(tmp_path):
    """Each top-level field of each row, and each field of its manifest's parts, replaced by values of
    wrong kinds (two of them each, in turn): the reader reads, refuses or skips every line, and never raises."""
    base = small_export()
    oddities: list[Any] = [None, [], {}, "x", 1.5, True, -1, [{}]]
    turn = iter(range(10**6))

    def some() -> list[Any]:
        i = next(turn)
        return [oddities[i % len(oddities)], oddities[(i + 3) % len(oddities)]]

    count = 0
    for index, line in enumerate(base):
        if not isinstance(line["row"], dict):
            continue
        for key in list(line["row"]):
            for odd in some():
                lines = copy.deepcopy(base)
                lines[index]["row"][key] = odd
                read = read_export(write(tmp_path, lines))
                assert read.summary.accounted(), (index, key, odd)
                assert sum(read.summary.lines.values()) == len(lines)
                count += 1
        for path in (("manifest", "spec"), ("manifest", "run", "spec"), ("manifest", "protocol", "spec"), ("manifest", "metadata")):
            holder = line["row"]
            for step in path[:-1]:
                holder = holder.get(step) if isinstance(holder, dict) else None
            if not isinstance(holder, dict) or path[-1] not in holder:
                continue
            for inner in list(holder[path[-1]]) if isinstance(holder[path[-1]], dict) else []:
                for odd in some():
                    lines = copy.deepcopy(base)
                    target = lines[index]["row"]
                    for step in path:
                        target = target[step]
                    target[inner] = odd
                    assert read_export(write(tmp_path, lines)).summary.accounted(), (index, path, inner, odd)
                    count += 1
    assert count > 300  # the loops above did reach the rows


# -- unreadable files -------------------------------------------------------------------------------------------

def test_a_truncated_zst_is_one_clear_error_naming_the_file(tmp_path):
    whole = write(tmp_path, small_export() * 20, compress=True)
    cut = tmp_path / "catalog-2026-08-17-0badc0de.jsonl.zst"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(ExportUnreadable, match="truncated") as caught:
        read_export(cut)
    assert str(cut) in str(caught.value)


def test_a_corrupt_zst_is_one_clear_error_naming_the_file(tmp_path):
    bad = tmp_path / "catalog-2026-08-17-0badc0de.jsonl.zst"
    bad.write_bytes(b'{"table": "sources"} is JSON, not zstd')
    with pytest.raises(ExportUnreadable, match="not valid zstd") as caught:
        read_export(bad)
    assert str(bad) in str(caught.value)


def test_a_missing_file_is_one_clear_error(tmp_path):
    with pytest.raises(ExportUnreadable, match="cannot be read"):
        read_export(tmp_path / "catalog-2026-08-17-0badc0de.jsonl.zst")


# -- the shared exports -----------------------------------------------------------------------------------------

def _raw_rows(path: Path) -> list[dict]:
    """The export's lines decoded here with the standard library, independently of the reader."""
    with path.open("rb") as handle:
        text = zstandard.ZstdDecompressor().stream_reader(handle).read().decode()
    return [json.loads(line) for line in text.splitlines() if line]


_READS: dict[Path, tuple[ExportRead, list[dict]]] = {}


def _read(path: Path) -> tuple[ExportRead, list[dict]]:
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    if path not in _READS:
        _READS[path] = (read_export(path), _raw_rows(path))
    return _READS[path]


CATALOGUE_NAMES = {name for entry in json.loads((SEEDS_DIR / "hardware.json").read_text(encoding="utf-8"))["hardware"]
                   for name in entry["driver_product_names"]}


@pytest.mark.parametrize("path", [EXPORT_15, EXPORT_16], ids=lambda p: p.name)
def test_a_shared_export_is_read_whole(path):
    read, raw = _read(path)
    summary = read.summary
    by_table = Counter(line["table"] for line in raw)
    assert summary.lines == by_table
    assert summary.accounted()
    assert summary.refused == []
    assert summary.skipped == {"record_events": by_table["record_events"]}
    # one part per row where a row is one thing; an operation or case is one per suite that measures it
    assert len(read.sources) == by_table["sources"]
    assert len(read.implementations) == by_table["implementations"]
    assert len(read.runs) == by_table["benchmark_runs"]
    assert len({(w.suite, w.key) for w in read.workloads}) == len(read.workloads) >= by_table["operations"]
    assert len({(c.suite, c.key) for c in read.configurations}) == len(read.configurations) >= by_table["workloads"]
    assert len({i.key for i in read.implementations}) == len(read.implementations)
    assert (read.route, read.route_date.isoformat() if read.route_date else None) == (path.name, path.name[8:18])


@pytest.mark.parametrize("path", [EXPORT_15, EXPORT_16], ids=lambda p: p.name)
def test_a_shared_export_s_runs_are_its_runs_by_source_with_figures_as_stated(path):
    read, raw = _read(path)
    slugs = {line["row"]["id"]: line["row"]["slug"] for line in raw if line["table"] == "sources"}
    rows = {line["row"]["id"]: line["row"] for line in raw if line["table"] == "benchmark_runs"}
    assert Counter(r.source for r in read.runs) == Counter(slugs[row["sourceId"]] for row in rows.values())
    for part in read.runs:
        row = rows[part.upstream_id]
        assert part.suite == part.source == slugs[row["sourceId"]]
        assert part.hardware == row["hardwareModel"]
        if row["status"] != "passed":
            assert (part.status, part.failure_reason, part.figure) == ("failed", row["status"], None)
            continue
        assert part.figure is not None
        scale = {"ns": 1e-6, "s": 1.0}[row["primaryUnit"]]
        assert part.figure.value == pytest.approx(row["primaryValue"] * scale, rel=1e-12)
        assert (part.protocol.metric, part.figure and part.protocol.unit) == (row["primaryMetric"], {"latency": "ms", "score": "s"}[row["primaryMetric"]])
        speedup = row["manifest"]["run"]["spec"]["sourceNative"].get("metrics", {}).get("speedup_factor")
        assert part.source_speedup == speedup


def test_the_newest_shared_export_holds_the_runs_the_issue_counts():
    read, _ = _read(EXPORT_16)
    assert Counter(r.source for r in read.runs) == {"gpumode-kernelbot": 5215, "flashinfer-bench": 1937, "sol-execbench": 705}
    assert {s.key for s in read.sources} == {"gpumode-kernelbot", "flashinfer-bench", "sol-execbench"}
    assert Counter(r.status for r in read.runs)["failed"] == 86


@pytest.mark.parametrize("path", [EXPORT_15, EXPORT_16], ids=lambda p: p.name)
def test_every_accelerator_a_shared_export_names_is_in_the_hardware_catalogue(path):
    read, _ = _read(path)
    assert {r.hardware for r in read.runs} <= CATALOGUE_NAMES
