"""Reading and checking run records (schemas/run-record.schema.json), one JSON object per line.

Reading streams: one line at a time, each decoded on its own (a bad byte costs its line, not the rest
of the file), each at most MAX_LINE_BYTES long. Everything wrong with a line comes back as an
InputProblem naming the file, the line and, where it can, the key; nothing raises.

One reader, three steps, for `ingest runs` and submitRuns alike (check_run):

1. Decode, in C, into the typed structs of kernelindex.ingest.record_types: types, enums, ranges,
   required and unknown keys are checked there (and shape_problems adds the little a struct
   cannot say). What the structs refuse is worded here as it always was (jsonschema's words, read
   from the schema file, the published contract), per key.
2. The cross-field rules (kernelindex.rules.run_record): statistics, instants, names, sizes.
3. Normalisation (rules.run_record.normalised), which returns a new record.

Values JSON Lines cannot carry but a GraphQL variable can (NaN, NUL, lone surrogates, integers past
64 bits) are refused before step 1 (_value_problems). A line the C decoder refuses as JSON, or may
read differently from strict JSON (a \\u escape, which can spell NUL or a lone surrogate; a run of 19
digits; a key written twice, which msgspec keeps the last of), is read by the strict reader
(parse_json_line), which words what is wrong with it; what it reads goes through the same steps.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from kernelindex.db.text import text_problem
from kernelindex.ingest.errors import InputProblem
from kernelindex.ingest.record_types import (
    RECORD_FORMAT,
    LineProbe,
    Run,
    as_data,
    colons,
    convert_run,
    decode_run,
    is_date,
    probe_line,
    shape_problems,
)
from kernelindex.rules.instants import EARLIEST_OBSERVED, MAX_CLOCK_SKEW
from kernelindex.rules.run_record import (
    INT32_MAX,
    MAX_CONFIGURATION_KEY_CHARS,
    MAX_DETAILS_DEPTH,
    MAX_NAME_CHARS,
    MAX_REASON_CHARS,
    PARTS,
    Ranked,
    in_order,
    observed_at_problem,
    parse_observed_at,
    part_normal_form,
    part_problems,
    record_normal_form,
    record_problems,
)
from kernelindex.rules.run_record import short as _short

# Parsed JSON: the honest type of a decoded object before (and, for free-form parts, after) validation.
JSON = dict[str, Any]
Problem = tuple[str | None, str]

SCHEMA_PATH = Path(__file__).resolve().parent.parent.parent / "schemas" / "run-record.schema.json"
# Catalogue lines an export carries before its runs (kernelindex.ingest.catalog applies them).
HARDWARE_FORMAT = "kernelindex.hardware/1"
WORKLOAD_FORMAT = "kernelindex.workload/1"
CATALOG_FORMATS = (HARDWARE_FORMAT, WORKLOAD_FORMAT)

# A longer line is refused without being read into memory whole (a run record is a few kB; 1,000
# raw samples are ~20 kB).
MAX_LINE_BYTES = 1024 * 1024
INT64_MAX = 2**63 - 1

__all__ = [
    "CATALOG_FORMATS", "EARLIEST_OBSERVED", "HARDWARE_FORMAT", "INT32_MAX", "MAX_CLOCK_SKEW", "MAX_CONFIGURATION_KEY_CHARS",
    "MAX_DETAILS_DEPTH", "MAX_LINE_BYTES", "MAX_NAME_CHARS", "MAX_REASON_CHARS", "RECORD_FORMAT", "WORKLOAD_FORMAT",
    "CatalogueLine", "JsonProblems", "PendingLine", "RunRecord", "check_pending", "check_record", "check_run", "line_digest",
    "observed_at_problem", "parse_json_line", "parse_observed_at", "raw_lines", "read_item", "read_line", "read_pending",
    "read_run_records",
]


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


# -- wording what the structs refuse ----------------------------------------------------------------

# The structs refuse at the first thing wrong, naming it by a `$.path`; a record is told everything
# wrong with it, in the words it always was (jsonschema's, from the schema file: the schema states
# the types, minimums, enums and patterns those words quote). So the refused part is worded, taken
# out of a copy of the record (a required one stood in for by a value the schema accepts), and the
# copy converted again, until the structs accept what is left.


@lru_cache(maxsize=1)
def _schema() -> JSON:
    schema: JSON = json.loads(SCHEMA_PATH.read_text())
    return schema


_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+|\.\.\.)\]")
_ANY_KEY = ...  # a dict's value, whichever key (msgspec writes `[...]`)
_MAX_ROUNDS = 200


def _parse_error(error: msgspec.ValidationError) -> tuple[str, list[Any]]:
    match = _AT.match(str(error))
    assert match is not None  # the pattern matches any text
    path: list[Any] = []
    for name, index in _STEP.findall(match["path"] or ""):
        path.append(name if name else (_ANY_KEY if index == "..." else int(index)))
    return match["what"], path


def _schema_at(path: list[Any]) -> JSON:
    node = _schema()
    for step in path:
        if isinstance(step, str):
            node = node.get("properties", {}).get(step, {})
        elif isinstance(step, int):
            node = node.get("items", {})
        else:
            extra = node.get("additionalProperties", {})
            node = extra if isinstance(extra, dict) else {}
    return node


def _is_type(value: Any, kind: str) -> bool:
    number = type(value) is int or type(value) is float
    return {
        "object": type(value) is dict, "array": type(value) is list, "string": type(value) is str,
        "boolean": type(value) is bool, "null": value is None, "number": number,
        "integer": type(value) is int or (type(value) is float and value.is_integer()),
    }.get(kind, True)


def _leaf_reasons(value: Any, node: JSON) -> list[str]:
    """What the schema node refuses in a value, keyword by keyword in the schema's order, in
    jsonschema's words (for the keywords a leaf of the run-record schema uses)."""
    out: list[str] = []
    number = type(value) is int or type(value) is float
    for keyword, rule in node.items():
        if keyword == "type":
            kinds = [rule] if isinstance(rule, str) else rule
            if not any(_is_type(value, k) for k in kinds):
                out.append(f"{value!r} is not of type {', '.join(repr(k) for k in kinds)}")
        elif keyword == "const" and not (value == rule and type(value) is type(rule)):
            out.append(f"{rule!r} was expected")
        elif keyword == "enum" and not any(value == e and type(value) is type(e) for e in rule):
            out.append(f"{value!r} is not one of {rule!r}")
        elif keyword == "minimum" and number and value < rule:
            out.append(f"{value!r} is less than the minimum of {rule!r}")
        elif keyword == "exclusiveMinimum" and number and value <= rule:
            out.append(f"{value!r} is less than or equal to the minimum of {rule!r}")
        elif keyword == "maximum" and number and value > rule:
            out.append(f"{value!r} is greater than the maximum of {rule!r}")
        elif keyword == "minItems" and type(value) is list and len(value) < rule:
            out.append(f"{value!r} {'should be non-empty' if rule == 1 else 'is too short'}")
        elif keyword == "maxItems" and type(value) is list and len(value) > rule:
            out.append(f"{value!r} {'is expected to be empty' if rule == 0 else 'is too long'}")
        elif keyword == "minLength" and type(value) is str and len(value) < rule:
            out.append(f"{value!r} {'should be non-empty' if rule == 1 else 'is too short'}")
        elif keyword == "pattern" and type(value) is str and re.search(rule, value) is None:
            out.append(f"{value!r} does not match {rule!r}")
        elif keyword == "format" and rule == "date" and type(value) is str and not is_date(value):
            out.append(f"{value!r} is not a 'date'")
    return [_short(r) for r in out]


