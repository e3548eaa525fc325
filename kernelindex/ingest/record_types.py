"""The run-record format (schemas/run-record.schema.json) as typed structs, decoded and checked in C.

msgspec decodes a line (or converts a GraphQL variable) straight into these structs and refuses, as it
goes, what the JSON Schema refuses field by field: a wrong type, a value outside its enum, a number
below its minimum, an empty name, a slug that does not match its pattern, an unknown key, a missing
required key. What a struct cannot say is left to `shape_problems` (one of two sets of keys that name
a workload or a machine, an integer written as 2.0, the date format of revision_date) and to the
cross-field rules after it (kernelindex.rules.run_record). The JSON Schema stays the published
contract: tests/ingest/test_record_structs.py holds these structs and that schema to the same verdict.

A key absent from a record is UNSET and a key given as null is None, so a record turned back into
plain values (`as_data`) has exactly the keys it was written with: its content digest does not change.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

RECORD_FORMAT = "kernelindex.run/1"

# JSON Schema counts 2.0 as an integer; msgspec's int does not. An integer field therefore takes a
# float as well (its bound checked all the same) and shape_problems refuses a float with a fraction.
# A number field keeps an integer an int (1, not 1.0): the content digest tells them apart.
PositiveInteger = Annotated[int, Meta(ge=1)] | Annotated[float, Meta(ge=1)]
NonNegativeInteger = Annotated[int, Meta(ge=0)] | Annotated[float, Meta(ge=0)]
Integer = int | float
Positive = Annotated[int, Meta(gt=0)] | Annotated[float, Meta(gt=0)]
NonNegative = Annotated[int, Meta(ge=0)] | Annotated[float, Meta(ge=0)]
Number = int | float
Name = Annotated[str, Meta(min_length=1)]
# The index's names (fp32, fp16, bf16, fp64, int8, int32, int64, bool) or, for a run a source states, the
# dtype as that source names it (fp8_e4m3fnuz, nvfp4, unspecified): what the adapters store.
Dtype = Annotated[str, Meta(pattern="^[a-z0-9][a-z0-9_]*$")]
Slug = Annotated[str, Meta(pattern="^[a-z0-9][a-z0-9_.@/-]*$")]
Quantile = Annotated[int, Meta(ge=0, le=1)] | Annotated[float, Meta(ge=0, le=1)]


class _Part(Struct, forbid_unknown_fields=True, kw_only=True, gc=False):
    """A part of a record: unknown keys refused, absent keys UNSET."""


class Workload(Struct, forbid_unknown_fields=True, kw_only=True, frozen=True, gc=False):
    """A part (as _Part), frozen: hashable, so that the lines of a batch naming the same workload share
    one lookup (LineProbe)."""

    slug: Name | UnsetType = UNSET
    suite: Name | UnsetType = UNSET
    level: PositiveInteger | UnsetType = UNSET
    problem: PositiveInteger | UnsetType = UNSET
    key: Name | UnsetType = UNSET  # the suite's own name for it (a suite without levels), with suite
    source_sha256: Annotated[str, Meta(pattern="^[0-9a-f]{64}$")] | UnsetType = UNSET


class Configuration(_Part):
    bindings: dict[str, Integer]
    dtype: Dtype
    key: Name | UnsetType = UNSET  # the stored configuration key, where a source's own case makes it


class Implementation(_Part):
    slug: Slug
    title: str | UnsetType = UNSET
    framework: str | UnsetType = UNSET
    language: str | UnsetType = UNSET
    runtime_id: str | UnsetType = UNSET
    role: Literal["baseline", "candidate"] | UnsetType = UNSET
    licence: str | None | UnsetType = UNSET
    source_availability: Literal["mirrored", "upstream", "none"] | UnsetType = UNSET
    source_url: str | None | UnsetType = UNSET
    install_recipe: str | None | UnsetType = UNSET
    compile_mode: str | None | UnsetType = UNSET
    authors: list[str] | UnsetType = UNSET
    project: str | None | UnsetType = UNSET
    target_architectures: list[str] | UnsetType = UNSET
    artifact_sha256: str | None | UnsetType = UNSET
    artifact_bytes: NonNegativeInteger | None | UnsetType = UNSET
    version: str | None | UnsetType = UNSET


class Hardware(_Part):
    sku: Name | UnsetType = UNSET
    product_name: Name | UnsetType = UNSET


class Software(_Part):
    torch: str | None | UnsetType = UNSET
    cuda: str | None | UnsetType = UNSET
    driver: str | None | UnsetType = UNSET
    python: str | None | UnsetType = UNSET
    triton: str | None | UnsetType = UNSET


class Environment(_Part):
    hardware: Hardware
    provider: str | None | UnsetType = UNSET
    label: str | None | UnsetType = UNSET
    software: Software | UnsetType = UNSET
    details: dict[str, Any] | UnsetType = UNSET
    fingerprint: Annotated[str, Meta(pattern="^[0-9a-f]{64}$")] | UnsetType = UNSET


class Protocol(_Part):
    name: Name
    version: str
    timer: str | None | UnsetType = UNSET
    warmup: NonNegativeInteger | None | UnsetType = UNSET
    trials: PositiveInteger | None | UnsetType = UNSET
    statistic: Literal["mean", "median", "min", "geomean", "unspecified"] | UnsetType = UNSET
    l2_flush: bool | None | UnsetType = UNSET
    metric: Literal["latency", "memory", "score"] | UnsetType = UNSET
    unit: Literal["ms", "MB", "s"] | UnsetType = UNSET
    harness: str | None | UnsetType = UNSET
    comparator: str | None | UnsetType = UNSET
    family: str | None | UnsetType = UNSET
    notes: str | None | UnsetType = UNSET


class Statistics(_Part):
    mean: Positive
    num_trials: PositiveInteger
    std: NonNegative | None | UnsetType = UNSET
    min: Positive | None | UnsetType = UNSET
    max: Positive | None | UnsetType = UNSET
    median: Positive | None | UnsetType = UNSET
    p5: Positive | None | UnsetType = UNSET
    p95: Positive | None | UnsetType = UNSET


class Correctness(_Part):
    passed: bool | UnsetType = UNSET
    max_abs_diff: Number | None | UnsetType = UNSET
    max_rel_diff: Number | None | UnsetType = UNSET
    atol: Number | UnsetType = UNSET
    rtol: Number | UnsetType = UNSET
    reference: str | UnsetType = UNSET


class Source(_Part):
    name: Name
    url: str | None | UnsetType = UNSET
    licence: str | None | UnsetType = UNSET
    revision: str | None | UnsetType = UNSET
    revision_date: str | None | UnsetType = UNSET
    key: str | None | UnsetType = UNSET
    kind: str | None | UnsetType = UNSET
    terms: str | None | UnsetType = UNSET
    attribution: str | None | UnsetType = UNSET
    route: str | None | UnsetType = UNSET
    whole: bool | UnsetType = UNSET


class Figure(_Part):
    """The headline figure in the protocol's metric, statistic and unit, with the spread its source
    states (the fields of kernelindex.ingest.sources.parts.Figure)."""

    value: Positive
    low: Positive | None | UnsetType = UNSET
    high: Positive | None | UnsetType = UNSET
    quantiles: Annotated[list[Quantile], Meta(min_length=2, max_length=2)] | None | UnsetType = UNSET
    min: Positive | None | UnsetType = UNSET
    max: Positive | None | UnsetType = UNSET
    std: NonNegative | None | UnsetType = UNSET
    mean: Positive | None | UnsetType = UNSET
    samples: PositiveInteger | None | UnsetType = UNSET


class Run(_Part):
    """One run record, as schemas/run-record.schema.json describes it."""

    format: Literal["kernelindex.run/1"]
    workload: Workload
    configuration: Configuration
    implementation: Implementation
    environment: Environment
    protocol: Protocol
    status: Literal["passed", "failed"]
    observed_at: str
    evidence: Literal["reported", "measured"]
    source: Source
    failure_reason: str | None | UnsetType = UNSET
    statistics: Statistics | None | UnsetType = UNSET
    samples_ms: list[Positive] | None | UnsetType = UNSET
    compile_time_ms: NonNegative | None | UnsetType = UNSET
    correctness: Correctness | None | UnsetType = UNSET
    # The stated form (a run as its source states it; kernelindex.ingest.stage.staged_run): `figure` given,
    # as an object or, for a failed run, null.
    figure: Figure | None | UnsetType = UNSET
    source_speedup: NonNegative | None | UnsetType = UNSET
    upstream_id: str | UnsetType = UNSET
    source_correctness: dict[str, Any] | None | UnsetType = UNSET


RUN_DECODER = msgspec.json.Decoder(Run)
_ENCODER = msgspec.json.Encoder()


# -- the few keys that find a line's live run ----------------------------------------------------


class SourceRevision(Struct, frozen=True):
    """The source revision a record names (its other source keys are not read)."""

    revision: str | None | UnsetType = UNSET


class LineProbe(Struct, frozen=True, gc=False):
    """What `ingest runs` reads of a line before it knows whether the line's very bytes made a live
    run already (kernelindex.ingest.writer.RunWriter.skip_known): the workload it names and the
    source revision, which together say which workload revision it measures now. Every other key is
    skipped unread (in C, its JSON syntax checked): a line found to be a live run is never decoded
    further, and the others are decoded and checked in full afterwards. Hashable, so that the lines
    of a batch naming the same workload at the same revision are resolved once."""

    format: Literal["kernelindex.run/1"]
    workload: Workload
    source: SourceRevision


_PROBE_DECODER = msgspec.json.Decoder(LineProbe)


def probe_line(raw: bytes) -> LineProbe:
    """A line's LineProbe; raises msgspec.DecodeError or msgspec.ValidationError as decode_run does
    (a line it refuses cannot be a stored run's line: it is read in full at once)."""
    return _PROBE_DECODER.decode(raw)


def workload_reference(name: Workload) -> dict[str, Any]:
    """The reference as plain values, with exactly the keys it was written with (as as_data gives it)."""
    return {field: value for field, value in msgspec.structs.asdict(name).items() if value is not UNSET}


def decode_run(raw: bytes) -> Run:
    """A line as a Run. Raises msgspec.ValidationError (the first thing the structs refuse, with its
    `$.path`) or msgspec.DecodeError (not JSON, or a number JSON cannot hold)."""
    return RUN_DECODER.decode(raw)


def convert_run(data: Any) -> Run:
    """Plain values (a GraphQL variable) as a Run; raises msgspec.ValidationError as decode_run does."""
    return msgspec.convert(data, Run)


def as_data(run: Run) -> dict[str, Any]:
    """The record as plain JSON values, with exactly the keys it was written with."""
    data: dict[str, Any] = msgspec.to_builtins(run)
    return data


def colons(run: Run) -> int:
    """How many colons the run's own encoding writes: one per key it holds plus those inside strings
    (records.read_item compares it with the line's to find a key written twice)."""
    return _ENCODER.encode(run).count(b":")


# -- what the structs cannot say ------------------------------------------------------------------

# (key, the integer fields' keys), for shape_problems' test of a float with a fraction.
_INTEGER_FIELDS = (
    ("workload", ("level", "problem")), ("protocol", ("warmup", "trials")), ("statistics", ("num_trials",)),
    ("figure", ("samples",)), ("implementation", ("artifact_bytes",)),
)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)


