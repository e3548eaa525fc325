"""kernelindex.com catalogue exports (`catalog-YYYY-MM-DD-<hex>.jsonl.zst`, format kernelindex.dev/v1alpha1),
read into typed parts: nothing is written and nothing is decided here.

An export is a snapshot of the whole public catalogue: one `{"table": …, "row": {…}}` per line, rows of
`sources`, `projects`, `operations` (+ `operation_aliases`), `workloads` (the cases), `implementations`,
`artifacts`, `benchmark_runs` (+ their `measurements`) and `record_events`. Rows refer to each other by
the export's ids, so the whole file is read before any part is made, and a row is made into parts only
once every row it names is known.

What the export states becomes parts as stated:
- a source's licence, terms and attribution come from its `policy` (SOL-ExecBench states none);
- an operation is a workload of the suite its runs come from: the suite is the source of the runs on
  its cases; an operation with no such run takes the source of the runs of its implementations; one with
  neither takes the source whose `policy.url` its own `sourceRefs` lie under. An operation measured by
  several sources is a workload of each (the same key in each suite), so every run lands in its own
  source's suite. An operation none of these name is refused: its suite is not stated.
- a case is a configuration: its axes are the bindings, its dtype the primary dtype (PRIMARY_DTYPE_RULE);
  a `WorkloadSuite` (a leaderboard's set of cases measured as one figure) binds nothing itself and
  lists its cases;
- an implementation is a baseline when the export files it as one (BASELINE_RULE), else a candidate;
- a run's latency is converted ns → ms and its score kept in s, with the statistic as stated; the run's
  other measurements of the same metric give min, max and std (and the mean, when the headline is not
  the mean); a failed run (any status but `passed`) keeps its own word as the reason and has no figure.
- `record_events` are kernelindex.com's opinion of which run holds a record: skipped, counted. So are
  the format's tables the index does not model (serving runs, model revisions: KNOWN_UNMODELLED); a
  table the format is not known to carry is refused line by line, naming the field `table`.

Bad input is refused, counted and named (file, line, field), never a crash and never a guessed value: a
line that is not JSON or not a {table, row} object, a row missing a required field or with one of the
wrong type, a format other than kernelindex.dev/v1alpha1, an unknown unit, statistic or status, a row
naming an id the export does not hold (or holds only as a refused row). A `.zst` that does not
decompress to its end is one error, `ExportUnreadable`.
"""

from __future__ import annotations

import gc
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, NoReturn, cast

import msgspec
import zstandard

from kernelindex.ingest.sources.parts import (
    METRICS,
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
    Tensor,
    Where,
    WorkloadPart,
)

FORMAT = "kernelindex.dev/v1alpha1"
ROUTE_NAME = re.compile(r"^catalog-(\d{4}-\d{2}-\d{2})-([0-9a-f]+)\.jsonl(?:\.zst)?$")
# The pseudo-table of a line that names no table (not JSON, or not a {table, row} object).
NO_TABLE = "(no table)"
# Tables read into parts (or into the parts of other tables: projects, artifacts, aliases, measurements).
MODELLED = (
    "sources", "projects", "artifacts", "operations", "operation_aliases", "workloads", "implementations",
    "benchmark_runs", "measurements",
)
# Tables of the format this reader knows and does not model: skipped, their lines counted. record_events is
# kernelindex.com's opinion of who holds a record (our records come from our rules); serving runs and model
# revisions are the format's later growth, named here as the format documents them. Any other table is not
# one the format is known to carry: each of its lines is a refusal naming file, line and field (`table`),
# so --strict writes nothing and a newer format is noticed, never guessed at.
KNOWN_UNMODELLED = ("record_events", "serving_runs", "model_revisions")
# Each metric's units and the factor (numerator, denominator) to its stored unit: integers, so that
# 49509 ns is 0.049509 ms and not 0.049509000000000004.
UNITS: dict[Metric, dict[str, tuple[int, int]]] = {
    "latency": {"ns": (1, 1_000_000), "us": (1, 1_000), "µs": (1, 1_000), "ms": (1, 1), "s": (1_000, 1)},
    "score": {"s": (1, 1), "ms": (1, 1_000), "us": (1, 1_000_000), "ns": (1, 1_000_000_000)},
    "memory": {"MB": (1, 1)},
}
# The statistics a figure can hold: a headline statistic, or the spread beside it.
STATISTICS = frozenset({"mean", "median", "min", "max", "std", "geomean", "unspecified"})
# The statuses of the BenchmarkRun schema: every one but `passed` is a failure, named by its word.
FAILURE_STATUSES = frozenset({
    "incorrect_shape", "incorrect_dtype", "incorrect_numerical", "compile_error", "runtime_error", "timeout",
    "resource_exceeded", "invalid_reference", "policy_violation", "suspected_reward_hack", "incomplete_evidence",
    "revoked",
})
DETERMINISM = {"deterministic": True, "nondeterministic": False, "non_deterministic": False, "unspecified": None}
BASELINE_WORD = re.compile(r"\bbaselines?\b", re.IGNORECASE)
# The words the export uses for "not stated".
UNSTATED = frozenset({"unknown", "unspecified", ""})

PRIMARY_DTYPE_RULE = (
    "the dtype of the operation's first tensor input, as the case states it (else as the operation states it)"
)
BASELINE_RULE = (
    "its project is filed as baselines (the word 'baseline' in the project's slug or name), or its source "
    "reference lies under a `baseline` folder (FlashInfer-Bench's solutions/baseline/)"
)


class ExportUnreadable(Exception):
    """The export cannot be read at all (a corrupt or truncated .zst, an unreadable file): nothing is read."""


