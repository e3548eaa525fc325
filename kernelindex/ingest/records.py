"""Reading and validating run records (schemas/run-record.schema.json), one JSON object per line.

Reading streams: one line at a time, each decoded on its own (a bad byte costs its line, not the rest
of the file), each at most MAX_LINE_BYTES long. Everything wrong with a line comes back as an
InputProblem naming the file, the line and, where it can, the key; nothing raises.

Validation is the JSON Schema plus what a schema cannot say, one validator for `ingest runs` and
submitRuns alike (check_record): values JSON Lines cannot carry but a GraphQL variable can (NaN,
NUL, lone surrogates, integers past 64 bits); a passed run has statistics and a correctness check
that did not fail; the statistics are physically and logically possible (rules.measurements:
bounds, order, spread, samples that agree); the numbers fit the database's columns; bindings are
positive with identifier axis names; names are not empty and hold no invisible characters
(rules.names), hardware names are no look-alikes; observed_at states its offset, is not before
2000 nor in the future beyond MAX_CLOCK_SKEW (rules.instants). Checking also normalises: the provider
gets its one name (rules.providers.normalise_provider), so `modal` and `Modal` are one environment,
and names their spaces collapsed. The schema is checked by a
predicate compiled from the schema file itself (fast: valid records never reach `jsonschema`); a
record it refuses goes through `jsonschema`, which words the errors and has the last say.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from kernelindex.db.text import text_problem
from kernelindex.ingest.errors import InputProblem
from kernelindex.rules.instants import EARLIEST_OBSERVED, MAX_CLOCK_SKEW
from kernelindex.rules.measurements import MAX_COMPILE_TIME_MS, statistics_plainly_valid, statistics_problems
from kernelindex.rules.names import axis_name_problem, collapse_spaces, hardware_name_problem, name_problem
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

# A longer line is refused without being read into memory whole (a run record is a few kB; 1,000
# raw samples are ~20 kB).
MAX_LINE_BYTES = 1024 * 1024
# environment.details is free-form; deeper nesting than this is refused.
MAX_DETAILS_DEPTH = 32
# Names that end up in unique indexes (PostgreSQL refuses index entries over ~2.7 kB).
MAX_NAME_CHARS = 200
MAX_CONFIGURATION_KEY_CHARS = 2000
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
MAX_REASON_CHARS = 300
# MAX_CLOCK_SKEW (how far past the checker's clock an observed_at may be) and EARLIEST_OBSERVED are
# rules.instants'; imported here, where they are applied.


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
    repeated: dict[str, None] = {}  # a dict: first-repeat order, and linear in a line of 100k keys
    for k, _ in pairs:
        if k in seen:
            repeated[k] = None
        seen.add(k)
    dup.duplicates = list(repeated)
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


# -- the fast reader -----------------------------------------------------------------------------

# Most lines are plainly good. msgspec decodes them in C, several times faster than the strict reader
# above, and refuses what that reader refuses (NaN, ±Infinity, numbers that overflow a double, lone
# surrogates, control characters, bad UTF-8, bad syntax). What it would let through is routed to the
# strict reader instead: any \u escape (it could spell NUL or a lone surrogate, which the strict reader
# words), a run of 19 or more digits (an integer past 64 bits, which msgspec keeps exact), and a
# repeated key (msgspec keeps the last). So a line the fast reader takes parses to the same value the
# strict reader gives, and a line it declines is parsed, and its problems worded, by the strict reader:
# the errors are the strict reader's in every case.
_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder()
_DIGITS_ONLY = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))  # digits → "0", all else → " "
_LONG_NUMBER = b"0" * 19


def fast_parse(raw: bytes) -> dict[str, Any] | None:
    """The object on a line when the fast reader can vouch for it (see above); None: use parse_json_line."""
    data = _fast_decode(raw)
    return data if data is not None and _no_repeated_key(raw, data) else None


def _fast_decode(raw: bytes) -> dict[str, Any] | None:
    """The object on a line, decoded in C, when nothing but a repeated key could make it differ from
    the strict reader's (_no_repeated_key tells that)."""
    if b"\\u" in raw or _LONG_NUMBER in raw.translate(_DIGITS_ONLY):
        return None
    try:
        data = _DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):  # ValidationError: a number overflows
        return None
    return data if type(data) is dict else None


