"""run-record-v1: what a run record must satisfy beyond its shape, and its one normal form.

Pure rules (no I/O). They read a record that its typed structs have accepted already
(kernelindex.ingest.record_types: every type, enum, range and key is as the schema says), as plain
JSON values: rules/ imports nothing but the standard library and its own modules.

- `run_record_problems`: what the fields say together. A passed run has statistics and a
  correctness check that did not fail, a failed run a reason; the statistics are possible
  (rules.measurements: bounds, order, spread, samples that agree); numbers fit the database's
  columns; bindings are positive with identifier axis names; names are not empty, hold no
  invisible characters and fit a unique index, hardware names are no look-alikes; observed_at
  states its offset, is not before 2000 nor in the future beyond MAX_CLOCK_SKEW (rules.instants).
- The stated form (a record with the key `figure`: a run as a source states it, which
  /exports/catalog.jsonl writes for the runs a source adapter imported): its figure is in the
  protocol's metric and unit, so it has no latency statistics, samples, compile time or run-record
  correctness (the source's own is `source_correctness`); a binding is any integer the source states
  (an offset of -100 is not a size); the unit is the metric's.
- `normalised`: a new record, the given one untouched: integers written as 2.0 made ints (equal
  records get equal digests, and the columns get their type), the provider given its one name
  (rules.providers), names their spaces collapsed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from kernelindex.rules.instants import EARLIEST_OBSERVED, MAX_CLOCK_SKEW
from kernelindex.rules.measurements import MAX_COMPILE_TIME_MS, statistics_plainly_valid, statistics_problems
from kernelindex.rules.names import axis_name_problem, collapse_spaces, hardware_name_problem, name_problem
from kernelindex.rules.providers import normalise_provider

RUN_RECORD_VERSION = "run-record-v1"

Problem = tuple[str | None, str]  # (key, reason); the key relative to the record ("statistics.p5")

# environment.details is free-form; deeper nesting than this is refused.
MAX_DETAILS_DEPTH = 32
# Names that end up in unique indexes (PostgreSQL refuses index entries over ~2.7 kB).
MAX_NAME_CHARS = 200
MAX_CONFIGURATION_KEY_CHARS = 2000
INT32_MAX = 2**31 - 1
MAX_REASON_CHARS = 300

# The parts of a record that repeat from run to run (one implementation, protocol, source and
# machine over thousands of runs): each is judged on its own (part_problems), so a reader can judge
# each distinct one once. In the order their problems are told, kind by kind.
PARTS = ("workload", "implementation", "hardware", "protocol", "source")
_PART_KEYS = {"hardware": "environment.hardware"}
# Integers the database keeps in 32 bits.
_INT32_FIELDS = {"workload": ("level", "problem"), "protocol": ("warmup", "trials")}
# Names whose spaces are collapsed (a stray space must not make a second source or protocol) and
# which may not be empty or hold invisible characters.
_NAME_FIELDS = {
    "workload": ("slug", "suite", "key"), "implementation": ("title", "framework", "language", "runtime_id"),
    "protocol": ("name", "version", "timer"), "source": ("name", "revision"),
}
# Names that end up in unique indexes, so no longer than MAX_NAME_CHARS.
_INDEXED_FIELDS = {
    "workload": ("slug", "suite", "key"), "implementation": ("slug",), "hardware": ("sku", "product_name"),
    "protocol": ("name", "version"), "source": ("name", "revision"),
}
# What the measured form (a record without `figure`) takes: the stated form takes a source's own words.
MEASURED_DTYPES = ("fp32", "fp16", "bf16", "fp64", "int8", "int32", "int64", "bool")
MEASURED_STATISTICS = ("mean", "median", "min")
# The unit each metric's figures are stated in (the protocols table holds them to it).
METRIC_UNITS = {"latency": "ms", "memory": "MB", "score": "s"}
# The kinds of problem, in the order a record's problems are told (then part by part).
_TOO_LARGE, _NAME, _TOO_LONG, _LOOK_ALIKE, _RECORD = range(5)
Ranked = tuple[int, str | None, str]  # (kind, key, reason)


def short(text: str) -> str:
    """A reason cut to MAX_REASON_CHARS (a reason quotes the input, which may be long)."""
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


# -- instants -------------------------------------------------------------------------------------


def parse_observed_at(text: str) -> datetime:
    """The instant, in UTC (a time without an offset is read as UTC). ValueError when it is not an
    ISO 8601 date-time, or names an instant outside what a datetime holds in UTC
    ('0001-01-01T00:00:00+14:00' is before year 1 in UTC)."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{text!r} cannot be represented in UTC (outside years 1 to 9999)") from None


