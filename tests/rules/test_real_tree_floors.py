"""Floors are lower bounds on the real KernelBench tree (issue 26, point 5).

Every problem of levels 1–3 of ../shared/kernelbench is traced on the meta device (in process, as the
importer's tracer does: about 20 s), and every timed entry of results/timing/* is set against the
roofline floor on its own SKU. A passed run under its floor is a defect of the floor: under
headroom-v3 there must be none; headroom-v2's math (fp32 matmuls and attention at the FP32 peak, here
through protocol_math) had one per SKU, level 1 problem 97 (ScaledDotProductAttention). And no run of
the tree is held for beating a floor (plausibility-v2), the baselines for nothing at all.

Skipped cleanly when the shared tree or torch is absent.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernelindex.rules.headroom_v2 import roofline_floor
from kernelindex.rules.plausibility import BELOW_FLOOR, IMPLAUSIBLE_SPEEDUP, flags_for
from tests.rules.factories import baseline_impl, candidate_impl, environment, run, seed_catalogue

SHARED_KERNELBENCH = Path(__file__).resolve().parents[3] / "shared" / "kernelbench"
LEVELS = (1, 2, 3)
# headroom-v2's math, as a protocol could still state it: IEEE fp32 matmuls (attention included).
V2_MATH = {"matmul": "FP32"}

pytestmark = pytest.mark.skipif(
    not (SHARED_KERNELBENCH / "results" / "timing").is_dir(), reason="../shared/kernelbench is not present"
)


@dataclass(frozen=True)
class Entry:
    sku: str  # the catalogue's short name
    level: int
    filename: str
    config: str  # "torch", "torch_compile_inductor_default"
    mean_ms: float


@pytest.fixture(scope="module")
def tree() -> tuple[dict[tuple[int, str], dict], list[Entry], dict[str, object]]:
    """(analysis by (level, file) of every problem that traces, every passed timing entry, SKU by name)."""
    pytest.importorskip("torch")
    from kernelindex.ingest.kernelbench import discover_timing_files, level_number
    from kernelindex.ingest.problem_trace import ProblemTraceError, trace_problem

    analyses: dict[tuple[int, str], dict] = {}
    failed: list[tuple[int, str]] = []
    for level in LEVELS:
        for path in sorted((SHARED_KERNELBENCH / "KernelBench" / f"level{level}").glob("*.py")):
            try:
                analyses[(level, path.name)] = trace_problem(path.read_text(encoding="utf-8"), path.name).to_json()
            except ProblemTraceError:  # no analysis, no floor (issue 26, point 3)
                failed.append((level, path.name))
    # Every problem of levels 1–3 traces, so all 250 have a floor: the Mamba2 ones with einops (the torch extra),
    # the Swin ones reading their stochastic depths from CPU twins (problem_trace.SmallValues).
    assert failed == [] and len(analyses) == 250, failed
    by_driver_name = {name: hw for hw in seed_catalogue() for name in hw.driver_product_names}
    entries: list[Entry] = []
    for path, _folder, config in discover_timing_files(SHARED_KERNELBENCH):
        for level_name, problems in json.loads(path.read_text(encoding="utf-8")).items():
            level = level_number(level_name)
            for filename, entry in problems.items():
                if entry is None or level not in LEVELS:
                    continue  # null: the source timed nothing there (a failed run has no latency to set)
                hw = by_driver_name[entry["hardware"]]
                entries.append(Entry(hw.short_name, level, filename, config, float(entry["mean"])))
    skus = {hw.short_name: hw for hw in by_driver_name.values()}
    return analyses, entries, skus


def _beaten(tree, protocol_math=None) -> dict[str, set[tuple[int, str]]]:
    """Per SKU, the problems whose floor a passed run beats."""
    analyses, entries, skus = tree
    beaten: dict[str, set[tuple[int, str]]] = defaultdict(set)
    for e in entries:
        analysis = analyses.get((e.level, e.filename))
        if analysis is None:
            continue
        floor = roofline_floor(analysis, skus[e.sku], e.mean_ms, protocol_math=protocol_math)
        assert (floor.defect is not None) == floor.below_floor  # a beaten floor always says so
        if floor.below_floor:
            beaten[e.sku].add((e.level, e.filename))
    return dict(beaten)


def test_every_timed_problem_on_every_sku_has_a_floor(tree):
    analyses, entries, skus = tree
    floored: dict[str, int] = defaultdict(int)
    for e in entries:
        analysis = analyses.get((e.level, e.filename))
        if analysis is not None:
            assert roofline_floor(analysis, skus[e.sku]).floor_ns is not None
            floored[e.sku] += 1
    # Both SKUs the tree has timings for, each with the entries of every traced problem (eager and inductor).
    assert set(floored) == {"H100 SXM", "H100 PCIe"}
    assert all(n > 450 for n in floored.values()), floored


def test_no_floor_is_beaten_by_a_passed_run(tree):
    assert _beaten(tree) == {}


def test_headroom_v2_math_had_one_beaten_floor_per_sku(tree):
    """Before: the FP32-peak attention floor (16.4 ms on the H100 SXM) under the 8.45 ms eager run."""
    problem_97 = {(1, "97_ScaledDotProductAttention.py")}
    assert _beaten(tree, V2_MATH) == {"H100 SXM": problem_97, "H100 PCIe": problem_97}


def test_no_run_of_the_tree_is_held_for_its_floor_and_no_baseline_at_all(tree):
    analyses, entries, skus = tree
    baselines = {(e.sku, e.level, e.filename): e for e in entries if e.config == "torch"}
    held: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for i, e in enumerate(entries, start=1):
        analysis = analyses.get((e.level, e.filename))
        hw = skus[e.sku]
        impl = baseline_impl() if e.config == "torch" else candidate_impl()
        facts = run(i, e.mean_ms, impl=impl, env=environment(hw=hw))
        base = baselines.get((e.sku, e.level, e.filename))
        base_facts = run(-i, base.mean_ms, impl=baseline_impl(), env=environment(hw=hw)) if base else None
        floor = roofline_floor(analysis, hw).floor_ns if analysis else None
        codes = [f.code for f in flags_for(facts, base_facts, floor)]
        assert BELOW_FLOOR not in codes, (e, floor)
        if e.config == "torch":
            assert codes == []
        if codes:
            assert codes == [IMPLAUSIBLE_SPEEDUP], (e, codes)
            held[e.sku].append((e.level, e.filename, e.config))
    # Level 1 problem 40 (LayerNorm): inductor 17.65× faster than eager on the H100 SXM, held for review.
    assert (1, "40_LayerNorm.py", "torch_compile_inductor_default") in held["H100 SXM"]
