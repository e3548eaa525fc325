"""What a submission must be before anything of it is stored: its module, its file name, title, licence,
source URL and configuration, each refused with the field it is about (FleetInputError's key) and a
message that says what to send instead.

The module is parsed, never run, and parsed in a child process with limits: Python's parser has none
of its own that a caller can set. A source of 100,000 nested unary minus signs or 80,000 `not`s made
ast.parse raise MemoryError (its stack ran out), a 150,000-term `1+…` or `.b` chain RecursionError (while
building the tree), and 512 KiB of `f(g(),g(),…)` took 8 s of the API server's only event loop. The
child (PARSER) reads the source from its stdin under an address-space and CPU limit, walks the tree
without recursion, and answers with the module's top-level names or the reason it refuses: not Python
(with the line), nested too deeply or too large to parse, over MAX_AST_NODES nodes or MAX_AST_DEPTH
levels. It is killed after PARSE_TIMEOUT_S. Bounds, in order: MAX_SOURCE_BYTES (before anything is
started), then time, memory, depth and node count in the child.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from typing import Any

from kernelindex.rules.deployability import is_known_licence
from kernelindex.rules.names import shown_text_problem

MAX_SOURCE_BYTES = 512 * 1024
# The largest of 2,740 Python files measured (KernelBench, our fixtures and code, torch's own) had
# 162,000 nodes in 900 KB and the deepest 94 levels; a candidate module is far smaller and flatter.
MAX_AST_NODES = 200_000
MAX_AST_DEPTH = 200
PARSE_TIMEOUT_S = 10.0
PARSE_MEMORY_BYTES = 1024 * 1024 * 1024
MAX_TITLE_CHARS = 200
MAX_LICENCE_CHARS = 200
MAX_URL_CHARS = 2048
# A file name as given may be a path (its parts are dropped); the name itself is one a file system takes.
MAX_PATH_CHARS = 4096
MAX_FILENAME_CHARS = 255
MAX_BINDING_NAME_CHARS = 64
MAX_REFERENCE_CHARS = 200
_PATH_PARTS = re.compile(r"[/\\]")


class FleetInputError(ValueError):
    """A request the fleet refuses: ``key`` names the field, the message says why and what to do."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


# --- the module --------------------------------------------------------------------------------------

# Run as `python -I -S -c PARSER NODES DEPTH MEMORY CPU_S`, the source (UTF-8, surrogates passed) on stdin;
# prints one JSON object. Only the standard library, no site-packages: it starts in a few milliseconds.
PARSER = r"""
import ast, json, resource, sys
nodes_cap, depth_cap, memory, cpu_s = (int(a) for a in sys.argv[1:5])
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
source = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
def answer(**fields):
    sys.stdout.write(json.dumps(fields))
    sys.exit(0)
try:
    tree = ast.parse(source)
except SyntaxError as exc:
    answer(refused="syntax", line=exc.lineno, reason=str(exc.msg))
except (MemoryError, RecursionError) as exc:
    answer(refused="nested", reason=type(exc).__name__)
except ValueError as exc:
    answer(refused="syntax", line=None, reason=str(exc))
count, stack = 0, [(tree, 1)]
while stack:
    node, depth = stack.pop()
    count += 1
    if count > nodes_cap:
        answer(refused="nodes")
    if depth > depth_cap:
        answer(refused="depth", line=getattr(node, "lineno", None))
    stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
names += [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
names += [a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names]
answer(names=sorted(set(names)), nodes=count)
"""


def _parser_command() -> list[str]:
    cpu_s = max(1, int(PARSE_TIMEOUT_S))
    return [sys.executable, "-I", "-S", "-c", PARSER, str(MAX_AST_NODES), str(MAX_AST_DEPTH), str(PARSE_MEMORY_BYTES),
            str(cpu_s)]


def _source_bytes(source: str, filename: str) -> bytes:
    data = source.encode("utf-8", "surrogatepass")
    if len(data) > MAX_SOURCE_BYTES:
        raise FleetInputError("file", f"{filename}: {len(data):,} bytes; a submission is at most {MAX_SOURCE_BYTES:,}")
    if b"\x00" in data:
        raise FleetInputError("file", f"{filename}: holds a NUL character; a submission is Python source text")
    return data


