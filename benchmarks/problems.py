"""KernelBench-format problems: load the module, bind its constants, build model and inputs.

A problem module defines ``class Model(nn.Module)``, ``get_inputs()``, ``get_init_inputs()``
and module-level integer constants (``batch_size``, ``dim``...) that the two functions read.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import linecache
import re
import sys
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

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
        return cls(slug=slug or slug_from_filename(path), source_text=path.read_text(encoding="utf-8"), filename=str(path))

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


def int_constants(module: types.ModuleType) -> dict[str, int]:
    """Module-level integer constants in definition order (bools are not sizes)."""
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_") and type(value) is int
    }


def _replace_top_level_assignments(tree: ast.Module, overrides: Mapping[str, int]) -> set[str]:
    """Rewrite ``name = <expr>`` at module level to ``name = <override>``.

    Rewriting the source rather than patching the module after it ran means constants
    derived from an overridden one (``dim = batch_size * 4``) follow the override.
    """
    replaced: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
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
) -> types.ModuleType:
    """Execute problem source in a fresh module namespace, with integer constants overridden.

    Raises ProblemError when an override names something that is not a module-level int
    constant; anything the module itself raises propagates unchanged.
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
    original_constants = int_constants(_execute(tree, source_text, filename))
    unknown = sorted(name for name in overrides if name not in original_constants)
    if unknown:
        known = ", ".join(original_constants) or "none"
        raise ProblemError(
            f"cannot override {', '.join(unknown)}: not a module-level integer constant "
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


def _meta_input_shapes(module: types.ModuleType) -> list[tuple[int, ...]]:
    # On the meta device get_inputs allocates nothing, so probing costs nothing even for
    # problems whose inputs take gigabytes.
    with torch.device("meta"):
        return [tuple(tensor.shape) for tensor in _iter_tensors(module.get_inputs())]


def _constant_sizes_inputs(
    module: types.ModuleType, name: str, value: int, shapes: list[tuple[int, ...]]
) -> bool | None:
    """Whether changing the constant changes the input shapes; None when the probe fails."""
    # Doubling keeps divisibility constraints (heads dividing dim...) that +1 would break.
    probe = value * 2 if value else 1
    setattr(module, name, probe)
    try:
        return _meta_input_shapes(module) != shapes
    except Exception:
        return None
    finally:
        setattr(module, name, value)


def shape_bindings(
    module: types.ModuleType, inputs: Any, overrides: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Integer constants that size the inputs, in definition order.

    A constant sizes the inputs when get_inputs, re-run on the meta device with that constant
    changed, returns differently shaped tensors; where that probe fails, when its value is
    one of the input dimensions. Matching values alone would also bind unrelated constants
    that happen to share a value with some dimension. batch_size is always reported when the
    module has it, and so is every overridden constant, since it changed what was measured
    even if it sizes only the weights.
    """
    shapes = [tuple(int(d) for d in tensor.shape) for tensor in _iter_tensors(inputs)]
    dims = {d for shape in shapes for d in shape}
    overrides = overrides or {}
    bindings = {}
    for name, value in int_constants(module).items():
        if name == "batch_size" or name in overrides:
            bindings[name] = value
            continue
        sizes_inputs = _constant_sizes_inputs(module, name, value, shapes)
        if sizes_inputs or (sizes_inputs is None and value in dims):
            bindings[name] = value
    return bindings


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

    bindings = shape_bindings(module, cpu_inputs, overrides)
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
