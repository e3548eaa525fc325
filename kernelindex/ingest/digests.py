"""Digests that identify what a run record names and what it measured: the environment's
fingerprint, the configuration key, and the content digest that tells an unchanged run from a
changed one. Memoised where records repeat themselves (a file names a few environments and
configurations thousands of times)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from kernelindex.ingest.records import parse_observed_at
from kernelindex.rules.identity import canonical_json, configuration_key
from kernelindex.rules.instants import as_utc

VOLATILE_ENVIRONMENT_DETAILS = ("clocks", "current_clocks", "fingerprint", "captured_at")


def environment_fingerprint(sku: str, env: dict[str, Any]) -> str:
    """sha256 of the canonical JSON (rules.identity.digest) of what names a machine, written by the C
    encoder where it writes the same bytes (canonical_json_bytes; a file of a thousand machines, or a
    submitRuns call, computes a thousand)."""
    details = {k: v for k, v in (env.get("details") or {}).items() if k not in VOLATILE_ENVIRONMENT_DETAILS}
    software = {k: v for k, v in (env.get("software") or {}).items() if v is not None}
    provider, label = env.get("provider"), env.get("label")
    value = {"sku": sku, "provider": provider, "label": label, "software": software, "details": details}
    # The Nones it holds at its top (a None in details makes a null more: the slow way, same bytes).
    return hashlib.sha256(canonical_json_bytes(value, (provider is None) + (label is None))).hexdigest()


# Most records share their environment and configuration with many others: the digests are memoised
# on a cheap key (the JSON encoding of the data, or a 128-bit hash of its repr, either injective;
# equal content in another key order only misses), in bounded memory.
_MEMO_LIMIT = 10_000
_fingerprints: dict[tuple[str, bytes], str] = {}  # (sku, the environment's encoding or its repr's hash)
_configuration_keys: dict[tuple[str | tuple[str, int], ...], str] = {}

_Key = TypeVar("_Key", bound=Hashable)


def _memoised(table: dict[_Key, str], key: _Key, compute: Callable[[], str]) -> str:
    found = table.get(key)
    if found is None:
        if len(table) >= _MEMO_LIMIT:
            table.clear()
        found = table[key] = compute()
    return found


_ENCODE = msgspec.json.Encoder()


def environment_fingerprint_memo(sku: str, env: dict[str, Any]) -> str:
    """environment_fingerprint, remembered by the environment's JSON encoding (msgspec's, in C: a
    third of the cost of hashing its repr). Two values with one encoding have one fingerprint, since
    the fingerprint is a digest of their canonical JSON, except where msgspec writes null for what is
    not a null (a NaN, an infinity): an encoding holding a null is remembered by its repr instead."""
    try:
        encoded = _ENCODE.encode(env)
    except Exception:  # a value msgspec has no spelling for (a lone surrogate, a big int): by its repr
        encoded = b"null"
    if b"null" in encoded:
        key = (sku, b"repr " + hashlib.blake2b(repr(env).encode("utf-8", "surrogatepass"), digest_size=16).digest())
    else:
        key = (sku, encoded)
    return _memoised(_fingerprints, key, lambda: environment_fingerprint(sku, env))


def configuration_key_memo(bindings: dict[str, int], dtype: str) -> str:
    key: tuple[str | tuple[str, int], ...] = (dtype, *bindings.items())
    return _memoised(_configuration_keys, key, lambda: configuration_key(bindings, dtype))


CONTENT_KEYS = ("status", "failure_reason", "statistics", "samples_ms", "compile_time_ms", "correctness", "observed_at", "evidence")


def _without_nulls(value: Any) -> Any:
    """An optional field stated as null is the same as one left out (an export writes every field)."""
    if isinstance(value, dict):
        values = value.values()
        if None not in values and not any(isinstance(v, dict) for v in values):
            return value  # nothing to leave out (a checked record's statistics and correctness hold no object)
        return {k: _without_nulls(v) if isinstance(v, dict) else v for k, v in value.items() if v is not None}
    return value


# canonical_json (json.dumps: sorted keys, compact, UTF-8 as is) written by msgspec, in C, where the
# two are known to write the same bytes; else by canonical_json itself. They differ in how a float
# is spelled where repr uses an exponent (json.dumps: 1e-05, 1e+16; msgspec: 0.00001, 1e16), which
# _surely_canonical finds in msgspec's bytes (any digit before an e, any 0.0000), and in a NaN or an
# infinity (json.dumps refuses it, msgspec writes null), which shows as a null more than the value
# holds Nones. To be safe, an escape (a backslash) goes the slow way too. A false alarm costs only
# time; the digests never change (tests/ingest/test_content_digest.py holds the two to the same bytes).
_SORTED = msgspec.json.Encoder(order="sorted")
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")


def _surely_canonical(encoded: bytes) -> bool:
    """Whether msgspec's bytes are json.dumps's: no exponent, no 0.0000, no escape (substring tests,
    in C: a regular expression for the same costs more than the encoding)."""
    if b"\\" in encoded or b"0.0000" in encoded:
        return False
    digits = encoded.translate(_DIGITS_AS_ZERO)
    return b"0e" not in digits and b"0E" not in digits


def canonical_json_bytes(value: Any, nulls: int) -> bytes:
    """canonical_json(value) as UTF-8, the same bytes, faster (see above). nulls: how many Nones
    `value` holds (a null more in msgspec's bytes is a NaN, an infinity or "null" in a text)."""
    try:
        encoded = _SORTED.encode(value)
    except Exception:
        return canonical_json(value).encode("utf-8")
    if encoded.count(b"null") == nulls and _surely_canonical(encoded):
        return encoded
    return canonical_json(value).encode("utf-8")


# observed_at as the content digest spells it (the instant in UTC, …Z), per spelling: a file's
# records share a few times.
_observed_spellings: dict[str, str] = {}


def _observed_spelling(text: str) -> str:
    found = _observed_spellings.get(text)
    if found is None:
        found = parse_observed_at(text).astimezone(UTC).isoformat().replace("+00:00", "Z")
        if len(_observed_spellings) >= _MEMO_LIMIT:
            _observed_spellings.clear()
        _observed_spellings[text] = found
    return found


def content_digest(data: dict[str, Any]) -> str:
    """sha256 of what a record measured, normalised so that equal content has equal digests: key
    order never counts (canonical JSON), null ≡ absent inside statistics and correctness, an empty
    samples list ≡ none, and observed_at is the instant in UTC (…Z), however the record spelled it.
    The spelling of a record without nulls, with samples and with a …Z time is the one stored by
    earlier versions, so their digests still match. For a checked record (finite numbers)."""
    get = data.get
    statistics = get("statistics")
    correctness = get("correctness")
    samples = get("samples_ms")
    observed = get("observed_at")
    if isinstance(observed, str):
        try:
            observed = _observed_spelling(observed)
        except ValueError:
            pass  # validation reports it; the digest of an unparsed time is still a digest
    content = {
        "status": get("status"), "failure_reason": get("failure_reason"),
        "statistics": _without_nulls(statistics) if isinstance(statistics, dict) else statistics,
        "samples_ms": None if samples == [] else samples, "compile_time_ms": get("compile_time_ms"),
        "correctness": _without_nulls(correctness) if isinstance(correctness, dict) else correctness,
        "observed_at": observed, "evidence": get("evidence"),
    }
    # The Nones it holds: its own (statistics and correctness hold none, any nested dict neither).
    nulls = [*content.values()].count(None)
    return hashlib.sha256(canonical_json_bytes(content, nulls)).hexdigest()


# The fields of a stated figure (kernelindex.ingest.sources.parts.Figure, the record's `figure`).
FIGURE_FIELDS = ("value", "low", "high", "quantiles", "min", "max", "std", "mean", "samples")


def stated_content_digest(
    status: str, failure_reason: str | None, observed_at: datetime, figure: dict[str, Any] | None,
    correctness: dict[str, Any] | None, source_speedup: float | None, upstream_id: str | None,
) -> str:
    """sha256 of what a run as its source states it measured: a source adapter's run
    (kernelindex.ingest.source_import) and the same run read back from a record in the stated form
    (kernelindex.ingest.stage) have one digest, so either way in it is unchanged. `figure`: every
    one of FIGURE_FIELDS (None where not stated). Sorted, compact JSON written by msgspec, in C."""
    content = {
        "status": status, "failure_reason": failure_reason, "observed_at": as_utc(observed_at).isoformat(),
        "figure": figure, "correctness": correctness, "source_speedup": source_speedup, "upstream_id": upstream_id,
    }
    return hashlib.sha256(msgspec.json.encode(content, order="sorted")).hexdigest()


def add_stated_extras(record: dict[str, Any], source_speedup: float | None, upstream_id: str | None,
                      correctness: dict[str, Any] | None) -> None:
    """What a record in the stated form carries beside its figure, where the source stated it: its
    speedup, its own id for the run and its correctness check (the three a stated digest reads besides
    the figure). One writer for both ways the stated form is made: a source adapter's run
    (source_import.stated_record) and a stored run exported (export._stated_form)."""
    if source_speedup is not None:
        record["source_speedup"] = source_speedup
    if upstream_id:
        record["upstream_id"] = upstream_id
    if correctness is not None:
        record["source_correctness"] = correctness
