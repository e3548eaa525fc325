"""Element types as the rules see them: their width in bytes and their one spelling.

Both headroom floors (v1 and v2) count bytes with this table, so a dtype cannot be one width in one
floor and another in the other.
"""

from __future__ import annotations

# Bytes per element, for every spelling a workload or a run may use.
DTYPE_BYTES: dict[str, int] = {
    "fp64": 8, "fp32": 4, "float": 4, "tf32": 4, "fp16": 2, "bf16": 2, "half": 2,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "fp8": 1,
}

# The floating types, whose bytes may be rescaled when a run uses another precision than the trace.
FLOATING_DTYPES = frozenset({"fp64", "fp32", "float", "tf32", "fp16", "half", "bf16"})

_ALIASES = {"float": "fp32", "float32": "fp32", "half": "fp16", "float16": "fp16", "bfloat16": "bf16",
            "float64": "fp64", "double": "fp64", "tf32": "fp32"}


def normalise_dtype(dtype: str | None) -> str | None:
    """One spelling per type: "float32", "float" and "tf32" storage are all "fp32"."""
    if dtype is None:
        return None
    d = str(dtype).strip().lower()
    return _ALIASES.get(d, d)


def element_bytes(dtype: str | None) -> int | None:
    return DTYPE_BYTES.get(dtype or "")


def float_bytes(dtype: str | None) -> int | None:
    """The width of a floating type; None for integers, fp8 and unknown names."""
    return DTYPE_BYTES[dtype] if dtype in FLOATING_DTYPES else None
