"""Liger-Kernel's benchmark CSV read into parts (kernelindex.ingest.sources.liger): no database.

Synthetic files made here cover each rule (what a row becomes, each refusal, repeats, the header);
the two shared files (../shared/sources/liger-kernel/) are read when present, and their counts,
figures and the difference between them are checked against an independent reading of the raw CSV."""

from __future__ import annotations

import csv
import json
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from kernelindex.ingest.errors import IngestFatal
from kernelindex.ingest.sources.liger import (
    REQUIRED_COLUMNS,
    SPEEDUP_BASELINES,
    LigerRead,
    catalogue_gpu_names,
    read_liger,
)
from kernelindex.ingest.sources.parts import Axis

SHARED_LIGER = Path(__file__).resolve().parents[4] / "shared" / "sources" / "liger-kernel"
SHARED_FILES = {
    "all_benchmark_data-27fe47e2.csv": ("27fe47e2", date(2026, 6, 10)),
    "all_benchmark_data-2120862b.csv": ("2120862b", date(2026, 8, 10)),
}

HEADER = [
    "kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit", "x_name", "x_label",
    "x_value", "y_value_50", "y_value_20", "y_value_80", "extra_benchmark_config_str", "gpu_name", "timestamp",
    "liger_version",
]
OBSERVED = date(2026, 6, 10)


def row(**values: Any) -> dict[str, str]:
    """A good speed row, with the values given instead."""
    good = {
        "kernel_name": "rms_norm", "kernel_provider": "liger", "kernel_operation_mode": "forward", "metric_name": "speed",
        "metric_unit": "ms", "x_name": "H", "x_label": "hidden size", "x_value": "1024", "y_value_50": "0.5",
        "y_value_20": "0.4", "y_value_80": "0.6", "extra_benchmark_config_str": json.dumps({"M": 2048, "dtype": "torch.bfloat16"}),
        "gpu_name": "NVIDIA H100 80GB HBM3", "timestamp": "2026-06-01 12:00:00", "liger_version": "0.6.0",
    }
    return good | {k: str(v) if not isinstance(v, str) else v for k, v in values.items()}


def write(tmp_path: Path, rows: list[dict[str, str]], header: list[str] = HEADER, name: str = "all_benchmark_data.csv") -> Path:
    path = tmp_path / name
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow([r[h] for h in header])
    return path


def read(path: Path, observed: date = OBSERVED) -> LigerRead:
    result = read_liger(path, revision="abc1234", observed=observed)
    assert result.summary.accounted()
    return result


# --- what a row becomes -------------------------------------------------------------------------------


def test_a_speed_row_is_a_latency_run_with_its_median_and_20th_and_80th_percentiles(tmp_path):
    path = write(tmp_path, [row(y_value_50="0.5324", y_value_20="0.5291", y_value_80="0.5347")])
    result = read(path)
    assert result.summary.lines["rows"] == result.summary.read["rows"] == 1
    (run,) = result.runs
    assert run.protocol.metric == "latency" and run.protocol.statistic == "median" and run.protocol.unit == "ms"
    assert run.protocol.timer == "triton.testing.do_bench"
    assert "0.5, 0.2, 0.8" in (run.protocol.notes or "")
    assert run.figure is not None
    assert (run.figure.value, run.figure.low, run.figure.high) == (0.5324, 0.5291, 0.5347)
    assert run.figure.quantiles == (0.2, 0.8)
    assert run.figure.min is None and run.figure.max is None and run.figure.std is None
    assert run.status == "passed" and run.correctness is None
    assert run.hardware == "NVIDIA H100 80GB HBM3"
    assert run.observed_at == datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    assert (run.source, run.route, run.route_date) == ("liger-kernel", path.name, OBSERVED)
    assert run.software == {"liger_kernel": "0.6.0"}
    assert run.suite == "liger-kernel" and run.workload == "rms_norm-forward"
    assert run.bindings == {"H": 1024, "M": 2048} and run.dtype == "bf16"
    assert result.revision == "abc1234" and result.observed == OBSERVED
    source = result.source
    assert (source.key, source.name, source.licence) == ("liger-kernel", "Liger-Kernel", "BSD-2-Clause")
    assert source.url == "https://github.com/linkedin/Liger-Kernel"
    assert source.attribution == "LinkedIn Liger-Kernel (benchmark/data/all_benchmark_data.csv)"


