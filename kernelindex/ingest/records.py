"""Reading and validating run records (schemas/run-record.schema.json), one JSON object per line.

Reading streams: one line at a time, each decoded on its own (a bad byte costs its line, not the rest
of the file), each at most MAX_LINE_BYTES long. Everything wrong with a line comes back as an
InputProblem naming the file, the line and, where it can, the key; nothing raises.

Validation is the JSON Schema plus what a schema cannot say (a passed run has statistics, min ≤ mean,
samples match num_trials, the numbers fit the database's columns, observed_at is a time in UTC and
not in the future beyond MAX_CLOCK_SKEW). Checking also normalises: the provider gets its one name
(rules.providers.normalise_provider), so `modal` and `Modal` are one environment. The schema is checked by a
predicate compiled from the schema file itself (fast: valid records never reach `jsonschema`); a
record it refuses goes through `jsonschema`, which words the errors and has the last say.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelindex.db.text import text_problem
from kernelindex.ingest.errors import InputProblem
from kernelindex.rules.providers import normalise_provider

if TYPE_CHECKING:
    import jsonschema

# Parsed JSON: the honest type of a decoded object before (and, for free-form parts, after) validation.
JSON = dict[str, Any]

SCHEMA_PATH = Path(__file__).resolve().parent.parent.parent / "schemas" / "run-record.schema.json"
RECORD_FORMAT = "kernelindex.run/1"
# Catalogue lines an export carries before its runs (kernelindex.ingest.catalog applies them).
HARDWARE_FORMAT = "kernelindex.hardware/1"
WORKLOAD_FORMAT = "kernelindex.workload/1"
CATALOG_FORMATS = (HARDWARE_FORMAT, WORKLOAD_FORMAT)

# A longer line is refused without being read into memory whole.
MAX_LINE_BYTES = 16 * 1024 * 1024
# environment.details is free-form; deeper nesting than this is refused.
MAX_DETAILS_DEPTH = 32
# Names that end up in unique indexes (PostgreSQL refuses index entries over ~2.7 kB).
MAX_NAME_CHARS = 200
MAX_CONFIGURATION_KEY_CHARS = 2000
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
MAX_REASON_CHARS = 300
# How far past the checker's clock an observed_at may be (the runner's clock may run a little ahead).
MAX_CLOCK_SKEW = timedelta(minutes=5)


# -- the schema -------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _schema() -> JSON:
    schema: JSON = json.loads(SCHEMA_PATH.read_text())
    return schema


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(_schema(), format_checker=jsonschema.FormatChecker())


_IGNORED_KEYWORDS = frozenset({"$schema", "$id", "title", "description", "$comment", "examples", "default"})
# Python expressions, true when {x} has the JSON type (bool is not a number; 2.0 is an integer, as in jsonschema).
_TYPE_TESTS = {
    "object": "type({x}) is dict",
    "array": "type({x}) is list",
    "string": "type({x}) is str",
    "boolean": "type({x}) is bool",
    "null": "{x} is None",
    "number": "type({x}) is float or type({x}) is int",
    "integer": "type({x}) is int or (type({x}) is float and {x}.is_integer())",
}


class _Unsupported(Exception):
    pass


class _SchemaCompiler:
    """Compiles the run-record schema into Python source: one function that returns False at the
    first thing the schema refuses. It may refuse more than `jsonschema` (a subclass of dict, say),
    never less: what it refuses is judged by `jsonschema` itself. An unsupported keyword makes the
    whole compile fail, and then every record goes through `jsonschema`."""

    def __init__(self) -> None:
        self.constants: dict[str, Any] = {}
        self.functions: list[str] = []
        self._names = itertools.count()

    def constant(self, value: Any) -> str:
        name = f"_c{next(self._names)}"
        self.constants[name] = value
        return name

    def function(self, schema: Any) -> str:
        name = f"_f{next(self._names)}"
        body: list[str] = []
        self.emit(schema, "v", body, 1)
        self.functions.append("\n".join([f"def {name}(v):", *body, "    return True"]))
        return name

    def emit(self, schema: Any, x: str, out: list[str], depth: int) -> None:
        pad = "    " * depth
        if schema is True or schema == {}:
            return
        if not isinstance(schema, dict):
            out.append(f"{pad}return False")
            return
        types = schema.get("type")
        if types is not None:
            names = [types] if isinstance(types, str) else list(types)
            if any(n not in _TYPE_TESTS for n in names):
                raise _Unsupported(f"type {types!r}")
            test = " or ".join(f"({_TYPE_TESTS[n].format(x=x)})" for n in names)
            out.append(f"{pad}if not ({test}): return False")
        for keyword, value in schema.items():
            if keyword in _IGNORED_KEYWORDS or keyword in ("type", "properties", "additionalProperties"):
                continue
            if keyword == "required":
                test = " or ".join(f"{json.dumps(n)} not in {x}" for n in value)
                out.append(f"{pad}if type({x}) is dict and ({test}): return False")
            elif keyword in ("enum", "const"):
                options = value if keyword == "enum" else [value]
                if not all(isinstance(o, str) for o in options):
                    raise _Unsupported(f"{keyword} {value!r}")
                out.append(f"{pad}if type({x}) is not str or {x} not in {self.constant(frozenset(options))}: return False")
            elif keyword in ("minimum", "exclusiveMinimum"):
                op = ">" if keyword == "exclusiveMinimum" else ">="
                out.append(f"{pad}if (type({x}) is float or type({x}) is int) and not ({x} {op} {value!r}): return False")
            elif keyword == "minLength":
                out.append(f"{pad}if type({x}) is str and len({x}) < {int(value)}: return False")
            elif keyword == "pattern":
                out.append(f"{pad}if type({x}) is str and {self.constant(re.compile(value))}.search({x}) is None: return False")
            elif keyword == "format":
                out.append(f"{pad}if not _conforms({x}, {json.dumps(value)}): return False")
            elif keyword == "items":
                item = f"i{depth}"
                body: list[str] = []
                self.emit(value, item, body, depth + 2)
                if body:
                    out.append(f"{pad}if type({x}) is list:")
                    out.append(f"{pad}    for {item} in {x}:")
                    out.extend(body)
            elif keyword == "anyOf":
                options = [self.function(sub) for sub in value]
                out.append(f"{pad}if not ({' or '.join(f'{o}({x})' for o in options)}): return False")
            else:
                raise _Unsupported(keyword)
        props = schema.get("properties", {})
        additional = schema.get("additionalProperties", True)
        if "patternProperties" in schema:
            raise _Unsupported("patternProperties")
        if not props and additional is True:
            return
        out.append(f"{pad}if type({x}) is dict:")
        if additional is False:
            out.append(f"{pad}    if not {self.constant(frozenset(props))}.issuperset({x}): return False")
        elif additional is not True:
            extra = self.function(additional)
            known = self.constant(frozenset(props))
            out.append(f"{pad}    for k{depth}, e{depth} in {x}.items():")
            out.append(f"{pad}        if k{depth} not in {known} and not {extra}(e{depth}): return False")
        for name, sub in props.items():
            child = f"p{next(self._names)}"
            body = []
            self.emit(sub, child, body, depth + 2)
            if body:
                out.append(f"{pad}    if {json.dumps(name)} in {x}:")
                out.append(f"{pad}        {child} = {x}[{json.dumps(name)}]")
                out.extend(body)
        out.append(f"{pad}    pass")


def _compile(schema: Any) -> Callable[[Any], bool]:
    """A predicate true only for instances `jsonschema` accepts (see _SchemaCompiler)."""
    compiler = _SchemaCompiler()
    try:
        entry = compiler.function(schema)
    except _Unsupported:
        return lambda _: False
    checker = _validator().format_checker
    assert checker is not None  # _validator() is built with one
    namespace: dict[str, Any] = dict(compiler.constants, _conforms=checker.conforms)
    exec("\n\n".join(compiler.functions), namespace)
    predicate: Callable[[Any], bool] = namespace[entry]
    return predicate


@lru_cache(maxsize=1)
def _fast_validator() -> Callable[[Any], bool]:
    return _compile(_schema())


# -- strict JSON --------------------------------------------------------------------------------


class _Refused:
    """Stands in, while parsing, for a value JSON Lines input may not hold (NaN, 1e400, ...)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