def _stand_in(node: JSON) -> Any:
    """A value the schema node accepts: put in place of a refused or missing required value, so
    that the rest of its object is read (and nothing is told of the stand-in itself)."""
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    kinds = node.get("type", "null")
    kind = kinds if isinstance(kinds, str) else kinds[0]
    if kind == "object":
        required = list(node.get("required", []))
        for option in node.get("anyOf", [])[:1]:
            required += option.get("required", [])
        return {name: _stand_in(node.get("properties", {}).get(name, {})) for name in required}
    return {"string": "x", "integer": 1, "number": 1, "array": [], "boolean": False}.get(kind)


def _rank(path: list[Any], keyword: str) -> tuple[list[str], int]:
    """Where jsonschema puts an error: sorted by the path of the value it judged, then in the order
    of the keywords in the schema there."""
    keywords = list(_schema_at([p for p in path if p is not None]))
    return [str(p) for p in path], keywords.index(keyword) if keyword in keywords else len(keywords)


def _struct_problems(data: dict[str, Any], first: msgspec.ValidationError) -> list[Problem]:
    """Everything the structs refuse in `data` (a JSON object), each worded per key; `first` is the
    error converting it raised."""
    found: list[tuple[tuple[list[str], int], Problem]] = []  # (where jsonschema sorts it, the problem)
    work = copy.deepcopy(data)  # a copy to take refused parts out of
    taken: list[list[Any]] = []  # the keys taken out for a wrong value
    error: msgspec.ValidationError | None = first
    for _ in range(_MAX_ROUNDS):
        if error is None:
            break
        current = error
        try:
            error = _tell(current, work, found, taken)
        except (KeyError, IndexError, TypeError):  # a path this wording does not follow: say it plainly
            what, path = _parse_error(current)
            found.append((_rank(path, ""), (_key_path(path), _short(what))))
            break
    found.sort(key=lambda f: f[0])
    return [problem for _, problem in found]


