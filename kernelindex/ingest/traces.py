"""A problem's trace as data: what the tracer (kernelindex.ingest.problem_trace) reports, how a trace
that came back from a sandboxed process or from the database is checked before it is believed, and
what a trace is made with (``traced_with``: the key a stored trace is reused under).

Torch-free on purpose: a re-import of an unchanged checkout reuses every stored trace and never
needs torch (importing it costs about 2 s), so it loads this module and not the tracer.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.metadata
from typing import Any, TypeGuard

__all__ = [
    "ASSUMED_SETTINGS",
    "ISOLATION_STAGES",
    "TRACE_STAGES",
    "TRACER_REVISION",
    "ProblemTrace",
    "ProblemTraceError",
    "checked_result",
    "trace_from_analysis",
    "traced_with",
]

# Bump when a change to the tracer could change what it reports for the same file: stored traces
# made by another revision (or another torch) are then traced again, not reused.
TRACER_REVISION = "problem-trace/2"

TRACE_STAGES = ("import", "get_init_inputs", "construct", "get_inputs", "forward")
ISOLATION_STAGES = ("timeout", "crash")

# The FLOP split is read against PyTorch's defaults: convolutions may run on TF32 tensor cores,
# fp32 matmuls stay full fp32. Recorded with every trace so a later change of default is visible.
ASSUMED_SETTINGS: dict[str, Any] = {"cudnn.allow_tf32": True, "float32_matmul_precision": "highest"}
_MESSAGE_LIMIT = 2000

# What a traced result may hold, so a problem that writes its own answer cannot hand the ingest a monster.
_MAX_VALUES = 1000  # inputs, outputs, constants
_MAX_DIMENSIONS = 64
_MAX_NAME = 200
_INT64 = 2**63


class ProblemTraceError(Exception):
    """A problem that could not be traced, with the stage it failed at and the cause on one line."""

    def __init__(self, filename: str, stage: str, message: str) -> None:
        if stage not in TRACE_STAGES and stage not in ISOLATION_STAGES:
            raise ValueError(f"unknown trace stage {stage!r}")
        super().__init__(f"{filename}: {stage}: {message}")
        self.filename = filename
        self.stage = stage
        self.message = message

    # The default Exception pickling replays self.args, which holds the formatted text, not the three fields.
    def __reduce__(self) -> tuple[Any, tuple[str, str, str]]:
        return (type(self), (self.filename, self.stage, self.message))

    def to_json(self) -> dict[str, str]:
        return {"filename": self.filename, "stage": self.stage, "message": self.message}


@dataclasses.dataclass(frozen=True)
class ProblemTrace:
    """What a problem computes, derived on the meta device.

    ``inputs``/``outputs`` entries are ``{"name", "dtype", "shape", "concrete_shape"}``; a ``shape`` element
    is the name of a bound constant where the dimension follows it, else the int.
    """

    filename: str
    constants: dict[str, int]
    bindings: dict[str, int]
    dtype: str
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    param_count: int
    param_bytes: int
    buffer_bytes: int
    input_bytes: int
    output_bytes: int
    flops_by_class: dict[str, int]
    assumed_settings: dict[str, Any]
    torch_version: str

    @property
    def flops(self) -> int:
        return sum(self.flops_by_class.values())

    def to_json(self) -> dict[str, Any]:
        document = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        document["flops"] = self.flops
        # A deep copy, so a caller editing the document cannot reach into this frozen trace.
        return copy.deepcopy(document)


def traced_with() -> str:
    """What a trace made now is made with: the tracer's revision and torch's version (its meta
    kernels and FLOP counter decide shapes and counts). The version is the installed distribution's
    (the same string as ``torch.__version__`` for a wheel), read without importing torch."""
    return f"{TRACER_REVISION} torch {_torch_version()}"


def _torch_version() -> str:
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:  # torch not installed as a distribution (a source tree)
        import torch

        return str(torch.__version__)


def trace_from_analysis(document: Any, filename: str) -> ProblemTrace | None:
    """A stored analysis (ProblemTrace.to_json) as a trace again, checked field by field as a
    sandboxed result is; None when it is not one (edited by hand, an older shape): trace it again."""
    try:
        trace = checked_result(filename, {"trace": document})
    except (ValueError, TypeError, KeyError):
        return None
    return trace if isinstance(trace, ProblemTrace) else None


def checked_result(filename: str, value: Any) -> ProblemTrace | ProblemTraceError:
    """The trace (or error) a sandboxed process sent, checked field by field: the process ran the
    problem's code, so its answer is data to validate, never trusted. Raises ValueError/TypeError."""
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError("expected {'trace': ...} or {'error': ...}")
    if "error" in value:
        error = _expect(value["error"], dict, "error")
        stage = _expect(error.get("stage"), str, "error.stage")
        if stage not in TRACE_STAGES and stage != "crash":
            raise ValueError(f"error.stage {stage[:40]!r} is not a trace stage")
        return ProblemTraceError(filename, stage, _one_line_text(_expect(error.get("message"), str, "error.message")))
    document = _expect(value.get("trace"), dict, "trace")
    names = {f.name for f in dataclasses.fields(ProblemTrace)}
    if set(document) != names | {"flops"}:
        raise ValueError(f"trace keys differ from {sorted(names | {'flops'})}")
    fields: dict[str, Any] = {
        "filename": filename,
        "constants": _int_map(document["constants"], "constants"),
        "bindings": _int_map(document["bindings"], "bindings"),
        "dtype": _name(document["dtype"], "dtype"),
        "inputs": _tensor_list(document["inputs"], "inputs"),
        "outputs": _tensor_list(document["outputs"], "outputs"),
        "flops_by_class": _int_map(document["flops_by_class"], "flops_by_class"),
        "assumed_settings": document["assumed_settings"],
        "torch_version": _name(document["torch_version"], "torch_version"),
    }
    for key in ("param_count", "param_bytes", "buffer_bytes", "input_bytes", "output_bytes"):
        fields[key] = _count(document[key], key)
    if set(fields["flops_by_class"]) != {"conv", "matmul", "other"}:
        raise ValueError("flops_by_class must have exactly conv, matmul, other")
    if any(v < 0 for v in fields["flops_by_class"].values()):
        raise ValueError("flops_by_class counts must not be negative")
    if fields["assumed_settings"] != ASSUMED_SETTINGS:
        raise ValueError("assumed_settings differ from the tracer's")
    trace = ProblemTrace(**fields)
    if _count(document["flops"], "flops") != trace.flops:
        raise ValueError("flops is not the sum of flops_by_class")
    return trace