def _judge(filename: str, returncode: int | None, out: bytes) -> None:
    """FleetInputError("file", …) unless the child's answer says the module parsed within the bounds and
    defines ModelNew. `returncode` None: it ran past PARSE_TIMEOUT_S."""
    if returncode is None:
        raise FleetInputError("file", f"{filename}: took longer than {PARSE_TIMEOUT_S:g} s to parse; a submission "
                              "is a module of ordinary size and nesting")
    try:
        verdict: dict[str, Any] = json.loads(out) if returncode == 0 else {}
    except ValueError:
        verdict = {}
    refused = verdict.get("refused")
    if refused == "syntax":
        where = f", line {verdict['line']}" if verdict.get("line") else ""
        raise FleetInputError("file", f"{filename}{where}: not valid Python ({verdict.get('reason', 'syntax error')})")
    if refused == "nested":
        raise FleetInputError("file", f"{filename}: nested too deeply for Python's parser ({verdict.get('reason')}); "
                              "split long chains of operators, calls or attributes")
    if refused == "depth":
        where = f", line {verdict['line']}" if verdict.get("line") else ""
        raise FleetInputError("file", f"{filename}{where}: nested more than {MAX_AST_DEPTH} levels deep; "
                              "split long chains of operators, calls or attributes")
    if refused == "nodes":
        raise FleetInputError("file", f"{filename}: more than {MAX_AST_NODES:,} syntax nodes; a submission is a "
                              "module of ordinary size")
    if "names" not in verdict:
        # Killed by its memory or CPU limit, or it failed some other way: the source is what made it.
        raise FleetInputError("file", f"{filename}: could not be parsed within the limits "
                              f"({PARSE_MEMORY_BYTES // 2**20} MiB, {PARSE_TIMEOUT_S:g} s of CPU)")
    if "ModelNew" not in verdict["names"]:
        raise FleetInputError(
            "file", f"{filename}: defines no ModelNew at top level; a submission is a KernelBench candidate module "
            "(class ModelNew(nn.Module) with the reference Model's constructor arguments)"
        )