def test_a_memory_row_is_a_peak_memory_run_in_mb_and_never_shares_the_latency_protocol(tmp_path):
    result = read(write(tmp_path, [row(), row(metric_name="memory", metric_unit="MB", y_value_50="130", y_value_20="128",
                                          y_value_80="131")]))
    speed, memory = result.runs
    assert memory.protocol.metric == "memory" and memory.protocol.unit == "MB" and memory.protocol.statistic == "median"
    assert memory.figure is not None and (memory.figure.value, memory.figure.low, memory.figure.high) == (130.0, 128.0, 131.0)
    assert memory.figure.quantiles == (0.2, 0.8)
    assert (speed.protocol.name, speed.protocol.version) != (memory.protocol.name, memory.protocol.version)
    assert speed.configuration == memory.configuration  # one case, two metrics
    assert len(result.configurations) == 1


def test_a_latency_in_seconds_or_microseconds_is_converted_to_ms(tmp_path):
    result = read(write(tmp_path, [
        row(metric_unit="s", y_value_50="0.002", y_value_20="0.001", y_value_80="0.003"),
        row(metric_unit="us", x_value="2048", y_value_50="500", y_value_20="400", y_value_80="600"),
    ]))
    seconds, micro = result.runs
    assert seconds.figure is not None and micro.figure is not None
    assert seconds.figure.value == pytest.approx(2.0) and seconds.figure.high == pytest.approx(3.0)
    assert micro.figure.value == pytest.approx(0.5) and micro.figure.low == pytest.approx(0.4)


def test_a_workload_per_kernel_and_mode_with_the_swept_axis_variable_and_stated_integers_constant(tmp_path):
    config = {"B": 8, "T": 2048}
    rows = [row(kernel_name="cross_entropy", kernel_operation_mode=mode, x_name="V", x_label="vocab size", x_value=v,
                extra_benchmark_config_str=json.dumps(config))
            for mode in ("forward", "full") for v in (4096, 8192)]
    result = read(write(tmp_path, rows))
    assert [w.key for w in result.workloads] == ["cross_entropy-forward", "cross_entropy-full"]
    forward = result.workloads[0]
    assert forward.suite == "liger-kernel" and forward.family == "cross_entropy" and forward.title == "cross_entropy (forward)"
    assert forward.axes == (Axis("V", "variable"), Axis("B", "constant", 8), Axis("T", "constant", 2048))
    assert forward.inputs == () and forward.outputs == ()
    assert forward.reference == "Liger-Kernel benchmark cross_entropy (forward)"
    assert "vocab size" in (forward.description or "")
    assert {c.key for c in result.configurations if c.workload == "cross_entropy-forward"} == {"V=4096;B=8;T=2048", "V=8192;B=8;T=2048"}
    assert len(result.configurations) == 4 and len(result.runs) == 4


def test_an_integer_that_varies_between_rows_or_is_swept_elsewhere_is_a_variable_axis(tmp_path):
    # fused_moe's two sweeps: T swept with E fixed, E swept with T fixed (the swept one null in the config)
    moe = "fused_moe"
    rows = [row(kernel_name=moe, x_name="T", x_value=t, extra_benchmark_config_str=json.dumps({"sweep_dim": "T", "T": None, "E": 128, "K": 8}))
            for t in (1024, 8192)]
    rows += [row(kernel_name=moe, x_name="E", x_value=e, extra_benchmark_config_str=json.dumps({"sweep_dim": "E", "T": 8192, "E": None, "K": 8}))
             for e in (64, 128)]
    rows += [row(kernel_name="embedding", x_name="V", x_value=1000, extra_benchmark_config_str=json.dumps({"B": b}))
             for b in (8, 32)]
    result = read(write(tmp_path, rows))
    axes = {w.key: w.axes for w in result.workloads}
    assert axes["fused_moe-forward"] == (Axis("T", "variable"), Axis("E", "variable"), Axis("K", "constant", 8))
    assert axes["embedding-forward"] == (Axis("V", "variable"), Axis("B", "variable"))
    # T=8192, E=128 from both sweeps: the same integers, two cases as the source states them
    both = [c for c in result.configurations if c.bindings == {"T": 8192, "E": 128, "K": 8}]
    assert len(both) == 2 and len({c.key for c in both}) == 2
    assert {json.dumps(result.stated[(c.workload, c.key)], sort_keys=True) for c in both} == {
        json.dumps({"sweep_dim": "T", "T": None}, sort_keys=True), json.dumps({"sweep_dim": "E", "E": None}, sort_keys=True)}


