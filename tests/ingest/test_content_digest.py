"""The content digest written the fast way (msgspec, kernelindex.ingest.digests.canonical_json_bytes)
is the very value the stored runs hold: the sha256 of json.dumps's canonical JSON of the same content
(issue 24, point 4). Databases keep these digests, and a re-import finds a run unchanged only if its
digest is byte for byte the one stored."""

from __future__ import annotations

import hashlib
import json
import math
import random
import struct
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from kernelindex.ingest import digests
from kernelindex.ingest.digests import (
    CONTENT_KEYS,
    VOLATILE_ENVIRONMENT_DETAILS,
    canonical_json_bytes,
    content_digest,
    environment_fingerprint,
)
from kernelindex.ingest.records import RunRecord, read_item
from kernelindex.rules.identity import canonical_json, digest
from kernelindex.rules.run_record import parse_observed_at

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def reference_content_digest(data: dict[str, Any]) -> str:
    """content_digest as it was written before the fast way (json.dumps, key by key): the spelling
    the stored digests have."""

    def without_nulls(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: without_nulls(v) for k, v in value.items() if v is not None}
        return value

    content = {k: data.get(k) for k in CONTENT_KEYS}
    for key in ("statistics", "correctness"):
        if isinstance(content[key], dict):
            content[key] = without_nulls(content[key])
    if content["samples_ms"] == []:
        content["samples_ms"] = None
    observed = content["observed_at"]
    if isinstance(observed, str):
        try:
            content["observed_at"] = parse_observed_at(observed).astimezone(UTC).isoformat().replace("+00:00", "Z")
        except ValueError:
            pass
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                     allow_nan=False).encode("utf-8")).hexdigest()


# Floats where the two encoders part ways (exponents, the 1e-5..1e-4 decade, 1e16 and past it) and
# ordinary ones.
AWKWARD_FLOATS = [
    1e-7, 1e22, -0.0, 0.0, 0.1 + 0.2, 1e16, 9999999999999998.0, 1e15, 123456789012345.6, 1e-4, 1e-5, 9.99e-5,
    0.0001, 0.00012, 5.0, 5e-324, 1.7976931348623157e308, 1e21, 1e-6, 123.456, 1 / 3, 2.0**53, 2.0**63, 1e-300,
    12345678901234567890.0, 0.000099999, 100.00001, 1.5e16, 3.14159e-5,
]
AWKWARD_INTS = [0, 1, -1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, 10**30]
AWKWARD_TEXT = [
    "", "plain", 'a "quoted" word', "back\\slash", "line\nbreak\r\t\b\f", "\x00\x01\x1f", "\x7f", "\u2028\u2029",
    "é漢字😀", "</script>", "a/b", "1e5", "0.00001", "€ 1.0e-7 ms",
]


def _nones(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_nones(v) for v in value.values())
    if isinstance(value, list):
        return sum(_nones(v) for v in value)
    return value is None


def _random_float(rng: random.Random) -> float:
    """A finite double: any bit pattern, or a decimal-looking value at any scale."""
    while True:
        if rng.random() < 0.5:
            value: float = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        else:
            value = round(rng.uniform(-1e6, 1e6) * 10.0 ** rng.randint(-12, 20), rng.randint(0, 14))
        if math.isfinite(value):
            return value


def test_canonical_bytes_are_json_dumps_bytes_for_awkward_values() -> None:
    values: list[Any] = [*AWKWARD_FLOATS, *(-v for v in AWKWARD_FLOATS), *AWKWARD_INTS, *AWKWARD_TEXT, True, False, None]
    values += [{"b": v, "a": [v, {"z": v, "é": None, "Z": v, "_": 1}]} for v in values]
    values.append({text: i for i, text in enumerate(AWKWARD_TEXT)})  # keys in every order the texts sort in
    for value in values:
        assert canonical_json_bytes(value, _nones(value)) == canonical_json(value).encode("utf-8"), value


def test_canonical_bytes_are_json_dumps_bytes_for_random_floats() -> None:
    rng = random.Random(24)
    fast = 0
    for _ in range(100_000):
        value = _random_float(rng)
        encoded = canonical_json_bytes({"x": value}, 0)
        assert encoded == canonical_json({"x": value}).encode("utf-8"), value
        fast += b"e" not in encoded and b"0.0000" not in encoded
    assert fast > 20_000  # the fast way is taken for ordinary values (not always the slow one)


def test_canonical_bytes_refuse_as_json_dumps_does() -> None:
    for bad in (math.nan, math.inf, -math.inf):  # msgspec would write null: the slow way refuses
        with pytest.raises(ValueError):
            canonical_json_bytes({"mean": bad, "std": None}, 1)
        with pytest.raises(ValueError):
            canonical_json_bytes({"samples": [1.0, bad]}, 0)
    with pytest.raises(UnicodeEncodeError):
        canonical_json_bytes({"reason": "lone \ud800 surrogate"}, 0)
    with pytest.raises(TypeError):
        canonical_json_bytes({"x": object()}, 0)
    assert canonical_json_bytes({"reason": "null pointer", "x": None}, 1) == b'{"reason":"null pointer","x":null}'
    assert canonical_json_bytes({"samples": [1.0, None]}, 1) == b'{"samples":[1.0,null]}'  # a None deeper than counted


def _corpus_records() -> list[RunRecord]:
    records = []
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
            item = read_item(number, raw, str(path))
            if isinstance(item, RunRecord):
                records.append(item)
    return records