def _tell(error: msgspec.ValidationError, work: dict[str, Any], found: list[tuple[tuple[list[str], int], Problem]],
          taken: list[list[Any]]) -> msgspec.ValidationError | None:
    """One round of _struct_problems: word `error`, take its part out of `work` (or stand in for
    it), and convert again: the next error, or None when the structs accept what is left."""
    what, path = _parse_error(error)
    holder: Any = work
    for step in path:
        holder = holder if step is _ANY_KEY else holder[step]
    if what.startswith("Object missing required field"):
        # Every required key missing here, told and then stood in for, to read on.
        node = _schema_at(path)
        for name in node.get("required", []):
            if name not in holder:
                found.append((_rank(path, "required"), (_key_path([*path, name]), f"{name!r} is a required property")))
                holder[name] = _stand_in(node["properties"][name])
                taken.append([*path, name])
    elif what.startswith("Object contains unknown field"):
        known = set(_schema_at(path).get("properties", {}))
        for name in [k for k in holder if k not in known]:
            reason = _short(f"unknown field {name!r} (not in the run-record schema)")
            found.append((_rank(path, "additionalProperties"), (_key_path([*path, name]), reason)))
            del holder[name]
    else:
        # A value refused: a list's item or a dict's value is worded for every one of its
        # siblings refused alike, and the whole list or dict taken out.
        whole = path
        if path and (isinstance(path[-1], int) or path[-1] is _ANY_KEY):
            whole = path[:-1]
            container: Any = work
            for step in whole:
                container = container[step]
            node = _schema_at(path)
            items = container.items() if isinstance(container, dict) else enumerate(container)
            for key, value in items:
                for reason in _leaf_reasons(value, node):
                    found.append((_rank([*whole, key], ""), (_key_path([*whole, key]), reason)))
            if isinstance(container, list):  # the list's own length, where its schema bounds it
                found += [(_rank(whole, ""), (_key_path(whole), r)) for r in _leaf_reasons(container, _schema_at(whole))]
        else:
            node = _schema_at(path)
            reasons = _leaf_reasons(holder, node) or [_short(what)]
            found += [(_rank(path, ""), (_key_path(path), reason)) for reason in reasons]
            if isinstance(holder, list) and isinstance(node.get("items"), dict):  # and its items, as jsonschema tells both
                for index, value in enumerate(holder):
                    found += [(_rank([*path, index], ""), (_key_path([*path, index]), r)) for r in _leaf_reasons(value, node["items"])]
        if not whole:
            return None
        container = work
        for step in whole[:-1]:
            container = container[step]
        if whole[-1] in _schema_at(whole[:-1]).get("required", []):
            container[whole[-1]] = _stand_in(_schema_at(whole))  # to read the rest of its object
        else:
            del container[whole[-1]]
        taken.append(whole)
    try:
        run = convert_run(work)
    except msgspec.ValidationError as exc:
        return exc
    for key, reason in shape_problems(run):
        # Read after a value was taken out: only where none was taken from.
        if not any(_key_path(t).startswith(key or "") or (key or "").startswith(_key_path(t) + ".") for t in taken):
            parts = (key or "").split(".")
            found.append((_rank(parts, "anyOf" if reason.startswith("needs ") else ""), (key, reason)))
    return None


