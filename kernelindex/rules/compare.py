"""Side by side: what differs between 2 to 8 runs, and whether one of them can be called faster.

compare-v1:
- the differences, field by field, in this order: hardware SKU, provider, software versions (torch,
  CUDA, driver, Python, Triton), protocol name and version, configuration bindings and dtype, source
  name and revision, workload revision; each with every run's value and whether they differ (as
  text, by display-v1's `format_value`: absent is None, bindings 'batch_size=2');
- a winner (the fastest mean, ties broken as in ranking-v1) only when all runs are in one cohort
  (same workload revision, configuration, protocol and environment), and only among passed runs
  with a mean; the runs whose 95% intervals tie with the winner (ranking-v2) are named beside it;
- otherwise the first difference that makes them incomparable, in the order: workload revision,
  configuration, protocol, environment (hardware, then provider, then software), in words:
  "different hardware: NVIDIA H100 SXM5 80GB vs NVIDIA H100 PCIe 80GB".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernelindex.rules.display import format_bindings, format_value
from kernelindex.rules.facts import RunFacts
from kernelindex.rules.ranking import order_key
from kernelindex.rules.ties import tied_ranks

COMPARE_VERSION = "compare-v1"
MIN_RUNS = 2
MAX_RUNS = 8


# (field, label used in the words, getter), in the order the differences are listed.
FIELDS: tuple[tuple[str, str, Callable[[RunFacts], Any]], ...] = (
    ("hardware", "hardware", lambda r: r.environment.hardware.sku),
    ("provider", "provider", lambda r: r.environment.provider),
    ("torch_version", "torch", lambda r: r.environment.torch_version),
    ("cuda_version", "CUDA", lambda r: r.environment.cuda_version),
    ("driver_version", "driver", lambda r: r.environment.driver_version),
    ("python_version", "Python", lambda r: r.environment.python_version),
    ("triton_version", "Triton", lambda r: r.environment.triton_version),
    ("protocol_name", "protocol", lambda r: r.protocol.name),
    ("protocol_version", "protocol version", lambda r: r.protocol.version),
    ("bindings", "bindings", lambda r: dict(r.bindings)),
    ("dtype", "dtype", lambda r: r.dtype),
    ("source_name", "source", lambda r: r.source.name),
    ("source_revision", "source revision", lambda r: r.source.revision),
    ("workload_revision", "workload revision", lambda r: r.workload_revision_id),
)
SOFTWARE_FIELDS = ("torch_version", "cuda_version", "driver_version", "python_version", "triton_version")


@dataclass(frozen=True)
class FieldDiff:
    field: str
    label: str
    values: tuple[Any, ...]  # one per run, in the order given
    differs: bool

    @property
    def texts(self) -> tuple[str | None, ...]:
        """The values as the API shows them (display-v1 `format_value`): None where the run does not
        record the field, bindings as 'batch_size=2', never a Python repr."""
        return tuple(format_value(v) for v in self.values)

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "values": list(self.values), "differs": self.differs}


@dataclass(frozen=True)
class Comparison:
    run_ids: tuple[int, ...]
    fields: tuple[FieldDiff, ...]
    comparable: bool
    winner: RunFacts | None
    tied_with_winner: tuple[int, ...]  # run ids sharing rank 1 with the winner (95% intervals overlap)
    incomparable_because: str | None

    @property
    def differences(self) -> tuple[FieldDiff, ...]:
        return tuple(f for f in self.fields if f.differs)


def _same_key(value: Any) -> str:
    """A hashable form under which equal values are equal (dicts regardless of key order)."""
    return repr(sorted(value.items())) if isinstance(value, dict) else repr(value)


def _text(value: Any) -> str:
    """A value in the words of `incomparable_because`: an unrecorded one is 'unknown'."""
    text = format_value(value)
    return "unknown" if text is None else text


def _distinct(texts: Sequence[str]) -> list[str]:
    out: list[str] = []
    for t in texts:
        if t not in out:
            out.append(t)
    return out


def _words(label: str, texts: Sequence[str]) -> str:
    return f"different {label}: {' vs '.join(_distinct(texts))}"


def _incomparable_because(runs: Sequence[RunFacts]) -> str | None:
    def differs(get: Callable[[RunFacts], Any]) -> bool:
        return len({_same_key(get(r)) for r in runs}) > 1

    if differs(lambda r: r.workload_revision_id):
        return _words("workload revisions", [_text(r.workload_revision_id) for r in runs])
    if differs(lambda r: r.configuration_key):
        return _words("configuration", [f"{format_bindings(r.bindings)}, {r.dtype}" for r in runs])
    if differs(lambda r: r.protocol.id):
        texts = [f"{r.protocol.name} {r.protocol.version}" for r in runs]
        if len(_distinct(texts)) == 1:  # same name and version, yet different protocols
            texts = [f"{t} (protocol {r.protocol.id})" for t, r in zip(texts, runs)]
        return _words("protocol", texts)
    if differs(lambda r: r.environment.id):
        for field, label, get in FIELDS:
            if (field == "hardware" or field == "provider" or field in SOFTWARE_FIELDS) and differs(get):
                return _words(label, [_text(get(r)) for r in runs])
        return _words("environment", [r.environment.label or r.environment.fingerprint or f"environment {r.environment.id}"
                                      for r in runs])
    return None


def compare_runs(runs: Sequence[RunFacts]) -> Comparison:
    """Compare 2 to 8 runs (ValueError otherwise), in the order given."""
    runs = list(runs)
    if not MIN_RUNS <= len(runs) <= MAX_RUNS:
        raise ValueError(f"compare {MIN_RUNS} to {MAX_RUNS} runs, not {len(runs)}")
    fields = []
    for field, label, get in FIELDS:
        values = tuple(get(r) for r in runs)
        fields.append(FieldDiff(field, label, values, len({_same_key(v) for v in values}) > 1))
    comparable = len({r.cohort_key for r in runs}) == 1
    winner = None
    tied: tuple[int, ...] = ()
    because = None
    if comparable:
        timed = [r for r in runs if r.status == "passed" and r.figure is not None]
        if timed:
            winner = min(timed, key=order_key)
            rows = tied_ranks(timed)
            tied = tuple(row.run.id for row in rows if row.rank == 1 and row.run.id != winner.id)
    else:
        because = _incomparable_because(runs)
    return Comparison(tuple(r.id for r in runs), tuple(fields), comparable, winner, tied, because)
