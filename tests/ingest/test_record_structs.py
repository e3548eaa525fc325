"""The typed structs of the run-record format (kernelindex.ingest.record_types) against the JSON
Schema in schemas/ (the published contract), judged by `jsonschema` itself: on every line of the
test corpus and on more than 3,000 generated records, good and bad, the structs accept exactly what
the schema accepts, and what they refuse is worded as jsonschema words it, key by key.

(The schema's "date-time" format is left to the observed_at rule, which is stricter than the schema
asks: jsonschema checks it only where an optional package is installed. "date" is checked by both.)
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest

from kernelindex.ingest.record_types import Run, as_data, convert_run, decode_run, shape_problems
from kernelindex.ingest.records import SCHEMA_PATH, JsonProblems, check_run, parse_json_line
from tests.fixtures.bad.make_corpus import GOOD

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VALIDATOR = jsonschema.Draft202012Validator(
    json.loads(SCHEMA_PATH.read_text()), format_checker=jsonschema.FormatChecker(formats=["date"])
)


def structs_accept(data: Any) -> bool:
    try:
        run = convert_run(data)
    except msgspec.ValidationError:
        return False
    return not shape_problems(run)


def _key_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(record)"


def _short(text: str) -> str:
    return text if len(text) <= 300 else text[:299] + "…"


def jsonschema_problems(data: dict) -> list[tuple[str | None, str]]:
    """jsonschema's errors, worded per key as `ingest runs` has always worded them."""
    problems: list[tuple[str | None, str]] = []
    for error in sorted(VALIDATOR.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
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


def _judge(data: Any) -> bool:
    """Both verdicts agree; a refused object is told jsonschema's problems, in its words. True: accepted."""
    valid = VALIDATOR.is_valid(data)
    assert structs_accept(data) == valid, (data, jsonschema_problems(data) if isinstance(data, dict) else None)
    if isinstance(data, dict) and not valid:
        assert check_run(copy.deepcopy(data)) == jsonschema_problems(data), data
    return valid


def test_every_corpus_line_gets_the_schemas_verdict():
    judged = accepted = 0
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        for raw in path.read_bytes().splitlines():
            try:
                data = parse_json_line(raw.decode("utf-8").removeprefix("\ufeff"))
            except (JsonProblems, ValueError, UnicodeDecodeError):
                continue  # not JSON a record can be: refused before any shape is judged
            if isinstance(data, dict) and str(data.get("format", "")).startswith(("kernelindex.hardware", "kernelindex.workload")):
                continue  # catalogue lines: not run records
            judged += 1
            accepted += _judge(data)
    assert judged > 300 and 0 < accepted < judged, (judged, accepted)


# Values of every kind the schema tells apart: types, bounds, enums, the empty string, integral floats.
VALUES = [None, "x", "", "Bad Slug", -1, 0, 1, 1.5, 2.0, -0.0, 1e-9, 10**12, True, False, [], {}, [1.5], [0], {"a": 1},
          "fp16", "fp8", "passed", "median", "candidate", "mirrored", "kernelindex.run/1", "2026-02-30", "2026-06-01", "a" * 64]


def _leaves(value, path=()):
    if isinstance(value, dict):
        if path:
            yield path
        for k, v in value.items():
            yield from _leaves(v, path + (k,))
    else:
        yield path


def _at(record: dict, path: tuple) -> dict:
    target = record
    for p in path[:-1]:
        target = target[p]
    return target


def generated_records():
    """Every leaf and object of a good record set to each of VALUES, deleted, or given an unknown
    neighbour; the workload and hardware named each way (and neither)."""
    for path in _leaves(GOOD):
        for value in VALUES:
            rec = copy.deepcopy(GOOD)
            _at(rec, path)[path[-1]] = copy.deepcopy(value)
            yield rec
        rec = copy.deepcopy(GOOD)
        del _at(rec, path)[path[-1]]
        yield rec
        rec = copy.deepcopy(GOOD)
        _at(rec, path)["unexpected"] = 1
        yield rec
    for workload in ({"suite": "kernelbench", "level": 3, "problem": 9}, {"suite": "kernelbench", "level": 3}, {},
                     {"slug": "s", "level": 0}, {"suite": "k", "level": 2.5, "problem": 1}, {"source_sha256": "0" * 64}):
        for hardware in ({"sku": "NVIDIA H100 SXM5 80GB"}, {"product_name": "NVIDIA H100"}, {}, {"sku": ""}):
            rec = copy.deepcopy(GOOD)
            rec["workload"], rec["environment"]["hardware"] = copy.deepcopy(workload), copy.deepcopy(hardware)
            yield rec
    for bindings in ({}, {"n": 2.0}, {"n": 2.5}, {"n": "2"}, {"n": True}, {"n": -3}, {"a": 1, "b": None}):
        rec = copy.deepcopy(GOOD)
        rec["configuration"]["bindings"] = bindings
        yield rec
    for samples in ([], [0.5, 0], [1, "1"], [True], None, [-1.0, 2.0, -3.0]):
        rec = copy.deepcopy(GOOD)
        rec["samples_ms"] = samples
        yield rec
    yield from ([], "record", 1, None)  # not objects at all
    # Two or three changes at once (seeded): a record is told everything wrong with it.
    rng = random.Random(24)
    paths = list(_leaves(GOOD))
    for _ in range(1600):
        rec = copy.deepcopy(GOOD)
        for path in rng.sample(paths, rng.choice([2, 3])):
            try:
                target = _at(rec, path)
            except (KeyError, TypeError):
                continue  # a parent changed already
            if not isinstance(target, dict):
                continue
            roll = rng.random()
            if roll < 0.15:
                target.pop(path[-1], None)
            elif roll < 0.25:
                target["unexpected"] = 1
            else:
                target[path[-1]] = copy.deepcopy(rng.choice(VALUES))
        yield rec


def test_generated_records_get_the_schemas_verdict():
    judged = accepted = 0
    for record in generated_records():
        judged += 1
        accepted += _judge(record)
    assert judged >= 3000, judged
    assert accepted > 300 and judged - accepted > 1500, (judged, accepted)


def test_a_line_decodes_to_the_struct_its_values_convert_to():
    """One reader: bytes decoded in C give the same struct as the same values converted (submitRuns)."""
    line = json.dumps(GOOD).encode()
    run = decode_run(line)
    assert isinstance(run, Run)
    assert run == convert_run(json.loads(line))
    # Absent keys stay absent and nulls stay null, so the plain values are the record's own.
    assert as_data(run) == GOOD


@pytest.mark.parametrize("change, key, reason", [
    (lambda r: r["statistics"].update(num_trials="5"), "statistics.num_trials", "'5' is not of type 'integer'"),
    (lambda r: r["statistics"].update(mean=0), "statistics.mean", "0 is less than or equal to the minimum of 0"),
    (lambda r: r["protocol"].update(warmup=-1), "protocol.warmup", "-1 is less than the minimum of 0"),
    (lambda r: r["configuration"].update(dtype="fp8"), "configuration.dtype",
     "'fp8' is not one of ['fp32', 'fp16', 'bf16', 'fp64', 'int8', 'int32', 'int64', 'bool']"),
    (lambda r: r.update(colour="red"), "colour", "unknown field 'colour' (not in the run-record schema)"),
    (lambda r: r.pop("observed_at"), "observed_at", "'observed_at' is a required property"),
    (lambda r: r.update(workload={"suite": "kernelbench"}), "workload", "needs slug or suite and level and problem"),
    (lambda r: r["implementation"].update(slug="Bad Slug"), "implementation.slug", "'Bad Slug' does not match '^[a-z0-9][a-z0-9_.-]*$'"),
    (lambda r: r["source"].update(revision_date="2026-02-30"), "source.revision_date", "'2026-02-30' is not a 'date'"),
    (lambda r: r["statistics"].update(std=True), "statistics.std", "True is not of type 'number', 'null'"),
    (lambda r: r["configuration"]["bindings"].update(batch_size=2.5), "configuration.bindings.batch_size", "2.5 is not of type 'integer'"),
])
def test_what_the_structs_refuse_is_worded_as_it_always_was(change, key, reason):
    record = copy.deepcopy(GOOD)
    change(record)
    assert check_run(record) == [(key, reason)]


def test_checking_returns_a_new_normal_form_and_leaves_its_input_alone():
    record = copy.deepcopy(GOOD)
    record["environment"]["provider"] = "  modal "
    record["statistics"]["num_trials"] = 5.0
    record["source"]["name"] = "Bad   corpus tests "
    before = copy.deepcopy(record)
    checked = check_run(record)
    assert record == before
    assert isinstance(checked, dict)
    assert checked["environment"]["provider"] == "Modal"
    assert checked["statistics"]["num_trials"] == 5 and type(checked["statistics"]["num_trials"]) is int
    assert checked["source"]["name"] == "Bad corpus tests"