class _DuplicateKeys(dict[str, Any]):
    """An object in which a key appeared twice (the last value kept, to find where it sits)."""

    duplicates: list[str]


class JsonProblems(ValueError):
    """Valid JSON syntax holding values run records may not: (key, reason) for each."""

    def __init__(self, problems: list[tuple[str | None, str]]):
        self.problems = problems
        super().__init__("; ".join(f"{k}: {r}" if k else r for k, r in problems))


def _parse_int(text: str) -> int | _Refused:
    if len(text) < 19:
        return int(text)
    value = int(text)
    if -INT64_MAX - 1 <= value <= INT64_MAX:
        return value
    return _Refused(f"{text[:30]}{'…' if len(text) > 30 else ''} is out of range for a 64-bit integer")


def _parse_constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a number JSON allows (numbers must be finite)")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    dup = _DuplicateKeys(out)
    seen: set[str] = set()
    dup.duplicates = []
    for k, _ in pairs:
        if k in seen and k not in dup.duplicates:
            dup.duplicates.append(k)
        seen.add(k)
    return dup


def _key_path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(record)"


def _find_refused(data: Any, check_text: bool) -> list[tuple[str | None, str]]:
    """Walk the parsed value (iteratively) for the markers the parse hooks left, and for bad text."""
    found: list[tuple[str | None, str]] = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, _Refused):
            found.append((_key_path(path), value.reason))
        elif isinstance(value, dict):
            if isinstance(value, _DuplicateKeys):
                for k in value.duplicates:
                    found.append((_key_path(path + (k,)), f"duplicate key {k!r} in one object"))
            for k, v in value.items():
                if check_text:
                    bad = text_problem(k)
                    if bad:
                        found.append((_key_path(path + (k,)), f"the key {bad}"))
                stack.append((v, path + (k,)))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                stack.append((v, path + (i,)))
        elif check_text and isinstance(value, str):
            bad = text_problem(value)
            if bad:
                found.append((_key_path(path), f"the text {bad}"))
    found.sort(key=lambda p: p[0] or "")
    return found