def _no_repeated_key(raw: bytes, data: dict[str, Any]) -> bool:
    # Colons: one per key as written plus those inside strings. Encoding the value again writes one
    # per key it kept plus the same string colons (no \\u escapes here), so the counts differ
    # exactly when an object repeated a key.
    return _ENCODER.encode(data).count(b":") == raw.count(b":")


# -- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRecord:
    """A validated record; `where` locates it in its input (`line` is its line number, when it has one)."""

    data: dict[str, Any]
    file: str
    where: str
    line: int | None = None
    # The digest of the line it was read from (line_digest), stored with its run.
    line_sha: bytes | None = None

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


_INT32_FIELDS = (("workload", "level"), ("workload", "problem"), ("protocol", "warmup"), ("protocol", "trials"), ("statistics", "num_trials"))
# Names whose spaces are collapsed (a stray space must not make a second source or protocol) and
# which may not be empty or hold invisible characters.
_NAME_FIELDS = (
    ("workload", "slug"), ("workload", "suite"), ("implementation", "title"), ("implementation", "framework"),
    ("implementation", "language"), ("implementation", "runtime_id"), ("protocol", "name"), ("protocol", "version"),
    ("protocol", "timer"), ("source", "name"), ("source", "revision"),
)


def _value_problems(data: Any) -> list[tuple[str | None, str]]:
    """What a GraphQL variable can carry but JSON Lines cannot (parse_json_line refuses these as it
    reads, in the same words): non-finite numbers, integers past 64 bits, NUL characters and lone
    surrogates in text or keys."""
    found: list[tuple[str | None, str]] = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if type(value) is float:
            if not math.isfinite(value):
                name = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
                found.append((_key_path(path), f"{name} is not a number JSON allows (numbers must be finite)"))
        elif type(value) is int:
            if not -INT64_MAX - 1 <= value <= INT64_MAX:
                text = str(value)
                found.append((_key_path(path), f"{text[:30]}{'…' if len(text) > 30 else ''} is out of range for a 64-bit integer"))
        elif isinstance(value, str):
            bad = text_problem(value)
            if bad:
                found.append((_key_path(path), f"the text {bad}"))
        elif isinstance(value, dict):
            for k, v in value.items():
                bad = text_problem(k) if isinstance(k, str) else None
                if bad:
                    found.append((_key_path(path + (k,)), f"the key {bad}"))
                else:
                    stack.append((v, path + (k,)))
        elif isinstance(value, list):
            stack.extend((v, path + (i,)) for i, v in enumerate(value))
    found.sort(key=lambda p: p[0] or "")
    return found


def _plainly_storable(data: Any) -> bool:
    """True only where _value_problems(data) finds nothing, decided by the C encoder: it refuses
    NaN and ±Infinity, keeps a lone surrogate (which UTF-8 then refuses) and writes NUL as \\u0000;
    a run of 19 digits may be an integer past 64 bits. False means "walk it": _value_problems words
    what is wrong, or finds nothing after all."""
    try:
        text = json.dumps(data, allow_nan=False, ensure_ascii=False)
        encoded = text.encode("utf-8")
    except (ValueError, TypeError, RecursionError):  # UnicodeEncodeError is a ValueError
        return False
    return "\\u0000" not in text and _LONG_NUMBER not in encoded.translate(_DIGITS_ONLY)


