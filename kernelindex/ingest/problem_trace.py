"""Trace a KernelBench problem file into workload semantics without allocating a real tensor.

Every step of a problem (import, ``get_init_inputs``, ``Model`` construction, ``get_inputs``, forward) runs
on the ``meta`` device, so shapes, dtypes, parameter counts and FLOPs come out exactly while a problem that
asks for 100 GB costs nothing. ``trace_problem`` runs in-process; ``trace_problems_isolated`` runs each
problem in a spawned worker, so a hang, an ``os._exit`` or a crash costs one result instead of the ingest run.

This module imports torch and is meant for the ingest command only, never for the API server.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
import warnings
from collections import deque
from collections.abc import Callable
from typing import Any, TypeGuard

# Tracing never converts to NumPy; torch's notice that NumPy is absent is noise on every worker start.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

# The filter must be in place before torch is first imported, hence these imports below it.
import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

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
    "trace_problem",
    "trace_problems_isolated",
]

TRACE_STAGES = ("import", "get_init_inputs", "construct", "get_inputs", "forward")
ISOLATION_STAGES = ("timeout", "crash")

# The FLOP split is read against PyTorch's defaults: convolutions may run on TF32 tensor cores,
# fp32 matmuls stay full fp32. Recorded with every trace so a later change of default is visible.
ASSUMED_SETTINGS: dict[str, Any] = {"cudnn.allow_tf32": True, "float32_matmul_precision": "highest"}

DEFAULT_ADDRESS_SPACE_LIMIT = 8 * 1024**3
# Never cap a worker below what it already maps (a CUDA build of torch maps several GiB at import).
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


def trace_problems_isolated(
    items: list[tuple[str, str]],
    timeout_s: float = 60,
    workers: int = 2,
    *,
    address_space_limit: int | None = DEFAULT_ADDRESS_SPACE_LIMIT,
    startup_timeout_s: float = 180,
) -> list[ProblemTrace | ProblemTraceError]:
    """Trace many ``(source, filename)`` problems in spawned worker processes; results in input order.

    A problem that runs past ``timeout_s`` gets a "timeout" error and its worker is killed; one that ends
    its worker (``os._exit``, a segfault, the address-space cap) gets a "crash" error. Either way the worker
    is replaced and the rest go on. ``timeout_s`` counts from handing the problem to a ready worker, so the
    few seconds a fresh worker spends importing torch are not charged to a problem.

    Blocking; from asyncio run it as ``await asyncio.to_thread(trace_problems_isolated, items)``. The
    caller's main module must be import-safe (``if __name__ == "__main__":``), as for any "spawn" process.
    """
    items = list(items)
    if timeout_s <= 0:
        raise ValueError("timeout_s must be positive")
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if not items:
        return []
    pool = _IsolatedPool(min(workers, len(items)), address_space_limit, startup_timeout_s)
    try:
        return pool.run(items, timeout_s)
    finally:
        pool.close()


class _Worker:
    def __init__(self, context: Any, address_space_limit: int | None, startup_timeout_s: float) -> None:
        parent_end, child_end = context.Pipe()
        self.process = context.Process(
            target=_worker_main, args=(child_end, address_space_limit), name="kernelindex-problem-tracer", daemon=True
        )
        self.process.start()
        child_end.close()
        self.connection = parent_end
        self.ready = False
        self.dead = False
        self.task_index: int | None = None
        self.deadline = time.monotonic() + startup_timeout_s

    def assign(self, index: int, source: str, filename: str, timeout_s: float) -> None:
        self.connection.send((index, source, filename))
        self.task_index = index
        self.deadline = time.monotonic() + timeout_s

    def finish_task(self) -> None:
        self.task_index = None
        self.deadline = math.inf

    def exit_description(self) -> str:
        self.process.join(timeout=1)
        code = self.process.exitcode
        if code is None:
            return "tracer worker stopped answering"
        if code < 0:
            try:
                return f"tracer worker was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"tracer worker was killed by signal {-code}"
        return f"tracer worker exited with code {code}"

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.connection.close()


class _IsolatedPool:
    def __init__(self, size: int, address_space_limit: int | None, startup_timeout_s: float) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.capacity = size
        self.address_space_limit = address_space_limit
        self.startup_timeout_s = startup_timeout_s
        self.live: list[_Worker] = []
        self.startup_failures: list[str] = []

    def run(self, items: list[tuple[str, str]], timeout_s: float) -> list[ProblemTrace | ProblemTraceError]:
        results: list[ProblemTrace | ProblemTraceError | None] = [None] * len(items)
        pending = deque(range(len(items)))
        while pending or any(w.task_index is not None for w in self.live):
            self._hand_out(items, pending, timeout_s)
            self._grow(pending)
            if not self.live:
                reason = "; ".join(self.startup_failures) or "no worker"
                for index in pending:
                    results[index] = ProblemTraceError(items[index][1], "crash", f"no tracer worker started: {reason}")
                break
            self._wait(items, results, timeout_s)
        return [r if r is not None else ProblemTraceError(items[i][1], "crash", "no result") for i, r in enumerate(results)]

    def _hand_out(self, items: list[tuple[str, str]], pending: deque[int], timeout_s: float) -> None:
        for worker in self.live:
            if worker.ready and not worker.dead and worker.task_index is None and pending:
                index = pending.popleft()
                source, filename = items[index]
                try:
                    worker.assign(index, source, filename, timeout_s)
                except OSError:
                    # It died while idle; the problem goes back in line and the death is handled on the next wait.
                    pending.appendleft(index)
                    worker.dead = True

    def _grow(self, pending: deque[int]) -> None:
        # Start a worker only for work no idle or starting worker will pick up: each start imports torch.
        free = sum(1 for w in self.live if w.task_index is None and not w.dead)
        while len(self.live) < self.capacity and len(pending) > free:
            self.live.append(_Worker(self.context, self.address_space_limit, self.startup_timeout_s))
            free += 1

    def _wait(self, items: list[tuple[str, str]], results: list[Any], timeout_s: float) -> None:
        handles: dict[Any, _Worker] = {}
        for worker in self.live:
            handles[worker.connection] = worker
            handles[worker.process.sentinel] = worker
        nearest = min(w.deadline for w in self.live)
        wait_s = None if math.isinf(nearest) else max(0.0, nearest - time.monotonic())
        if not any(w.dead for w in self.live):
            for handle in multiprocessing.connection.wait(list(handles), timeout=wait_s):
                self._drain(handles[handle], results)
        now = time.monotonic()
        for worker in list(self.live):
            if worker.dead or not worker.process.is_alive():
                self._drain(worker, results)
                self._bury(worker, items, results, worker.exit_description())
            elif now >= worker.deadline and worker.task_index is not None:
                index = worker.task_index
                results[index] = ProblemTraceError(
                    items[index][1], "timeout", f"no result within {timeout_s:g} s; tracer worker killed"
                )
                worker.finish_task()
                self._bury(worker, items, results, "timed out")
            elif now >= worker.deadline:
                self._bury(worker, items, results, f"tracer worker not ready within {self.startup_timeout_s:g} s")

    def _drain(self, worker: _Worker, results: list[Any]) -> None:
        if worker.connection.closed:
            return
        try:
            while worker.connection.poll():
                message = worker.connection.recv()
                if message[0] == "ready":
                    worker.ready = True
                    worker.deadline = math.inf
                elif message[0] == "result":
                    _, index, result = message
                    results[index] = result
                    worker.finish_task()
        except (EOFError, OSError):
            worker.dead = True

    def _bury(self, worker: _Worker, items: list[tuple[str, str]], results: list[Any], reason: str) -> None:
        self.live.remove(worker)
        if worker.task_index is not None:
            index = worker.task_index
            results[index] = ProblemTraceError(items[index][1], "crash", reason)
        elif not worker.ready:
            # A worker that cannot even start will not start next time either; shrink rather than retry forever.
            self.capacity -= 1
            self.startup_failures.append(reason)
        worker.kill()

    def close(self) -> None:
        for worker in self.live:
            try:
                worker.connection.send(None)
            except OSError:
                pass
        deadline = time.monotonic() + 2
        for worker in self.live:
            worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
            worker.kill()
        self.live.clear()


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


def _worker_main(connection: Any, address_space_limit: int | None) -> None:
    # Ctrl-C reaches the whole process group; the parent handles it and kills the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(1)
    _cap_address_space(address_space_limit)
    # Pay torch's lazy first-use imports before reporting ready, so no problem's timeout is charged for them.
    trace_problem(_WARM_UP_SOURCE, "<warm-up>")
    connection.send(("ready", os.getpid()))
    while True:
        try:
            task = connection.recv()
        except EOFError:
            return
        if task is None:
            return
        index, source, filename = task
        try:
            result: ProblemTrace | ProblemTraceError = trace_problem(source, filename)
        except ProblemTraceError as exc:
            result = exc
        except Exception as exc:  # a tracer bug must cost one problem, not the worker
            result = ProblemTraceError(filename, "crash", _one_line(exc))
        connection.send(("result", index, result))


def _cap_address_space(limit: int | None) -> None:
    if limit is None:
        return
    try:
        import resource
    except ImportError:  # not on this platform; the timeout still guards
        return
    cap = max(limit, _mapped_bytes() + _ADDRESS_SPACE_HEADROOM)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ValueError, OSError):
        pass


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