# -- checking -------------------------------------------------------------------------------------


def _value_problems(data: Any) -> list[Problem]:
    """What a GraphQL variable can carry but JSON Lines cannot (parse_json_line refuses these as it
    reads, in the same words): non-finite numbers, integers past 64 bits, NUL characters and lone
    surrogates in text or keys."""
    found: list[Problem] = []
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


_DIGITS_ONLY = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))  # digits → "0", all else → " "
_LONG_NUMBER = b"0" * 19


_PLAIN_ENCODER = msgspec.json.Encoder()
_PLAIN_DECODER = msgspec.json.Decoder()


def _plainly_storable(data: Any) -> bool:
    """True only where _value_problems(data) finds nothing, decided in C by msgspec (3.6 µs a
    record without a null, 8.7 µs with one, where json.dumps took ~14 µs): its encoder refuses a
    lone surrogate (UTF-8 has none) and writes NUL as \\u0000, but writes NaN and ±Infinity as null;
    so where its bytes hold a null they are decoded again, and a value that does not come back equal
    held one (None comes back None, a NaN does not). A run of 19 digits may be an integer past 64
    bits. False means "walk it": _value_problems words what is wrong, or finds nothing after all."""
    try:
        encoded = _PLAIN_ENCODER.encode(data)
        if b"null" in encoded and _PLAIN_DECODER.decode(encoded) != data:
            return False
    except (ValueError, TypeError, OverflowError, RecursionError, msgspec.DecodeError):  # UnicodeEncodeError is a ValueError
        return False
    return b"\\u0000" not in encoded and _LONG_NUMBER not in encoded.translate(_DIGITS_ONLY)


def _not_an_object(data: Any) -> list[Problem]:
    kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(data), "a number")
    return [(None, f"expected a JSON object (one run record per line), got {kind}")]


def _sorted_shape(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (p[0] or "").split("."))


# A record's parts repeat from run to run (one implementation, protocol, source and machine over
# thousands of runs): each distinct part is judged once, remembered by its encoding (so 2 and 2.0
# are told apart), if it is short: a remembered part is never large. Its verdict: the problems, and
# the normal form where it differs from the part as written (None: the part as written is its normal
# form, and the record's own plain values are kept, not a copy of the remembered form).
_PART_ENCODER = msgspec.json.Encoder()
_MAX_REMEMBERED_PART = 512
PartVerdict = tuple[list[Ranked], dict[str, Any] | None]


@lru_cache(maxsize=4096)
def _remembered_part(name: str, encoded: bytes) -> PartVerdict:
    return _judged_part(name, msgspec.json.decode(encoded))


def _judged_part(name: str, values: dict[str, Any]) -> PartVerdict:
    problems = part_problems(name, values)
    if problems or name == "hardware":
        return problems, None
    normal = part_normal_form(name, values)
    # The same encoding is the same value, types and all (2 and 2.0 are told apart).
    return problems, None if _PART_ENCODER.encode(normal) == _PART_ENCODER.encode(values) else normal


