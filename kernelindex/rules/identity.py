"""Canonical JSON and sha256 digests: identities that do not depend on key order or whitespace."""

from __future__ import annotations

import hashlib
import json
import math
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


def short_digest(hex_digest: str, length: int = 12) -> str:
    return hex_digest[:length] + "…"


def is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
