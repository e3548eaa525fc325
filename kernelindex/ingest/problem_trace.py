"""Trace a KernelBench problem file into workload semantics without allocating a real tensor.

Every step of a problem (import, ``get_init_inputs``, ``Model`` construction, ``get_inputs``, forward) runs
on the ``meta`` device, so shapes, dtypes, parameter counts and FLOPs come out exactly while a problem that
asks for 100 GB costs nothing. ``trace_problem`` runs in-process, for trusted sources only;
``trace_problems_isolated`` runs each problem in a fresh confined process (benchmarks.sandbox), so a hang,
an ``os._exit``, a crash or a hostile problem costs one result instead of the ingest run.

This module imports torch and is meant for the ingest command only, never for the API server.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable
from typing import Any, TypeGuard

# Tracing never converts to NumPy; torch's notice that NumPy is absent is noise on every worker start.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

# The filter must be in place before torch is first imported, hence these imports below it.
import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from benchmarks import sandbox  # noqa: E402
from benchmarks.problems import (  # noqa: E402
    Axes,
    PinToMeta,
    ProblemError,
    configuration_bindings,
    find_axes,
    int_constants,
    load_module,
    name_dimensions,
)

__all__ = [
    "ASSUMED_SETTINGS",
    "DEFAULT_ADDRESS_SPACE_LIMIT",
    "ISOLATION_STAGES",
    "TRACE_STAGES",
    "ProblemTrace",
    "ProblemTraceError",
    "TRACER_REVISION",
    "trace_from_analysis",
    "trace_problem",
    "trace_problems_isolated",
    "traced_with",
]

# Bump when a change to the tracer could change what it reports for the same file: stored traces
# made by another revision (or another torch) are then traced again, not reused.
TRACER_REVISION = "problem-trace/1"

TRACE_STAGES = ("import", "get_init_inputs", "construct", "get_inputs", "forward")
ISOLATION_STAGES = ("timeout", "crash")

# The FLOP split is read against PyTorch's defaults: convolutions may run on TF32 tensor cores,
# fp32 matmuls stay full fp32. Recorded with every trace so a later change of default is visible.
ASSUMED_SETTINGS: dict[str, Any] = {"cudnn.allow_tf32": True, "float32_matmul_precision": "highest"}

DEFAULT_ADDRESS_SPACE_LIMIT = 8 * 1024**3
# Never cap a problem's process below what it already maps (a CUDA build of torch maps several GiB at import).
_ADDRESS_SPACE_HEADROOM = 2 * 1024**3
_MESSAGE_LIMIT = 2000
_META = torch.device("meta")

_DTYPE_NAMES: dict[torch.dtype, str] = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float64: "fp64",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
    torch.complex64: "complex64",
    torch.complex128: "complex128",
}
for _attribute, _label in (("float8_e4m3fn", "fp8_e4m3fn"), ("float8_e5m2", "fp8_e5m2")):
    if hasattr(torch, _attribute):
        _DTYPE_NAMES[getattr(torch, _attribute)] = _label

_MATMUL_OPS = frozenset(
    {"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "mv", "addmv", "dot", "_scaled_mm", "_int_mm"}
)


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


def trace_problem(source: str, filename: str, overrides: dict[str, int] | None = None) -> ProblemTrace:
    """Import, construct and run one problem on the meta device, in this process.

    The problem is loaded, its constants read and its axes found by benchmarks.problems, the rule the
    runner records configurations with: ``bindings`` is what a run of the problem at ``overrides`` records.
    ``overrides`` rewrite module-level int constants in the source, so constants derived from them follow.
    A dimension is named after the axis it follows (see benchmarks.problems.name_dimensions).
    Raises ProblemTraceError for anything the problem does wrong, ValueError for a bad override.
    """
    overrides = dict(overrides or {})
    default_dtype = torch.get_default_dtype()
    try:
        with torch.device(_META), PinToMeta(), torch.no_grad():
            module = _at_stage(filename, "import", load_module, source, filename, overrides)
            namespace = vars(module)
            constants = int_constants(module)

            init_inputs = _at_stage(filename, "get_init_inputs", _call_list_factory, namespace, "get_init_inputs")
            model = _at_stage(filename, "construct", _construct_model, namespace, init_inputs)
            param_count, param_bytes, buffer_bytes = _at_stage(filename, "construct", _model_sizes, model)
            inputs = _at_stage(filename, "get_inputs", _call_list_factory, namespace, "get_inputs")
            _at_stage(filename, "get_inputs", _check_values, inputs, "get_inputs()")
            outputs, flops_by_class = _at_stage(filename, "forward", _run_forward, model, inputs)
            axes: Axes = _at_stage(filename, "get_inputs", find_axes, source, filename, overrides, module=module)
            varied_outputs = _varied_outputs(axes, outputs)
    except ProblemError as exc:
        raise ValueError(f"{filename}: {exc}") from exc
    finally:
        # A problem may change process-wide defaults; an in-process ingest must not inherit them.
        torch.set_default_dtype(default_dtype)

    bindings = configuration_bindings(axes, overrides)
    order = list(constants)
    input_names = name_dimensions(
        _shapes(inputs), bindings,
        {name: (v.value, _by_position(inputs, v.input_shapes)) for name, v in axes.variations.items()}, order,
    )
    output_names = name_dimensions(
        _shapes(outputs), bindings,
        {name: (axes.variations[name].value, shapes) for name, shapes in varied_outputs.items()}, order,
    )
    return ProblemTrace(
        filename=filename,
        constants=constants,
        bindings=bindings,
        dtype=next((_dtype_name(v.dtype) for v in inputs if _is_tensor(v) and v.is_floating_point()), "fp32"),
        inputs=_describe(inputs, input_names, [f"input_{i}" for i in range(1, len(inputs) + 1)]),
        outputs=_describe(outputs, output_names, ["out"] if len(outputs) == 1 else [f"output_{i}" for i in range(1, len(outputs) + 1)]),
        param_count=param_count,
        param_bytes=param_bytes,
        buffer_bytes=buffer_bytes,
        input_bytes=sum(_tensor_bytes(v) for v in inputs if _is_tensor(v)),
        output_bytes=sum(_tensor_bytes(v) for v in outputs if _is_tensor(v)),
        flops_by_class=flops_by_class,
        assumed_settings=dict(ASSUMED_SETTINGS),
        torch_version=str(torch.__version__),
    )


# --- running a problem's stages -------------------------------------------------------------------------------


def _at_stage(filename: str, stage: str, step: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return step(*args, **kwargs)
    except (ProblemTraceError, ProblemError):
        raise
    # SystemExit too: a problem calling sys.exit() must not end the ingest command.
    except (Exception, SystemExit) as exc:
        raise ProblemTraceError(filename, stage, _one_line(exc)) from exc


def _call_list_factory(namespace: dict[str, Any], name: str) -> list[Any]:
    factory = namespace.get(name)
    if not callable(factory):
        raise NameError(f"module defines no function {name}()")
    values = factory()
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{name}() returned {type(values).__name__}, expected a list")
    return list(values)


def _construct_model(namespace: dict[str, Any], init_inputs: list[Any]) -> torch.nn.Module:
    model_class = namespace.get("Model")
    if model_class is None:
        raise NameError("module defines no class Model")
    model = model_class(*init_inputs)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"Model(...) built a {type(model).__name__}, not an nn.Module")
    return model


def _model_sizes(model: torch.nn.Module) -> tuple[int, int, int]:
    parameters = list(model.parameters())
    return (
        sum(p.numel() for p in parameters),
        sum(_tensor_bytes(p) for p in parameters),
        sum(_tensor_bytes(b) for b in model.buffers()),
    )


def _check_values(values: list[Any], origin: str) -> None:
    for position, value in enumerate(values, start=1):
        if not _is_tensor(value) and not isinstance(value, (int, float)):
            raise TypeError(f"{origin} item {position} is a {type(value).__name__}; expected a tensor or a number")


def _run_forward(model: torch.nn.Module, inputs: list[Any]) -> tuple[list[Any], dict[str, int]]:
    counter = FlopCounterMode(display=False)
    with counter:
        result = model(*inputs)
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    _check_values(outputs, "forward()")
    flops_by_class = {"conv": 0, "matmul": 0, "other": 0}
    for op, count in counter.get_flop_counts().get("Global", {}).items():
        flops_by_class[_flop_class(op)] += int(count)
    return outputs, flops_by_class


def _flop_class(op: Any) -> str:
    name = str(getattr(op, "__name__", None) or op).rsplit(".", 1)[-1]
    if "conv" in name:
        return "conv"
    # Attention kernels (SDPA, flash, efficient, flex) are two batched matmuls plus a softmax.
    if name in _MATMUL_OPS or "attention" in name:
        return "matmul"
    return "other"


# --- naming dimensions --------------------------------------------------------------------------------------


def _varied_outputs(axes: Axes, outputs: list[Any]) -> dict[str, list[tuple[int, ...] | None] | None]:
    """The output shapes with each axis alone changed, for the axes that could name an output dimension.

    An axis whose value is no output dimension cannot name one, so its problem is not run again; nor is
    any problem whose constants change no input (LSTMs and GRUs are slow even on meta). A run that fails
    with the changed value (a shape the weights do not fit) gives None: nothing is named after that axis.
    """
    sizes = {d for shape in _shapes(outputs) if shape is not None for d in shape}
    varied: dict[str, list[tuple[int, ...] | None] | None] = {}
    for name, variation in axes.variations.items():
        if axes.bindings.get(name) not in sizes:
            continue
        try:
            namespace = vars(variation.module)
            model = _construct_model(namespace, _call_list_factory(namespace, "get_init_inputs"))
            result = model(*_call_list_factory(namespace, "get_inputs"))
            varied[name] = _shapes(list(result) if isinstance(result, (list, tuple)) else [result])
        except (Exception, SystemExit):
            varied[name] = None
    return varied


def _shapes(values: list[Any]) -> list[tuple[int, ...] | None]:
    return [tuple(int(d) for d in v.shape) if _is_tensor(v) else None for v in values]


def _by_position(values: list[Any], tensor_shapes: list[tuple[int, ...]]) -> list[tuple[int, ...] | None]:
    """Shapes of the tensors among values (in order), put back at those values' positions."""
    shapes = iter(tensor_shapes)
    return [next(shapes, None) if _is_tensor(v) else None for v in values]