def check_record(data: Any, now: datetime | None = None, *, values_checked: bool = False) -> list[tuple[str | None, str]]:
    """(key, reason) for everything wrong with one record; empty when it is valid. The one validator
    of run records: `ingest runs` and submitRuns both call it, and get the same problems.

    Integer-valued numbers where the schema wants integers (100.0 for num_trials) are made ints, so
    equal records have equal digests and the database gets the type its columns hold; the provider
    is given its one name (normalise_provider) and names their spaces collapsed. `now` (default: the
    clock) bounds observed_at. values_checked: the record came through parse_json_line, which has
    refused non-finite numbers and bad text already."""
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(data), "a number")
        return [(None, f"expected a JSON object (one run record per line), got {kind}")]
    if not values_checked and not _plainly_storable(data):
        found = _value_problems(data)
        if found:
            return found
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
    for section, key in _NAME_FIELDS:
        part = data.get(section) or {}
        value = part.get(key)
        if not isinstance(value, str):
            continue
        bad = _name_problem(value)
        if bad:
            problems.append((f"{section}.{key}", f"{key} {bad}"))
        else:
            part[key] = _collapse_spaces(value)
    workload, hardware, protocol, source = data["workload"], data["environment"]["hardware"], data["protocol"], data["source"]
    for key, value in (
        ("workload.slug", workload.get("slug")), ("workload.suite", workload.get("suite")),
        ("implementation.slug", data["implementation"]["slug"]), ("environment.hardware.sku", hardware.get("sku")),
        ("environment.hardware.product_name", hardware.get("product_name")), ("protocol.name", protocol["name"]),
        ("protocol.version", protocol["version"]), ("source.name", source["name"]), ("source.revision", source.get("revision")),
    ):
        if value is not None and len(value) > MAX_NAME_CHARS:
            problems.append((key, f"longer than {MAX_NAME_CHARS} characters ({len(value):,})"))
    for key in ("sku", "product_name"):
        value = hardware.get(key)
        if isinstance(value, str) and len(value) <= MAX_NAME_CHARS:
            bad = _hardware_name_problem(value)
            if bad:
                problems.append((f"environment.hardware.{key}", bad))
    bindings = data["configuration"]["bindings"]
    for name, value in bindings.items():
        bad = _axis_name_problem(name)
        if bad:
            problems.append((f"configuration.bindings.{name}", bad))
        elif value > INT32_MAX or value < -INT32_MAX:
            problems.append((f"configuration.bindings.{name}", f"{value} is out of range (at most {INT32_MAX:,})"))
        elif value < 1:
            problems.append((f"configuration.bindings.{name}", f"{value:g} is not a size: an axis binding is a positive integer"))
        elif type(value) is float:
            bindings[name] = int(value)
    if sum(len(name) + 16 for name in bindings) > MAX_CONFIGURATION_KEY_CHARS:
        problems.append(("configuration.bindings", f"too large (more than {MAX_CONFIGURATION_KEY_CHARS} characters as JSON)"))
    environment = data["environment"]
    if isinstance(environment.get("provider"), str):
        environment["provider"] = _normalise_provider(environment["provider"])
    details = environment.get("details")
    nested = details is not None and any(type(v) is dict or type(v) is list for v in details.values())
    if nested and _depth(details, MAX_DETAILS_DEPTH) > MAX_DETAILS_DEPTH:
        problems.append(("environment.details", f"nested deeper than {MAX_DETAILS_DEPTH} levels"))
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
    now = now if now is not None else datetime.now(UTC)
    text = data["observed_at"]
    instant = _plain_instant(text) if len(text) <= 64 else None
    if instant is None or instant > now + MAX_CLOCK_SKEW:
        observed = observed_at_problem(text, now)
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
    def __init__(self, size: int, limit: int, complete: bool = True):
        self.size = size
        self.limit = limit
        self.complete = complete  # False: the input ended (or the scan stopped) before the line did


# How much of an overlong line is scanned for its end, a chunk at a time (never held together).
_SKIP_CHUNK = 1 << 20


def raw_lines(stream: Any, limit: int | None = None) -> Iterator[tuple[int, bytes | str | _TooLong]]:
    """(line number, the line) for every physical line; a line over `limit` bytes (default
    MAX_LINE_BYTES, read when called) is skipped to its end in chunks (never held whole) and comes
    back as _TooLong. Takes a binary or text file, or any iterable of lines (bytes or str)."""
    limit = MAX_LINE_BYTES if limit is None else limit
    readline = getattr(stream, "readline", None)
    if readline is None:
        for number, line in enumerate(stream, start=1):
            yield number, (_TooLong(len(line), limit) if len(line) > limit else line)
        return
    number = 0
    while True:
        line = readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit and line[-1:] not in (b"\n", "\n"):
            size = len(line)
            while line and line[-1:] not in (b"\n", "\n"):
                line = readline(_SKIP_CHUNK)
                size += len(line)
            yield number, _TooLong(size, limit, complete=bool(line))
            continue
        yield number, line