@dataclass
class ExportRead:
    """Everything one export states, as parts, with the summary that accounts for each of its lines."""

    route: str  # the export's file name
    route_date: date | None  # the date in its name
    revision: str | None  # the hex revision in its name
    sources: list[SourcePart] = field(default_factory=list)
    workloads: list[WorkloadPart] = field(default_factory=list)
    configurations: list[ConfigurationPart] = field(default_factory=list)
    implementations: list[ImplementationPart] = field(default_factory=list)
    runs: list[RunPart] = field(default_factory=list)
    summary: ReadSummary = field(default_factory=lambda: ReadSummary(file=""))


class _Refused(Exception):
    """A row refused: the field at fault and why (caught per row, counted, never past the reader)."""

    def __init__(self, key: str | None, reason: str) -> None:
        super().__init__(reason)
        self.key = key
        self.reason = reason


def _refuse(key: str | None, reason: str) -> NoReturn:
    raise _Refused(key, reason)


_MISSING = object()


def _get(obj: dict[str, Any], path: str, kind: type | tuple[type, ...], *, required: bool = True, where: str = "") -> Any:
    """The value at a dotted path of a row, of the given type; None where optional and absent or null."""
    if "." in path:
        value: Any = obj
        for part in path.split("."):
            value = value.get(part, _MISSING) if value.__class__ is dict else _MISSING
            if value is _MISSING:
                break
    else:
        value = obj.get(path, _MISSING)
    if value is _MISSING or value is None:
        if required:
            _refuse(f"{where}{path}", "missing" if value is _MISSING else "null where a value is required")
        return None
    # bool is an int to Python; to a schema it is not a number.
    if not isinstance(value, kind) or (value.__class__ is bool and kind is not bool):
        _refuse(f"{where}{path}", f"{type(value).__name__} where {_kind_name(kind)} is required")
    return value


def _dig(obj: Any, *keys: str) -> Any:
    """The value under nested keys, or None where any level is absent or not an object: for the
    cross-references read before rows are checked, which must not fail on a row that is refused later."""
    for key in keys:
        if obj.__class__ is not dict:
            return None
        obj = obj.get(key)
    return obj


def _text(obj: Any, *keys: str) -> str | None:
    value = _dig(obj, *keys)
    return value if isinstance(value, str) else None


def _urls(refs: Any) -> list[str]:
    """The urls of a metadata's sourceRefs, where it lists any."""
    return [url for r in refs if isinstance(url := _dig(r, "url"), str)] if isinstance(refs, list) else []


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "a string", int: "an integer", float: "a number", dict: "an object", list: "a list", bool: "a boolean"}
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def _stated(value: str | None) -> str | None:
    """None for the export's words for "not stated" ("unknown", "unspecified")."""
    return None if value is None or value in UNSTATED else value


def _convert(value: float, metric: Metric, unit: str, key: str) -> float:
    factor = UNITS[metric].get(unit)
    if factor is None:
        _refuse(key, f"unknown unit {unit!r} for {metric} (known: {', '.join(UNITS[metric])})")
    numerator, denominator = factor
    return value * numerator / denominator if numerator != 1 else value / denominator


def _check_format(row: dict[str, Any], *paths: str) -> None:
    """Refuse a row (or a manifest in it) that states a format other than this reader's."""
    for path in paths:
        stated = _get(row, path, str, required=False)
        if stated is not None and stated != FORMAT:
            _refuse(path, f"format {stated!r}, not {FORMAT}")