def _expect(value: Any, kind: type, key: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise TypeError(f"{key}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _count(value: Any, key: str) -> int:
    if not _is_int(value) or not 0 <= value < _INT64:
        raise ValueError(f"{key}: expected a count (a non-negative int64)")
    return value


def _name(value: Any, key: str) -> str:
    text = _expect(value, str, key)
    if not text or len(text) > _MAX_NAME or not text.isprintable():
        raise ValueError(f"{key}: expected a printable name of at most {_MAX_NAME} characters")
    return str(text)


def _int_map(value: Any, key: str) -> dict[str, int]:
    mapping = _expect(value, dict, key)
    if len(mapping) > _MAX_VALUES:
        raise ValueError(f"{key}: more than {_MAX_VALUES} entries")
    out = {}
    for name, number in mapping.items():
        if not _is_int(number) or not -_INT64 <= number < _INT64:
            raise ValueError(f"{key}.{str(name)[:40]}: expected an int64")
        out[_name(name, key)] = number
    return out


def _tensor_list(value: Any, key: str) -> list[dict[str, Any]]:
    entries = _expect(value, list, key)
    if len(entries) > _MAX_VALUES:
        raise ValueError(f"{key}: more than {_MAX_VALUES} entries")
    out = []
    for position, entry in enumerate(entries):
        where = f"{key}[{position}]"
        entry = _expect(entry, dict, where)
        if set(entry) != {"name", "dtype", "shape", "concrete_shape"}:
            raise ValueError(f"{where}: expected name, dtype, shape, concrete_shape")
        shape = _expect(entry["shape"], list, f"{where}.shape")
        concrete = _expect(entry["concrete_shape"], list, f"{where}.concrete_shape")
        if len(shape) > _MAX_DIMENSIONS or len(concrete) != len(shape):
            raise ValueError(f"{where}: shape and concrete_shape must have the same length, at most {_MAX_DIMENSIONS}")
        out.append({
            "name": _name(entry["name"], f"{where}.name"),
            "dtype": _name(entry["dtype"], f"{where}.dtype"),
            "shape": [d if isinstance(d, str) and _name(d, f"{where}.shape") else _count(d, f"{where}.shape") for d in shape],
            "concrete_shape": [_count(d, f"{where}.concrete_shape") for d in concrete],
        })
    return out


def _one_line_text(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
