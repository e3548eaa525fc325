"""benchmarks/fleet_gpu_check.py and its candidates: the argument handling, the table it prints, and the
candidates' honesty (the reference's weights under the harness's seed, the reference's output); on a CUDA
machine, the CUDA-graph replay against the reference and the whole check for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from benchmarks import fleet_gpu_check
from benchmarks.problems import SEED, seed_everything
from kernelindex.fleet.jobs import check_candidate_source

REPO = Path(__file__).resolve().parents[2]
REFERENCES = {
    "kernelbench-l3-p9-resnet18": REPO / "seeds" / "reference" / "resnet18.py",
    "kernelbench-l3-p12-vgg19": REPO / "seeds" / "reference" / "vgg19.py",
}
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _module(path: Path) -> types.ModuleType:
    module = types.ModuleType(path.stem)
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    return module


def _pair(slug: str, device: str) -> tuple[torch.nn.Module, torch.nn.Module, list[torch.Tensor]]:
    """Model and ModelNew as the harness builds them (the same seed before each), and a batch-1 input."""
    reference = _module(REFERENCES[slug])
    candidate = _module(fleet_gpu_check.CANDIDATES[slug][0])
    init = reference.get_init_inputs()
    seed_everything(SEED)
    model = reference.Model(*init).to(device)
    seed_everything(SEED)
    new = candidate.ModelNew(*init).to(device)
    seed_everything(SEED + 1)
    inputs = [torch.randn(1, 3, 224, 224, device=device)]
    return model, new, inputs


def test_every_default_workload_has_a_candidate_the_fleet_accepts():
    assert set(fleet_gpu_check.CANDIDATES) == set(REFERENCES)
    for path, title in fleet_gpu_check.CANDIDATES.values():
        check_candidate_source(path.read_text(encoding="utf-8"), path.name)  # raises when it defines no ModelNew
        assert title


@pytest.mark.parametrize("slug", sorted(REFERENCES))
def test_a_candidate_holds_the_references_weights_and_computes_its_output(slug):
    model, new, inputs = _pair(slug, "cpu")
    expected = {k: v for k, v in model.state_dict().items()}
    got = new.state_dict()
    assert list(got) == list(expected)
    assert all(torch.equal(got[k], expected[k]) for k in expected)
    with torch.no_grad():
        # Each from its own copy: ReLU(inplace=True) must not be a way to share work.
        assert torch.allclose(new(inputs[0].clone()), model(inputs[0].clone()), atol=1e-4, rtol=1e-4)


def test_arguments_default_per_device_and_refuse_mismatches():
    cpu = fleet_gpu_check.parse_args(["--device", "cpu", "--workload", "kernelbench-l3-p9-resnet18", "--out", "x"])
    assert (cpu.hardware, cpu.impl, cpu.workload, cpu.timing_budget) == ("cpu", ["torch_eager"], ["kernelbench-l3-p9-resnet18"], 5.0)
    gpu = fleet_gpu_check.parse_args([])
    assert gpu.hardware is None and gpu.impl == ["torch_eager", "torch_compile_inductor"]
    assert gpu.workload == list(fleet_gpu_check.CANDIDATES) and gpu.timing_budget is None
    for bad in (["--device", "cpu", "--hardware", "NVIDIA H200"], ["--hardware", "cpu"], ["--workload", "nope"],
                ["--budget-s", "0"]):
        with pytest.raises(SystemExit) as refused:
            fleet_gpu_check.parse_args(bad)
        assert refused.value.code == 2, bad


def test_a_row_states_the_speedup_over_the_eager_run_of_the_same_job():
    job = {"databaseId": 7, "state": "PASSED", "attempts": 1, "durationS": 12.5, "reason": None,
           "implementationSlug": "submitted-abc", "workload": {"slug": "kernelbench-l3-p9-resnet18"},
           "run": {"databaseId": 11, "meanMs": 0.5, "ciHalfWidthMs": 0.004, "numTrials": 120, "trustLevel": "VERIFIED"},
           "baselineRun": {"databaseId": 10, "meanMs": 1.5}}
    row = fleet_gpu_check.table_row(job)
    assert row["speedup_vs_eager"] == pytest.approx(3.0) and row["trust"] == "VERIFIED"
    eager = fleet_gpu_check.table_row({**job, "implementationSlug": "torch_eager", "baselineRun": None})
    assert eager["speedup_vs_eager"] is None and eager["baseline_mean_ms"] is None
    failed = fleet_gpu_check.table_row({**job, "state": "FAILED", "run": None, "reason": "incorrect output"})
    assert failed["mean_ms"] is None and failed["speedup_vs_eager"] is None


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("slug", sorted(REFERENCES))
def test_the_cuda_graph_replay_matches_the_reference_at_the_fp32_tolerance(slug):
    model, new, inputs = _pair(slug, "cuda")
    with torch.no_grad():
        first = new(inputs[0].clone())
        again = new(inputs[0].clone() * 2)  # a replay on new data, not the captured call's output
        torch.cuda.synchronize()
        assert torch.allclose(first, model(inputs[0].clone()), atol=1e-4, rtol=1e-4)
        assert torch.allclose(again, model(inputs[0].clone() * 2), atol=1e-4, rtol=1e-4)
    assert first.data_ptr() != again.data_ptr()


@pytest.mark.gpu
@needs_cuda
def test_the_fleet_check_measures_every_job_on_this_gpu(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
    done = subprocess.run([sys.executable, "-m", "benchmarks.fleet_gpu_check", "--out", str(tmp_path)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    summary = json.loads((tmp_path / "fleet_summary.json").read_text())
    assert done.returncode == 0, done.stdout[-4000:]
    assert len(summary["jobs"]) == 6 and all(r["state"] == "PASSED" and r["trust"] == "VERIFIED" for r in summary["jobs"])