def observed_at_problem(text: str, now: datetime) -> str | None:
    """Why an observed_at is refused, or None (rules.instants): not a date-time, no UTC offset, not
    representable in UTC, before EARLIEST_OBSERVED, or later than now + MAX_CLOCK_SKEW."""
    if len(text) <= 10 and "T" not in text:
        return f"{text!r} is a date, not a date-time: state the time and its UTC offset (e.g. {text}T12:00:00Z)"
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return f"not an ISO 8601 date-time: {text!r}"
    if value.tzinfo is None:
        return f"{text!r} has no time zone: add its UTC offset (…Z or …+02:00); without one it is ambiguous by up to 26 hours"
    try:
        observed = parse_observed_at(text)
    except ValueError:
        return f"{text!r} cannot be represented as a time in UTC (it falls outside years 1 to 9999 there)"
    if observed < EARLIEST_OBSERVED:
        return f"{value.isoformat()} is before {EARLIEST_OBSERVED.date().isoformat()}, earlier than any GPU benchmark"
    if observed > now + MAX_CLOCK_SKEW:
        minutes = int(MAX_CLOCK_SKEW.total_seconds() // 60)
        return (
            f"{value.isoformat()} is in the future (now is {now.astimezone(UTC).isoformat(timespec='seconds')}; "
            f"at most {minutes} minutes of clock skew is allowed)"
        )
    return None


# A clock far enough ahead that only the clock's own check could refuse what passes against it.
_FAR_FUTURE = datetime(9000, 1, 1, tzinfo=UTC)


@lru_cache(maxsize=4096)
def _plain_instant(text: str) -> datetime | None:
    """The instant an observed_at names when nothing but the clock can refuse it; None otherwise.
    (Times repeat in a file: each is parsed and checked once.)"""
    return None if observed_at_problem(text, _FAR_FUTURE) is not None else parse_observed_at(text)


# -- names ----------------------------------------------------------------------------------------


def _memoised(check: Callable[[str], Any]) -> Callable[[str], Any]:
    """check(text), remembered for short texts: the names in a file repeat from record to record
    (one implementation, protocol, source and machine over thousands of runs), and each check
    walks the text character by character. Long texts are checked every time (never held)."""
    remembered = lru_cache(maxsize=4096)(check)

    def memoised(text: str) -> Any:
        return remembered(text) if len(text) <= 256 else check(text)

    return memoised


_name_problem = _memoised(name_problem)
_collapse_spaces = _memoised(collapse_spaces)
_hardware_name_problem = _memoised(hardware_name_problem)
_axis_name_problem = _memoised(axis_name_problem)
_normalise_provider = _memoised(normalise_provider)


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a parsed JSON value, counting no further than limit + 1."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d > deepest:
                deepest = d
                if deepest > limit:
                    return deepest
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


# -- the rules ------------------------------------------------------------------------------------


def part(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """One of PARTS of a record (empty where the record has none)."""
    if name == "hardware":
        return data["environment"]["hardware"]  # type: ignore[no-any-return]
    return data.get(name) or {}


def part_problems(name: str, values: Mapping[str, Any]) -> list[Ranked]:
    """What run-record-v1 refuses in one part of a record on its own (name: one of PARTS)."""
    found: list[Ranked] = []
    prefix = _PART_KEYS.get(name, name)
    for key in _INT32_FIELDS.get(name, ()):
        value = values.get(key)
        if value is not None and value > INT32_MAX:
            found.append((_TOO_LARGE, f"{prefix}.{key}", f"{value} is too large (at most {INT32_MAX:,})"))
    for key in _NAME_FIELDS.get(name, ()):
        value = values.get(key)
        if isinstance(value, str) and not (name == "protocol" and key == "version" and value == ""):
            # (a protocol's version may be empty: a source that states none)
            bad = _name_problem(value)
            if bad:
                found.append((_NAME, f"{prefix}.{key}", f"{key} {bad}"))
    for key in _INDEXED_FIELDS[name]:
        value = values.get(key)
        if value is not None and len(value) > MAX_NAME_CHARS:
            found.append((_TOO_LONG, f"{prefix}.{key}", f"longer than {MAX_NAME_CHARS} characters ({len(value):,})"))
    if name == "protocol" and values.get("unit") is not None:
        metric = values.get("metric") or "latency"
        if values["unit"] != METRIC_UNITS[metric]:
            found.append((_RECORD, "protocol.unit", f"{values['unit']!r} is not the unit of {metric} ({METRIC_UNITS[metric]!r})"))
    if name == "hardware":
        for key in ("sku", "product_name"):
            value = values.get(key)
            if isinstance(value, str) and len(value) <= MAX_NAME_CHARS:
                bad = _hardware_name_problem(value)
                if bad:
                    found.append((_LOOK_ALIKE, f"{prefix}.{key}", bad))
    return found


def record_problems(data: Mapping[str, Any], now: datetime) -> list[Ranked]:
    """What run-record-v1 refuses across the parts of a record (its PARTS judged apart)."""
    found: list[Ranked] = []
    num_trials = (data.get("statistics") or {}).get("num_trials")
    if num_trials is not None and num_trials > INT32_MAX:
        found.append((_TOO_LARGE, "statistics.num_trials", f"{num_trials} is too large (at most {INT32_MAX:,})"))
    samples = (data.get("figure") or {}).get("samples")
    if samples is not None and samples > INT32_MAX:
        found.append((_TOO_LARGE, "figure.samples", f"{samples} is too large (at most {INT32_MAX:,})"))
    stated = "figure" in data
    problems: list[Problem] = []
    bindings = data["configuration"]["bindings"]
    for name, value in bindings.items():
        bad = _axis_name_problem(name)
        if bad:
            problems.append((f"configuration.bindings.{name}", bad))
        elif value > INT32_MAX or value < -INT32_MAX:
            problems.append((f"configuration.bindings.{name}", f"{value} is out of range (at most {INT32_MAX:,})"))
        elif value < 1 and not stated:
            problems.append((f"configuration.bindings.{name}", f"{value:g} is not a size: an axis binding is a positive integer"))
    if sum(len(name) + 16 for name in bindings) > MAX_CONFIGURATION_KEY_CHARS:
        problems.append(("configuration.bindings", f"too large (more than {MAX_CONFIGURATION_KEY_CHARS} characters as JSON)"))
    details = data["environment"].get("details")
    nested = details is not None and any(type(v) is dict or type(v) is list for v in details.values())
    if nested and _depth(details, MAX_DETAILS_DEPTH) > MAX_DETAILS_DEPTH:
        problems.append(("environment.details", f"nested deeper than {MAX_DETAILS_DEPTH} levels"))
    problems += _outcome_problems(data)
    text = data["observed_at"]
    instant = _plain_instant(text) if len(text) <= 64 else None
    if instant is None or instant > now + MAX_CLOCK_SKEW:
        observed = observed_at_problem(text, now)
        if observed is not None:
            problems.append(("observed_at", short(observed)))
    return found + [(_RECORD, key, reason) for key, reason in problems]


def in_order(found: list[Ranked]) -> list[Problem]:
    """Problems as they are told: kind by kind, and within a kind part by part (a stable sort of
    the parts' problems, in PARTS order, followed by the record's own)."""
    return [(key, reason) for _, key, reason in sorted(found, key=lambda f: f[0])]


def run_record_problems(data: Mapping[str, Any], now: datetime) -> list[Problem]:
    """(key, reason) for everything run-record-v1 refuses in a record its structs accepted; empty
    when it is valid. `now` bounds observed_at."""
    found = [problem for name in PARTS for problem in part_problems(name, part(data, name))]
    return in_order(found + record_problems(data, now))


def _outcome_problems(data: Mapping[str, Any]) -> list[Problem]:
    """The status, the statistics and samples, the compile time and the correctness check, together."""
    if "figure" in data:
        return _stated_problems(data)
    problems: list[Problem] = []
    # The measured form is a latency in ms (its statistics), in the index's dtype names: a source's own
    # words (nvfp4, a geometric mean, peak memory) are the stated form's.
    dtype, protocol = data["configuration"]["dtype"], data["protocol"]
    if dtype not in MEASURED_DTYPES:
        problems.append(("configuration.dtype", f"{dtype!r} is not one of {list(MEASURED_DTYPES)!r}"))
    if protocol.get("statistic") not in (None, *MEASURED_STATISTICS):
        problems.append(("protocol.statistic", f"{protocol['statistic']!r} is not one of {list(MEASURED_STATISTICS)!r}"))
    for key, only in (("metric", "latency"), ("unit", "ms")):
        if protocol.get(key) not in (None, only):
            problems.append((f"protocol.{key}", f"{only!r} was expected"))
    stats = data.get("statistics")
    correctness = data.get("correctness") or {}
    if data["status"] == "passed":
        if not stats:
            problems.append(("statistics", "a passed run needs statistics"))
        if correctness.get("passed") is False:
            problems.append(("correctness.passed", "a passed run cannot have failed its correctness check: its status is 'failed'"))
    elif not data.get("failure_reason"):
        problems.append(("failure_reason", "a failed run needs a failure_reason"))
    elif not _collapse_spaces(data["failure_reason"]):
        problems.append(("failure_reason", "a failed run needs a failure_reason (it is only spaces)"))
    samples = data.get("samples_ms")
    if stats and type(stats.get("num_trials")) is float:
        stats = {**stats, "num_trials": int(stats["num_trials"])}  # 5.0 counts samples as 5 does
    if stats and (samples or not statistics_plainly_valid(stats)):
        problems += statistics_problems(stats, samples)
    elif samples:
        problems.append(("samples_ms", "samples without statistics: state the statistics they give"))
    compile_time = data.get("compile_time_ms")
    if compile_time is not None and compile_time > MAX_COMPILE_TIME_MS:
        problems.append(("compile_time_ms", f"{compile_time!r} ms is more than a day ({MAX_COMPILE_TIME_MS:,.0f} ms)"))
    for key in ("max_abs_diff", "max_rel_diff", "atol", "rtol"):
        value = correctness.get(key)
        if isinstance(value, (int, float)) and value < 0:
            problems.append((f"correctness.{key}", f"{value!r} is negative: a difference or a tolerance is at least 0"))
    return problems


def _stated_problems(data: Mapping[str, Any]) -> list[Problem]:
    """The outcome of a record in the stated form: a passed run has a figure, a failed one a reason;
    the figure's bounds are in order, at quantiles in order; nothing of the measured form beside it."""
    problems: list[Problem] = []
    figure = data["figure"]
    if data["status"] == "passed" and figure is None:
        problems.append(("figure", "a passed run needs a figure (null is a failed run's)"))
    if data["status"] == "failed" and not (data.get("failure_reason") and _collapse_spaces(data["failure_reason"])):
        problems.append(("failure_reason", "a failed run needs a failure_reason"))
    for key in ("statistics", "samples_ms", "compile_time_ms", "correctness"):
        if data.get(key) is not None:
            problems.append((key, f"a record in the stated form (with figure) states no {key}: its figure is in the "
                                  "protocol's unit, and the source's correctness check is source_correctness"))
    if figure:
        low, high, quantiles = figure.get("low"), figure.get("high"), figure.get("quantiles")
        if low is not None and high is not None and low > high:
            problems.append(("figure.low", f"{low!r} is above figure.high ({high!r})"))
        if quantiles is not None and not quantiles[0] < quantiles[1]:
            problems.append(("figure.quantiles", f"{quantiles!r}: the lower quantile must be below the upper"))
        if quantiles is not None and (low is None or high is None):
            problems.append(("figure.quantiles", "quantiles name the quantiles of low and high: state both"))
        minimum, maximum = figure.get("min"), figure.get("max")
        if minimum is not None and maximum is not None and minimum > maximum:
            problems.append(("figure.min", f"{minimum!r} is above figure.max ({maximum!r})"))
    return problems


# -- the normal form ------------------------------------------------------------------------------


def part_normal_form(name: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """One part of a record (one of PARTS) in its normal form, as a new value: integers written
    as 2.0 made ints, names their spaces collapsed. For a part part_problems accepts."""
    out = dict(values)
    for key in _INT32_FIELDS.get(name, ()):
        if type(out.get(key)) is float:
            out[key] = int(out[key])
    if name == "implementation" and type(out.get("artifact_bytes")) is float:
        out["artifact_bytes"] = int(out["artifact_bytes"])
    for key in _NAME_FIELDS.get(name, ()):
        value = out.get(key)
        if isinstance(value, str):
            out[key] = _collapse_spaces(value)
    return out


def record_normal_form(data: Mapping[str, Any]) -> dict[str, Any]:
    """The record with what lies across its parts in its normal form, as a new value (its PARTS
    as they were): num_trials and the bindings made ints, the provider given its one name."""
    out = dict(data)
    stats = out.get("statistics")
    if stats and type(stats.get("num_trials")) is float:
        out["statistics"] = {**stats, "num_trials": int(stats["num_trials"])}
    figure = out.get("figure")
    if figure and type(figure.get("samples")) is float:
        out["figure"] = {**figure, "samples": int(figure["samples"])}

    bindings = out["configuration"]["bindings"]
    if any(type(v) is float for v in bindings.values()):
        out["configuration"] = {**out["configuration"], "bindings": {name: int(v) for name, v in bindings.items()}}
    provider = out["environment"].get("provider")
    if isinstance(provider, str):
        named = _normalise_provider(provider)
        if named != provider:
            out["environment"] = {**out["environment"], "provider": named}
    return out


def normalised(data: Mapping[str, Any]) -> dict[str, Any]:
    """The record in its one normal form, as a new value (the given record is untouched). For a
    record run_record_problems accepts."""
    out = record_normal_form(data)
    for name in PARTS:
        if name != "hardware" and name in out:
            out[name] = part_normal_form(name, out[name])
    return out
