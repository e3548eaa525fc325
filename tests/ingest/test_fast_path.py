"""The fast path of `ingest runs` (lines decoded in C straight into the typed structs, the
one-sweep statistics check, memoised name checks) against the careful path (the strict reader,
then the same values converted into the structs, as submitRuns' are, and every statistics rule
applied) and against `jsonschema` itself, the published contract: on every line of the bad-input
corpus and on a few thousand generated records, good and bad, both paths give the same record or
the same problems, and every record the fast path accepts is valid under the JSON Schema.
(The structs' own verdict against the schema: test_record_structs.py.)"""

from __future__ import annotations

import copy
import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kernelindex.ingest import records as records_module
from kernelindex.ingest.record_types import as_data, decode_run
from kernelindex.ingest.records import (
    CatalogueLine,
    PendingLine,
    RunRecord,
    check_pending,
    parse_json_line,
    read_item,
    read_pending,
)
from kernelindex.rules import measurements
from kernelindex.rules import run_record as run_record_rules
from tests.fixtures.bad.make_corpus import good
from tests.ingest.test_record_structs import VALIDATOR

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def corpus_lines() -> list[tuple[str, int, bytes]]:
    out = []
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        for number, raw in enumerate(path.read_bytes().splitlines(keepends=True), start=1):
            out.append((path.name, number, raw))
    return out


def _careful(number: int, raw: bytes, file: str, monkeypatch: pytest.MonkeyPatch):
    """read_item with every shortcut off: the strict reader (its values converted into the structs),
    and statistics_problems for every record."""
    with monkeypatch.context() as patch:
        patch.setattr(records_module, "_plain_bytes", lambda raw: False)
        patch.setattr(run_record_rules, "statistics_plainly_valid", lambda stats: False)
        return read_item(number, raw, file)


def _same(fast, careful) -> None:
    if isinstance(careful, RunRecord):
        assert isinstance(fast, RunRecord)
        # Equal values of equal types (an int is not a float: digests would differ).
        assert json.dumps(fast.data, sort_keys=True) == json.dumps(careful.data, sort_keys=True)
        assert (fast.file, fast.where, fast.line) == (careful.file, careful.where, careful.line)
    elif isinstance(careful, CatalogueLine):
        assert fast == careful
    else:
        assert fast == careful, (fast, careful)


def _deferred(number: int, raw: bytes, file: str):
    """What `ingest runs` makes of a line: decoded first (read_pending), checked later (check_pending)."""
    found = read_pending(number, raw, file)
    return check_pending(found, file) if isinstance(found, PendingLine) else found


def _schema_valid(data) -> bool:
    return VALIDATOR.is_valid(data)


def test_every_corpus_line_reads_the_same_by_both_paths(monkeypatch):
    lines = corpus_lines()
    assert len(lines) > 90  # the corpus is there
    took_fast = 0
    for file, number, raw in lines:
        fast = read_item(number, raw, file)
        careful = _careful(number, raw, file, monkeypatch)
        _same(fast, careful)
        _same(_deferred(number, raw, file), careful)
        if isinstance(fast, RunRecord):
            assert _schema_valid(fast.data), (file, number)
        took_fast += isinstance(read_pending(number, raw, file), PendingLine)
    assert took_fast > len(lines) // 2  # the fast path is the common one, not a bystander


