"""KernelBench-format problems: load the module, bind its constants, build model and inputs.

A problem module defines ``class Model(nn.Module)``, ``get_inputs()``, ``get_init_inputs()``
and module-level integer constants (``batch_size``, ``dim``...) that the two functions read.

This module is the one owner of problem semantics, for the runner and for the importer's tracer
(kernelindex.ingest.problem_trace) alike:

- loading: ``load_module`` executes the source in a fresh namespace; an override rewrites the
  constant's assignment in the source, so constants derived from it follow.
- constants (``int_constants``): the module-level names not starting with ``_`` whose value is
  exactly an ``int`` (a bool is not a size), in definition order.
- axes (``find_axes``): the constants whose change changes the shape of a tensor ``get_inputs()``
  returns, found by reloading the problem with that one constant doubled (0 becomes 1; +1 when
  doubling fails) and calling ``get_inputs()`` on the meta device, plus ``batch_size`` whenever the
  problem defines it. Values are never matched: a constant that merely equals some dimension is
  not an axis.
- a configuration's bindings (``configuration_bindings``): the axes at the values run, plus every
  overridden constant. For a canonical run (no overrides) that is exactly what the importer stores.
- dimension names (``name_dimensions``): a dimension is named after axis ``c`` when it equals ``c``
  at the canonical values and equals the new value when ``c`` alone is changed; a dimension that
  follows no axis stays an integer.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import linecache
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from .naming import slug_for_path

SEED = 42

DTYPE_NAMES: dict[torch.dtype, str] = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float64: "fp64",
    torch.int8: "int8",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.bool: "bool",
}

# KernelBench problems are overwhelmingly fp32; a record needs some dtype even when the
# inputs could not be built, and the schema's list has no "unknown".
FALLBACK_DTYPE = "fp32"

_module_counter = itertools.count(1)


class ProblemError(Exception):
    """The problem module cannot be used as asked (bad override, missing function...)."""


@dataclass(frozen=True)
class Problem:
    """One workload to measure: its slug, the module source, and where the source came from."""

    slug: str
    source_text: str
    filename: str | None = None

    @classmethod
    def from_file(cls, path: str | Path, slug: str | None = None) -> Problem:
        path = Path(path)
        return cls(slug=slug or slug_for_path(path) or slug_from_filename(path), source_text=path.read_text(encoding="utf-8"), filename=str(path))

    @property
    def source_sha256(self) -> str:
        return source_sha256(self.source_text)

    @property
    def code_filename(self) -> str:
        """The name tracebacks give the source: its file, else a name carrying the slug."""
        return self.filename or f"<problem {self.slug}>"


def as_problem(item: Problem | tuple[str, str, str | None] | tuple[str, str]) -> Problem:
    """Accept a Problem or a plain (slug, source_text[, filename]) tuple."""
    if isinstance(item, Problem):
        return item
    slug, source_text, *rest = item
    return Problem(slug=slug, source_text=source_text, filename=rest[0] if rest else None)


def slug_from_filename(path: str | Path) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", Path(path).stem.lower()).strip("-")
    return slug or "problem"


def source_sha256(source_text: str) -> str:
    return hashlib.sha256(source_text.encode("utf-8")).hexdigest()


def seed_everything(seed: int = SEED) -> None:
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def is_constant_name(name: str) -> bool:
    return not name.startswith("_")


def int_constants(module: types.ModuleType | Mapping[str, Any]) -> dict[str, int]:
    """The problem's integer constants: public module-level names whose value is exactly an int
    (bools are not sizes), in definition order. The one rule, for the runner and the importer."""
    namespace = module if isinstance(module, Mapping) else vars(module)
    return {name: value for name, value in namespace.items() if is_constant_name(name) and type(value) is int}


def _replace_top_level_assignments(tree: ast.Module, overrides: Mapping[str, int]) -> set[str]:
    """Rewrite ``name = <expr>`` at module level to ``name = <override>``.

    Rewriting the source rather than patching the module after it ran means constants
    derived from an overridden one (``dim = batch_size * 4``) follow the override.
    """
    replaced: set[str] = set()
    # `height = width = 16`: overriding one name must not move the other, so the overridden names get
    # an assignment of their own after the original one (which still runs, for its side effects).
    body: list[ast.stmt] = []
    for node in tree.body:
        body.append(node)
        if isinstance(node, ast.Assign) and len(node.targets) > 1:
            chosen = [t for t in node.targets if isinstance(t, ast.Name) and t.id in overrides]
            if chosen:
                node.targets = [t for t in node.targets if t not in chosen] or [ast.Name("_", ast.Store())]
                for name_node in chosen:
                    assert isinstance(name_node, ast.Name)
                    body.append(ast.copy_location(ast.Assign([name_node], ast.Constant(overrides[name_node.id])), node))
                    replaced.add(name_node.id)
    tree.body = body
    ast.fix_missing_locations(tree)
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in overrides:
                    node.value = ast.copy_location(ast.Constant(overrides[target.id]), node.value)
                    replaced.add(target.id)
                elif (
                    isinstance(target, ast.Tuple)
                    and isinstance(node.value, ast.Tuple)
                    and len(target.elts) == len(node.value.elts)
                ):
                    for index, element in enumerate(target.elts):
                        if isinstance(element, ast.Name) and element.id in overrides:
                            node.value.elts[index] = ast.copy_location(
                                ast.Constant(overrides[element.id]), node.value.elts[index]
                            )
                            replaced.add(element.id)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id in overrides
            and node.value is not None
        ):
            node.value = ast.copy_location(ast.Constant(overrides[node.target.id]), node.value)
            replaced.add(node.target.id)
    return replaced


def _execute(tree: ast.Module, source_text: str, filename: str) -> types.ModuleType:
    module_name = f"kernelindex_problem_{next(_module_counter)}"
    module = types.ModuleType(module_name)
    module.__file__ = filename
    if not Path(filename).is_file():
        # Tracebacks from the problem's code then show its lines instead of nothing.
        linecache.cache[filename] = (len(source_text), None, source_text.splitlines(True), filename)
    code = compile(tree, filename, "exec")
    # dataclasses and typing look the defining module up in sys.modules while the class body runs.
    sys.modules[module_name] = module
    try:
        exec(code, module.__dict__)
    finally:
        sys.modules.pop(module_name, None)
    return module


def load_module(
    source_text: str,
    filename: str | None = None,
    overrides: Mapping[str, int] | None = None,
    *,
    constants: Mapping[str, int] | None = None,
) -> types.ModuleType:
    """Execute problem source in a fresh module namespace, with integer constants overridden.

    Raises ProblemError when an override names something that is not a module-level int
    constant; anything the module itself raises propagates unchanged. ``constants``, the
    constants of the untouched source when the caller already knows them, saves running it
    once more to check the override names.
    """
    filename = filename or "<kernelindex-problem>"
    overrides = dict(overrides or {})
    for name, value in overrides.items():
        if type(value) is not int:
            raise ProblemError(f"override {name}={value!r} is not an integer")

    tree = ast.parse(source_text, filename=filename)
    if not overrides:
        return _execute(tree, source_text, filename)

    # Run the untouched source once to learn which names really are integer constants,
    # so an override cannot silently turn a float or a tensor into an int.
    original_constants = dict(constants) if constants is not None else int_constants(_execute(tree, source_text, filename))
    unknown = sorted(name for name in overrides if name not in original_constants)
    if unknown:
        known = ", ".join(original_constants) or "none"
        raise ProblemError(
            f"cannot override {', '.join(unknown)}: names no module-level int constant "
            f"(constants: {known})"
        )

    tree = ast.parse(source_text, filename=filename)
    replaced = _replace_top_level_assignments(tree, overrides)
    module = _execute(tree, source_text, filename)
    for name in set(overrides) - replaced:
        # Bound some other way (loop, globals()); patching still reaches get_inputs, which
        # reads module globals when called.
        setattr(module, name, overrides[name])
    return module


def _iter_tensors(value: Any) -> Iterable[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _iter_tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _iter_tensors(item)


def move_to_device(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, list):
        return [move_to_device(item, device) for item in value]
    if isinstance(value, tuple):
        return tuple(move_to_device(item, device) for item in value)
    if isinstance(value, dict):
        return {key: move_to_device(item, device) for key, item in value.items()}
    return value


def dtype_name(dtype: torch.dtype) -> str | None:
    return DTYPE_NAMES.get(dtype)


def infer_dtype(inputs: Any, model: torch.nn.Module | None = None) -> str:
    """The dtype string of the floating inputs, else the model's floating weights, else the first tensor."""
    tensors = list(_iter_tensors(inputs))
    for tensor in tensors:
        if tensor.is_floating_point() and (name := dtype_name(tensor.dtype)):
            return name
    if model is not None:
        for parameter in itertools.chain(model.parameters(), model.buffers()):
            if parameter.is_floating_point() and (name := dtype_name(parameter.dtype)):
                return name
    for tensor in tensors:
        if name := dtype_name(tensor.dtype):
            return name
    return FALLBACK_DTYPE


