"""The researcher examples run against a live server."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(script: str, *args: str) -> str:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, check=True, timeout=60,
        cwd=EXAMPLES,
    ).stdout


def test_h100_records_csv(live_server):
    rows = list(csv.DictReader(io.StringIO(_run("h100_records_csv.py", "--api", live_server))))
    assert sorted((r["workload"], float(r["latency_ms"])) for r in rows) == [
        ("kernelbench-l3-p12-vgg19", 2.43), ("kernelbench-l3-p12-vgg19", 3.64),
        ("kernelbench-l3-p9-resnet18", 1.39), ("kernelbench-l3-p9-resnet18", 1.47),
    ]


def test_compare_implementations(live_server):
    out = _run("compare_implementations.py", "torch_eager", "torch_compile_inductor", "--api", live_server)
    lines = [line for line in out.splitlines()[1:] if line.strip()]
    assert len(lines) == 4  # two workloads × two environments
    vgg_sxm = next(line for line in lines if "vgg19" in line and "Modal" in line)
    assert "3.880ms" in vgg_sxm and "2.430ms" in vgg_sxm and "1.60×" in vgg_sxm