def _part_verdict(name: str, part: msgspec.Struct) -> PartVerdict:
    """A part's problems and its normal form where that differs (shared: copy it before handing it on)."""
    encoded = _PART_ENCODER.encode(part)
    if len(encoded) > _MAX_REMEMBERED_PART:
        return _judged_part(name, msgspec.to_builtins(part))
    return _remembered_part(name, encoded)


def _checked_run(run: Run, now: datetime | None) -> dict[str, Any] | list[Problem]:
    """Steps 2 and 3 for a run the structs accepted."""
    shape = shape_problems(run)
    if shape:
        return _sorted_shape(shape)
    found: list[Ranked] = []
    renamed: list[tuple[str, dict[str, Any]]] = []  # the parts whose normal form differs from what was written
    for name in PARTS:
        problems, normal = _part_verdict(name, run.environment.hardware if name == "hardware" else getattr(run, name))
        if problems:
            found += problems
        elif normal is not None:
            renamed.append((name, normal))
    data = as_data(run)  # a new value, every part of it the record's own
    found += record_problems(data, now if now is not None else datetime.now(UTC))
    if found:
        return in_order(found)
    out = record_normal_form(data)
    for name, normal in renamed:
        out[name] = dict(normal)
    return out


def check_run(data: Any, now: datetime | None = None, *, values_checked: bool = False) -> dict[str, Any] | list[Problem]:
    """The one check of run records, `ingest runs` and submitRuns alike: the record in its normal
    form (a new value; `data` is untouched), or (key, reason) for everything wrong with it (a
    non-empty list). `now` (default: the clock) bounds observed_at. values_checked: the record came
    through parse_json_line, which has refused non-finite numbers and bad text already."""
    if not isinstance(data, dict):
        return _not_an_object(data)
    if not values_checked and not _plainly_storable(data):
        found = _value_problems(data)
        if found:
            return found
    try:
        run = convert_run(data)
    except msgspec.ValidationError as exc:
        return _struct_problems(data, exc)
    return _checked_run(run, now)


def check_record(data: Any, now: datetime | None = None, *, values_checked: bool = False) -> list[Problem]:
    """check_run's problems; a valid `data` is made its normal form in place. For the callers that
    still hand the dict they checked to RunRecord (ingest kernelbench, until the one pipeline takes
    it over); new code uses check_run, which returns the normal form instead."""
    checked = check_run(data, now, values_checked=values_checked)
    if isinstance(checked, list):
        return checked
    data.clear()
    data.update(checked)
    return []


# -- records --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRecord:
    """A checked record in its normal form, as plain JSON values (what the writer reads); `where`
    locates it in its input (`line` is its line number, when it has one)."""

    data: dict[str, Any]
    file: str
    where: str
    line: int | None = None
    # The digest of the line it was read from (line_digest), stored with its run.
    line_sha: bytes | None = None
    # content_digest(data), where the reader worked it out ahead in its thread (ingest runs); else
    # the stage works it out.
    content_sha: str | None = None

    @property
    def observed_at(self) -> datetime:
        text = self.data["observed_at"]
        return _observed_instant(text) if len(text) <= 64 else parse_observed_at(text)


@lru_cache(maxsize=4096)
def _observed_instant(text: str) -> datetime:
    """parse_observed_at, remembered: a file's (or a call's) records share a few times."""
    return parse_observed_at(text)


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


# The version of everything the checks decide and normalise. A line's digest (line_digest) covers
# it, so after a change to the checks no stored digest matches and every line is checked afresh.
# Bump it with any change to what check_run accepts or how it normalises.
CHECKS_VERSION = b"run-record-checks/1"


def line_digest(raw: bytes) -> bytes:
    """128-bit digest of a line's bytes (surrounding whitespace aside) under CHECKS_VERSION."""
    return hashlib.blake2b(raw.strip(), digest_size=16, key=CHECKS_VERSION).digest()