def check_candidate_source(source: str, filename: str) -> None:
    """The submitted module parses within the bounds and defines ``ModelNew`` at top level. Parsed only,
    never run, in a child process (see the module's text). Blocks while the child runs: from a coroutine,
    await check_candidate_source_async."""
    data = _source_bytes(source, filename)
    try:
        done = subprocess.run(_parser_command(), input=data, capture_output=True, timeout=PARSE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _judge(filename, None, b"")
        return
    _judge(filename, done.returncode, done.stdout)


async def check_candidate_source_async(source: str, filename: str) -> None:
    """check_candidate_source without blocking the event loop while the child parses."""
    data = _source_bytes(source, filename)
    process = await asyncio.create_subprocess_exec(
        *_parser_command(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    try:
        out, _ = await asyncio.wait_for(process.communicate(data), timeout=PARSE_TIMEOUT_S)
    except TimeoutError:
        _judge(filename, None, b"")
        return
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    _judge(filename, process.returncode, out)


# --- the fields ----------------------------------------------------------------------------------------


def checked_shown_text(text: str, key: str, noun: str, max_chars: int) -> str:
    """Text a page or a job line shows as given (a title, a file name, a licence, a cancel reason): at most
    ``max_chars`` characters, and none that would change how what follows it reads (control, bidi and
    escape characters: rules.names.shown_text_problem). FleetInputError names ``key``."""
    if len(text) > max_chars:
        raise FleetInputError(key, f"{noun} of {len(text):,} characters; at most {max_chars:,}")
    problem = shown_text_problem(text)
    if problem:
        raise FleetInputError(key, f"the {noun.removeprefix('a ').removeprefix('an ')} {problem}")
    return text


def shown_filename(filename: str) -> str:
    """The file name to store and show: its last path part (a name, never a path), checked."""
    if len(filename) > MAX_PATH_CHARS:
        raise FleetInputError("file", f"a file name of {len(filename):,} characters; at most {MAX_PATH_CHARS:,}")
    name = _PATH_PARTS.split(filename)[-1].strip()
    if name in ("", ".", ".."):
        raise FleetInputError("file", f"file name {filename[:60]!r} names no file: send the module's name, e.g. model_new.py")
    return checked_shown_text(name, "file", "a file name", MAX_FILENAME_CHARS)


def check_reference_length(value: str, key: str) -> None:
    """A workload slug or hardware name longer than any there is: refused before it is looked up, so that
    the refusal does not quote it back whole."""
    if len(value) > MAX_REFERENCE_CHARS:
        raise FleetInputError(key, f"a {key} name of {len(value):,} characters; none is longer than {MAX_REFERENCE_CHARS}")


def checked_title(title: str) -> str:
    """The title with its whitespace collapsed (a newline is a space), checked."""
    title = " ".join(title.split())
    if not title:
        raise FleetInputError("title", "a submission needs a title (what the implementation is, in a few words)")
    return checked_shown_text(title, "title", "title", MAX_TITLE_CHARS)


def checked_licence(licence: str | None) -> str | None:
    """An SPDX licence expression ('MIT', 'Apache-2.0 OR MIT', 'LicenseRef-…'), or None when none is stated."""
    if licence is None:
        return None
    text = licence.strip()
    if len(text) > MAX_LICENCE_CHARS:
        raise FleetInputError("licence", f"a licence of {len(text):,} characters; an SPDX expression is at most "
                              f"{MAX_LICENCE_CHARS} here")
    checked_shown_text(text, "licence", "a licence", MAX_LICENCE_CHARS)
    if not is_known_licence(text):
        raise FleetInputError("licence", f"licence {text[:60]!r} is not an SPDX licence expression (e.g. 'MIT', "
                              "'Apache-2.0 OR MIT', 'LicenseRef-my-terms'); leave it out when none is stated")
    return text


def checked_source_url(source_url: str | None) -> str | None:
    if source_url is None:
        return None
    if len(source_url) > MAX_URL_CHARS:
        raise FleetInputError("sourceUrl", f"a source URL of {len(source_url):,} characters; at most {MAX_URL_CHARS:,}")
    if shown_text_problem(source_url) or not re.match(r"^https?://\S+$", source_url):
        raise FleetInputError("sourceUrl", f"source URL {source_url[:60]!r} is not an http(s) URL")
    return source_url


def check_bindings(bindings: dict[str, Any]) -> dict[str, int]:
    """Names that are identifiers of at most MAX_BINDING_NAME_CHARS, values positive 32-bit integers;
    sorted by name."""
    out: dict[str, int] = {}
    for name, value in bindings.items():
        if len(name) > MAX_BINDING_NAME_CHARS:
            raise FleetInputError("bindings", f"a binding name of {len(name):,} characters; at most {MAX_BINDING_NAME_CHARS}")
        if not (name.isascii() and name.isidentifier()):
            raise FleetInputError("bindings", f"binding name {name[:40]!r} is not a Python identifier")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31:
            shown = repr(value) if isinstance(value, (bool, int, float)) else type(value).__name__
            raise FleetInputError("bindings", f"binding {name} must be a positive integer below 2**31, got {shown[:40]}")
        out[name] = value
    return dict(sorted(out.items()))


def bindable_axes(semantics: dict[str, Any] | None, canonical_bindings: dict[str, int] | None) -> set[str]:
    """The axes of a workload revision a configuration may bind: its variable axes, and the axes its
    canonical configuration binds (all a revision without traced semantics declares)."""
    axes = set(canonical_bindings or {})
    for axis in (semantics or {}).get("axes", []) or []:
        if isinstance(axis, dict) and axis.get("behaviour") == "variable" and isinstance(axis.get("name"), str):
            axes.add(axis["name"])
    return axes


def check_bindings_name_axes(bindings: dict[str, int], axes: set[str], workload: str) -> None:
    unknown = sorted(set(bindings) - axes)
    if unknown:
        known = ", ".join(sorted(axes)) if axes else "none: it is measured at its canonical configuration only"
        raise FleetInputError("bindings", f"{workload} has no axis {', '.join(unknown)[:80]}; its axes: {known}")
