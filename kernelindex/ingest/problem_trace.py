"""Trace a KernelBench problem file into workload semantics without allocating a real tensor.

Every step of a problem (import, ``get_init_inputs``, ``Model`` construction, ``get_inputs``, forward) runs
on the ``meta`` device, so shapes, dtypes, parameter counts and FLOPs come out exactly while a problem that
asks for 100 GB costs nothing. ``trace_problem`` runs in-process, for trusted sources only;
``trace_problems_isolated`` runs each problem in a fresh confined process (benchmarks.sandbox), so a hang,
an ``os._exit``, a crash or a hostile problem costs one result instead of the ingest run.

The trace as data (ProblemTrace, ProblemTraceError, TRACER_REVISION, the checks every returned or stored
trace passes) lives in kernelindex.ingest.traces, which needs no torch; its names are exported here too.
This module imports torch and is meant for the ingest command only, never for the API server.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any, TypeGuard

# Tracing never converts to NumPy; torch's notice that NumPy is absent is noise on every worker start.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

# The filter must be in place before torch is first imported, hence these imports below it.
import torch  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402
from torch.utils._pytree import tree_flatten  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402
from torch.utils.weak import WeakIdKeyDictionary  # noqa: E402

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
from kernelindex.ingest.traces import (  # noqa: E402
    ASSUMED_SETTINGS,
    ISOLATION_STAGES,
    TRACE_STAGES,
    TRACER_REVISION,
    ProblemTrace,
    ProblemTraceError,
    checked_result,
    trace_from_analysis,
    traced_with,
)

__all__ = [
    "ASSUMED_SETTINGS",
    "DEFAULT_ADDRESS_SPACE_LIMIT",
    "ISOLATION_STAGES",
    "TRACE_STAGES",
    "ProblemTrace",
    "ProblemTraceError",
    "TRACER_REVISION",
    "available_cores",
    "trace_from_analysis",
    "trace_problem",
    "trace_problems_isolated",
    "traced_with",
]

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


def trace_problem(
    source: str, filename: str, overrides: dict[str, int] | None = None, *, stepwise_recurrent: bool = False,
) -> ProblemTrace:
    """Import, construct and run one problem on the meta device, in this process.

    The problem is loaded, its constants read and its axes found by benchmarks.problems, the rule the
    runner records configurations with: ``bindings`` is what a run of the problem at ``overrides`` records.
    ``overrides`` rewrite module-level int constants in the source, so constants derived from them follow.
    A dimension is named after the axis it follows (see benchmarks.problems.name_dimensions).
    Recurrent layers (nn.LSTM, nn.GRU, nn.RNN) are not stepped through on meta but answered from their
    weights' shapes (RecurrentShortcut: the same shapes and FLOPs in microseconds instead of minutes);
    ``stepwise_recurrent`` runs them step by step instead, the reference the shortcut is tested against.
    Raises ProblemTraceError for anything the problem does wrong, ValueError for a bad override.
    """
    overrides = dict(overrides or {})
    default_dtype = torch.get_default_dtype()
    shortcut = _NoShortcut() if stepwise_recurrent else RecurrentShortcut()
    try:
        with torch.device(_META), PinToMeta(), torch.no_grad(), shortcut:
            with SmallValues():  # the model built, a value of it read (not counted: the forward pass is)
                module = _at_stage(filename, "import", load_module, source, filename, overrides)
                namespace = vars(module)
                init_inputs = _at_stage(filename, "get_init_inputs", _call_list_factory, namespace, "get_init_inputs")
                model = _at_stage(filename, "construct", _construct_model, namespace, init_inputs)
            constants = int_constants(module)
            param_count, param_bytes, buffer_bytes = _at_stage(filename, "construct", _model_sizes, model)
            inputs = _at_stage(filename, "get_inputs", _call_list_factory, namespace, "get_inputs")
            _at_stage(filename, "get_inputs", _check_values, inputs, "get_inputs()")
            outputs, flops_by_class = _at_stage(filename, "forward", _run_forward, model, inputs, shortcut)
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


def _run_forward(
    model: torch.nn.Module, inputs: list[Any], shortcut: RecurrentShortcut | _NoShortcut,
) -> tuple[list[Any], dict[str, int]]:
    counter = FlopCounterMode(display=False)
    counted_before = shortcut.matmul_flops
    with counter:
        result = model(*inputs)
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    _check_values(outputs, "forward()")
    flops_by_class = {"conv": 0, "matmul": 0, "other": 0}
    for op, count in counter.get_flop_counts().get("Global", {}).items():
        flops_by_class[_flop_class(op)] += int(count)
    # The recurrent ops answered from shapes never reached the counter: their matmuls are added here.
    flops_by_class["matmul"] += shortcut.matmul_flops - counted_before
    return outputs, flops_by_class


def _flop_class(op: Any) -> str:
    name = str(getattr(op, "__name__", None) or op).rsplit(".", 1)[-1]
    if "conv" in name:
        return "conv"
    # Attention kernels (SDPA, flash, efficient, flex) are two batched matmuls plus a softmax.
    if name in _MATMUL_OPS or "attention" in name:
        return "matmul"
    return "other"


# --- recurrent layers from their shapes ------------------------------------------------------------------

# torch's recurrent ops (what nn.LSTM, nn.GRU and nn.RNN call) → gates per cell.
_RECURRENT_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


class RecurrentShortcut:
    """While active, torch's recurrent ops on meta tensors return empty tensors of the right shapes
    at once, and add their FLOPs, counted from the weights' shapes, to ``matmul_flops``.

    On meta, ``_VF.lstm`` runs the generic ATen loop: a linear for the input and one for the hidden
    state per time step, layer and direction, each dispatched through the FLOP counter, so an nn.LSTM
    of 6 layers over 512 steps takes tens of seconds to return empty tensors. What it counts is exactly
    those matmuls (elementwise gate work is not counted, as for every other op the tracer sees), per
    layer and direction::

        seq · batch · 2 · gates·hidden · (input + hidden_out)   [+ seq · batch · 2 · hidden · proj]

    with input the features of the layer's input (the problem's for layer 0, directions ·
    hidden_out after) and hidden_out the projection size when ``proj_size`` is set. The module's
    own Python (argument checks, default h0/c0, batch_first, unbatched input) still runs; only the
    op is replaced, and only for what it can answer: a call it does not fully recognise (a packed
    sequence, other devices, weights of unexpected shapes or dtypes, an empty sequence) goes to
    torch's op, which computes it or raises its own error. tests/ingest/test_trace_speed.py checks
    shapes and counts against the step-by-step run.
    """

    def __init__(self) -> None:
        self.matmul_flops = 0
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> RecurrentShortcut:
        vf = torch._VF
        for name in _RECURRENT_GATES:
            self._saved[name] = vf.__dict__.get(name, _ABSENT)
            setattr(vf, name, self._replacement(name, getattr(vf, name)))
        return self

    def __exit__(self, *exc: object) -> None:
        vf = torch._VF
        for name, saved in self._saved.items():
            if saved is _ABSENT:
                vf.__dict__.pop(name, None)  # VFModule answers from torch._C again
            else:
                setattr(vf, name, saved)
        self._saved.clear()

    def _replacement(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def recurrent(*args: Any, **kwargs: Any) -> Any:
            answer = None if kwargs else _recurrent_from_shapes(name, args)
            if answer is None:
                return original(*args, **kwargs)
            outputs, flops = answer
            self.matmul_flops += flops
            return outputs

        return recurrent


class SmallValues(TorchFunctionMode):
    """While active, a small tensor computed on the meta device from factories alone keeps its values in a
    CPU twin, and reading a value of it (``item()``, ``tolist()``, ``bool()``, ``int()``, ``float()``) reads the
    twin's, where on meta it raises "Tensor.item() cannot be called on meta tensors".

    A problem may read values while it builds its model: KernelBench's Swin models (level 3, 29 and 30) set
    each block's stochastic depth from ``[x.item() for x in torch.linspace(0, rate, sum(depths))]``, and could
    not be traced at all. A twin is made for a result of at most SMALL_VALUES elements of an op whose every
    tensor input has one (a factory has none), by the same op on the twins, on the CPU (in place where the op
    is in place); a random op gets none (its values mean nothing, and it would draw from the CPU generator).
    Only the values of what has a twin are readable; everything else stays on meta as before. Not active in
    the forward pass: the FLOP counter would count the twins' arithmetic too."""

    SMALL_VALUES = 1 << 16
    _READS = frozenset({
        torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.__bool__, torch.Tensor.__int__, torch.Tensor.__float__,
        torch.Tensor.__index__,
    })

    def __init__(self) -> None:
        super().__init__()
        # meta tensor -> its CPU twin, by identity (a tensor's == is elementwise); dropped with the tensor.
        self._twins: Any = WeakIdKeyDictionary()  # Any: torch ships this dictionary untyped
        self._storages: set[int] = set()  # the meta storages of twinned tensors (what an alias would write into)

    def __torch_function__(
        self, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if func in self._READS and args and _is_tensor(args[0]) and args[0].is_meta:
            twin = self._twins.get(args[0])
            if twin is not None:
                with torch._C.DisableTorchFunction():
                    return func(twin, *args[1:], **kwargs)
        result = func(*args, **kwargs)
        if _mutates(func, kwargs):
            self._mirror(func, args, kwargs)
        else:
            self._twin(func, args, kwargs, result)
        return result

    def _twin(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        """Twins for what a pure op made, where it is small and every tensor it read has one."""
        made, _ = tree_flatten(result)
        made_meta = [t for t in made if _is_tensor(t) and t.is_meta]
        if not made_meta or any(t.numel() > self.SMALL_VALUES for t in made_meta) or _is_random(func):
            return
        twin_result = self._on_twins(func, args, kwargs)
        if twin_result is None:
            return  # no twin: reading its value fails as it did without this mode
        twins, _ = tree_flatten(twin_result)
        if len(twins) != len(made):
            return
        for meta, twin in zip(made, twins):
            if _is_tensor(meta) and meta.is_meta and _is_tensor(twin) and not twin.is_meta and twin.shape == meta.shape:
                self._twins[meta] = twin
                self._storages.add(_storage_of(meta))

    def _mirror(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """An op that wrote into a tensor (in place, out=): done on the twins too where it wrote into one, so
        a value read later is the one written. Where that cannot be done (a random op, a written value this
        mode has no twin of) or where it wrote through an alias without a twin (nn.Parameter(t) shares t's
        storage, and nn.init writes through the parameter), no twin is trusted any more: a wrong value read
        would be worse than none. Which of its tensors it wrote into is not known in general (nn.init.constant_
        takes it as tensor=), so every one it was given counts."""
        leaves, _ = tree_flatten((args, kwargs))
        written = [t for t in leaves if _is_tensor(t) and t.is_meta]
        if any(t in self._twins for t in written):
            if _is_random(func) or self._on_twins(func, args, kwargs) is None:
                self._forget()
        elif any(_storage_of(t) in self._storages for t in written):
            self._forget()

    def _forget(self) -> None:
        self._twins = WeakIdKeyDictionary()
        self._storages = set()

    def _on_twins(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """func on the CPU twins of its meta tensors (None where one has none, or where it raises)."""
        inputs, spec = tree_flatten((args, kwargs))
        on_cpu: list[Any] = []
        for value in inputs:
            if _is_tensor(value) and value.is_meta:
                twin = self._twins.get(value)
                if twin is None:
                    return None  # a value this mode never saw (a parameter, an input)
                value = twin
            elif isinstance(value, (torch.device, str)) and _names_device(value):
                value = "cpu"
            on_cpu.append(value)
        twin_args, twin_kwargs = spec.unflatten(on_cpu)
        if "device" in twin_kwargs:
            twin_kwargs = {**twin_kwargs, "device": "cpu"}
        try:
            with torch._C.DisableTorchFunction():
                found = func(*twin_args, **twin_kwargs)
        except Exception:
            return None
        return _WROTE if found is None else found


_WROTE = object()  # what _on_twins returns for an op that returns nothing (x[i] = v)


def _storage_of(tensor: torch.Tensor) -> int:
    """Which storage a meta tensor's elements are in (its views and an nn.Parameter made of it share it)."""
    return int(tensor.untyped_storage()._cdata)


_IN_PLACE_DUNDERS = frozenset({
    "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
    "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__",
})


def _mutates(func: Callable[..., Any], kwargs: dict[str, Any]) -> bool:
    """Whether the op writes into a tensor it was given: x.add_(1), x[i] = v, torch.add(a, b, out=x), F.relu(x, inplace=True)."""
    name = getattr(func, "__name__", "")
    return ((name.endswith("_") and not name.startswith("__")) or name in _IN_PLACE_DUNDERS
            or kwargs.get("out") is not None or kwargs.get("inplace") is True)


_RANDOM_OPS = frozenset({
    "bernoulli", "bernoulli_", "cauchy_", "dropout", "exponential_", "geometric_", "log_normal_", "multinomial",
    "normal", "normal_", "poisson", "random_", "uniform_",
})


def _is_random(func: Callable[..., Any]) -> bool:
    name = getattr(func, "__name__", "")
    return name.startswith("rand") or name in _RANDOM_OPS


def _names_device(value: torch.device | str) -> bool:
    """A device argument (torch.device("meta"), "cuda:0"), not any string (an einsum equation, a mode name)."""
    if isinstance(value, torch.device):
        return True
    return value in ("meta", "cpu") or value.startswith(("cuda", "xpu", "mps"))


class _NoShortcut:
    matmul_flops = 0

    def __enter__(self) -> _NoShortcut:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


_ABSENT = object()


def _recurrent_from_shapes(op: str, args: tuple[Any, ...]) -> tuple[tuple[torch.Tensor, ...], int] | None:
    """(outputs, matmul FLOPs) of ``_VF.<op>(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` on meta tensors, from shapes alone; None for any call it does not
    fully recognise (torch's own op then runs)."""
    if len(args) != 9:
        return None
    data, hx, params, has_biases, num_layers, _dropout, _train, bidirectional, batch_first = args
    # The packed-sequence overload has the same arity but batch_sizes second, so params fourth.
    if not all(isinstance(flag, bool) for flag in (has_biases, bidirectional, batch_first)):
        return None
    if not _is_int(num_layers) or num_layers < 1 or not isinstance(params, (list, tuple)):
        return None
    states = list(hx) if op == "lstm" and isinstance(hx, (list, tuple)) else [hx]
    if len(states) != (2 if op == "lstm" else 1):
        return None
    tensors = [data, *states, *params]
    if not all(_is_tensor(t) and t.device.type == "meta" for t in tensors):
        return None
    if data.dim() != 3 or not data.is_floating_point() or any(t.dtype != data.dtype for t in tensors):
        return None
    gates = _RECURRENT_GATES[op]
    directions = 2 if bidirectional else 1
    cells = num_layers * directions
    if len(params) % cells:
        return None
    per_cell = len(params) // cells
    plain = 4 if has_biases else 2
    projected = op == "lstm" and per_cell == plain + 1
    if per_cell != plain and not projected:
        return None
    steps, batch = (data.shape[1], data.shape[0]) if batch_first else (data.shape[0], data.shape[1])
    if steps < 1 or batch < 1:
        return None
    hidden = params[0].shape[0] // gates if params[0].dim() == 2 else 0
    hidden_out = params[plain].shape[0] if projected and params[plain].dim() == 2 else hidden
    if hidden < 1 or hidden_out < 1:
        return None
    flops = 0
    features = data.shape[2]
    for layer in range(num_layers):
        for direction in range(directions):
            cell = params[(layer * directions + direction) * per_cell:][:per_cell]
            expected: list[tuple[int, ...]] = [(gates * hidden, features), (gates * hidden, hidden_out)]
            if has_biases:
                expected += [(gates * hidden,), (gates * hidden,)]
            if projected:
                expected.append((hidden_out, hidden))
            if [tuple(t.shape) for t in cell] != expected:
                return None
            flops += steps * batch * 2 * gates * hidden * (features + hidden_out)
            if projected:
                flops += steps * batch * 2 * hidden * hidden_out
        features = directions * hidden_out
    if tuple(states[0].shape) != (cells, batch, hidden_out):
        return None
    if op == "lstm" and tuple(states[1].shape) != (cells, batch, hidden):
        return None
    shape = (batch, steps, features) if batch_first else (steps, batch, features)
    outputs = [torch.empty(shape, dtype=data.dtype, device=_META)]
    outputs += [torch.empty(tuple(state.shape), dtype=data.dtype, device=_META) for state in states]
    return tuple(outputs), flops


# --- naming dimensions --------------------------------------------------------------------------------------


def _varied_outputs(axes: Axes, outputs: list[Any]) -> dict[str, list[tuple[int, ...] | None] | None]:
    """The output shapes with each axis alone changed, for the axes that could name an output dimension.

    An axis whose value is no output dimension cannot name one, so its problem is not run again; nor is
    any problem whose constants change no input. A run that fails
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

def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask, which a container or taskset narrows)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def trace_problems_isolated(
    items: list[tuple[str, str]],
    timeout_s: float = 60,
    workers: int | None = None,
    *,
    address_space_limit: int | None = DEFAULT_ADDRESS_SPACE_LIMIT,
    startup_timeout_s: float = 180,
    report: Callable[[str], None] | None = None,
    on_traced: Callable[[str], None] | None = None,
    on_result: Callable[[int, ProblemTrace | ProblemTraceError], None] | None = None,
) -> list[ProblemTrace | ProblemTraceError]:
    """Trace many ``(source, filename)`` problems, each in a fresh sandboxed process (benchmarks.sandbox),
    up to ``workers`` at once (default: every core this process may use); results in input order,
    whichever finished first.

    Each problem runs in its own fork of a warmed-up zygote, confined (no network, no database, an
    unprivileged uid, a private scratch directory, rlimits; see benchmarks.sandbox for what each platform
    gives), so nothing one problem does reaches the ingest or the next problem. A problem past
    ``timeout_s`` (wall clock or CPU) gets a "timeout" error; one that ends its process (``os._exit``, a
    signal, the address-space cap) or answers with anything but a well-formed trace gets a "crash" error.
    ``report`` is given one line naming the sandbox level in use; ``on_traced`` the filename of each
    problem once its result is final (in the order they finish: for progress, never for results);
    ``on_result`` the index and result of each problem the moment it is final, so a caller can keep it
    before the others finish (an interrupted import keeps every finished trace).

    Blocking; from asyncio run it as ``await asyncio.to_thread(trace_problems_isolated, items)``.
    """
    items = list(items)
    if timeout_s <= 0:
        raise ValueError("timeout_s must be positive")
    workers = available_cores() if workers is None else workers
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

        def final(index: int, outcome: sandbox.Outcome) -> None:
            if on_result:
                on_result(index, _from_outcome(items[index][1], outcome))
            if on_traced:
                on_traced(items[index][1])

        def finished(index: int, outcome: sandbox.Outcome) -> None:
            if outcome.status not in _RETRIED:
                final(index, outcome)

        outcomes = box.map(f"{_THIS_MODULE}:trace_payload", payloads, on_done=finished)
        # A process that died or could not be set up may be the machine's doing (a loaded CI host), not
        # the problem's: such problems get one more fresh process. A timeout is not retried (it would
        # cost the whole limit again), and a problem's own exception is an answer, not a failure.
        again = [i for i, outcome in enumerate(outcomes) if outcome.status in _RETRIED]
        if again:
            retried = box.map(
                f"{_THIS_MODULE}:trace_payload", [payloads[i] for i in again],
                on_done=lambda position, outcome: final(again[position], outcome),
            )
            for i, outcome in zip(again, retried):
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
        return checked_result(filename, outcome.value)
    except (TypeError, ValueError, KeyError) as exc:
        return ProblemTraceError(filename, "crash", f"the problem's process answered with a malformed trace: {_one_line(exc)}")


_WARM_UP_SOURCE = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.proj = nn.Linear(8, 8)
        self.lstm = nn.LSTM(8, 8)

    def forward(self, image, sequence):
        return self.conv(image), F.scaled_dot_product_attention(*(self.proj(sequence),) * 3), self.lstm(sequence[0])[0]

def get_inputs():
    return [torch.randn(1, 3, 8, 8), torch.randn(1, 2, 4, 8)]

def get_init_inputs():
    return []
"""
