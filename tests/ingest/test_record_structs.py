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


# A record in the stated form (a source adapter's run, as /exports/catalog.jsonl writes it): a median with
# its 20th/80th percentiles, a source's speedup and id, its terms, and every new optional field given.
GOOD_STATED = {
    "format": "kernelindex.run/1",
    "workload": {"slug": "liger-kernel-rms-norm-forward"},
    "configuration": {"bindings": {"H": 4096, "offset": -100}, "dtype": "fp8_e4m3fnuz", "key": '{"bindings":{"H":4096}}#case-1'},
    "implementation": {"slug": "liger/rms_norm@0.5.2", "authors": ["A. Person"], "project": "liger", "target_architectures": ["sm_90"],
                       "artifact_sha256": "sha256:" + "ab" * 32, "artifact_bytes": 1234, "version": "0.5.2"},
    "environment": {"hardware": {"product_name": "NVIDIA H100 80GB HBM3"}, "details": {"vendor": "nvidia"}, "fingerprint": "0" * 64},
    "protocol": {"name": "Liger-Kernel benchmark (speed)", "version": "", "timer": None, "statistic": "median", "metric": "latency",
                 "unit": "ms", "harness": "do_bench", "comparator": None, "family": "liger", "notes": None},
    "status": "passed",
    "figure": {"value": 0.5, "low": 0.45, "high": 0.6, "quantiles": [0.2, 0.8], "min": None, "max": None, "std": None, "mean": None,
               "samples": 20},
    "source_speedup": 1.5,
    "upstream_id": "run-1",
    "source_correctness": {"comparator": "allclose", "maximumAbsoluteError": 0},
    "observed_at": "2026-06-01T12:00:00Z",
    "evidence": "reported",
    "source": {"name": "Liger-Kernel", "licence": "BSD-2-Clause", "revision": "2120862b", "revision_date": "2026-08-10",
               "key": "liger-kernel", "kind": "benchmark", "terms": "t", "attribution": "a", "route": "x.csv", "whole": True},
}

# Values of every kind the schema tells apart: types, bounds, enums, the empty string, integral floats.
VALUES = [None, "x", "", "Bad Slug", -1, 0, 1, 1.5, 2.0, -0.0, 1e-9, 10**12, True, False, [], {}, [1.5], [0], {"a": 1},
          "fp16", "fp8", "passed", "median", "candidate", "mirrored", "kernelindex.run/1", "2026-02-30", "2026-06-01", "a" * 64,
          "geomean", "memory", "MB", "latency", "ms", "Bad/Slug@", [0.2, 0.8], [0.8], [0.2, 1.5, 0.3], ["x"], 0.5]


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


def _varied(good: dict):
    """Every leaf and object of a good record set to each of VALUES, deleted, or given an unknown neighbour."""
    for path in _leaves(good):
        for value in VALUES:
            rec = copy.deepcopy(good)
            _at(rec, path)[path[-1]] = copy.deepcopy(value)
            yield rec
        rec = copy.deepcopy(good)
        del _at(rec, path)[path[-1]]
        yield rec
        rec = copy.deepcopy(good)
        _at(rec, path)["unexpected"] = 1
        yield rec


def generated_records():
    """Every leaf and object of a good record set to each of VALUES, deleted, or given an unknown
    neighbour; the workload and hardware named each way (and neither)."""
    yield from _varied(GOOD)
    for protocol in ({"metric": "memory"}, {"metric": "latency", "unit": "ms"}, {"unit": "s"}, {"statistic": "geomean"}):
        rec = copy.deepcopy(GOOD)  # the measured form is a latency in ms, of a mean, median or min
        rec["protocol"].update(protocol)
        yield rec
    for workload in ({"suite": "kernelbench", "level": 3, "problem": 9}, {"suite": "kernelbench", "level": 3}, {},
                     {"suite": "liger-kernel", "key": "rms_norm-forward"}, {"key": "k"}, {"suite": "s", "key": ""},
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


def test_generated_stated_records_get_the_schemas_verdict():
    """The stated form's fields (figure, its bounds and quantiles, the source's speedup, id, correctness
    and terms, the protocol's metric and unit, the implementation as a source describes it): the
    structs and the schema agree on every variation, and the good record passes every check."""
    assert check_run(copy.deepcopy(GOOD_STATED)) == GOOD_STATED
    judged = accepted = 0
    for record in _varied(GOOD_STATED):
        judged += 1
        accepted += _judge(record)
    rng = random.Random(25)
    paths = list(_leaves(GOOD_STATED))
    for _ in range(600):
        rec = copy.deepcopy(GOOD_STATED)
        for path in rng.sample(paths, 2):
            try:
                target = _at(rec, path)
            except (KeyError, TypeError):
                continue  # a parent changed already
            if isinstance(target, dict):
                target[path[-1]] = copy.deepcopy(rng.choice(VALUES))
        judged += 1
        accepted += _judge(rec)
    assert judged >= 2000 and accepted > 200 and judged - accepted > 1000, (judged, accepted)


@pytest.mark.parametrize("change, key, reason", [
    (lambda r: r.update(statistics={"mean": 1.0, "num_trials": 3}), "statistics", "a record in the stated form"),
    (lambda r: r.update(figure=None), "figure", "a passed run needs a figure"),
    (lambda r: r["figure"].update(low=0.7), "figure.low", "0.7 is above figure.high (0.6)"),
    (lambda r: r["figure"].update(quantiles=[0.8, 0.2]), "figure.quantiles", "the lower quantile must be below the upper"),
    (lambda r: r["protocol"].update(metric="memory"), "protocol.unit", "'ms' is not the unit of memory ('MB')"),
    (lambda r: r["figure"].update(quantiles=[0.2, 1.5]), "figure.quantiles[1]", "1.5 is greater than the maximum of 1"),
    (lambda r: r["figure"].update(quantiles=[0.2]), "figure.quantiles", "[0.2] is too short"),
])
def test_what_the_stated_form_refuses(change, key, reason):
    record = copy.deepcopy(GOOD_STATED)
    change(record)
    problems = check_run(record)
    assert isinstance(problems, list) and len(problems) == 1 and problems[0][0] == key and reason in problems[0][1], problems


@pytest.mark.parametrize("change, key, reason", [
    (lambda r: r["configuration"]["bindings"].update(offset=-100), "configuration.bindings.offset",
     "-100 is not a size: an axis binding is a positive integer"),
    (lambda r: r["protocol"].update(metric="memory"), "protocol.metric", "'latency' was expected"),
    (lambda r: r["protocol"].update(statistic="geomean"), "protocol.statistic", "'geomean' is not one of ['mean', 'median', 'min']"),
])
def test_the_measured_form_refuses_what_only_a_source_states(change, key, reason):
    record = copy.deepcopy(GOOD)
    change(record)
    assert check_run(record) == [(key, reason)]


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
    (lambda r: r.update(workload={"suite": "kernelbench"}), "workload", "needs slug or suite and level and problem or suite and key"),
    (lambda r: r["implementation"].update(slug="Bad Slug"), "implementation.slug", "'Bad Slug' does not match '^[a-z0-9][a-z0-9_.@/-]*$'"),
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