def test_non_integer_parameters_are_kept_as_stated_never_made_axes(tmp_path):
    config = {"hidden_size": 4096, "eps": 1e-06, "bias": True, "hidden_act": "silu", "dtype": "torch.float32", "E": None}
    result = read(write(tmp_path, [row(extra_benchmark_config_str=json.dumps(config))]))
    (workload,) = result.workloads
    assert workload.axes == (Axis("H", "variable"), Axis("hidden_size", "constant", 4096))  # bias=True is not the integer 1
    (configuration,) = result.configurations
    assert configuration.bindings == {"H": 1024, "hidden_size": 4096}
    assert configuration.dtype == "fp32"
    assert result.stated[(configuration.workload, configuration.key)] == {"eps": 1e-06, "bias": True, "hidden_act": "silu", "E": None}
    description = workload.description or ""
    for said in ('eps=1e-06', 'bias=true', 'hidden_act="silu"', "E=null", "torch.float32"):
        assert said in description


def test_the_config_binding_the_swept_axis_with_the_same_value_is_one_binding(tmp_path):
    result = read(write(tmp_path, [row(extra_benchmark_config_str=json.dumps({"H": 1024}))]))
    assert result.runs[0].bindings == {"H": 1024}


def test_dtypes_are_spelled_as_the_index_spells_them(tmp_path):
    rows = [row(x_value=i + 1, extra_benchmark_config_str=json.dumps({"dtype": d}))
            for i, d in enumerate(("torch.bfloat16", "torch.float16", "torch.float32", "torch.float64"))]
    rows.append(row(x_value=9, extra_benchmark_config_str=json.dumps({"M": 1})))
    result = read(write(tmp_path, rows))
    assert [r.dtype for r in result.runs] == ["bf16", "fp16", "fp32", "fp64", None]


def test_the_same_case_with_its_config_keys_in_another_order_has_the_same_key(tmp_path):
    a = read(write(tmp_path, [row(extra_benchmark_config_str='{"B": 8, "T": 2048}')], name="a.csv"))
    b = read(write(tmp_path, [row(extra_benchmark_config_str='{"T": 2048, "B": 8}')], name="b.csv"))
    assert a.runs[0].configuration == b.runs[0].configuration
    assert a.runs[0].upstream_id == b.runs[0].upstream_id


def test_an_implementation_per_provider_and_kernel_liger_versioned_and_the_baselines_named(tmp_path):
    rows = [row(kernel_provider=p, liger_version="0.6.0") for p in ("liger", "huggingface", "torch", "torch_compile", "liger_tiled")]
    rows += [row(kernel_name="layer_norm", kernel_provider="liger", liger_version="0.2.1", gpu_name="NVIDIA A100-SXM4-80GB"),
             row(kernel_name="layer_norm", kernel_provider="liger", liger_version="0.6.0")]
    result = read(write(tmp_path, rows))
    by_key = {i.key: i for i in result.implementations}
    assert set(by_key) == {"liger/rms_norm@0.6.0", "huggingface/rms_norm", "torch/rms_norm", "torch_compile/rms_norm",
                           "liger_tiled/rms_norm@0.6.0", "liger/layer_norm@0.2.1", "liger/layer_norm@0.6.0"}
    assert by_key["liger/rms_norm@0.6.0"].version == "0.6.0" and by_key["liger/rms_norm@0.6.0"].licence == "BSD-2-Clause"
    assert by_key["huggingface/rms_norm"].version is None and by_key["huggingface/rms_norm"].licence is None
    # HuggingFace is the baseline where it was measured; torch, measured beside it, is then a candidate
    assert {k for k, i in by_key.items() if i.role == "baseline"} == {"huggingface/rms_norm"}
    assert by_key["torch_compile/rms_norm"].role == "candidate" and by_key["torch/rms_norm"].role == "candidate"
    assert by_key["huggingface/rms_norm"].project == "huggingface"
    assert [r.implementation for r in result.runs][:2] == ["liger/rms_norm@0.6.0", "huggingface/rms_norm"]


def test_torch_is_the_baseline_of_a_kernel_huggingface_never_measured(tmp_path):
    rows = [row(kernel_name="swiglu", kernel_provider=p) for p in ("liger", "torch", "torch_compile")]
    rows += [row(kernel_provider=p) for p in ("liger", "huggingface", "torch")]
    by_key = {i.key: i for i in read(write(tmp_path, rows)).implementations}
    assert {k for k, i in by_key.items() if i.role == "baseline"} == {"torch/swiglu", "huggingface/rms_norm"}
    assert SPEEDUP_BASELINES == ("huggingface", "torch")  # HuggingFace where measured, else torch (issue 25)