def _timestamp(text: str, key: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        _refuse(key, f"not an ISO 8601 time: {text!r}")
    if moment.tzinfo is None:
        _refuse(key, f"a time without its zone: {text!r}")
    return moment


def route_of(path: Path) -> tuple[date | None, str | None]:
    """The date and revision an export's file name states (`catalog-2026-08-16-94af2ae7.jsonl.zst`)."""
    match = ROUTE_NAME.match(path.name)
    if not match:
        return None, None
    try:
        return date.fromisoformat(match.group(1)), match.group(2)
    except ValueError:
        return None, match.group(2)


def read_bytes(path: Path) -> bytes:
    """The export's JSON Lines: a `.zst` decompressed to the end of its last frame, else the file as is."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ExportUnreadable(f"{path}: cannot be read ({error.strerror or error})") from error
    if path.suffix != ".zst":
        return data
    out: list[bytes] = []
    rest = data
    try:
        # stream_reader() returns what it could of a truncated frame without a word; a decompressobj says
        # whether it reached the frame's end.
        while True:
            decompressor = zstandard.ZstdDecompressor().decompressobj()
            out.append(decompressor.decompress(rest))
            if not decompressor.eof:
                raise ExportUnreadable(
                    f"{path}: truncated zstd data (the stream ends inside a frame after {sum(map(len, out)):,} "
                    f"bytes of output); nothing was read")
            rest = decompressor.unused_data
            if not rest:
                break
    except zstandard.ZstdError as error:
        raise ExportUnreadable(f"{path}: not valid zstd data ({error}); nothing was read") from error
    return b"".join(out)


@dataclass
class _Op:
    """An operation row, parsed, before its suites are known."""

    id: str
    key: str
    title: str
    family: str | None
    language: str | None  # the reference's language, where the definition names one
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    axes: tuple[Axis, ...]
    mutates: tuple[str, ...] | None
    deterministic: bool | None
    digest: str | None
    description: str | None
    refs: tuple[str, ...]
    where: Where
    aliases: list[str] = field(default_factory=list)
    suites: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Project:
    name: str
    slug: str


@dataclass
class _Case:
    id: str
    op: _Op
    bindings: dict[str, int]
    dtype: str | None
    title: str | None
    cases: tuple[dict[str, int], ...]
    where: Where


@dataclass
class _Measurement:
    line: int
    run_id: str
    metric: Metric
    statistic: str
    value: float  # in the metric's stored unit
    samples: int | None


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name
        self.route_date, self.revision = route_of(path)
        self.summary = ReadSummary(file=str(path))
        self.out = ExportRead(route=self.name, route_date=self.route_date, revision=self.revision, summary=self.summary)
        self.rows: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
        self._ids: dict[str, set[str]] = {}  # the ids each table holds, refused rows included
        self._measurement_lines: list[tuple[int, str]] = []  # each valid measurement's line and run id

    def where(self, line: int, table: str) -> Where:
        return Where(self.name, line, table)

    def refuse(self, line: int, table: str, key: str | None, reason: str) -> None:
        self.summary.refuse(self.where(line, table), key, reason)

    # -- lines ------------------------------------------------------------------------------------------

    def split(self, data: bytes) -> None:
        lines = data.split(b"\n")
        if lines and not lines[-1].strip():
            lines.pop()  # the end of the last line, not a line
        decode = msgspec.json.decode
        for number, raw in enumerate(lines, start=1):
            try:
                obj = decode(raw)
            except msgspec.DecodeError as error:
                self.summary.lines[NO_TABLE] += 1
                what = "a blank line" if not raw.strip() else f"not JSON ({error})"
                self.refuse(number, NO_TABLE, None, what)
                continue
            table = obj.get("table") if isinstance(obj, dict) else None
            if not isinstance(table, str) or not table or "row" not in obj:
                self.summary.lines[NO_TABLE] += 1
                self.refuse(number, NO_TABLE, "table" if not isinstance(table, str) or not table else "row",
                            "not a {\"table\": …, \"row\": {…}} object")
                continue
            self.summary.lines[table] += 1
            row = obj["row"]
            if table in KNOWN_UNMODELLED:
                continue  # skipped unread, whatever it holds (counted in read())
            if table not in MODELLED:
                self.refuse(number, table, "table", f"unknown table {table!r}: not a {FORMAT} table this reader knows "
                            f"(it reads {', '.join(MODELLED)} and skips {', '.join(KNOWN_UNMODELLED)})")
                continue
            if not isinstance(row, dict):
                self.refuse(number, table, "row", f"{type(row).__name__} where an object is required")
                continue
            self.rows[table].append((number, row))

    def each(self, table: str) -> Iterable[tuple[int, dict[str, Any]]]:
        """The rows of a table, each with its line; a row whose id repeats an earlier one is refused."""
        seen: dict[str, int] = {}
        for line, row in self.rows.get(table, ()):
            row_id = row.get("id")
            if isinstance(row_id, str) and row_id in seen:
                self.refuse(line, table, "id", f"id {row_id} repeats line {seen[row_id]}")
                continue
            if isinstance(row_id, str):
                seen[row_id] = line
            yield line, row

    def read(self) -> ExportRead:
        self.split(read_bytes(self.path))
        sources = self.read_sources()
        projects = self.read_projects()
        artifacts = self.read_artifacts()
        ops = self.read_operations()
        self.read_aliases(ops)
        cases_by_id = self.read_case_rows(ops)
        implementations = self.read_implementation_rows(ops, projects, artifacts)
        measurements = self.read_measurement_rows()
        self.assign_suites(ops, cases_by_id, implementations, sources)
        self.emit_workloads(ops)
        self.emit_configurations(cases_by_id)
        self.read_runs(sources, cases_by_id, implementations, measurements)
        for table, count in self.summary.lines.items():
            if table in KNOWN_UNMODELLED:
                self.summary.skipped[table] += count - self.summary.refused_by_table[table]
        return self.out

    # -- sources, projects, artifacts ------------------------------------------------------------------------

    def read_sources(self) -> dict[str, str]:
        """Each source as a part; its id → its slug."""
        slugs: dict[str, str] = {}
        for line, row in self.each("sources"):
            try:
                slug = _get(row, "slug", str)
                policy = _get(row, "policy", dict, required=False) or {}
                part = SourcePart(
                    key=slug, name=_get(row, "name", str), kind=_get(row, "kind", str, required=False),
                    url=_get(policy, "url", str, required=False, where="policy."),
                    licence=_get(policy, "license", str, required=False, where="policy."),
                    terms=_get(policy, "terms", str, required=False, where="policy."),
                    attribution=_get(policy, "attribution", str, required=False, where="policy."),
                    where=self.where(line, "sources"),
                )
                row_id = _get(row, "id", str)
            except _Refused as refused:
                self.refuse(line, "sources", refused.key, refused.reason)
                continue
            slugs[row_id] = slug
            self.out.sources.append(part)
            self.summary.read["sources"] += 1
        return slugs

    def read_projects(self) -> dict[str, _Project]:
        """Each project by id (read into the implementations that name it)."""
        projects: dict[str, _Project] = {}
        for line, row in self.each("projects"):
            try:
                projects[_get(row, "id", str)] = _Project(_get(row, "name", str), _get(row, "slug", str, required=False) or "")
            except _Refused as refused:
                self.refuse(line, "projects", refused.key, refused.reason)
                continue
            self.summary.read["projects"] += 1
        return projects

    def read_artifacts(self) -> dict[str, tuple[int | None, str | None]]:
        """Each artifact's content digest → its size and licence (read into implementations)."""
        artifacts: dict[str, tuple[int | None, str | None]] = {}
        for line, row in self.each("artifacts"):
            try:
                digest = _get(row, "contentDigest", str)
                artifacts[digest] = (_get(row, "sizeBytes", int, required=False), _get(row, "license", str, required=False))
            except _Refused as refused:
                self.refuse(line, "artifacts", refused.key, refused.reason)
                continue
            self.summary.read["artifacts"] += 1
        return artifacts

    # -- operations -----------------------------------------------------------------------------------------

    def read_operations(self) -> dict[str, _Op]:
        ops: dict[str, _Op] = {}
        keys: dict[str, int] = {}
        for line, row in self.each("operations"):
            try:
                _check_format(row, "schemaVersion", "manifest.apiVersion")
                row_id = _get(row, "id", str)
                op = self.operation(line, row)
                if op.key in keys:
                    _refuse("slug", f"slug {op.key} repeats line {keys[op.key]}")
            except _Refused as refused:
                self.refuse(line, "operations", refused.key, refused.reason)
                continue
            ops[row_id], keys[op.key] = op, line
        return ops

    def operation(self, line: int, row: dict[str, Any]) -> _Op:
        spec = _get(row, "manifest.spec", dict)
        meta = _get(row, "manifest.metadata", dict, required=False) or {}
        key = _get(row, "slug", str)
        axes: list[Axis] = []
        for name, axis in (_get(spec, "axes", dict, required=False, where="manifest.spec.") or {}).items():
            at = f"manifest.spec.axes.{name}."
            if not isinstance(axis, dict):
                _refuse(at[:-1], "not an object")
            role = _get(axis, "role", str, where=at)
            if role == "constant":
                axes.append(Axis(name, "constant", value=_get(axis, "value", int, where=at)))
            elif role == "variable":
                axes.append(Axis(name, "variable"))
            elif role == "derived":
                axes.append(Axis(name, "derived", expression=_get(axis, "expression", str, required=False, where=at)))
            else:
                _refuse(f"{at}role", f"unknown axis role {role!r}")
        semantics = _get(spec, "semantics", dict, required=False, where="manifest.spec.") or {}
        mutation = semantics.get("mutation")
        mutates: tuple[str, ...] | None
        if mutation is None:
            mutates = None
        elif mutation == "none":
            mutates = ()
        elif isinstance(mutation, list) and all(isinstance(m, str) for m in mutation):
            mutates = tuple(mutation)
        else:
            _refuse("manifest.spec.semantics.mutation", f"unknown mutation {mutation!r}")
        determinism = semantics.get("determinism")
        if determinism is not None and (not isinstance(determinism, str) or determinism not in DETERMINISM):
            _refuse("manifest.spec.semantics.determinism", f"unknown determinism {determinism!r}")
        reference = _get(spec, "reference", dict, required=False, where="manifest.spec.")
        refs = tuple(_urls(meta.get("sourceRefs")))
        return _Op(
            id=row["id"], key=key, title=_get(meta, "title", str, required=False, where="manifest.metadata.") or _get(row, "name", str, required=False) or key,
            family=_get(row, "family", str, required=False) or _get(spec, "family", str, required=False, where="manifest.spec."),
            language=_get(reference, "language", str, required=False, where="manifest.spec.reference.") if reference else None,
            inputs=self.tensors(spec, "inputs"), outputs=self.tensors(spec, "outputs"), axes=tuple(axes),
            mutates=mutates, deterministic=DETERMINISM.get(determinism) if determinism is not None else None,
            digest=_get(row, "semanticDigest", str, required=False),
            description=_get(meta, "description", str, required=False, where="manifest.metadata."),
            refs=refs, where=self.where(line, "operations"),
        )

    @staticmethod
    def tensors(spec: dict[str, Any], side: str) -> tuple[Tensor, ...]:
        out: list[Tensor] = []
        for i, item in enumerate(_get(spec, side, list, required=False, where="manifest.spec.") or []):
            at = f"manifest.spec.{side}[{i}]."
            if not isinstance(item, dict):
                _refuse(at[:-1], "not an object")
            name = _get(item, "name", str, where=at)
            if "tensor" in item:
                tensor = _get(item, "tensor", dict, where=at)
                shape = _get(tensor, "shape", list, required=False, where=f"{at}tensor.")
                if shape is not None and not all(isinstance(d, (str, int)) and not isinstance(d, bool) for d in shape):
                    _refuse(f"{at}tensor.shape", "an extent that is neither an axis name nor an integer")
                out.append(Tensor(name, _get(tensor, "dtype", str, required=False, where=f"{at}tensor."),
                                  tuple(shape) if shape is not None else None))
            elif "scalar" in item:
                # a scalar is a tensor of no dimensions
                out.append(Tensor(name, _get(item, "scalar.dtype", str, required=False, where=at), ()))
            else:
                _refuse(at[:-1], "neither a tensor nor a scalar")
        return tuple(out)

    def read_aliases(self, ops: dict[str, _Op]) -> None:
        for line, row in self.rows.get("operation_aliases", ()):
            try:
                op_id = _get(row, "operationId", str)
                alias = _get(row, "alias", str)
                if op_id not in ops:
                    _refuse("operationId", self.unknown("operations", op_id))
            except _Refused as refused:
                self.refuse(line, "operation_aliases", refused.key, refused.reason)
                continue
            ops[op_id].aliases.append(alias)
            self.summary.read["operation_aliases"] += 1

    def unknown(self, table: str, row_id: str) -> str:
        """Why a reference to another row fails: the export holds no such row, or holds it refused."""
        if table not in self._ids:
            self._ids[table] = {i for _, r in self.rows.get(table, ()) if isinstance(i := r.get("id"), str)}
        if row_id in self._ids[table]:
            return f"{table} row {row_id} was refused"
        return f"names {table} id {row_id}, which the export does not hold"

    # -- cases, implementations, measurements (before the suites: they say which operation is whose) ---------

    def read_case_rows(self, ops: dict[str, _Op]) -> dict[str, _Case]:
        cases: dict[str, _Case] = {}
        for line, row in self.each("workloads"):
            try:
                _check_format(row, "schemaVersion", "manifest.apiVersion")
                row_id = _get(row, "id", str)
                op_id = _get(row, "operationId", str)
                if op_id not in ops:
                    _refuse("operationId", self.unknown("operations", op_id))
                cases[row_id] = self.case(line, row, ops[op_id])
            except _Refused as refused:
                self.refuse(line, "workloads", refused.key, refused.reason)
        return cases

    def case(self, line: int, row: dict[str, Any], op: _Op) -> _Case:
        spec = _get(row, "manifest.spec", dict)
        meta = _get(row, "manifest.metadata", dict, required=False) or {}
        suite_cases: list[dict[str, int]] = []
        if "cases" in spec:
            # a WorkloadSuite: the source measures its cases as one figure
            for i, member in enumerate(_get(spec, "cases", list, where="manifest.spec.")):
                at = f"manifest.spec.cases[{i}]."
                if not isinstance(member, dict):
                    _refuse(at[:-1], "not an object")
                suite_cases.append(self.bindings(_get(member, "axes", dict, where=at), f"{at}axes"))
            bindings: dict[str, int] = {}
            tensors: dict[str, Any] = {}
        else:
            bindings = self.bindings(_get(spec, "axes", dict, where="manifest.spec."), "manifest.spec.axes")
            tensors = _get(spec, "tensors", dict, required=False, where="manifest.spec.") or {}
        dtype = None
        first = next((t for t in op.inputs if t.shape != ()), None)  # the first tensor input, not a scalar
        if first is not None:
            stated = tensors.get(first.name)
            dtype = stated.get("dtype") if isinstance(stated, dict) and isinstance(stated.get("dtype"), str) else first.dtype
        return _Case(id=row["id"], op=op, bindings=bindings, dtype=dtype,
                     title=_get(meta, "title", str, required=False, where="manifest.metadata."),
                     cases=tuple(suite_cases), where=self.where(line, "workloads"))

    @staticmethod
    def bindings(axes: dict[str, Any], at: str) -> dict[str, int]:
        for name, value in axes.items():
            if not isinstance(value, int) or isinstance(value, bool):
                _refuse(f"{at}.{name}", f"{type(value).__name__} where an integer is required")
        return dict(axes)

    def read_implementation_rows(
        self, ops: dict[str, _Op], projects: dict[str, _Project], artifacts: dict[str, tuple[int | None, str | None]],
    ) -> dict[str, tuple[ImplementationPart, _Op]]:
        out: dict[str, tuple[ImplementationPart, _Op]] = {}
        keys: dict[str, int] = {}
        for line, row in self.each("implementations"):
            try:
                _check_format(row, "manifest.apiVersion")
                row_id = _get(row, "id", str)
                op_id = _get(row, "operationId", str)
                if op_id not in ops:
                    _refuse("operationId", self.unknown("operations", op_id))
                project_id = _get(row, "projectId", str, required=False)
                if project_id is not None and project_id not in projects:
                    _refuse("projectId", self.unknown("projects", project_id))
                part = self.implementation(line, row, ops[op_id], project_id, projects, artifacts)
                if part.key in keys:
                    _refuse("slug", f"slug and implementationDigest repeat line {keys[part.key]}")
            except _Refused as refused:
                self.refuse(line, "implementations", refused.key, refused.reason)
                continue
            out[row_id], keys[part.key] = (part, ops[op_id]), line
        return out

    def implementation(
        self, line: int, row: dict[str, Any], op: _Op, project_id: str | None,
        projects: dict[str, _Project], artifacts: dict[str, tuple[int | None, str | None]],
    ) -> ImplementationPart:
        spec = _get(row, "manifest.spec", dict)
        meta = _get(row, "manifest.metadata", dict, required=False) or {}
        slug = _get(row, "slug", str)
        digest = _get(row, "implementationDigest", str)
        authors = []
        for i, author in enumerate(_get(meta, "authors", list, required=False, where="manifest.metadata.") or []):
            if not isinstance(author, dict):
                _refuse(f"manifest.metadata.authors[{i}]", "not an object")
            name = _get(author, "name", str, required=False, where=f"manifest.metadata.authors[{i}].")
            github = _get(author, "github", str, required=False, where=f"manifest.metadata.authors[{i}].")
            if name or github:
                authors.append(name or f"@{github}")
        source = _get(spec, "source", dict, required=False, where="manifest.spec.") or {}
        artifact_digest = _get(source, "contentDigest", str, required=False, where="manifest.spec.source.")
        artifact_bytes = _get(source, "sizeBytes", int, required=False, where="manifest.spec.source.")
        artifact = artifacts.get(artifact_digest) if artifact_digest else None
        if artifact is not None and artifact[0] is not None:
            if artifact_bytes is not None and artifact_bytes != artifact[0]:
                _refuse("manifest.spec.source.sizeBytes",
                        f"{artifact_bytes} bytes, where the artifact {artifact_digest} is {artifact[0]}")
            artifact_bytes = artifact[0]
        licensing = _get(spec, "licensing", dict, required=False, where="manifest.spec.") or {}
        # The implementation's own licence where it states one, else its source artifact's (GPU MODE's
        # submissions state theirs only on the artifact).
        licence = (_get(row, "licenseExpression", str, required=False)
                   or _get(licensing, "concluded", str, required=False, where="manifest.spec.licensing.")
                   or _get(licensing, "declared", str, required=False, where="manifest.spec.licensing.")
                   or (artifact[1] if artifact else None))
        project = projects[project_id] if project_id is not None else None
        refs = _urls(meta.get("sourceRefs"))
        baseline = (project is not None and BASELINE_WORD.search(f"{project.slug} {project.name}") is not None) or any(
            "/baseline/" in url for url in refs)
        revision = _get(spec, "projectRevision", dict, required=False, where="manifest.spec.") or {}
        architectures = _get(row, "targetArchitectures", list, required=False) or []
        if not all(isinstance(a, str) for a in architectures):
            _refuse("targetArchitectures", "an entry that is not a string")
        return ImplementationPart(
            key=f"{slug}-{digest.removeprefix('sha256:')[:12]}",
            title=_get(row, "title", str, required=False) or _get(meta, "title", str, required=False, where="manifest.metadata.") or slug,
            authors=tuple(authors), project=project.name if project else None, licence=licence,
            language=_stated(_get(row, "language", str, required=False)),
            framework=_stated(_get(row, "framework", str, required=False)),
            role="baseline" if baseline else "candidate",
            target_architectures=tuple(a for a in architectures if _stated(a)),
            source_url=refs[0] if refs else None,
            source_available=_get(row, "sourceAvailable", bool, required=False),
            artifact_digest=artifact_digest, artifact_bytes=artifact_bytes,
            version=(_get(row, "sourceRevision", str, required=False)
                     or _get(revision, "version", str, required=False, where="manifest.spec.projectRevision.")
                     or _get(revision, "commit", str, required=False, where="manifest.spec.projectRevision.")),
            where=self.where(line, "implementations"), workload=op.key,
        )

    def read_measurement_rows(self) -> dict[str, list[_Measurement]]:
        """The valid measurements by run id; their lines are counted once their runs are read."""
        by_run: dict[str, list[_Measurement]] = defaultdict(list)
        for line, row in self.each("measurements"):
            try:
                run_id = _get(row, "runId", str)
                metric = _get(row, "metric", str)
                if metric not in METRICS:
                    _refuse("metric", f"unknown metric {metric!r}")
                statistic = _get(row, "statistic", str)
                if statistic not in STATISTICS:
                    _refuse("statistic", f"unknown statistic {statistic!r}")
                value = _convert(_get(row, "value", (int, float)), metric, _get(row, "unit", str), "unit")
                samples = _get(row, "sampleCount", int, required=False)
            except _Refused as refused:
                self.refuse(line, "measurements", refused.key, refused.reason)
                continue
            by_run[run_id].append(_Measurement(line, run_id, cast(Metric, metric), statistic, value, samples))
            self._measurement_lines.append((line, run_id))
        return by_run

    # -- suites ------------------------------------------------------------------------------------------------

    def assign_suites(
        self, ops: dict[str, _Op], cases: dict[str, _Case], implementations: dict[str, tuple[ImplementationPart, _Op]],
        sources: dict[str, str],
    ) -> None:
        by_cases: dict[str, set[str]] = defaultdict(set)
        by_implementations: dict[str, set[str]] = defaultdict(set)
        for _, run in self.rows.get("benchmark_runs", ()):
            source = sources.get(_text(run, "sourceId") or "")
            if source is None:
                continue  # refused with its run
            case = cases.get(_text(run, "workloadId") or "")
            if case is not None:
                by_cases[case.op.id].add(source)
            implementation = implementations.get(_text(run, "implementationId") or "")
            if implementation is not None:
                by_implementations[implementation[1].id].add(source)
        policy_urls = {part.key: part.url for part in self.out.sources if part.url}
        for op in ops.values():
            suites = by_cases.get(op.id) or by_implementations.get(op.id)
            if not suites:
                suites = {key for key, url in policy_urls.items() if any(ref.startswith(url.rstrip("/") + "/") or ref == url for ref in op.refs)}
            op.suites = tuple(sorted(suites))

    def emit_workloads(self, ops: dict[str, _Op]) -> None:
        self._references = self.references()
        for op in ops.values():
            if not op.suites:
                self.refuse(op.where.line, "operations", "manifest.metadata.sourceRefs",
                            "its suite is not stated: no run on its cases or of its implementations, and no source's "
                            "policy.url covers its sourceRefs")
                continue
            for suite in op.suites:
                stated = sorted(self._references.get((suite, op.id), ()))
                reference = "; ".join(stated) if stated else ("reference implementation" if op.language else None)
                if reference and op.language:
                    reference = f"{reference} ({op.language})"
                self.out.workloads.append(WorkloadPart(
                    suite=suite, key=op.key, title=op.title, family=op.family, reference=reference,
                    aliases=tuple(a for a in op.aliases if a != op.key), inputs=op.inputs, outputs=op.outputs,
                    axes=op.axes, mutates=op.mutates, deterministic=op.deterministic, digest=op.digest,
                    description=op.description, where=op.where,
                ))
            self.summary.read["operations"] += 1

    def references(self) -> dict[tuple[str, str], set[str]]:
        """What each suite's runs of an operation check correctness against, as their protocols name it."""
        out: dict[tuple[str, str], set[str]] = defaultdict(set)
        sources = {_text(r, "id"): _text(r, "slug") for _, r in self.rows.get("sources", ())}
        cases = {_text(r, "id"): _text(r, "operationId") for _, r in self.rows.get("workloads", ())}
        for _, run in self.rows.get("benchmark_runs", ()):
            reference = _text(run, "manifest", "protocol", "spec", "correctness", "reference")
            source, op = sources.get(_text(run, "sourceId")), cases.get(_text(run, "workloadId"))
            if reference is not None and source is not None and op is not None:
                out[(source, op)].add(reference)
        return out

    def emit_configurations(self, cases: dict[str, _Case]) -> None:
        for case in cases.values():
            if not case.op.suites:
                self.refuse(case.where.line, "workloads", "operationId", f"operations row {case.op.id} was refused")
                continue
            for suite in case.op.suites:
                self.out.configurations.append(ConfigurationPart(
                    suite=suite, workload=case.op.key, key=case.id, bindings=case.bindings, dtype=case.dtype,
                    title=case.title, where=case.where, cases=case.cases,
                ))
            self.summary.read["workloads"] += 1

    # -- runs -------------------------------------------------------------------------------------------------

    def read_runs(
        self, sources: dict[str, str], cases: dict[str, _Case], implementations: dict[str, tuple[ImplementationPart, _Op]],
        measurements: dict[str, list[_Measurement]],
    ) -> None:
        for implementation, op in implementations.values():
            if op.suites:
                self.out.implementations.append(implementation)
                self.summary.read["implementations"] += 1
            else:
                self.refuse(implementation.where.line, "implementations", "operationId", f"operations row {op.id} was refused")
        usable = {k: v for k, v in implementations.items() if v[1].suites}
        # A failed run states no metric; its protocol (by digest) does, through the runs that passed under it.
        metrics_of: dict[str, set[str]] = defaultdict(set)
        for _, run in self.rows.get("benchmark_runs", ()):
            key, metric = _text(run, "protocolKey"), _text(run, "primaryMetric")
            if run.get("status") == "passed" and key is not None and metric is not None:
                metrics_of[key].add(metric)
        read_runs: set[str] = set()
        for line, row in self.each("benchmark_runs"):
            try:
                part = self.run(line, row, sources, cases, usable, measurements, metrics_of)
            except _Refused as refused:
                self.refuse(line, "benchmark_runs", refused.key, refused.reason)
                continue
            self.out.runs.append(part)
            self.summary.read["benchmark_runs"] += 1
            read_runs.add(row["id"])
        run_ids = {_text(r, "id") for _, r in self.rows.get("benchmark_runs", ())}
        for line, run_id in self._measurement_lines:
            if run_id in read_runs:
                self.summary.read["measurements"] += 1
            elif run_id in run_ids:
                self.refuse(line, "measurements", "runId", f"benchmark_runs row {run_id} was refused")
            else:
                self.refuse(line, "measurements", "runId", f"names benchmark_runs id {run_id}, which the export does not hold")

    def run(
        self, line: int, row: dict[str, Any], sources: dict[str, str], cases: dict[str, _Case],
        implementations: dict[str, tuple[ImplementationPart, _Op]], measurements: dict[str, list[_Measurement]],
        metrics_of: dict[str, set[str]],
    ) -> RunPart:
        _check_format(row, "manifest.run.apiVersion", "manifest.protocol.apiVersion", "manifest.environment.apiVersion")
        run_id = _get(row, "id", str)
        source_id = _get(row, "sourceId", str)
        if source_id not in sources:
            _refuse("sourceId", self.unknown("sources", source_id))
        case_id = _get(row, "workloadId", str)
        if case_id not in cases or not cases[case_id].op.suites:
            _refuse("workloadId", self.unknown("workloads", case_id))
        implementation_id = _get(row, "implementationId", str)
        if implementation_id not in implementations:
            _refuse("implementationId", self.unknown("implementations", implementation_id))
        source, case, implementation = sources[source_id], cases[case_id], implementations[implementation_id][0]
        spec = _get(row, "manifest.run.spec", dict)
        native = _get(spec, "sourceNative", dict, required=False, where="manifest.run.spec.") or {}
        native_source = _get(native, "source", str, required=False, where="manifest.run.spec.sourceNative.")
        if native_source is not None and native_source != source:
            _refuse("manifest.run.spec.sourceNative.source", f"{native_source!r}, where the run's sourceId is {source!r}")
        status = _get(row, "status", str)
        if status != "passed" and status not in FAILURE_STATUSES:
            _refuse("status", f"unknown status {status!r}")
        protocol_spec = _get(row, "manifest.protocol.spec", dict)
        protocol_meta = _get(row, "manifest.protocol.metadata", dict, required=False) or {}
        harness = _get(protocol_spec, "harness", dict, required=False, where="manifest.protocol.spec.") or {}
        measurement = _get(protocol_spec, "measurement", dict, required=False, where="manifest.protocol.spec.") or {}
        correctness = _get(protocol_spec, "correctness", dict, required=False, where="manifest.protocol.spec.") or {}
        comparability = _get(protocol_spec, "comparability", dict, required=False, where="manifest.protocol.spec.") or {}
        protocol_key = _get(row, "protocolKey", str, required=False)

        figure: Figure | None = None
        if status == "passed":
            metric = _get(row, "primaryMetric", str)
            if metric not in METRICS:
                _refuse("primaryMetric", f"unknown metric {metric!r}")
            statistic = _get(row, "primaryStatistic", str)
            if statistic not in STATISTICS:
                _refuse("primaryStatistic", f"unknown statistic {statistic!r}")
            figure = self.figure(row, cast(Metric, metric), statistic, measurements.get(run_id, []), spec)
        else:
            stated = metrics_of.get(protocol_key or "", set()) & set(METRICS)
            metric = _get(row, "primaryMetric", str, required=False) or ""
            if metric not in METRICS:
                if len(stated) != 1:
                    _refuse("primaryMetric", f"a failed run whose metric ({metric!r}) no passed run of its protocol states")
                metric = next(iter(stated))
            statistic = _get(measurement, "primaryStatistic", str, required=False, where="manifest.protocol.spec.measurement.") or "unspecified"
        protocol_statistic = _get(measurement, "primaryStatistic", str, required=False, where="manifest.protocol.spec.measurement.") or statistic
        if protocol_statistic not in STATISTICS:
            _refuse("manifest.protocol.spec.measurement.primaryStatistic", f"unknown statistic {protocol_statistic!r}")
        protocol = ProtocolPart(
            name=_get(protocol_meta, "name", str, required=False, where="manifest.protocol.metadata.")
            or _get(harness, "name", str, where="manifest.protocol.spec.harness."),
            version=_get(harness, "version", str, required=False, where="manifest.protocol.spec.harness.") or "",
            metric=cast(Metric, metric), statistic=protocol_statistic, unit=STORED_UNIT[cast(Metric, metric)],
            harness=_get(harness, "name", str, required=False, where="manifest.protocol.spec.harness."),
            timer=_stated(_get(measurement, "timer", str, required=False, where="manifest.protocol.spec.measurement.")),
            comparator=_get(correctness, "comparator", str, required=False, where="manifest.protocol.spec.correctness."),
            family=_get(comparability, "family", str, required=False, where="manifest.protocol.spec.comparability."),
            notes=_get(comparability, "notes", str, required=False, where="manifest.protocol.spec.comparability."),
            reference=_get(correctness, "reference", str, required=False, where="manifest.protocol.spec.correctness."),
            digest=protocol_key,
        )
        observed = _timestamp(_get(row, "observedAt", str), "observedAt")
        hardware = _get(row, "hardwareModel", str)
        if not hardware.strip():
            _refuse("hardwareModel", "empty")
        metrics = _get(native, "metrics", dict, required=False, where="manifest.run.spec.sourceNative.") or {}
        source_metrics = {}
        for name, value in metrics.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                _refuse(f"manifest.run.spec.sourceNative.metrics.{name}", f"{type(value).__name__} where a number is required")
            source_metrics[name] = float(value)
        run_correctness = _get(spec, "correctness", dict, required=False, where="manifest.run.spec.")
        return RunPart(
            suite=source, workload=case.op.key, configuration=case.id, bindings=case.bindings, dtype=case.dtype,
            implementation=implementation.key, hardware=hardware,
            vendor=_stated(_get(row, "hardwareVendor", str, required=False)),
            architecture=_stated(_get(row, "hardwareArchitecture", str, required=False)),
            software=self.software(row), protocol=protocol,
            status="passed" if status == "passed" else "failed", failure_reason=None if status == "passed" else status,
            figure=figure, correctness=dict(run_correctness) if run_correctness else None, observed_at=observed,
            source=source, route=self.name, route_date=self.route_date, upstream_id=run_id,
            source_speedup=source_metrics.get("speedup_factor"), where=self.where(line, "benchmark_runs"),
            source_metrics=source_metrics,
        )

    @staticmethod
    def figure(row: dict[str, Any], metric: Metric, statistic: str, measured: list[_Measurement], spec: dict[str, Any]) -> Figure:
        value = _convert(_get(row, "primaryValue", (int, float)), metric, _get(row, "primaryUnit", str), "primaryUnit")
        stats: dict[str, _Measurement] = {}
        for m in measured:
            if m.metric != metric:
                continue
            earlier = stats.get(m.statistic)
            if earlier is not None and earlier.value != m.value:
                _refuse("measurements", f"two {metric} {m.statistic} measurements that disagree (lines {earlier.line} and {m.line})")
            stats[m.statistic] = m
        primary = stats.get(statistic)
        if primary is not None and not _same(primary.value, value):
            _refuse("primaryValue", f"{value} {STORED_UNIT[metric]}, where its measurement (line {primary.line}) states {primary.value}")
        samples = (primary.samples if primary is not None else None) or _get(row, "sampleCount", int, required=False)
        if samples is None and isinstance(spec.get("timing"), dict):
            samples = _get(spec["timing"], "samples", int, required=False, where="manifest.run.spec.timing.")

        def stat(name: str) -> float | None:
            return stats[name].value if name in stats and name != statistic else None

        return Figure(value=value, min=stat("min"), max=stat("max"), std=stat("std"),
                      mean=stat("mean") if statistic != "mean" else None, samples=samples)

    @staticmethod
    def software(row: dict[str, Any]) -> dict[str, str]:
        """What the run states of its software: the summary, CUDA's major version, the toolkit, the
        framework and libraries with their versions, and the runner's labels (GPU MODE's torch build)."""
        out: dict[str, str] = {}
        summary = row.get("environmentSummary")
        if isinstance(summary, str) and summary:
            out["summary"] = summary
        for key, name in (("cudaMajor", "cuda"), ("driverMajor", "driver")):
            value = row.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                out[name] = str(value)
        software = _dig(row, "manifest", "environment", "spec", "software")
        if isinstance(software, dict):
            if isinstance(software.get("cudaToolkit"), str):
                out["cuda_toolkit"] = software["cudaToolkit"]
            framework = software.get("framework")
            if isinstance(framework, dict) and isinstance(framework.get("name"), str) and isinstance(framework.get("version"), str):
                out[framework["name"]] = framework["version"]
            libraries = software.get("libraries")
            if isinstance(libraries, dict):
                out.update({k: v for k, v in libraries.items() if isinstance(v, str) and k not in out})
        labels = _dig(row, "manifest", "run", "metadata", "labels")
        if isinstance(labels, dict):
            out.update({k: v for k, v in labels.items() if isinstance(v, str) and k not in out})
        return out


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)


def read_export(path: Path) -> ExportRead:
    """Read one catalogue export (`.jsonl.zst` or `.jsonl`) into parts; every line is accounted for in
    the summary by table. Raises ExportUnreadable only where the file cannot be read at all."""
    # The file's ~40k rows are a few million small dicts and lists, none in a cycle: the cyclic collector
    # would scan them again and again as they are made, half the time of the read, and free nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _Reader(Path(path)).read()
    finally:
        if collecting:
            gc.enable()


__all__ = ["BASELINE_RULE", "FORMAT", "NO_TABLE", "PRIMARY_DTYPE_RULE", "ExportRead", "ExportUnreadable", "read_export", "route_of"]