class PinToMeta(TorchFunctionMode):
    """Keep every tensor on the meta device, even where the problem names a device.

    ``torch.device("meta")`` only fills in a device a call leaves out. A problem that names one
    (device="cuda", .cuda(), .to("cpu")) would allocate for real, or fail on a machine without
    that device.
    """

    _MOVES = tuple(
        getattr(torch.Tensor, name) for name in ("cuda", "cpu", "xpu", "mps", "pin_memory") if hasattr(torch.Tensor, name)
    )

    def __torch_function__(
        self,
        func: Callable[..., Any],
        arg_types: Sequence[type],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = dict(kwargs or {})
        meta = torch.device("meta")
        if kwargs.get("device") is not None:
            kwargs["device"] = meta
        if func in self._MOVES:
            return args[0]
        if func is torch.Tensor.to:
            args = tuple(meta if isinstance(a, (str, int, torch.device)) and not isinstance(a, bool) else a for a in args)
        return func(*args, **kwargs)


def tensor_shapes(values: Any) -> list[tuple[int, ...]]:
    """The shape of every tensor in values (lists, tuples and dicts walked), in order."""
    return [tuple(int(d) for d in tensor.shape) for tensor in _iter_tensors(values)]


def _probe_values(value: int) -> tuple[int, ...]:
    # Doubling keeps divisibility constraints (heads dividing dim...) that +1 would break.
    return (value * 2, value + 1) if value else (1,)


@dataclass(frozen=True)
class Variation:
    """The problem reloaded with one constant changed: what get_inputs() then returns on meta."""

    name: str
    value: int
    module: types.ModuleType
    constants: dict[str, int]
    input_shapes: list[tuple[int, ...]]


@dataclass(frozen=True)
class Axes:
    """Which constants are a problem's axes, and the evidence: one Variation per axis that sizes the inputs."""

    constants: dict[str, int]
    input_shapes: list[tuple[int, ...]]
    bindings: dict[str, int]
    variations: dict[str, Variation]


def find_axes(
    source_text: str,
    filename: str | None = None,
    overrides: Mapping[str, int] | None = None,
    *,
    module: types.ModuleType | None = None,
) -> Axes:
    """The problem's axes at the configuration ``overrides`` selects (the canonical one without).

    Each constant is changed alone (doubled, else +1) by reloading the source with it overridden,
    and ``get_inputs()`` is called on the meta device: a constant is an axis when some input
    tensor's shape changes. ``batch_size`` is an axis whenever the problem defines it. A reload or
    ``get_inputs()`` that fails with the changed value is no evidence, so that constant is not an
    axis (unless it is ``batch_size``). ``module`` is the problem already loaded at ``overrides``.
    Raises whatever loading the problem or its canonical ``get_inputs()`` raises.
    """
    filename = filename or "<kernelindex-problem>"
    overrides = dict(overrides or {})
    with torch.device("meta"), PinToMeta(), torch.no_grad():
        if module is None:
            module = load_module(source_text, filename, overrides)
        constants = int_constants(module)
        shapes = tensor_shapes(module.get_inputs())
        variations: dict[str, Variation] = {}
        for name, value in constants.items():
            for probe in _probe_values(value):
                try:
                    variant = load_module(source_text, filename, {**overrides, name: probe}, constants=constants)
                    variant_shapes = tensor_shapes(variant.get_inputs())
                except Exception:
                    continue
                if variant_shapes != shapes:
                    variations[name] = Variation(name, probe, variant, int_constants(variant), variant_shapes)
                break
    bindings = {
        name: value for name, value in constants.items() if name == "batch_size" or name in variations
    }
    return Axes(constants=constants, input_shapes=shapes, bindings=bindings, variations=variations)


def configuration_bindings(axes: Axes, overrides: Mapping[str, int] | None = None) -> dict[str, int]:
    """What a run records as its configuration: the axes, plus every overridden constant (it changed
    what was measured even if it sizes only the weights), in definition order."""
    overrides = overrides or {}
    return {name: value for name, value in axes.constants.items() if name in axes.bindings or name in overrides}


def problem_bindings(
    source_text: str, filename: str | None = None, overrides: Mapping[str, int] | None = None
) -> dict[str, int]:
    """The configuration a run of this problem at ``overrides`` records (the canonical one without)."""
    return configuration_bindings(find_axes(source_text, filename, overrides), overrides)


def name_dimensions(
    shapes: Sequence[Sequence[int] | None],
    bindings: Mapping[str, int],
    varied: Mapping[str, tuple[int, Sequence[Sequence[int] | None] | None]],
    order: Sequence[str] = (),
) -> list[list[str | int] | None]:
    """Each dimension as the name of the axis it follows, else its size.

    ``varied`` maps an axis to (its changed value, the same tensors' shapes with that axis alone
    changed, None where that run failed). A dimension follows axis ``c`` when it equals ``c``'s
    value and becomes ``c``'s changed value when ``c`` changes; where several axes qualify (one
    derived from the other, ``N = M``), the one defined last, the more specific, names it.
    """
    rank = {name: index for index, name in enumerate(order or bindings)}
    named: list[list[str | int] | None] = []
    for position, shape in enumerate(shapes):
        if shape is None:
            named.append(None)
            continue
        dims: list[str | int] = []
        for axis, size in enumerate(shape):
            candidates = []
            for name, value in bindings.items():
                if value != size or name not in varied:
                    continue
                new_value, new_shapes = varied[name]
                other = new_shapes[position] if new_shapes is not None and position < len(new_shapes) else None
                if other is not None and len(other) == len(shape) and other[axis] == new_value:
                    candidates.append(name)
            dims.append(max(candidates, key=lambda n: rank.get(n, -1)) if candidates else int(size))
        named.append(dims)
    return named


@dataclass
class Instance:
    """A problem made concrete on a device: its inputs and the recipe for its model."""

    problem: Problem
    module: types.ModuleType
    device: torch.device
    init_inputs: list[Any]
    inputs: list[Any]
    bindings: dict[str, int]
    dtype: str
    overrides: dict[str, int] = field(default_factory=dict)

    def new_model(self) -> torch.nn.Module:
        """A freshly built model with the seeded weights every call, on the device.

        Built on the CPU and then moved, as KernelBench does, so the weights do not depend
        on the device's random generator.
        """
        model_class = getattr(self.module, "Model", None)
        if model_class is None:
            raise ProblemError("the problem module defines no Model class")
        seed_everything(SEED)
        model = model_class(*self.init_inputs)
        return model.to(self.device)


def instantiate(
    problem: Problem,
    device: str | torch.device,
    overrides: Mapping[str, int] | None = None,
    module: types.ModuleType | None = None,
) -> Instance:
    """Load the module (unless given), seed, call get_init_inputs and get_inputs, move to device."""
    device = torch.device(device)
    overrides = dict(overrides or {})
    if module is None:
        module = load_module(problem.source_text, problem.code_filename, overrides)
    for required in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, required):
            raise ProblemError(f"the problem module defines no {required}")

    seed_everything(SEED)
    init_inputs = list(module.get_init_inputs())
    seed_everything(SEED)
    cpu_inputs = list(module.get_inputs())

    bindings = configuration_bindings(
        find_axes(problem.source_text, problem.code_filename, overrides, module=module), overrides
    )
    init_inputs = move_to_device(init_inputs, device)
    inputs = move_to_device(cpu_inputs, device)
    return Instance(
        problem=problem,
        module=module,
        device=device,
        init_inputs=init_inputs,
        inputs=inputs,
        bindings=bindings,
        dtype=infer_dtype(inputs),
        overrides=overrides,
    )
