"""Write each seed workload's meta-device analysis (bytes, parameters, FLOPs by class) into
seeds/workloads.json, so `kernelindex seed` never needs torch. A test checks the stored analysis
against a fresh trace. Needs torch (the CPU build is enough).

    python -m seeds.trace        (from the repository root; or python seeds/trace.py)
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelindex.ingest.problem_trace import trace_problem

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


def main() -> None:
    path = SEEDS / "workloads.json"
    data = json.loads(path.read_text())
    for entry in data["workloads"]:
        source = (SEEDS / entry["reference_file"]).read_text()
        analysis = trace_problem(source, entry["source_filename"]).to_json()
        analysis.pop("torch_version", None)  # keeps the seed stable across torch releases
        entry["analysis"] = analysis
        print(f"{entry['slug']}: {analysis['param_count']:,} parameters, {analysis['flops']:,} FLOPs")
    path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