def test_content_digest_of_the_corpus_is_the_stored_spelling() -> None:
    records = _corpus_records()
    assert len(records) > 10
    for record in records:
        assert content_digest(record.data) == reference_content_digest(record.data), record.where


def test_content_digest_of_awkward_records_is_the_stored_spelling() -> None:
    rng = random.Random(4)
    base = _corpus_records()[0].data
    for i in range(3000):
        data = json.loads(json.dumps(base))
        mean = abs(_random_float(rng)) or 1.0
        data["statistics"] = {"mean": mean, "std": rng.choice([None, 0.0, mean * 1e-7, -0.0]), "min": rng.choice(AWKWARD_FLOATS),
                              "max": mean * 1e22 if mean < 1e280 else mean, "num_trials": rng.choice(AWKWARD_INTS), "median": None}
        data["samples_ms"] = rng.choice([[], None, [mean, 1e-5, 2.5e16, mean * 1e-9], [rng.choice(AWKWARD_FLOATS) for _ in range(5)]])
        data["compile_time_ms"] = rng.choice([None, 1e-5, 12.0, 7, 1e16])
        data["correctness"] = rng.choice([None, {"passed": True, "max_abs_diff": rng.choice(AWKWARD_FLOATS), "atol": None,
                                                 "reference": rng.choice(AWKWARD_TEXT)}])
        data["failure_reason"] = rng.choice([None, *AWKWARD_TEXT])
        data["observed_at"] = rng.choice(["2026-06-01T12:00:00Z", "2026-06-01T14:00:00+02:00", "2026-06-01T12:00:00.123456",
                                          "not a time", f"2026-06-01T12:00:{i % 60:02d}-07:30"])
        assert content_digest(data) == reference_content_digest(data), data


def test_content_digest_golden_value() -> None:
    """A digest as databases store it, written out: any change to the spelling fails here."""
    data: dict[str, Any] = {
        "status": "passed", "evidence": "reported", "observed_at": "2026-06-01T14:00:00+02:00", "failure_reason": None,
        "statistics": {"mean": 1.25, "std": 0.01, "min": 1.2, "max": 1.3, "num_trials": 100, "median": None},
        "samples_ms": [], "compile_time_ms": 1e-05, "correctness": {"passed": True, "max_abs_diff": 1e-07, "atol": None},
    }
    text = ('{"compile_time_ms":1e-05,"correctness":{"max_abs_diff":1e-07,"passed":true},"evidence":"reported",'
            '"failure_reason":null,"observed_at":"2026-06-01T12:00:00Z","samples_ms":null,'
            '"statistics":{"max":1.3,"mean":1.25,"min":1.2,"num_trials":100,"std":0.01},"status":"passed"}')
    assert content_digest(data) == hashlib.sha256(text.encode()).hexdigest() == reference_content_digest(data)
    data["compile_time_ms"] = 3.5  # and the fast way's own bytes
    assert content_digest(data) == hashlib.sha256(text.replace("1e-05", "3.5").encode()).hexdigest()


def reference_environment_fingerprint(sku: str, env: dict[str, Any]) -> str:
    """environment_fingerprint as it was written before the C encoder (rules.identity.digest of the
    same value): the spelling stored fingerprints have."""
    details = {k: v for k, v in (env.get("details") or {}).items() if k not in VOLATILE_ENVIRONMENT_DETAILS}
    software = {k: v for k, v in (env.get("software") or {}).items() if v is not None}
    return digest({"sku": sku, "provider": env.get("provider"), "label": env.get("label"), "software": software, "details": details})


def test_environment_fingerprint_is_the_stored_spelling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Written by msgspec where it writes json.dumps's bytes, by json.dumps elsewhere: the same
    fingerprint (nulls in details, "null" in a text, exponents, escapes, NaN refused alike)."""
    rng = random.Random(27)
    details_values: list[Any] = [*AWKWARD_FLOATS, *AWKWARD_INTS, *AWKWARD_TEXT, None, True, [], {}, {"b": 1, "a": [None, 1.0]}]
    for _ in range(5000):
        env: dict[str, Any] = {}
        for key in ("provider", "label"):
            if rng.random() < 0.8:
                env[key] = rng.choice([None, "BenchCloud 1", "null", *AWKWARD_TEXT])
        if rng.random() < 0.8:
            env["software"] = {k: rng.choice([None, "2.13.0", "null", 1.5]) for k in rng.sample(["torch", "cuda", "driver", "python"], 3)}
        if rng.random() < 0.9:
            env["details"] = {rng.choice(["node", "clocks", "cpu", "é", "Z", "fingerprint"]): rng.choice(details_values)
                              for _ in range(rng.randint(0, 4))}
        sku = rng.choice(["NVIDIA H100 SXM5 80GB", "é漢字"])
        assert environment_fingerprint(sku, env) == reference_environment_fingerprint(sku, env), env
    for bad in (math.nan, math.inf):
        with pytest.raises(ValueError):
            environment_fingerprint("H100", {"details": {"x": bad}})
    # An ordinary machine is written by the C encoder alone (json.dumps is not called).
    plain = {"provider": "BenchCloud 1", "label": None, "software": {"torch": "2.13.0", "cuda": None},
             "details": {"sm_count": 132, "cpu": "bench cpu", "clocks": 1}}
    expected = reference_environment_fingerprint("NVIDIA H100 SXM5 80GB", plain)
    monkeypatch.setattr(digests, "canonical_json", None)
    assert environment_fingerprint("NVIDIA H100 SXM5 80GB", plain) == expected