# --- refusals -----------------------------------------------------------------------------------------

BAD_ROWS = {
    "non-numeric figure": (row(y_value_50="fast"), "y_value_50", "non-numeric"),
    "NaN figure": (row(y_value_80="nan"), "y_value_80", "not a finite number"),
    "figure of zero": (row(y_value_20="0"), "y_value_20", "not above zero"),
    "percentiles out of order": (row(y_value_20="0.7"), "y_value_20", "out of order"),
    "missing figure": (row(y_value_50=""), "y_value_50", "missing"),
    "unknown GPU": (row(gpu_name="NVIDIA H999"), "gpu_name", "unknown GPU"),
    "look-alike GPU": (row(gpu_name="NVIDIA Н100 80GB HBM3"), "gpu_name", "look-alike"),
    "unknown metric": (row(metric_name="throughput"), "metric_name", "unknown metric"),
    "unknown unit": (row(metric_unit="furlongs"), "metric_unit", "unknown unit"),
    "memory in GB": (row(metric_name="memory", metric_unit="GB"), "metric_unit", "unknown unit"),
    "latency in MB": (row(metric_unit="MB"), "metric_unit", "unknown unit"),
    "bad JSON": (row(extra_benchmark_config_str="{B: 8"), "extra_benchmark_config_str", "bad JSON"),
    "NaN in JSON": (row(extra_benchmark_config_str='{"eps": NaN}'), "extra_benchmark_config_str", "bad JSON"),
    "JSON not an object": (row(extra_benchmark_config_str="[8, 2048]"), "extra_benchmark_config_str", "not an object"),
    "unknown dtype": (row(extra_benchmark_config_str='{"dtype": "torch.float8_e4m3fn"}'), "extra_benchmark_config_str.dtype", "unknown dtype"),
    "config contradicts the sweep": (row(extra_benchmark_config_str='{"H": 4096}'), "extra_benchmark_config_str.H", "sweeps it"),
    "integer parameter not an axis name": (row(extra_benchmark_config_str='{"num heads": 8}'), "extra_benchmark_config_str.num heads", "not an identifier"),
    "x_value not an integer": (row(x_value="llama-8b"), "x_value", "not an integer"),
    "x_value a fraction": (row(x_value="1.5"), "x_value", "not an integer"),
    "x_name not an identifier": (row(x_name="hidden size"), "x_name", "not an identifier"),
    "missing kernel": (row(kernel_name=""), "kernel_name", "missing"),
    "missing mode": (row(kernel_operation_mode=""), "kernel_operation_mode", "missing"),
    "kernel not a name": (row(kernel_name="rms norm/../x"), "kernel_name", "not a name"),
    "bad timestamp": (row(timestamp="yesterday"), "timestamp", "not a date"),
    "timestamp after the snapshot": (row(timestamp="2026-07-01 00:00:00"), "timestamp", "after the file's observed date"),
    "bad version": (row(liger_version="0.6 beta"), "liger_version", "not a version"),
}


@pytest.mark.parametrize("case", list(BAD_ROWS))
def test_a_bad_row_is_one_counted_refusal_naming_file_line_and_field(tmp_path, case):
    bad, field, words = BAD_ROWS[case]
    path = write(tmp_path, [row(x_value="512"), bad, row(x_value="4096")])
    result = read(path)
    assert result.summary.lines["rows"] == 3 and result.summary.read["rows"] == 2
    (refusal,) = result.summary.refused
    assert refusal.where.file == path.name and refusal.where.line == 3 and refusal.where.table == "rows"
    assert refusal.key == field
    assert words in refusal.reason
    assert path.name in str(refusal) and "line 3" in str(refusal)
    assert [r.where.line for r in result.runs] == [2, 4]


def test_an_x_value_written_as_a_whole_float_binds_the_integer(tmp_path):
    result = read(write(tmp_path, [row(x_value="1024.0")]))
    assert result.runs[0].bindings["H"] == 1024


def test_a_row_with_too_few_or_too_many_fields_is_refused(tmp_path):
    path = tmp_path / "short.csv"
    good = [row()[h] for h in HEADER]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerow(good[:9])
        w.writerow([*good, "extra"])
        w.writerow(good)
    result = read(path)
    assert [(r.where.line, r.key) for r in result.summary.refused] == [(2, "y_value_20"), (3, None)]
    assert result.summary.read["rows"] == 1


