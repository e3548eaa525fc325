"""The benchmarks package must run on a GPU machine that has torch and nothing else."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHECK = """
import sys
import benchmarks.sweep, benchmarks.__main__, benchmarks.overhead, benchmarks.gpu_check
import benchmarks.environment, benchmarks.problems, benchmarks.records, benchmarks.runners
import benchmarks.stats, benchmarks.timing
loaded = [name for name in ("kernelindex", "sqlalchemy", "strawberry", "jsonschema")
          if name in sys.modules]
assert not loaded, loaded
"""


def test_package_imports_with_torch_alone():
    completed = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