def parse_json_line(text: str) -> Any:
    """Strict JSON: NaN, ±Infinity, numbers out of range, duplicate keys, NUL characters and lone
    surrogates are errors. Raises json.JSONDecodeError for bad syntax, ValueError for nesting too deep,
    JsonProblems (a ValueError, naming the keys) for values a run record may not hold."""
    flags: list[bool] = []

    def refused_float(t: str) -> float | _Refused:
        v = float(t)
        if v - v == 0.0:  # finite
            return v
        flags.append(True)
        return _Refused(f"{t} is out of range for a finite number")

    def refused_int(t: str) -> int | _Refused:
        if len(t) < 19:
            return int(t)
        v = _parse_int(t)
        if isinstance(v, _Refused):
            flags.append(True)
        return v

    def refused_constant(t: str) -> _Refused:
        flags.append(True)
        return _parse_constant(t)

    def pairs(p: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(p)
        if len(out) == len(p):
            return out
        flags.append(True)
        return _pairs(p)

    try:
        data = json.loads(
            text, parse_float=refused_float, parse_int=refused_int, parse_constant=refused_constant, object_pairs_hook=pairs
        )
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
    check_text = "\\u" in text
    if flags or check_text:
        found = _find_refused(data, check_text)
        if found:
            raise JsonProblems(found)
    return data


# -- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRecord:
    """A validated record; `where` locates it in its input (`line` is its line number, when it has one)."""

    data: dict[str, Any]
    file: str
    where: str
    line: int | None = None

    @property
    def observed_at(self) -> datetime:
        return parse_observed_at(self.data["observed_at"])


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
    """Why an observed_at is refused, or None: not a date-time, not representable in UTC, or later
    than now + MAX_CLOCK_SKEW."""
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return f"not an ISO 8601 date-time: {text!r}"
    try:
        observed = parse_observed_at(text)
    except ValueError:
        return f"{text!r} cannot be represented as a time in UTC (it falls outside years 1 to 9999 there)"
    if observed > now + MAX_CLOCK_SKEW:
        minutes = int(MAX_CLOCK_SKEW.total_seconds() // 60)
        return (
            f"{value.isoformat()} is in the future (now is {now.astimezone(UTC).isoformat(timespec='seconds')}; "
            f"at most {minutes} minutes of clock skew is allowed)"
        )
    return None


def _short(text: str) -> str:
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def _schema_problems(data: dict[str, Any]) -> list[tuple[str | None, str]]:
    """jsonschema's errors, worded per key: a missing field and an unknown field are named as keys."""
    problems: list[tuple[str | None, str]] = []
    for error in sorted(_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        path = list(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            missing = [n for n in error.validator_value if n not in error.instance and repr(n) in error.message]
            for name in missing[:1] or [None]:
                problems.append((_key_path(path + ([name] if name else [])), _short(error.message)))
        elif error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = set(error.schema.get("properties", {}))
            for name in [k for k in error.instance if k not in known]:
                problems.append((_key_path(path + [name]), _short(f"unknown field {name!r} (not in the run-record schema)")))
        elif error.validator == "anyOf" and all(isinstance(s, dict) and set(s) == {"required"} for s in error.validator_value):
            options = [" and ".join(s["required"]) for s in error.validator_value]
            problems.append((_key_path(path), f"needs {' or '.join(options)}"))
        else:
            problems.append((_key_path(path), _short(error.message)))
    return problems


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


_INT32_FIELDS = (("workload", "level"), ("workload", "problem"), ("protocol", "warmup"), ("protocol", "trials"), ("statistics", "num_trials"))


def check_record(data: Any, now: datetime | None = None) -> list[tuple[str | None, str]]:
    """(key, reason) for everything wrong with one record; empty when it is valid.

    Integer-valued numbers where the schema wants integers (100.0 for num_trials) are made ints, so
    equal records have equal digests and the database gets the type its columns hold; the provider
    is given its one name (normalise_provider). `now` (default: the clock) bounds observed_at."""
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(data), "a number")
        return [(None, f"expected a JSON object (one run record per line), got {kind}")]
    if not _fast_validator()(data):
        problems = _schema_problems(data)
        if problems:
            return problems
    problems = []
    for section, key in _INT32_FIELDS:
        part: JSON = data.get(section) or {}
        value = part.get(key)
        if value is None:
            continue
        if value > INT32_MAX:
            problems.append((f"{section}.{key}", f"{value} is too large (at most {INT32_MAX:,})"))
        elif type(value) is float:
            part[key] = int(value)
    workload, hardware, protocol, source = data["workload"], data["environment"]["hardware"], data["protocol"], data["source"]
    for key, value in (
        ("workload.slug", workload.get("slug")), ("workload.suite", workload.get("suite")),
        ("implementation.slug", data["implementation"]["slug"]), ("environment.hardware.sku", hardware.get("sku")),
        ("environment.hardware.product_name", hardware.get("product_name")), ("protocol.name", protocol["name"]),
        ("protocol.version", protocol["version"]), ("source.name", source["name"]), ("source.revision", source.get("revision")),
    ):
        if value is not None and len(value) > MAX_NAME_CHARS:
            problems.append((key, f"longer than {MAX_NAME_CHARS} characters ({len(value):,})"))
    bindings = data["configuration"]["bindings"]
    for name, value in bindings.items():
        if value > INT32_MAX or value < -INT32_MAX:
            problems.append((f"configuration.bindings.{name}", f"{value} is out of range (at most {INT32_MAX:,})"))
        elif type(value) is float:
            bindings[name] = int(value)
    if sum(len(name) + 16 for name in bindings) > MAX_CONFIGURATION_KEY_CHARS:
        problems.append(("configuration.bindings", f"too large (more than {MAX_CONFIGURATION_KEY_CHARS} characters as JSON)"))
    environment = data["environment"]
    if isinstance(environment.get("provider"), str):
        environment["provider"] = normalise_provider(environment["provider"])
    details = environment.get("details")
    if details is not None and _depth(details, MAX_DETAILS_DEPTH) > MAX_DETAILS_DEPTH:
        problems.append(("environment.details", f"nested deeper than {MAX_DETAILS_DEPTH} levels"))
    stats = data.get("statistics")
    if data["status"] == "passed":
        if not stats:
            problems.append(("statistics", "a passed run needs statistics"))
    elif not data.get("failure_reason"):
        problems.append(("failure_reason", "a failed run needs a failure_reason"))
    if stats:
        mean = stats["mean"]
        for key in ("mean", "min", "max", "median", "p5", "p95", "std"):
            value = stats.get(key)
            if value is not None and not math.isfinite(value):
                problems.append((f"statistics.{key}", "must be a finite number"))
        if stats.get("min") is not None and stats["min"] > mean:
            problems.append(("statistics.min", f"min {stats['min']} is above mean {mean}"))
        if stats.get("max") is not None and stats["max"] < mean:
            problems.append(("statistics.max", f"max {stats['max']} is below mean {mean}"))
        samples = data.get("samples_ms")
        if samples is not None and len(samples) != stats["num_trials"]:
            problems.append(("samples_ms", f"{len(samples)} samples for num_trials {stats['num_trials']}"))
    samples = data.get("samples_ms")
    if samples and not all(map(math.isfinite, samples)):
        problems.append(("samples_ms", "every sample must be a finite number"))
    compile_time = data.get("compile_time_ms")
    if compile_time is not None and not math.isfinite(compile_time):
        problems.append(("compile_time_ms", "must be a finite number"))
    for key, value in (data.get("correctness") or {}).items():
        if isinstance(value, float) and not math.isfinite(value):
            problems.append((f"correctness.{key}", "must be a finite number"))
    observed = observed_at_problem(data["observed_at"], now if now is not None else datetime.now(UTC))
    if observed is not None:
        problems.append(("observed_at", _short(observed)))
    revision_date = data["source"].get("revision_date")
    if revision_date:
        try:
            date.fromisoformat(revision_date)
        except ValueError:
            problems.append(("source.revision_date", _short(f"not an ISO 8601 date: {revision_date!r}")))
    return problems


# -- reading ------------------------------------------------------------------------------------


class _TooLong:
    def __init__(self, size: int):
        self.size = size


def raw_lines(stream: Any) -> Iterator[tuple[int, bytes | str | _TooLong]]:
    """(line number, the line) for every physical line; a line over MAX_LINE_BYTES is skipped to its
    end (never held whole) and comes back as _TooLong. Takes a binary or text file, or any iterable
    of lines (bytes or str)."""
    readline = getattr(stream, "readline", None)
    if readline is None:
        for number, line in enumerate(stream, start=1):
            yield number, (_TooLong(len(line)) if len(line) > MAX_LINE_BYTES else line)
        return
    number = 0
    while True:
        line = readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_BYTES and line[-1:] not in (b"\n", "\n"):
            size = len(line)
            while line and line[-1:] not in (b"\n", "\n"):
                line = readline(1 << 20)
                size += len(line)
            yield number, _TooLong(size)
            continue
        yield number, line


def read_line(number: int, raw: bytes | str | _TooLong, file: str) -> RunRecord | list[InputProblem] | None:
    """One physical line: a RunRecord, its problems, or None for a blank line."""
    where = f"line {number}"
    if isinstance(raw, _TooLong):
        return [InputProblem(file, where, f"the line is {raw.size:,} bytes long, over the limit of {MAX_LINE_BYTES:,}")]
    if isinstance(raw, bytes):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return [InputProblem(file, where, f"not UTF-8 text: {exc.reason} (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})")]
    else:
        text = raw[1:] if number == 1 and raw.startswith("\ufeff") else raw
    if not text.strip():
        return None
    try:
        data = parse_json_line(text)
    except JsonProblems as exc:
        return [InputProblem(file, where, reason, key=key) for key, reason in exc.problems]
    except json.JSONDecodeError as exc:
        return [InputProblem(file, where, f"not valid JSON: {exc.msg} at column {exc.pos + 1}")]
    except (ValueError, MemoryError) as exc:
        return [InputProblem(file, where, _short(f"not valid JSON: {str(exc) or type(exc).__name__}"))]
    if isinstance(data, dict) and data.get("format") in CATALOG_FORMATS:
        return None
    try:
        found = check_record(data)
    except (RecursionError, MemoryError) as exc:
        found = [(None, f"cannot be checked: {'nested too deeply' if isinstance(exc, RecursionError) else 'too large'}")]
    if found:
        return [InputProblem(file, where, reason, key=key) for key, reason in found]
    return RunRecord(data, file, where, number)


def read_run_records(stream: Any, file: str) -> Iterator[RunRecord | InputProblem]:
    """Yield a RunRecord or InputProblems per non-blank line, streaming (bounded memory). The stream
    may be a binary or text file, or an iterable of lines."""
    seen_any = False
    lines = raw_lines(stream)
    number = 0
    while True:
        try:
            number, raw = next(lines)
        except StopIteration:
            break
        except UnicodeDecodeError as exc:  # a text stream decodes before we see the line: reading ends here
            yield InputProblem(file, f"line {number + 1}", f"not UTF-8 text: {exc.reason}; the rest of the input was not read")
            return
        item = read_line(number, raw, file)
        if item is None:
            continue
        seen_any = True
        if isinstance(item, list):
            yield from item
        else:
            yield item
    if not seen_any:
        yield InputProblem(file, "line 1", "the file holds no run records (it is empty)")