def test_a_row_holding_bytes_that_are_not_utf8_is_refused_not_the_file(tmp_path):
    path = write(tmp_path, [row(), row(x_value="2048")])
    data = path.read_bytes().replace(b"NVIDIA H100 80GB HBM3,2026-06-01 12:00:00,0.6.0\r\n", b"NVIDIA H100 80GB HBM3,2026-06-01 12:00:00,0.6\xff\r\n", 1)
    path.write_bytes(data)
    result = read(path)
    (refusal,) = result.summary.refused
    assert refusal.where.line == 2 and refusal.key == "liger_version" and "UTF-8" in refusal.reason


def test_blank_lines_are_counted_and_a_bom_is_no_part_of_the_header(tmp_path):
    path = write(tmp_path, [row()])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes() + b"\r\n")
    result = read(path)
    assert result.summary.read["rows"] == 1 and result.summary.skipped["blank lines"] == 1


@pytest.mark.parametrize("column", REQUIRED_COLUMNS)
def test_a_header_without_a_required_column_is_one_clear_error(tmp_path, column):
    header = [h for h in HEADER if h != column]
    path = write(tmp_path, [row()], header=header)
    with pytest.raises(IngestFatal) as caught:
        read_liger(path, revision="r", observed=OBSERVED)
    assert path.name in str(caught.value) and repr(column) in str(caught.value)


def test_the_x_label_column_may_be_absent(tmp_path):
    result = read(write(tmp_path, [row()], header=[h for h in HEADER if h != "x_label"]))
    assert len(result.runs) == 1