def _mutations(rng: random.Random, record: dict) -> str:
    """One generated line: a good record, or one changed in a way a reader may get wrong."""
    rec = json.loads(json.dumps(record))
    text = None
    choice = rng.randrange(24)
    stats = rec["statistics"]
    if choice == 0:
        text = json.dumps(rec)[:-1] + ', "status": "failed"}'  # a repeated key
    elif choice == 1:
        rec["environment"]["details"] = {"a": {"b": 1}, "a2": "x:y"}
        text = json.dumps(rec).replace('"b": 1', '"b": 1, "b": 2')  # repeated deep inside
    elif choice == 2:
        stats["num_trials"] = 10**rng.randrange(18, 25)  # past 64 bits, or nearly
    elif choice == 3:
        rec["environment"]["label"] = rng.choice(["a\u0000b", "\ud800", "caf\u00e9", "x\u200by", "tab\tthere"])
        text = json.dumps(rec, ensure_ascii=rng.random() < 0.5)
    elif choice == 4:
        text = json.dumps(rec).replace(str(stats["mean"]), rng.choice(["NaN", "Infinity", "1e400", "-0.0", "1E2"]), 1)
    elif choice == 5:
        rec["source"]["url"] = "https://example.org:8443/a:b"  # colons in strings
        rec["implementation"]["title"] = "Fused: GEMM + ReLU"
    elif choice == 6:
        stats["std"] = rng.choice([0, 0.0, -1e-12, 1e-9, 5, 1e300])
    elif choice == 7:
        key = rng.choice(["min", "p5", "median", "p95", "max", "mean"])
        stats[key] = stats[key] * rng.choice([0.5, 0.999999999999, 1.000000000001, 2, -1])
    elif choice == 8:
        stats["num_trials"] = float(stats["num_trials"])  # 5.0 where an integer is wanted
        rec["configuration"]["bindings"] = {"batch_size": rng.choice([2, 2.0, 0, -3, 2**40])}
    elif choice == 9:
        rec.pop("samples_ms", None)
        stats.pop(rng.choice(["min", "max", "std", "median"]), None)
    elif choice == 10:
        rec["observed_at"] = rng.choice(
            ["2026-01-01T00:00:00Z", "2026-01-01", "2026-01-01T00:00:00", "1999-01-01T00:00:00Z", "2999-01-01T00:00:00Z",
             "0001-01-01T00:00:00+14:00", "2026-02-30T00:00:00Z", "2026-01-01T01:02:03.456+05:30"]
        )
    elif choice == 11:
        rec["environment"]["provider"] = rng.choice(["modal", "  Corpus   Cloud ", "", None, "LambdaLabs"])
    elif choice == 12:
        rec["implementation"]["slug"] = rng.choice(["Bad Slug", "ok_slug", "", "a" * 300])
    elif choice == 13:
        rec["unexpected"] = 1
    elif choice == 14:
        text = json.dumps(rec, indent=rng.choice([None, 1])).replace("\n", "") + rng.choice(["", " ", "\r", "  \t"])
    elif choice == 15:
        text = json.dumps(rec).replace('": ', '" : ', rng.randrange(1, 5))  # a space before the colon
    elif choice == 16:
        rec["environment"]["details"] = {"deep": json.loads("[" * 40 + "]" * 40)}
    elif choice == 17:
        rec["workload"] = rng.choice([{"suite": "kernelbench", "level": 3, "problem": 9}, {"slug": ""}, {}, {"slug": 5}])
    elif choice == 18:
        rec["status"] = "failed"
        rec["failure_reason"] = rng.choice(["timeout", "   ", None])
        rec.pop("statistics")
        rec.pop("samples_ms", None)
    elif choice == 19:
        rec["samples_ms"] = rec.get("samples_ms", [])[: rng.randrange(0, 5)]
    elif choice == 20:
        rec["correctness"] = {"passed": rng.choice([True, False]), "max_abs_diff": rng.choice([0.0, -1.0, 10**30, None])}
    elif choice == 21:
        text = "\ufeff" + json.dumps(rec)
    elif choice == 22:
        rec["environment"]["hardware"] = rng.choice([{"sku": "NVIDIA H1OO"}, {"product_name": "NVIDIA H100 80GB HBM3"}, {}])
    data = text if text is not None else json.dumps(rec)
    return data + "\n"


class _FrozenClock(datetime):
    """records.py's clock held at one instant: an instant in the future is worded with "now is …" to the
    second, and three readings of one line must not straddle a second."""

    @classmethod
    def now(cls, tz=None):
        return datetime(2026, 12, 3, 12, 0, 0, 500000, tzinfo=UTC)


def test_generated_records_read_the_same_by_both_paths(monkeypatch):
    monkeypatch.setattr(records_module, "datetime", _FrozenClock)
    rng = random.Random(20261201)
    accepted = refused = 0
    for i in range(3000):
        base = good("generated", i % 50)
        text = _mutations(rng, base)
        raw = text.encode("utf-8", "surrogatepass")
        number = 1 + (i % 3)  # a BOM counts only on line 1
        fast = read_item(number, raw, "gen.jsonl")
        careful = _careful(number, raw, "gen.jsonl", monkeypatch)
        _same(fast, careful)
        _same(_deferred(number, raw, "gen.jsonl"), careful)
        if isinstance(fast, RunRecord):
            accepted += 1
            assert _schema_valid(fast.data), text
        else:
            refused += 1
    assert accepted > 500 and refused > 500, (accepted, refused)  # both kinds were tried


def _decoded_in_c(raw: bytes):
    """The record the C decoder vouches for on a line, or None where the strict reader must read it."""
    if not records_module._plain_bytes(raw):
        return None
    try:
        run = decode_run(raw)
    except Exception:
        return None
    return as_data(run) if records_module._written_once(raw, run) else None


