"""Canonical JSON and sha256 digests: identities that do not depend on key order or whitespace."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

IDENTITY_VERSION = "identity-v1"


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 kept as is; NaN and infinities refused."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    return sha256_hex(canonical_json(value))


def workload_identity(semantics: dict[str, Any] | None, reference_source: str) -> str:
    """sha256 over the canonical JSON of the semantics and the reference source."""
    return digest({"identity": IDENTITY_VERSION, "semantics": semantics, "reference_source": reference_source})


def configuration_key(bindings: dict[str, int], dtype: str) -> str:
    """The text form of a configuration; equal configurations have equal keys."""
    return canonical_json({"bindings": {k: int(v) for k, v in bindings.items()}, "dtype": dtype})


@dataclass(frozen=True)
class StatedConfiguration:
    """A configuration key read back: its bindings and dtype, and the source's own case id where the key
    carries one (kernelindex.ingest.source_import.configuration_keys adds it after '#' when two of a
    workload's cases share bindings and dtype: a suite of cases measured as one figure)."""

    bindings: dict[str, int]
    dtype: str
    case: str | None


def read_configuration_key(key: str) -> StatedConfiguration:
    """The inverse of configuration_key (with its optional '#case'); raises ValueError on any other text."""
    base, _, case = key.partition("}#")
    text = base + "}" if case else key
    stated = json.loads(text)
    if not isinstance(stated, dict) or not isinstance(stated.get("bindings"), dict) or not isinstance(stated.get("dtype"), str):
        raise ValueError(f"not a configuration key: {key!r}")
    return StatedConfiguration({k: int(v) for k, v in stated["bindings"].items()}, stated["dtype"], case or None)


def short_digest(hex_digest: str, length: int = 12) -> str:
    return hex_digest[:length] + "…"


def is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