@dataclass(frozen=True)
class CatalogueLine:
    """A line that is not a run record but a catalogue entry (kernelindex.ingest.catalog checks it)."""

    data: dict[str, Any]
    where: str


# The version of everything check_record decides and normalises. A line's digest (line_digest) covers
# it, so after a change to the checks no stored digest matches and every line is checked afresh.
# Bump it with any change to what check_record accepts or how it normalises.
CHECKS_VERSION = b"run-record-checks/1"


def line_digest(raw: bytes) -> bytes:
    """128-bit digest of a line's bytes (surrounding whitespace aside) under CHECKS_VERSION."""
    return hashlib.blake2b(raw.strip(), digest_size=16, key=CHECKS_VERSION).digest()


@dataclass(frozen=True)
class PendingLine:
    """A line that decoded plainly and is not checked yet: `ingest runs` first asks whether the very
    same bytes are a live run already (RunWriter.skip_known), and checks only the others
    (check_pending). `data` is what the strict reader would give, unless the line repeats a key,
    which check_pending finds before anything else."""

    number: int
    where: str
    data: dict[str, Any]
    raw: bytes
    digest: bytes


def read_pending(number: int, raw: bytes | str | _TooLong, file: str) -> PendingLine | RunRecord | CatalogueLine | list[InputProblem] | None:
    """One physical line, decoded once: a PendingLine when the fast reader takes it, else what
    read_item makes of it (a record, a catalogue line, its problems, or None for a blank line)."""
    if isinstance(raw, bytes):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        data = _fast_decode(raw)
        if data is not None and data.get("format") not in CATALOG_FORMATS:
            return PendingLine(number, f"line {number}", data, raw, line_digest(raw))
        item = read_item(number, raw, file)
        # Read by the strict reader, but a line of bytes all the same: its run keeps the digest.
        return replace(item, line_sha=line_digest(raw)) if isinstance(item, RunRecord) else item
    return read_item(number, raw, file)


def check_pending(line: PendingLine, file: str) -> RunRecord | list[InputProblem]:
    """The check of a PendingLine: exactly read_item's answer for its bytes."""
    if not _no_repeated_key(line.raw, line.data):
        found = read_item(line.number, line.raw, file)
        assert not isinstance(found, (RunRecord, CatalogueLine)) and found is not None  # a repeated key is a problem
        return found
    checked = _checked(line.data, line.number, file, line.where)
    assert not isinstance(checked, CatalogueLine)  # read_pending sends catalogue lines to read_item
    return replace(checked, line_sha=line.digest) if isinstance(checked, RunRecord) else checked


def read_line(number: int, raw: bytes | str | _TooLong, file: str) -> RunRecord | list[InputProblem] | None:
    """One physical line: a RunRecord, its problems, or None for a blank line or a catalogue line."""
    item = read_item(number, raw, file)
    return None if isinstance(item, CatalogueLine) else item


def read_item(number: int, raw: bytes | str | _TooLong, file: str) -> RunRecord | CatalogueLine | list[InputProblem] | None:
    """One physical line, decoded and checked once: a RunRecord, a catalogue line, the line's
    problems, or None for a blank line."""
    where = f"line {number}"
    if isinstance(raw, _TooLong):
        size = f"{raw.size:,} bytes long" if raw.complete else f"{raw.size:,} bytes long (to the end of the input)"
        return [
            InputProblem(
                file, where, f"the line is {size}, over the limit of {raw.limit:,} (max line length, MAX_LINE_BYTES); skipped unread"
            )
        ]
    if isinstance(raw, bytes):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        fast = fast_parse(raw)
        if fast is not None:
            return _checked(fast, number, file, where)
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
    return _checked(data, number, file, where)


def _checked(data: Any, number: int, file: str, where: str) -> RunRecord | CatalogueLine | list[InputProblem]:
    if isinstance(data, dict) and data.get("format") in CATALOG_FORMATS:
        return CatalogueLine(data, where)
    try:
        found = check_record(data, values_checked=True)
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
