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
from kernelindex.rules.identity import configuration_key, digest
from kernelindex.rules.instants import as_utc

VOLATILE_ENVIRONMENT_DETAILS = ("clocks", "current_clocks", "fingerprint", "captured_at")


def environment_fingerprint(sku: str, env: dict[str, Any]) -> str:
    details = {k: v for k, v in (env.get("details") or {}).items() if k not in VOLATILE_ENVIRONMENT_DETAILS}
    software = {k: v for k, v in (env.get("software") or {}).items() if v is not None}
    return digest(
        {"sku": sku, "provider": env.get("provider"), "label": env.get("label"), "software": software, "details": details}
    )


# Most records share their environment and configuration with many others: the digests are memoised
# on a cheap key (a 128-bit hash of the repr of JSON data, which is injective; equal content in another
# key order only misses), in bounded memory.
_MEMO_LIMIT = 10_000
_fingerprints: dict[tuple[str, bytes], str] = {}
_configuration_keys: dict[tuple[str | tuple[str, int], ...], str] = {}

_Key = TypeVar("_Key", bound=Hashable)


def _memoised(table: dict[_Key, str], key: _Key, compute: Callable[[], str]) -> str:
    found = table.get(key)
    if found is None:
        if len(table) >= _MEMO_LIMIT:
            table.clear()
        found = table[key] = compute()
    return found


def environment_fingerprint_memo(sku: str, env: dict[str, Any]) -> str:
    key = (sku, hashlib.blake2b(repr(env).encode("utf-8", "surrogatepass"), digest_size=16).digest())
    return _memoised(_fingerprints, key, lambda: environment_fingerprint(sku, env))


def configuration_key_memo(bindings: dict[str, int], dtype: str) -> str:
    key: tuple[str | tuple[str, int], ...] = (dtype, *bindings.items())
    return _memoised(_configuration_keys, key, lambda: configuration_key(bindings, dtype))


CONTENT_KEYS = ("status", "failure_reason", "statistics", "samples_ms", "compile_time_ms", "correctness", "observed_at", "evidence")


def _without_nulls(value: Any) -> Any:
    """An optional field stated as null is the same as one left out (an export writes every field)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def content_digest(data: dict[str, Any]) -> str:
    """sha256 of what a record measured, normalised so that equal content has equal digests: key
    order never counts (canonical JSON), null ≡ absent inside statistics and correctness, an empty
    samples list ≡ none, and observed_at is the instant in UTC (…Z), however the record spelled it.
    The spelling of a record without nulls, with samples and with a …Z time is the one stored by
    earlier versions, so their digests still match."""
    content = {k: data.get(k) for k in CONTENT_KEYS}
    for key in ("statistics", "correctness"):
        if isinstance(content[key], dict):
            content[key] = _without_nulls(content[key])
    if content["samples_ms"] == []:
        content["samples_ms"] = None
    observed = content["observed_at"]
    if isinstance(observed, str):
        try:
            content["observed_at"] = parse_observed_at(observed).astimezone(UTC).isoformat().replace("+00:00", "Z")
        except ValueError:
            pass  # validation reports it; the digest of an unparsed time is still a digest
    return digest(content)



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
