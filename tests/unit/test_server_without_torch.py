"""The API server and the CLI start without importing torch (it is for benchmarks and ingest only)."""

import subprocess
import sys


def test_server_and_cli_do_not_import_torch():
    code = (
        "import sys\n"
        "from kernelindex.cli.main import build_parser\n"
        "from kernelindex.web.app import create_app\n"
        "build_parser(); create_app(database_url='postgresql://u@/db?host=/nowhere')\n"
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))[:5]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