def _describe(values: list[Any], names: list[list[str | int] | None], labels: list[str]) -> list[dict[str, Any]]:
    entries = []
    for label, value, shape in zip(labels, values, names):
        if not _is_tensor(value) or shape is None:
            entries.append(_scalar_entry(label))
            continue
        entries.append(_tensor_entry(label, value, shape, [int(d) for d in value.shape]))
    return entries


def _tensor_entry(name: str, tensor: torch.Tensor, shape: list[str | int], concrete: list[int]) -> dict[str, Any]:
    return {"name": name, "dtype": _dtype_name(tensor.dtype), "shape": shape, "concrete_shape": concrete}


def _scalar_entry(name: str) -> dict[str, Any]:
    return {"name": name, "dtype": "scalar", "shape": [], "concrete_shape": []}


# --- small helpers ------------------------------------------------------------------------------------------


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor)


def _tensor_bytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _dtype_name(dtype: torch.dtype) -> str:
    return _DTYPE_NAMES.get(dtype) or str(dtype).removeprefix("torch.")


def _one_line(exc: BaseException) -> str:
    detail = str(exc)
    text = " ".join((f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__).split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


# --- isolated runner ----------------------------------------------------------------------------------------

_THIS_MODULE = "kernelindex.ingest.problem_trace"
# What a traced result may hold, so a problem that writes its own answer cannot hand the ingest a monster.
_MAX_VALUES = 1000  # inputs, outputs, constants
_MAX_DIMENSIONS = 64
_MAX_NAME = 200
_INT64 = 2**63


def trace_problems_isolated(
    items: list[tuple[str, str]],
    timeout_s: float = 60,
    workers: int = 2,
    *,
    address_space_limit: int | None = DEFAULT_ADDRESS_SPACE_LIMIT,
    startup_timeout_s: float = 180,
    report: Callable[[str], None] | None = None,
) -> list[ProblemTrace | ProblemTraceError]:
    """Trace many ``(source, filename)`` problems, each in a fresh sandboxed process (benchmarks.sandbox);
    results in input order.

    Each problem runs in its own fork of a warmed-up zygote, confined (no network, no database, an
    unprivileged uid, a private scratch directory, rlimits; see benchmarks.sandbox for what each platform
    gives), so nothing one problem does reaches the ingest or the next problem. A problem past
    ``timeout_s`` (wall clock or CPU) gets a "timeout" error; one that ends its process (``os._exit``, a
    signal, the address-space cap) or answers with anything but a well-formed trace gets a "crash" error.
    ``report`` is given one line naming the sandbox level in use.

    Blocking; from asyncio run it as ``await asyncio.to_thread(trace_problems_isolated, items)``.
    """
    items = list(items)
    if timeout_s <= 0:
        raise ValueError("timeout_s must be positive")
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if not items:
        return []
    limits = sandbox.Limits(
        wall_s=timeout_s, address_space=address_space_limit, address_space_headroom=_ADDRESS_SPACE_HEADROOM,
    )
    try:
        box = sandbox.Sandbox(
            [_THIS_MODULE], f"{_THIS_MODULE}:_warm_up", workers=min(workers, len(items)), limits=limits,
            startup_timeout_s=startup_timeout_s,
        )
    except sandbox.SandboxError as exc:
        return [ProblemTraceError(filename, "crash", f"no tracer sandbox started: {exc}") for _, filename in items]
    with box:
        if report:
            report(box.describe())
        payloads = [{"source": source, "filename": filename} for source, filename in items]
        outcomes = box.map(f"{_THIS_MODULE}:trace_payload", payloads)
        # A process that died or could not be set up may be the machine's doing (a loaded CI host), not
        # the problem's: such problems get one more fresh process. A timeout is not retried (it would
        # cost the whole limit again), and a problem's own exception is an answer, not a failure.
        again = [i for i, outcome in enumerate(outcomes) if outcome.status in _RETRIED]
        if again:
            for i, outcome in zip(again, box.map(f"{_THIS_MODULE}:trace_payload", [payloads[i] for i in again])):
                outcomes[i] = outcome
    return [_from_outcome(filename, outcome) for (_, filename), outcome in zip(items, outcomes)]


_RETRIED = ("crash", "bad-result", "sandbox-error")


def trace_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The sandboxed side: one problem's trace, or its error, as plain JSON data."""
    filename = str(payload["filename"])
    try:
        return {"trace": trace_problem(str(payload["source"]), filename).to_json()}
    except ProblemTraceError as exc:
        return {"error": {"stage": exc.stage, "message": exc.message}}
    except Exception as exc:  # a tracer bug costs one problem
        return {"error": {"stage": "crash", "message": _one_line(exc)}}


def _warm_up() -> None:
    # One thread: the zygote forks, and a fork keeps only the forking thread.
    torch.set_num_threads(1)
    # Pay torch's lazy first-use imports once, in the zygote, so no problem's timeout is charged for them.
    trace_problem(_WARM_UP_SOURCE, "<warm-up>")


_FAILURE_WORDS = {
    "raised": "the tracer failed",
    "crash": "the problem's process ended",
    "bad-result": "the problem's process answered with a malformed result",
    "sandbox-error": "the sandbox could not be set up",
}


def _from_outcome(filename: str, outcome: sandbox.Outcome) -> ProblemTrace | ProblemTraceError:
    if outcome.status in ("timeout", "cpu-limit"):
        return ProblemTraceError(filename, "timeout", outcome.detail)
    if outcome.status != "ok":
        return ProblemTraceError(filename, "crash", f"{_FAILURE_WORDS.get(outcome.status, outcome.status)}: {outcome.detail}")
    try:
        return _checked_result(filename, outcome.value)
    except (TypeError, ValueError, KeyError) as exc:
        return ProblemTraceError(filename, "crash", f"the problem's process answered with a malformed trace: {_one_line(exc)}")


def traced_with() -> str:
    """What a trace made now is made with: the tracer's revision and torch's version (its meta
    kernels and FLOP counter decide shapes and counts)."""
    return f"{TRACER_REVISION} torch {torch.__version__}"


def trace_from_analysis(document: Any, filename: str) -> ProblemTrace | None:
    """A stored analysis (ProblemTrace.to_json) as a trace again, checked field by field as a
    sandboxed result is; None when it is not one (edited by hand, an older shape): trace it again."""
    try:
        trace = _checked_result(filename, {"trace": document})
    except (ValueError, TypeError, KeyError):
        return None
    return trace if isinstance(trace, ProblemTrace) else None


def _checked_result(filename: str, value: Any) -> ProblemTrace | ProblemTraceError:
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


_WARM_UP_SOURCE = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.proj = nn.Linear(8, 8)

    def forward(self, image, sequence):
        return self.conv(image), F.scaled_dot_product_attention(*(self.proj(sequence),) * 3)

def get_inputs():
    return [torch.randn(1, 3, 8, 8), torch.randn(1, 2, 4, 8)]

def get_init_inputs():
    return []
"""
