"""A problem's configuration read from its source without running it (torch-free).

benchmarks.problems finds a problem's configuration by running it: its integer constants, and the axes
among them (the constants whose change moves an input's shape). A problem that cannot run where the
importer runs (it imports `transformers` or `einops`, or calls `.item()` on a meta tensor) still has
baseline timings upstream, measured at the configuration its source states. This module reads that
configuration from the source as written, by the loader's own rule for a constant (a public module-level
name whose value is exactly an int), never by a guess:

- a constant's value must be integer arithmetic over literals and constants defined before it
  (``dim = 4096 * 2``, ``hidden = dim // heads``); any other module-level assignment (a string, a call,
  ``config.vocab_size``) is not a constant, as it would not be an int the loader could read without
  running code;
- a constant assigned inside a top-level ``if``/``for``/``while``/``with``/``try`` has a value that depends
  on code: the configuration cannot be read, and the importer says so instead of picking one branch;
- a file that defines no module-level ``get_inputs`` is not a problem whose configuration can be read;
- the bindings are every constant read (without running the problem its axes cannot be told apart from
  its other constants, so all of them describe the configuration), and the dtype is torch's default
  (fp32, what the tracer also records when no input is floating point) unless module-level code or
  ``get_inputs`` names another one, in which case the configuration cannot be read.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

# The names module-level code or get_inputs may use to make the inputs' dtype other than torch's default.
_DTYPE_NAMES = re.compile(r"(float16|half|bfloat16|float64|double|float8\w*|complex\w*|set_default_dtype|set_default_tensor_type)")
# A binding stays a plausible size: 2**62 is far past any tensor, and a bigger literal is not one.
MAX_VALUE = 2**62
_OPERATORS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}


class UnreadableConfiguration(Exception):
    """The source does not state its configuration in a form that can be read without running it."""


@dataclass(frozen=True)
class StaticConfiguration:
    bindings: dict[str, int]  # every integer constant, in definition order
    dtype: str  # "fp32": torch's default, the source naming no other


class _NotInt(Exception):
    """An expression that is not integer arithmetic over literals and known constants."""


def _value(node: ast.expr, known: dict[str, int]) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        value = node.value
    elif isinstance(node, ast.Name) and node.id in known:
        value = known[node.id]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _value(node.operand, known)
        value = -inner if isinstance(node.op, ast.USub) else inner
    elif isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _value(node.left, known), _value(node.right, known)
        if isinstance(node.op, ast.Pow) and (right < 0 or right > 64 or abs(left) > MAX_VALUE):
            raise _NotInt()
        if isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= right <= 64:
            raise _NotInt()
        try:
            value = _OPERATORS[type(node.op)](left, right)
        except ZeroDivisionError:
            raise _NotInt() from None
    else:
        raise _NotInt()
    if abs(value) > MAX_VALUE:
        raise _NotInt()
    return value


def _names_a_dtype(node: ast.AST) -> str | None:
    """The first dtype the code names (``dtype=…``, ``.half()``, ``torch.float16``, ``set_default_dtype``), or None."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.keyword) and sub.arg == "dtype":
            return "dtype="
        name = sub.attr if isinstance(sub, ast.Attribute) else sub.id if isinstance(sub, ast.Name) else None
        if name is not None and _DTYPE_NAMES.fullmatch(name):
            return name
    return None


def _stored_names(node: ast.AST) -> set[str]:
    """Module-level names a compound statement assigns (not those inside the functions or classes it defines)."""
    names: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Store):
            names.add(current.id)
        elif isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(current.name)
            continue
        stack.extend(ast.iter_child_nodes(current))
    return names


def _assignments(node: ast.stmt) -> list[tuple[str, ast.expr | None]]:
    """(name, value) of a simple module-level assignment; value None when the name is bound to something
    that cannot be split out (``a, b = f()``, ``x += 1`` on an unknown, ``import x``)."""
    if isinstance(node, ast.Assign):
        out: list[tuple[str, ast.expr | None]] = []
        for target in node.targets:
            if isinstance(target, ast.Name):
                out.append((target.id, node.value))
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(target.elts) == len(node.value.elts):
                for element, value in zip(target.elts, node.value.elts):
                    out.extend((name, value if isinstance(element, ast.Name) else None) for name in _stored_names(element))
            else:
                out.extend((name, None) for name in _stored_names(target))
        return out
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [(node.target.id, node.value)] if node.value is not None else []
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return [(node.target.id, ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value))]
    return [(name, None) for name in _stored_names(node)]


def static_configuration(source: str) -> StaticConfiguration:
    """The configuration a problem's source states, read without running it (see the module's rule).
    Raises UnreadableConfiguration with the reason when it cannot be read that way."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise UnreadableConfiguration(f"the source does not parse: {type(exc).__name__}") from None
    constants: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.Match)):
            conditional = sorted(n for n in _stored_names(node) if not n.startswith("_"))
            if conditional:
                raise UnreadableConfiguration(
                    f"{', '.join(conditional[:3])} {'is' if len(conditional) == 1 else 'are'} assigned under a "
                    f"line-{node.lineno} {type(node).__name__.lower()} statement: its value depends on running code"
                )
            continue
        # All right-hand sides first, against the constants as they were (``a, b = b, a``; ``a += 5``).
        evaluated: list[tuple[str, int | None]] = []
        for name, value in _assignments(node):
            try:
                evaluated.append((name, None if value is None else _value(value, constants)))
            except _NotInt:  # a string, a call, an attribute: not an int constant the loader could read unrun
                evaluated.append((name, None))
        for name, number in evaluated:
            constants.pop(name, None)  # rebound: the last assignment is what the module holds
            if number is not None and not name.startswith("_"):
                constants[name] = number
    # A problem file defines get_inputs (the contract of KernelBench's format): without it there are no inputs
    # whose configuration the constants could state.
    if not any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "get_inputs" for node in tree.body):
        raise UnreadableConfiguration("it defines no get_inputs() at module level")
    # Module-level code and get_inputs, as syntax (a comment saying "double the channels" is not a dtype).
    named = next((found for node in tree.body
                  if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom))
                  or (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "get_inputs")
                  if (found := _names_a_dtype(node)) is not None), None)
    if named is not None:
        raise UnreadableConfiguration(
            f"its inputs' dtype is set in code ({named!r} at module level or in get_inputs), which is read only by running it"
        )
    return StaticConfiguration(bindings=constants, dtype="fp32")
