"""Liger-Kernel's published benchmark results (linkedin/Liger-Kernel, benchmark/data/all_benchmark_data.csv),
read into typed parts: nothing here touches the database.

A row is one figure of Liger's harness (benchmark/scripts/utils.py): a kernel (`kernel_name`) in an
operation mode (forward, backward, or full: forward and backward together), by a provider (liger and its
variants, huggingface, torch, torch_compile, megatron, ...), at one point of a sweep (`x_name` =
`x_value`) under fixed extra parameters (`extra_benchmark_config_str`, JSON), on a GPU named as
`torch.cuda.get_device_name` names it. `speed` rows are triton.testing.do_bench latencies in ms and
`memory` rows peak `max_memory_allocated` of repeated calls in MB (2**20 bytes); both state the median
with the 20th and 80th percentiles (Liger's QUANTILES = [0.5, 0.2, 0.8]).

What becomes what:
- a workload per (kernel_name, kernel_operation_mode), keyed "<kernel>-<mode>"; its axes are the
  swept `x_name`s and the integer parameters of the config. An axis is constant (with its value) only
  where every row of the workload states that one integer for it and never sweeps it; otherwise it is
  variable, bound by each configuration. The file names no tensors: no inputs or outputs.
- a configuration per distinct case: `x_name` = `x_value` plus the whole config. Its key is the case
  as stated (the config's keys sorted, values in JSON), so the same case has the same key in every
  revision of the file. Its bindings are the integers; `dtype` ("torch.bfloat16") is its dtype ("bf16");
  every other parameter that is not an integer (strings such as hidden_act or sweep_dim, floats such as
  eps, booleans, nulls) is kept as stated in the configuration's `stated` and in the workload's
  description, never turned into an axis or guessed into a number.
- an implementation per provider and kernel ("<provider>/<kernel>"): a provider's implementation of
  that kernel. Liger's own providers (liger, liger_tiled, liger_rms_norm, ...) are code of the Liger
  version the row names, so their key and version carry it ("liger/rms_norm@0.2.1"); the others are
  not versioned by the file. Every run also keeps the Liger version of the harness in its software.
- a run per row, with the figure (median, 20th and 80th percentiles as such) under its protocol.

Refused, each counted with file, line and field, never guessed: a missing or non-numeric figure
(upstream writes NaN for a missing one), a figure not above zero or percentiles out of order, an
unknown metric or unit, a GPU not in the hardware catalogue, a config that is not a JSON object, an x
value that is not an integer, an unknown dtype, and a row stated twice (Liger's own key: kernel,
provider, mode, metric, x_name, x_value, config, GPU). A header without a required column is one
IngestFatal naming the file and the column.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from kernelindex.ingest.errors import IngestFatal
from kernelindex.ingest.sources.parts import (
    STORED_UNIT,
    Axis,
    ConfigurationPart,
    Figure,
    ImplementationPart,
    Metric,
    ProtocolPart,
    ReadSummary,
    RunPart,
    SourcePart,
    Where,
    WorkloadPart,
)
from kernelindex.rules.dtypes import DTYPE_BYTES, normalise_dtype
from kernelindex.rules.names import axis_name_problem, hardware_key, hardware_name_problem

SUITE = "liger-kernel"
SOURCE_KEY = "liger-kernel"
TABLE = "rows"  # the summary's table for the file's data rows
BLANK = "blank lines"  # counted and skipped: a blank line states nothing

SOURCE_NAME = "Liger-Kernel"
SOURCE_URL = "https://github.com/linkedin/Liger-Kernel"
LICENCE = "BSD-2-Clause"
TERMS = "BSD-2-Clause: a copy keeps Liger-Kernel's copyright notice, its conditions and its disclaimer"
ATTRIBUTION = "LinkedIn Liger-Kernel (benchmark/data/all_benchmark_data.csv)"

# The columns every row needs; x_label only words the sweep in the description.
REQUIRED_COLUMNS = (
    "kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit", "x_name",
    "x_value", "y_value_50", "y_value_20", "y_value_80", "extra_benchmark_config_str", "gpu_name", "timestamp",
    "liger_version",
)
OPTIONAL_COLUMNS = ("x_label",)

# The baseline of a speedup: the first of these providers measured for the same workload,
# configuration, metric and GPU (issue 25: HuggingFace where it was measured, else torch). Computing
# speedups is the pipeline's; this says which run divides.
SPEEDUP_BASELINES: tuple[str, ...] = ("huggingface", "torch")

# Liger's metric names, the index's metric for each, and the units each may come in with the factor
# to the stored unit (STORED_UNIT). Memory comes only in MB: Liger's MB is 2**20 bytes, and a "GB" or
# "KB" could be decimal or binary, so any other memory unit is refused rather than converted by a guess.
METRICS: dict[str, Metric] = {"speed": "latency", "memory": "memory"}
UNITS: dict[Metric, dict[str, float]] = {
    "latency": {"ms": 1.0, "s": 1000.0, "us": 1e-3, "ns": 1e-6},
    "memory": {"MB": 1.0},
}
QUANTILES = (0.2, 0.8)  # what y_value_20 and y_value_80 are

_QUANTILE_NOTE = (
    "Liger-Kernel's harness states three quantiles of its samples, QUANTILES = [0.5, 0.2, 0.8]: the "
    "figure is the median (y_value_50), with the 20th (y_value_20) and 80th (y_value_80) percentiles "
    "as such (not a p5/p95 interval). Modes: forward, backward (of a retained graph), full (forward "
    "and backward)."
)
PROTOCOLS: dict[Metric, ProtocolPart] = {
    "latency": ProtocolPart(
        name="Liger-Kernel benchmark (speed)", version="1", metric="latency", statistic="median",
        unit=STORED_UNIT["latency"], harness="Liger-Kernel benchmark (triton.testing.do_bench)",
        timer="triton.testing.do_bench", comparator=None, family="liger-kernel-benchmark",
        notes=_QUANTILE_NOTE,
    ),
    "memory": ProtocolPart(
        name="Liger-Kernel benchmark (memory)", version="1", metric="memory", statistic="median",
        unit=STORED_UNIT["memory"], harness="Liger-Kernel benchmark (_test_memory)",
        timer="torch.cuda.max_memory_allocated", comparator=None, family="liger-kernel-benchmark",
        notes=_QUANTILE_NOTE + " The samples are the peak memory allocated in each of repeated calls, in MB of 2**20 bytes.",
    ),
}

# The hardware catalogue the GPU names must be in (the seed's; the pipeline resolves them to SKUs).
HARDWARE_JSON = Path(__file__).resolve().parents[3] / "seeds" / "hardware.json"

# Liger's timestamp (time.strftime("%Y-%m-%d %H:%M:%S") on the benchmark machine) states no zone: it
# is read as UTC, and a row dated more than this after the file's observed date is refused.
TIMESTAMP_GRACE = timedelta(days=1)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")  # kernel, provider and mode: they make keys
_VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z.+\-_]*$")
_MAX_NAME = 200
_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # bytes that were not UTF-8, kept by surrogateescape


@lru_cache(maxsize=8)
def catalogue_gpu_names(path: Path = HARDWARE_JSON) -> frozenset[str]:
    """Every name the hardware catalogue answers to (each SKU and its driver product names), under
    names-v1's hardware_key, as the pipeline's hardware index matches them."""
    entries = json.loads(path.read_text(encoding="utf-8"))["hardware"]
    names: set[str] = set()
    for entry in entries:
        for name in (entry["sku"], *(entry.get("driver_product_names") or ())):
            names.add(hardware_key(name))
    return frozenset(names)


@dataclass
class LigerRead:
    """What one file holds, as parts, and the summary that accounts for each of its rows."""

    source: SourcePart
    revision: str  # the upstream commit the file is a snapshot of
    observed: date  # the date of that snapshot (route_date of every run)
    workloads: list[WorkloadPart]
    configurations: list[ConfigurationPart]
    implementations: list[ImplementationPart]
    runs: list[RunPart]
    summary: ReadSummary
    # The stated non-integer parameters of each configuration, by (workload key, configuration key).
    stated: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Row:
    """A row that passed every check, before it is turned into parts."""

    where: Where
    raw: tuple[str, ...]
    kernel: str
    provider: str
    mode: str
    metric: Metric
    x_name: str
    x_label: str | None
    x_value: int
    config: dict[str, Any]
    bindings: dict[str, int]
    stated: dict[str, Any]
    dtype: str | None
    figure: Figure
    gpu: str
    observed_at: datetime
    version: str
    workload: str  # "<kernel>-<mode>"
    configuration: str  # case_key
    implementation: str  # implementation_key
    # Liger's own key of a row (update_benchmark_data_csv's create_unique_key), the config in one
    # spelling: a later row with this key replaces an earlier one upstream.
    upstream_key: tuple[str, ...]


class _Refused(Exception):
    def __init__(self, key: str, reason: str):
        super().__init__(reason)
        self.key = key
        self.reason = reason


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> str:
    """One spelling of a JSON value: keys sorted, no spaces."""
    if type(value) is int:  # most values: the same text, without the encoder's cost
        return str(value)
    return _CANONICAL.encode(value)


def case_key(x_name: str, x_value: int, config: dict[str, Any]) -> str:
    """A configuration's key: the swept value, then the config as stated, keys sorted
    ("V=4096;B=8;T=2048"; a non-integer value in JSON: 'dtype="torch.bfloat16"', "E=null")."""
    return ";".join([f"{x_name}={x_value}", *(f"{k}={canonical_json(config[k])}" for k in sorted(config))])


def is_liger_provider(provider: str) -> bool:
    """Liger's own implementations (liger, liger_tiled, liger_rms_norm, ...): versioned by the row."""
    return provider == "liger" or provider.startswith(("liger_", "liger-"))