def test_the_c_decoder_declines_what_it_cannot_vouch_for():
    good_line = json.dumps(good("fast", 1)).encode()
    assert _decoded_in_c(good_line) == parse_json_line(good_line.decode())
    bad = dict(good("fast", 2))
    for raw in (
        json.dumps(bad).encode()[:-1] + b', "status": "failed"}',  # repeated key
        json.dumps({**bad, "failure_reason": "\u0000"}).encode(),  # an escape the strict reader words
        json.dumps(bad).encode().replace(b'"warmup": 3', b'"warmup": 123456789012345678901'),  # past 64 bits
        json.dumps(bad).encode().replace(b'"std": 0.02', b'"std": NaN'),
        json.dumps(bad).encode().replace(b'"std": 0.02', b'"std": 1e400'),
        json.dumps(bad).encode().replace(b'"corpus-', b'"\xff'),
        b'[1, 2]', b'{"a": 1',
    ):
        assert _decoded_in_c(raw) is None, raw


def test_statistics_sweep_never_passes_what_the_rules_refuse():
    rng = random.Random(7)
    checked = 0
    for _ in range(20000):
        mean = rng.choice([rng.uniform(1e-6, 10), 1e-6, 86_400_000.0, rng.uniform(1e-9, 1e-6)])
        spread = rng.choice([0.0, 0.01, 0.3, 1e-10])
        stats = {
            "mean": mean, "min": mean * (1 - spread), "p5": mean * (1 - spread / 2), "median": mean,
            "p95": mean * (1 + spread / 2), "max": mean * (1 + spread), "std": mean * spread * rng.choice([0.1, 1, 3, 100]),
        }
        for key in list(stats):
            roll = rng.random()
            if roll < 0.15:
                del stats[key]
            elif roll < 0.25:
                stats[key] = rng.choice([0.0, -1.0, float("nan"), float("inf"), 1, True, 1e9, stats[key] * 1.0000001, "1"])
        if rng.random() < 0.9:
            stats["num_trials"] = rng.choice([1, 2, 100])
        if measurements.statistics_plainly_valid(stats):
            checked += 1
            assert measurements.statistics_problems(stats) == [], stats
    assert checked > 2000


def test_values_a_request_carries_are_judged_the_same_by_both_paths(monkeypatch):
    """submitRuns' records arrive decoded (GraphQL variables), so NaN, NUL, lone surrogates and huge
    integers reach check_record itself: its one-pass encoder test agrees with the value walk.
    (check_record is check_run's problems, which this also judges.)"""
    rng = random.Random(99)
    values = [float("nan"), float("inf"), -float("inf"), "a\x00b", "\ud800", "ok", "\\u0000", 2**63, 2**64, -(2**63) - 1,
              10**18, 1.5, True, None, [1, "\udfff"], {"k\x00": 1}, {"\ud83d": 2}, "caf\u00e9 \U0001f600"]
    refused = 0
    for i in range(2000):
        rec = good("values", i % 20)
        target = rng.choice([rec["environment"]["details"], rec["correctness"] or rec, rec["implementation"], rec])
        key = rng.choice(["x", "title", "max_abs_diff", "label"])
        target[key] = rng.choice(values)
        fast = records_module.check_record(copy.deepcopy(rec))
        with monkeypatch.context() as patch:
            patch.setattr(records_module, "_plainly_storable", lambda data: False)
            careful = records_module.check_record(copy.deepcopy(rec))
        assert fast == careful, (target, key)
        refused += bool(careful)
    assert 200 < refused < 1800, refused  # both kinds were tried


def test_the_encoder_test_passes_only_what_the_walk_passes_and_a_plain_record_at_once():
    """_plainly_storable (msgspec's bytes, decoded again where they hold a null: msgspec writes NaN
    and ±Infinity as null) never passes a value the walk refuses, and passes a plain record, nulls
    and all, without the walk (the speed of submitRuns' check)."""
    values = [float("nan"), float("inf"), -float("inf"), "a\x00b", "\ud800", "ok", "\\u0000", 2**63, 2**64, -(2**63) - 1,
              10**18, 1.5, True, None, "null", [1, "\udfff"], [float("nan"), None], [None, 2.5], {"k\x00": 1}, {"\ud83d": 2},
              {"n": None, "v": float("-inf")}, "caf\u00e9"]
    for i, value in enumerate(values * 4):
        rec = good("values", i % 20)
        target = [rec["environment"]["details"], rec["implementation"], rec, rec["environment"]][i // len(values)]
        target["x"] = value
        if records_module._plainly_storable(rec):
            assert records_module._value_problems(rec) == [], value
        else:
            # Walked: a value it refuses, or one of the false alarms the bytes cannot tell apart (a NUL's
            # escape written out, a 19-digit integer within 64 bits).
            assert records_module._value_problems(rec) or value in ("\\u0000", 10**18), value
    plain = [good("values", i) for i in range(20)]
    assert all(b"null" in json.dumps(rec).encode() for rec in plain)  # nulls and all
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(records_module, "_value_problems", lambda data: pytest.fail("walked a plain record"))
        assert all(records_module._plainly_storable(rec) for rec in plain)
        assert all(isinstance(records_module.check_run(rec), dict) for rec in plain)