def test_an_empty_file_is_one_clear_error(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(IngestFatal, match="empty.csv"):
        read_liger(path, revision="r", observed=OBSERVED)


def test_an_exact_repeat_is_refused_and_the_first_kept(tmp_path):
    result = read(write(tmp_path, [row(), row(x_value="2048"), row()]))
    assert [r.where.line for r in result.runs] == [2, 3]
    (refusal,) = result.summary.refused
    assert refusal.where.line == 4 and "repeat of line 2" in refusal.reason


def test_two_rows_stating_one_run_with_different_figures_are_both_refused(tmp_path):
    # Liger's own key: kernel, provider, mode, metric, x_name, x_value, config, GPU (not the version or time)
    result = read(write(tmp_path, [row(), row(x_value="2048"), row(y_value_50="0.55", timestamp="2026-06-02 00:00:00")]))
    assert [r.where.line for r in result.runs] == [3]
    assert sorted(r.where.line for r in result.summary.refused) == [2, 4]
    assert all("neither is taken" in r.reason for r in result.summary.refused)


def test_the_same_point_on_another_gpu_or_for_another_provider_is_another_run(tmp_path):
    result = read(write(tmp_path, [row(), row(gpu_name="NVIDIA A100-SXM4-80GB"), row(kernel_provider="huggingface"),
                                   row(metric_name="memory", metric_unit="MB")]))
    assert len(result.runs) == 4 and not result.summary.refused


def test_two_kernel_and_mode_pairs_that_would_share_one_workload_key_are_not_merged(tmp_path):
    result = read(write(tmp_path, [row(kernel_name="rms-norm", kernel_operation_mode="forward"),
                                   row(kernel_name="rms", kernel_operation_mode="norm-forward")]))
    assert [w.key for w in result.workloads] == ["rms-norm-forward"] and len(result.runs) == 1
    (refusal,) = result.summary.refused
    assert refusal.where.line == 3 and refusal.key == "kernel_operation_mode"


def test_the_catalogue_names_are_read_from_the_seed(tmp_path):
    names = catalogue_gpu_names()
    assert "nvidia h100 80gb hbm3" in names and "nvidia geforce rtx 3090" in names
    only_a100 = read_liger(write(tmp_path, [row(), row(gpu_name="NVIDIA A100-SXM4-80GB")]), revision="r", observed=OBSERVED,
                           gpu_names=frozenset({"nvidia a100-sxm4-80gb"}))
    assert [r.hardware for r in only_a100.runs] == ["NVIDIA A100-SXM4-80GB"]
    assert [r.key for r in only_a100.summary.refused] == ["gpu_name"]


# --- the shared files -----------------------------------------------------------------------------------

needs_shared = pytest.mark.skipif(not SHARED_LIGER.is_dir(), reason="../shared/sources/liger-kernel is not present")


def raw_rows(name: str) -> list[dict[str, str]]:
    with (SHARED_LIGER / name).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def natural_key(r: dict[str, str]) -> tuple[str, ...]:
    """Liger's unique key, computed here from the raw row."""
    config = json.dumps(json.loads(r["extra_benchmark_config_str"]), sort_keys=True)
    return (r["kernel_name"], r["kernel_provider"], r["kernel_operation_mode"], r["metric_name"], r["x_name"], r["x_value"], config, r["gpu_name"])


@needs_shared
@pytest.mark.parametrize("name", list(SHARED_FILES))
def test_a_shared_file_every_row_read_and_counted_as_the_raw_file_counts(name):
    revision, observed = SHARED_FILES[name]
    raw = raw_rows(name)
    result = read_liger(SHARED_LIGER / name, revision=revision, observed=observed)
    summary = result.summary
    assert summary.accounted() and not summary.refused
    assert summary.lines["rows"] == summary.read["rows"] == len(raw) == len(result.runs)
    metric = {"speed": "latency", "memory": "memory"}
    assert Counter(r.protocol.metric for r in result.runs) == Counter(metric[r["metric_name"]] for r in raw)
    assert Counter(r.hardware for r in result.runs) == Counter(r["gpu_name"] for r in raw)
    assert len(result.workloads) == len({(r["kernel_name"], r["kernel_operation_mode"]) for r in raw})
    liger = {r["kernel_provider"] for r in raw if r["kernel_provider"].startswith("liger")}
    assert len(result.implementations) == len({(r["kernel_provider"], r["kernel_name"], r["liger_version"] if r["kernel_provider"] in liger else "")
                                               for r in raw})
    assert all(r.route == name and r.route_date == observed for r in result.runs)


@needs_shared
@pytest.mark.parametrize("name", list(SHARED_FILES))
def test_a_shared_files_figures_are_the_raw_rows(name):
    revision, observed = SHARED_FILES[name]
    raw = raw_rows(name)
    result = read_liger(SHARED_LIGER / name, revision=revision, observed=observed)
    by_line = {r.where.line: r for r in result.runs}
    # the first, a middle and the last row, and the first memory row (DictReader: row i is on line i + 2, no
    # quoted newlines in these files)
    first_memory = next(i for i, r in enumerate(raw) if r["metric_name"] == "memory")
    for i in (0, len(raw) // 2, len(raw) - 1, first_memory):
        r, run = raw[i], by_line[i + 2]
        assert run.figure is not None
        assert (run.figure.value, run.figure.low, run.figure.high) == tuple(float(r[c]) for c in ("y_value_50", "y_value_20", "y_value_80"))
        assert run.hardware == r["gpu_name"]
        assert run.workload == f"{r['kernel_name']}-{r['kernel_operation_mode']}"
        assert run.bindings[r["x_name"]] == int(r["x_value"])
        assert run.observed_at == datetime.fromisoformat(r["timestamp"]).replace(tzinfo=UTC)
        assert run.software["liger_kernel"] == r["liger_version"]


@needs_shared
def test_between_the_shared_files_upstream_replaced_96_rows_with_72_re_measured_ones():
    (old_name, (old_rev, old_date)), (new_name, (new_rev, new_date)) = SHARED_FILES.items()
    old_raw = {natural_key(r): r for r in raw_rows(old_name)}
    new_raw = {natural_key(r): r for r in raw_rows(new_name)}
    old = read_liger(SHARED_LIGER / old_name, revision=old_rev, observed=old_date)
    new = read_liger(SHARED_LIGER / new_name, revision=new_rev, observed=new_date)
    old_ids = {r.upstream_id for r in old.runs}
    new_ids = {r.upstream_id for r in new.runs}
    assert len(old_ids) == len(old.runs) and len(new_ids) == len(new.runs)  # the key is unique in each file
    removed, added = old_raw.keys() - new_raw.keys(), new_raw.keys() - old_raw.keys()
    assert len(old_ids - new_ids) == len(removed) and len(new_ids - old_ids) == len(added)
    changed = [k for k in old_raw.keys() & new_raw.keys() if old_raw[k] != new_raw[k]]
    figures = {r.upstream_id: (r.figure, r.implementation, r.observed_at) for r in old.runs}
    assert sum(1 for r in new.runs if r.upstream_id in figures and figures[r.upstream_id] != (r.figure, r.implementation, r.observed_at)) == len(changed)
    # The README's account of the change: 96 rows of one kernel out, 72 re-measured ones of it in
    kernels_out = {k[0] for k in removed}
    assert len(removed) == 96 and len(kernels_out) == 1
    assert sum(1 for k in added if k[0] in kernels_out) == 72
