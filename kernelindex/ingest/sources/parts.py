"""The typed parts a source adapter yields: what a source states, as it states it, with where.

An adapter (kernelindex.ingest.sources.<name>) only reads its input: it checks each line or row, turns
what it holds into these parts, and counts or refuses the rest (`Refusal`, naming file, line and
field). It decides nothing the index's rules decide: no records, no speedups, no verdicts (a source's
own opinions, such as its record events or its own speedup, are kept as the source's). The pipeline
resolves the parts against the catalogue and writes them.

Figures keep their metric, statistic and unit as the source states them (latency in ms after the
unit is converted, peak memory in MB, a source's own score in its unit): a latency median is never
stored as a mean, a 20th percentile never as a p5.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

Metric = Literal["latency", "memory", "score"]
METRICS: tuple[Metric, ...] = ("latency", "memory", "score")
# The unit each metric's figures are stored in, once converted.
STORED_UNIT: dict[Metric, str] = {"latency": "ms", "memory": "MB", "score": "s"}


@dataclass(frozen=True)
class Where:
    """Where a part was stated: the file and the line (or row) in it, and the table it belongs to."""

    file: str
    line: int
    table: str

    def __str__(self) -> str:
        return f"{self.file}: line {self.line} ({self.table})"


@dataclass(frozen=True)
class Refusal:
    """A line or row refused: where, the field at fault, and why. Counted, never a crash."""

    where: Where
    key: str | None
    reason: str

    def __str__(self) -> str:
        key = f" [{self.key}]" if self.key else ""
        return f"{self.where}{key}: {self.reason}"


@dataclass(frozen=True)
class SourcePart:
    """An upstream source of timings (e.g. GPU MODE KernelBot) with its terms, as the route states them."""

    key: str  # the source's own slug ("gpumode-kernelbot")
    name: str  # "GPU MODE KernelBot"
    kind: str | None  # "leaderboard", "benchmark", ...
    url: str | None
    licence: str | None
    terms: str | None
    attribution: str | None
    where: Where


@dataclass(frozen=True)
class Tensor:
    """An input or output as the source declares it: dtype and symbolic shape (axis names or integers)."""

    name: str
    dtype: str | None
    shape: tuple[str | int, ...] | None  # None: the source gives no shape


@dataclass(frozen=True)
class Axis:
    """An axis of a definition: constant (with its value), variable (bound by each configuration), or
    derived from other axes by an expression the source states ("k // 128")."""

    name: str
    role: Literal["constant", "variable", "derived"]
    value: int | None = None
    expression: str | None = None  # a derived axis's expression, as the source writes it


@dataclass(frozen=True)
class WorkloadPart:
    """A workload of a suite, named by the suite's own name, with its semantics as the source states them.

    `reference` says what the workload's reference is, in the source's words (there may be no PyTorch
    module). `semantics` is None where the source gives no definition."""

    suite: str  # the suite this workload belongs to ("flashinfer-bench", "liger-kernel")
    key: str  # the suite's own name for it, unique in the suite
    title: str
    family: str | None
    reference: str | None
    aliases: tuple[str, ...]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    axes: tuple[Axis, ...]
    mutates: tuple[str, ...] | None  # inputs written in place, where stated
    deterministic: bool | None
    digest: str | None  # the source's own digest of the definition, where it gives one
    description: str | None
    where: Where

    def semantics(self) -> dict[str, Any]:
        """The definition in the index's semantics shape (the shape a traced KernelBench problem has:
        inputs and outputs with name, dtype and shape; axes with their behaviour and a constant's
        value; determinism; constraints), marked as stated by the source, not traced."""
        def tensor(t: Tensor) -> dict[str, Any]:
            return {"name": t.name, "dtype": t.dtype or "unspecified", "shape": list(t.shape) if t.shape is not None else []}

        constraints = []
        if self.mutates:
            constraints.append(f"Mutates {', '.join(self.mutates)} in place")
        elif self.mutates is not None:
            constraints.append("No mutation or aliasing")
        determinism = {True: "deterministic", False: "nondeterministic"}.get(self.deterministic, "unspecified")  # type: ignore[arg-type]
        return {
            "stated": True,
            "inputs": [tensor(t) for t in self.inputs],
            "outputs": [tensor(t) for t in self.outputs],
            "axes": [{"name": a.name, "behaviour": a.role, **({"value": a.value} if a.value is not None else {}),
                      **({"expression": a.expression} if a.expression is not None else {})} for a in self.axes],
            "determinism": determinism,
            "constraints": constraints,
        }


@dataclass(frozen=True)
class ConfigurationPart:
    """A configuration of a workload: its axes bound (and its dtype), under the source's own case id.

    A source may measure a suite of cases as one figure (GPU MODE's leaderboard score, a geometric mean
    over its cases; SOL-ExecBench's suite mean): such a configuration binds no axes itself and lists
    each case's bindings in `cases`, in the source's order."""

    suite: str
    workload: str  # WorkloadPart.key
    key: str  # the source's own id of the case
    bindings: dict[str, int]
    dtype: str | None
    title: str | None
    where: Where
    cases: tuple[dict[str, int], ...] = ()  # a suite's cases, each with its bindings; () for one case


@dataclass(frozen=True)
class ImplementationPart:
    """An implementation as the source describes it."""

    key: str  # a slug, unique in the route
    title: str
    authors: tuple[str, ...]
    project: str | None
    licence: str | None
    language: str | None
    framework: str | None
    role: Literal["baseline", "candidate"]
    target_architectures: tuple[str, ...]
    source_url: str | None
    source_available: bool | None
    artifact_digest: str | None  # the source artifact's content digest ("sha256:…"), where given
    artifact_bytes: int | None
    version: str | None  # the implementation's own revision or package version, where given
    where: Where
    workload: str | None = None  # WorkloadPart.key of the operation it states it implements, where stated


@dataclass(frozen=True)
class ProtocolPart:
    """How the source measured: the harness, its timer and statistic, its correctness comparator, the
    family of protocols within which its figures compare."""

    name: str
    version: str
    metric: Metric
    statistic: str  # as stated: "mean", "median", "geomean", "unspecified", ...
    unit: str  # the stored unit (STORED_UNIT[metric])
    harness: str | None
    timer: str | None
    comparator: str | None
    family: str | None  # the comparability family, as the source names it
    notes: str | None
    reference: str | None = None  # what correctness is checked against, in the source's words
    digest: str | None = None  # the source's own digest of the protocol, where it gives one


@dataclass(frozen=True)
class Figure:
    """A run's headline figure in its protocol's stored unit, with the spread the source states."""

    value: float
    low: float | None = None  # a stated lower quantile (Liger: the 20th percentile)
    high: float | None = None  # a stated upper quantile (Liger: the 80th percentile)
    quantiles: tuple[float, float] | None = None  # which quantiles low and high are (0.2, 0.8)
    min: float | None = None
    max: float | None = None
    std: float | None = None
    mean: float | None = None  # the mean too, when the headline statistic is not the mean but it is stated
    samples: int | None = None


@dataclass(frozen=True)
class RunPart:
    """One run as the source reports it: what ran (workload, configuration, implementation), where
    (hardware as named, software), how (protocol), the figure, and through which route it came."""

    suite: str
    workload: str  # WorkloadPart.key
    configuration: str | None  # ConfigurationPart.key, None where the run names none
    bindings: dict[str, int]
    dtype: str | None
    implementation: str  # ImplementationPart.key
    hardware: str  # the hardware as the source names it ("NVIDIA H100 80GB HBM3")
    vendor: str | None
    architecture: str | None
    software: dict[str, str]  # e.g. {"cuda": "12", "liger_kernel": "0.5.2", "summary": "…"}
    protocol: ProtocolPart
    status: str  # "passed" or "failed" (the source's own failure word is in failure_reason)
    failure_reason: str | None
    figure: Figure | None  # None for a failed run
    correctness: dict[str, Any] | None
    observed_at: datetime
    source: str  # SourcePart.key: the upstream source
    route: str  # the file it came through ("catalog-2026-08-16-94af2ae7.jsonl.zst")
    route_date: date | None
    upstream_id: str | None  # the source's own id of the run
    source_speedup: float | None  # a speedup the source itself states (FlashInfer's speedup_factor)
    where: Where
    # every figure the source itself states for the run, under its own names (SOL-ExecBench's sol_score,
    # GPU MODE's leaderboard_score_s): the source's, shown as such, never compared as ours
    source_metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class ReadSummary:
    """What an adapter read: lines by table, the tables it does not model (skipped, counted), refusals."""

    file: str
    lines: Counter[str] = field(default_factory=Counter)  # every line, by table
    read: Counter[str] = field(default_factory=Counter)  # lines turned into parts, by table
    skipped: Counter[str] = field(default_factory=Counter)  # lines of tables the index does not model
    refused: list[Refusal] = field(default_factory=list)
    refused_by_table: Counter[str] = field(default_factory=Counter)

    def refuse(self, where: Where, key: str | None, reason: str) -> None:
        self.refused.append(Refusal(where, key, reason))
        self.refused_by_table[where.table] += 1

    def accounted(self) -> bool:
        """Every line is read, skipped or refused, exactly once."""
        return all(self.lines[t] == self.read[t] + self.skipped[t] + self.refused_by_table[t] for t in self.lines)