def _type_error(value: Any, types: str) -> str:
    # jsonschema's words for the same refusal, so errors read as they always have.
    return f"{value!r} is not of type {types}"


def shape_problems(run: Run) -> list[tuple[str | None, str]]:
    """What the JSON Schema refuses and a struct cannot express, worded as jsonschema words it."""
    problems: list[tuple[str | None, str]] = []
    workload = run.workload
    if workload.slug is UNSET and (workload.suite is UNSET or workload.level is UNSET or workload.problem is UNSET) and (
            workload.suite is UNSET or workload.key is UNSET):
        problems.append(("workload", "needs slug or suite and level and problem or suite and key"))
    for section, keys in _INTEGER_FIELDS:
        part = getattr(run, section)
        if not part:  # UNSET or None
            continue
        for key in keys:
            value = getattr(part, key)
            if type(value) is float and not value.is_integer():
                problems.append((f"{section}.{key}", _type_error(value, "'integer'" if key in ("level", "problem", "num_trials") else "'integer', 'null'")))
    for name, value in run.configuration.bindings.items():
        if type(value) is float and not value.is_integer():
            problems.append((f"configuration.bindings.{name}", _type_error(value, "'integer'")))
    hardware = run.environment.hardware
    if hardware.sku is UNSET and hardware.product_name is UNSET:
        problems.append(("environment.hardware", "needs sku or product_name"))
    revision_date = run.source.revision_date
    if isinstance(revision_date, str) and not is_date(revision_date):
        problems.append(("source.revision_date", f"{revision_date!r} is not a 'date'"))
    return problems


def is_date(text: str) -> bool:
    """JSON Schema's "date" format, as jsonschema checks it."""
    if not _ISO_DATE.fullmatch(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True