def implementation_key(provider: str, kernel: str, version: str) -> str:
    key = f"{provider}/{kernel}"
    return f"{key}@{version}" if is_liger_provider(provider) else key


def liger_dtype(value: Any) -> str:
    """A config's dtype ("torch.bfloat16") in the index's spelling ("bf16"); an unknown one is refused."""
    if not isinstance(value, str):
        raise _Refused("extra_benchmark_config_str.dtype", f"dtype {value!r} is not a dtype name")
    name = value.strip()
    name = name.removeprefix("torch.")
    spelled = normalise_dtype(name)
    if spelled is None or spelled not in DTYPE_BYTES:
        raise _Refused("extra_benchmark_config_str.dtype", f"an unknown dtype {value!r}")
    return spelled


def _number(text: str, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _Refused(column, f"a non-numeric figure {text[:40]!r}") from None
    if not math.isfinite(value):
        raise _Refused(column, f"a figure that is not a finite number ({text[:40]!r}: upstream writes NaN for a missing one)")
    if value <= 0:
        raise _Refused(column, f"a figure not above zero ({text[:40]!r})")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise _Refused("x_value", f"x_value {text[:40]!r} is not an integer: it cannot bind the axis") from None
    if not math.isfinite(value) or value != int(value):
        raise _Refused("x_value", f"x_value {text[:40]!r} is not an integer: it cannot bind the axis")
    return int(value)


def _name(value: str, column: str) -> str:
    if not _NAME.match(value) or len(value) > _MAX_NAME:
        raise _Refused(column, f"{column} {value[:60]!r} is not a name (letters, digits, '_', '-', '.')")
    return value


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _timestamp(text: str, observed: date) -> datetime:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise _Refused("timestamp", f"timestamp {text[:40]!r} is not a date and time (YYYY-MM-DD HH:MM:SS)") from None
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    latest = datetime(observed.year, observed.month, observed.day, tzinfo=UTC) + timedelta(days=1) + TIMESTAMP_GRACE
    if when >= latest:
        raise _Refused("timestamp", f"timestamp {text!r} is after the file's observed date {observed.isoformat()}")
    return when


def _parse(values: dict[str, str], where: Where, raw: tuple[str, ...], observed: date,
           gpu_problem: Callable[[str], str | None]) -> _Row:
    """The row's checked values, or _Refused naming the first field at fault."""
    if _NOT_UTF8.search("".join(raw)):
        column = next(c for c, v in values.items() if _NOT_UTF8.search(v))
        raise _Refused(column, f"{column} is not UTF-8 text")
    for column in REQUIRED_COLUMNS:
        if not values[column].strip():
            raise _Refused(column, f"missing {column}")
    kernel = _name(values["kernel_name"], "kernel_name")
    provider = _name(values["kernel_provider"], "kernel_provider")
    mode = _name(values["kernel_operation_mode"], "kernel_operation_mode")

    metric = METRICS.get(values["metric_name"])
    if metric is None:
        raise _Refused("metric_name", f"an unknown metric {values['metric_name'][:40]!r} (known: {', '.join(METRICS)})")
    unit = values["metric_unit"]
    factor = UNITS[metric].get(unit)
    if factor is None:
        raise _Refused("metric_unit", f"an unknown unit {unit[:40]!r} for {values['metric_name']} (known: {', '.join(UNITS[metric])})")

    x_name = values["x_name"]
    bad = axis_name_problem(x_name)
    if bad:
        raise _Refused("x_name", bad)
    x_value = _integer(values["x_value"].strip())

    text = values["extra_benchmark_config_str"]
    try:
        config = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise _Refused("extra_benchmark_config_str", f"bad JSON ({exc})") from None
    if config is None:  # json.dumps(None): the benchmark states no extra parameters
        config = {}
    if not isinstance(config, dict):
        raise _Refused("extra_benchmark_config_str", f"the config is a JSON {type(config).__name__}, not an object")
    bindings: dict[str, int] = {x_name: x_value}
    stated: dict[str, Any] = {}
    dtype = None
    for key, value in config.items():
        if key == "dtype":
            dtype = liger_dtype(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            bad = axis_name_problem(key)
            if bad:
                raise _Refused(f"extra_benchmark_config_str.{key[:40]}", bad)
            if bindings.setdefault(key, value) != value:
                raise _Refused(f"extra_benchmark_config_str.{key}", f"the config binds {key}={value}, the row sweeps it at {x_value}")
        else:
            stated[key] = value

    median = _number(values["y_value_50"], "y_value_50") * factor
    low = _number(values["y_value_20"], "y_value_20") * factor
    high = _number(values["y_value_80"], "y_value_80") * factor
    if not low <= median <= high:
        raise _Refused("y_value_20", f"percentiles out of order: 20th {low:g}, median {median:g}, 80th {high:g}")

    gpu = values["gpu_name"]
    bad = gpu_problem(gpu)
    if bad:
        raise _Refused("gpu_name", bad)

    version = values["liger_version"].strip()
    if not _VERSION.match(version) or len(version) > _MAX_NAME:
        raise _Refused("liger_version", f"liger_version {version[:40]!r} is not a version")

    return _Row(
        where=where, raw=raw, kernel=kernel, provider=provider, mode=mode, metric=metric, x_name=x_name,
        x_label=(values.get("x_label") or "").strip() or None, x_value=x_value, config=config, bindings=bindings,
        stated=stated, dtype=dtype, figure=Figure(value=median, low=low, high=high, quantiles=QUANTILES), gpu=gpu,
        observed_at=_timestamp(values["timestamp"].strip(), observed), version=version,
        workload=f"{kernel}-{mode}", configuration=case_key(x_name, x_value, config),
        implementation=implementation_key(provider, kernel, version),
        upstream_key=(kernel, provider, mode, values["metric_name"], x_name, str(x_value), canonical_json(config), gpu),
    )


def _gpu_problem(gpu: str, gpus: Collection[str]) -> str | None:
    """Why a GPU name is refused: a look-alike of a name, or a name not in the catalogue."""
    bad = hardware_name_problem(gpu)
    if bad is None and hardware_key(gpu) not in gpus:
        bad = f"an unknown GPU {gpu[:80]!r} (not in the hardware catalogue)"
    return bad


def _records(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(first line, fields) of each CSV record. Bytes that are not UTF-8 are kept as surrogates, so
    the row holding them is refused, not the file."""
    text = path.read_bytes().decode("utf-8", "surrogateescape").removeprefix("\ufeff")
    reader = csv.reader(io.StringIO(text, newline=""))
    start = 1
    for fields in reader:
        yield start, fields
        start = reader.line_num + 1


def read_liger(path: Path, *, revision: str, observed: date, gpu_names: Collection[str] | None = None) -> LigerRead:
    """Read one all_benchmark_data.csv. `gpu_names` (hardware keys) defaults to the catalogue's
    (catalogue_gpu_names()). Raises IngestFatal only where the file has no usable header."""
    gpus = catalogue_gpu_names() if gpu_names is None else gpu_names
    name = path.name
    summary = ReadSummary(file=name)
    try:
        records = _records(path)
        first = next(records, None)
    except OSError as exc:
        raise IngestFatal(f"{path}: cannot read it: {exc.strerror or exc}") from exc
    if first is None:
        raise IngestFatal(f"{name}: the file is empty: a Liger-Kernel benchmark CSV starts with its header")
    header = [h.strip() for h in first[1]]
    for column in REQUIRED_COLUMNS:
        if column not in header:
            raise IngestFatal(f"{name}: line 1: the header has no column {column!r} (a Liger-Kernel benchmark CSV has {', '.join(REQUIRED_COLUMNS)})")
    repeated = sorted({h for h in header if header.count(h) > 1 and h in REQUIRED_COLUMNS + OPTIONAL_COLUMNS})
    if repeated:
        raise IngestFatal(f"{name}: line 1: the header names column {repeated[0]!r} twice")

    answers: dict[str, str | None] = {}  # a file names a few GPUs thousands of times

    def gpu_problem(gpu: str) -> str | None:
        if gpu not in answers:
            answers[gpu] = _gpu_problem(gpu, gpus)
        return answers[gpu]

    rows: list[_Row] = []
    for line, fields in records:
        if not fields or (len(fields) == 1 and not fields[0].strip()):
            summary.lines[BLANK] += 1
            summary.skipped[BLANK] += 1
            continue
        where = Where(name, line, TABLE)
        summary.lines[TABLE] += 1
        if len(fields) != len(header):
            missing = header[len(fields)] if len(fields) < len(header) else None
            summary.refuse(where, missing, f"the row has {len(fields)} fields, the header {len(header)}")
            continue
        values = dict(zip(header, fields, strict=True))
        try:
            rows.append(_parse(values, where, tuple(fields), observed, gpu_problem))
        except _Refused as exc:
            summary.refuse(where, exc.key, exc.reason)

    rows = _without_repeats(rows, summary)
    # A workload key names one (kernel, mode): "a-b" + "c" and "a" + "b-c" would share one.
    named: dict[str, tuple[str, str]] = {}
    kept: list[_Row] = []
    for row in rows:
        other = named.setdefault(row.workload, (row.kernel, row.mode))
        if other != (row.kernel, row.mode):
            summary.refuse(row.where, "kernel_operation_mode",
                           f"workload key {row.workload!r} is already kernel {other[0]!r} in mode {other[1]!r}")
            continue
        kept.append(row)
    summary.read[TABLE] += len(kept)

    source = SourcePart(key=SOURCE_KEY, name=SOURCE_NAME, kind="benchmark", url=SOURCE_URL, licence=LICENCE,
                        terms=TERMS, attribution=ATTRIBUTION, where=Where(name, 1, TABLE))
    configurations, stated = _configurations(kept)
    return LigerRead(
        source=source, revision=revision, observed=observed, workloads=_workloads(kept),
        configurations=configurations, implementations=_implementations(kept),
        runs=[_run(row, name, observed) for row in kept], summary=summary, stated=stated,
    )


def _without_repeats(rows: list[_Row], summary: ReadSummary) -> list[_Row]:
    """Rows under one upstream key: an exact repeat is refused as such (the first kept); rows that
    state different figures for one key are all refused, since which is right would be a guess."""
    by_key: dict[tuple[str, ...], list[_Row]] = defaultdict(list)
    for row in rows:
        by_key[row.upstream_key].append(row)
    dropped: set[int] = set()
    for same in by_key.values():
        if len(same) == 1:
            continue
        first = same[0]
        if all(r.raw == first.raw for r in same):
            for r in same[1:]:
                summary.refuse(r.where, None, f"a repeat of line {first.where.line}")
                dropped.add(id(r))
            continue
        lines = [r.where.line for r in same]
        for r in same:
            others = ", ".join(str(n) for n in lines if n != r.where.line)
            summary.refuse(r.where, None, f"states the same run as line {others} with other values; neither is taken")
            dropped.add(id(r))
    return [r for r in rows if id(r) not in dropped]


def _describe(values: list[Any]) -> str:
    return " or ".join(canonical_json(v) for v in values)


def _workloads(rows: list[_Row]) -> list[WorkloadPart]:
    by_workload: dict[str, list[_Row]] = {}
    for row in rows:
        by_workload.setdefault(row.workload, []).append(row)
    parts = []
    for key, group in by_workload.items():
        first = group[0]
        swept: dict[str, None] = {}
        sweeps: dict[str, set[str]] = defaultdict(set)
        names: dict[str, None] = {}
        for row in group:
            swept.setdefault(row.x_name)
            if row.x_label:
                sweeps[row.x_name].add(row.x_label)
            for k in row.bindings:
                names.setdefault(k)
        axes = []
        for axis in [*swept, *(n for n in names if n not in swept)]:
            values = {row.bindings.get(axis) for row in group}
            if axis not in swept and len(values) == 1 and None not in values:
                axes.append(Axis(axis, "constant", values.pop()))
            else:
                axes.append(Axis(axis, "variable"))
        stated: dict[str, list[Any]] = {}
        dtypes: dict[str, None] = {}
        for row in group:
            for k, v in row.stated.items():
                seen = stated.setdefault(k, [])
                if v not in seen:
                    seen.append(v)
            if "dtype" in row.config:
                dtypes.setdefault(str(row.config["dtype"]))
        mode = {"forward": "the forward pass", "backward": "the backward pass (of a retained graph)",
                "full": "the forward and backward passes"}.get(first.mode, f"mode {first.mode!r}")
        sweep_words = "; ".join(f"{x} ({', '.join(sorted(sweeps[x]))})" if sweeps[x] else x for x in swept)
        description = f"Liger-Kernel's benchmark of {first.kernel}, {mode}, swept over {sweep_words}."
        if dtypes:
            description += f" dtype as stated: {' or '.join(dtypes)}."
        if stated:
            description += " Other parameters as stated: " + "; ".join(f"{k}={_describe(v)}" for k, v in stated.items()) + "."
        parts.append(WorkloadPart(
            suite=SUITE, key=key, title=f"{first.kernel} ({first.mode})", family=first.kernel,
            reference=f"Liger-Kernel benchmark {first.kernel} ({first.mode})", aliases=(), inputs=(), outputs=(),
            axes=tuple(axes), mutates=None, deterministic=None, digest=None, description=description, where=first.where,
        ))
    return parts


def _configurations(rows: list[_Row]) -> tuple[list[ConfigurationPart], dict[tuple[str, str], dict[str, Any]]]:
    parts: dict[tuple[str, str], ConfigurationPart] = {}
    stated: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row.workload, row.configuration)
        if key in parts:
            continue
        title = ", ".join([*(f"{k}={v}" for k, v in row.bindings.items()), *([f"dtype={row.dtype}"] if row.dtype else []),
                           *(f"{k}={canonical_json(v)}" for k, v in row.stated.items())])
        parts[key] = ConfigurationPart(suite=SUITE, workload=row.workload, key=row.configuration, bindings=dict(row.bindings),
                                       dtype=row.dtype, title=title, where=row.where)
        stated[key] = dict(row.stated)
    return list(parts.values()), stated


def _implementations(rows: list[_Row]) -> list[ImplementationPart]:
    # The baseline of each kernel: the first of SPEEDUP_BASELINES it was measured with (HuggingFace where
    # it was, else torch); the other is a candidate like any provider, so a cohort has one baseline.
    measured: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        measured[row.kernel].add(row.provider)
    baseline = {kernel: next((p for p in SPEEDUP_BASELINES if p in providers), None) for kernel, providers in measured.items()}
    parts: dict[str, ImplementationPart] = {}
    for row in rows:
        key = row.implementation
        if key in parts:
            continue
        liger = is_liger_provider(row.provider)
        parts[key] = ImplementationPart(
            key=key,
            title=f"{row.kernel} ({row.provider}, Liger-Kernel {row.version})" if liger else f"{row.kernel} ({row.provider})",
            authors=(), project=row.provider, licence=LICENCE if liger else None, language=None, framework=None,
            role="baseline" if row.provider == baseline[row.kernel] else "candidate", target_architectures=(),
            source_url=SOURCE_URL if liger else None, source_available=True if liger else None, artifact_digest=None,
            artifact_bytes=None, version=row.version if liger else None, where=row.where,
        )
    return list(parts.values())


def _run(row: _Row, route: str, observed: date) -> RunPart:
    return RunPart(
        suite=SUITE, workload=row.workload, configuration=row.configuration, bindings=dict(row.bindings), dtype=row.dtype,
        implementation=row.implementation, hardware=row.gpu, vendor=None, architecture=None,
        software={"liger_kernel": row.version}, protocol=PROTOCOLS[row.metric], status="passed", failure_reason=None,
        figure=row.figure, correctness=None, observed_at=row.observed_at, source=SOURCE_KEY, route=route,
        route_date=observed, upstream_id=canonical_json(list(row.upstream_key)), source_speedup=None, where=row.where,
    )