def _plain_bytes(raw: bytes) -> bool:
    """Whether the C decoder reads the line as strict JSON does (see the module's docstring; a key
    written twice is found after decoding, by _written_once)."""
    return b"\\u" not in raw and _LONG_NUMBER not in raw.translate(_DIGITS_ONLY)


def _written_once(raw: bytes, run: Run) -> bool:
    # Colons: one per key as written plus those inside strings. The run's own encoding writes one
    # per key it kept plus the same string colons (no \\u escapes here), so the counts differ
    # exactly when an object repeated a key.
    return colons(run) == raw.count(b":")


class PendingLine(NamedTuple):
    """A run line not checked yet: `ingest runs` first asks whether its very bytes are a live run
    already (RunWriter.skip_known, by its digest and the workload revision its probe names), and
    decodes and checks in full only the others (check_pending). A tuple: a batch holds thousands."""

    number: int
    raw: bytes  # without the byte-order mark of a first line
    digest: bytes  # line_digest(raw)
    probe: LineProbe  # the workload and source revision it names

    @property
    def where(self) -> str:
        return f"line {self.number}"


def read_pending(number: int, raw: bytes | str | _TooLong, file: str) -> PendingLine | RunRecord | CatalogueLine | list[InputProblem] | None:
    """One physical line: a PendingLine when it is a line of bytes whose probe (the few keys that
    find its live run, record_types.LineProbe) decodes, else what read_item makes of it (a record, a
    catalogue line, its problems, or None for a blank line). A pending line is not checked here: a
    stored run's line passed the checks already (and the strict reader where msgspec could read it
    otherwise, so its probe reads as the check did), the others are checked by check_pending."""
    if isinstance(raw, bytes):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            probe = probe_line(raw)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            pass
        else:
            return PendingLine(number, raw, line_digest(raw), probe)
        item = read_item(number, raw, file)
        # Read another way, but a line of bytes all the same: its run keeps the digest.
        return replace(item, line_sha=line_digest(raw)) if isinstance(item, RunRecord) else item
    return read_item(number, raw, file)


def check_pending(line: PendingLine, file: str) -> RunRecord | list[InputProblem]:
    """The check of a PendingLine: exactly read_item's answer for its bytes, its digest kept."""
    found = read_item(line.number, line.raw, file, line_sha=line.digest)
    assert not isinstance(found, CatalogueLine) and found is not None  # its probe read a run record's format
    return found


def read_line(number: int, raw: bytes | str | _TooLong, file: str) -> RunRecord | list[InputProblem] | None:
    """One physical line: a RunRecord, its problems, or None for a blank line or a catalogue line."""
    item = read_item(number, raw, file)
    return None if isinstance(item, CatalogueLine) else item


def read_item(
    number: int, raw: bytes | str | _TooLong, file: str, *, line_sha: bytes | None = None,
) -> RunRecord | CatalogueLine | list[InputProblem] | None:
    """One physical line, decoded and checked once: a RunRecord, a catalogue line, the line's
    problems, or None for a blank line. line_sha: the line's digest (line_digest), which its record keeps."""
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
        if _plain_bytes(raw):
            try:
                run = decode_run(raw)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                pass  # the strict reader below words it (or finds a catalogue line, or a blank one)
            else:
                if _written_once(raw, run):
                    return _record(_checked_run(run, None), number, file, where, line_sha)
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
        return CatalogueLine(data, where)
    try:
        checked = check_run(data, values_checked=True)
    except (RecursionError, MemoryError) as exc:
        checked = [(None, f"cannot be checked: {'nested too deeply' if isinstance(exc, RecursionError) else 'too large'}")]
    return _record(checked, number, file, where, line_sha)


def _record(checked: dict[str, Any] | list[Problem], number: int, file: str, where: str, digest: bytes | None = None) -> RunRecord | list[InputProblem]:
    if isinstance(checked, list):
        return [InputProblem(file, where, reason, key=key) for key, reason in checked]
    return RunRecord(checked, file, where, number, digest)


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
