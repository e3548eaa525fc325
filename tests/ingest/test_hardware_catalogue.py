"""The hardware catalogue (seeds/hardware.json): every accelerator the sources name is in it, with its
vendor, architecture and named datasheet, and resolves through the ingest's hardware index; the
catalogue is consistent as a whole; headroom-v1 gives a floor on every SKU with a datasheet.

The source files are read from ../shared/sources/ when present (those tests skip without them); the
names they use are also pinned below, so the mapping is checked everywhere."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernelindex.db.engine import in_own_transaction
from kernelindex.ingest.errors import IngestAborted
from kernelindex.ingest.hardware import catalogue_problems, hardware_problem
from kernelindex.ingest.resolve import HardwareIndex, HardwareRefusal, load_hardware_index
from kernelindex.ingest.seed import SEEDS_DIR, load_hardware_catalogue
from kernelindex.rules.headroom_v1 import declared_tensor_bytes, headroom_v1
from tests.rules.factories import seed_catalogue

SHARED_SOURCES = Path(__file__).resolve().parents[3] / "shared" / "sources"
EXPORTS = SHARED_SOURCES / "kernelindex-export"
LIGER = SHARED_SOURCES / "liger-kernel"

ENTRIES: list[dict[str, Any]] = json.loads((SEEDS_DIR / "hardware.json").read_text(encoding="utf-8"))["hardware"]
BY_SKU = {e["sku"]: e for e in ENTRIES}

# Every accelerator name the shared sources use, and the SKU it must resolve to.
NAMES_IN_SOURCES = {
    # Liger-Kernel's all_benchmark_data.csv, gpu_name (torch.cuda.get_device_name)
    "NVIDIA H100 80GB HBM3": "NVIDIA H100 SXM5 80GB",
    "NVIDIA H100 PCIe": "NVIDIA H100 PCIe 80GB",
    "NVIDIA A100-SXM4-80GB": "NVIDIA A100 SXM4 80GB",
    "NVIDIA GeForce RTX 3090": "NVIDIA GeForce RTX 3090 24GB",
    "NVIDIA GeForce RTX 4090": "NVIDIA GeForce RTX 4090 24GB",
    "NVIDIA B200": "NVIDIA B200 180GB",
    # kernelindex.com's catalogue exports: benchmark_runs.hardwareModel, the environment's product and
    # the products an implementation was tested on
    "NVIDIA GB200": "NVIDIA GB200 186GB",
    "NVIDIA L4": "NVIDIA L4 24GB",
    "NVIDIA H200": "NVIDIA H200 SXM 141GB",
    "NVIDIA H20": "NVIDIA H20",
    "AMD Instinct MI300X": "AMD Instinct MI300X 192GB",
    "AMD Instinct MI355X": "AMD Instinct MI355X 288GB",
    # GPU MODE KernelBot names only the model: its variant is not guessed
    "NVIDIA H100": "NVIDIA H100 (variant not stated)",
    "NVIDIA A100": "NVIDIA A100 (variant not stated)",
}
# FlashInfer-Bench lists the host CPU among the products it tested on: not an accelerator.
NOT_ACCELERATORS = {"CPU"}

# The issue's list: the SKUs the catalogue must hold at least, with vendor and architecture.
REQUIRED = {
    "NVIDIA B200 180GB": ("NVIDIA", "Blackwell"),
    "NVIDIA GB200 186GB": ("NVIDIA", "Blackwell"),
    "NVIDIA H100 SXM5 80GB": ("NVIDIA", "Hopper"),
    "NVIDIA H100 PCIe 80GB": ("NVIDIA", "Hopper"),
    "NVIDIA H100 NVL 94GB": ("NVIDIA", "Hopper"),
    "NVIDIA A100 SXM4 80GB": ("NVIDIA", "Ampere"),
    "NVIDIA L4 24GB": ("NVIDIA", "Ada Lovelace"),
    "NVIDIA GeForce RTX 3090 24GB": ("NVIDIA", "Ampere"),
    "NVIDIA GeForce RTX 4090 24GB": ("NVIDIA", "Ada Lovelace"),
    "AMD Instinct MI300X 192GB": ("AMD", "CDNA 3"),
    "AMD Instinct MI355X 288GB": ("AMD", "CDNA 4"),
}

# The export states each run's architecture as a compiler target; the catalogue names it.
TARGET_ARCHITECTURES = {"sm_80": "Ampere", "sm_89": "Ada Lovelace", "sm_90": "Hopper", "sm_100": "Blackwell",
                        "gfx942": "CDNA 3", "gfx950": "CDNA 4"}

FIGURES = ("memory_gb", "dram_bandwidth_gbps", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops", "l2_mb",
           "sm_count", "tdp_w")


def seed_index() -> HardwareIndex:
    return HardwareIndex((i, e["sku"], e["driver_product_names"]) for i, e in enumerate(ENTRIES, start=1))


def resolve(index: HardwareIndex, name: str) -> str:
    found = index.match({"product_name": name})
    assert not isinstance(found, HardwareRefusal), f"{name!r}: {found}"
    return found[1]


# -- the catalogue itself ---------------------------------------------------------------------------


def test_every_entry_passes_the_ingest_checks_and_the_whole_is_consistent():
    assert [(e["sku"], hardware_problem(e)) for e in ENTRIES if hardware_problem(e)] == []
    assert catalogue_problems(ENTRIES) == []


def test_the_issues_skus_are_there_with_vendor_and_architecture():
    for sku, (vendor, architecture) in REQUIRED.items():
        assert sku in BY_SKU, f"{sku} missing from seeds/hardware.json"
        assert (BY_SKU[sku]["vendor"], BY_SKU[sku]["architecture"]) == (vendor, architecture), sku
    assert {e["vendor"] for e in ENTRIES} >= {"NVIDIA", "AMD"}


def test_every_entry_names_its_source_and_every_figure_is_positive():
    for e in ENTRIES:
        assert e["vendor"] and e["architecture"] and e["family"] and e["short_name"], e["sku"]
        assert e["datasheet_source"], f"{e['sku']}: no datasheet named"
        figures = {k: e[k] for k in FIGURES if e[k] is not None}
        assert all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in figures.values()), e["sku"]
        if figures:  # figures come with the link to the datasheet they are from
            assert str(e["datasheet_url"]).startswith("https://"), e["sku"]
        if e["dram_bandwidth_gbps"] is not None:
            # With a datasheet: its memory and its FP32 and FP16 peaks, the figures every floor needs.
            assert e["memory_gb"] and e["fp32_tflops"] and e["fp16_tflops"], e["sku"]
    # A part without a datasheet (the H20) has no figure at all, rather than some from elsewhere.
    h20 = BY_SKU["NVIDIA H20"]
    assert all(h20[k] is None for k in FIGURES) and "no datasheet" in h20["datasheet_source"]


def test_short_names_and_skus_are_unique():
    assert len({e["short_name"] for e in ENTRIES}) == len(ENTRIES)
    assert len({e["sku"] for e in ENTRIES}) == len(ENTRIES)


def test_the_amd_parts_carry_their_datasheet_figures():
    mi300x, mi355x = BY_SKU["AMD Instinct MI300X 192GB"], BY_SKU["AMD Instinct MI355X 288GB"]
    assert (mi300x["dram_bandwidth_gbps"], mi300x["fp32_tflops"], mi300x["fp16_tflops"], mi300x["memory_gb"]) == (5300, 163.4, 1307.4, 192)
    assert (mi355x["dram_bandwidth_gbps"], mi355x["fp32_tflops"], mi355x["fp16_tflops"], mi355x["memory_gb"]) == (8000, 157.3, 2516.6, 288)
    assert mi355x["tf32_tflops"] is None  # CDNA 4 has no TF32 matrix instructions


def test_catalogue_problems_finds_a_shared_name_a_faster_member_and_a_missing_reference():
    base = {"vendor": "X", "architecture": "Y", "driver_product_names": [], "dram_bandwidth_gbps": 1000}
    twice = [dict(base, sku="A 1", family="A", reference_for_family=True, driver_product_names=["Same GPU"]),
             dict(base, sku="B 1", family="B", reference_for_family=True, driver_product_names=["same  gpu"])]
    assert catalogue_problems(twice) == [("B 1", "driver_product_names", "'same  gpu' already names 'A 1': one name, one SKU")]
    faster = [dict(base, sku="A 1", family="A", reference_for_family=True),
              dict(base, sku="A 2", family="A", reference_for_family=False, dram_bandwidth_gbps=1200)]
    ((sku, key, why),) = catalogue_problems(faster)
    assert (sku, key) == ("A 2", "dram_bandwidth_gbps") and "above its family reference 'A 1'" in why
    no_reference = [dict(base, sku="A 1", family="A", reference_for_family=False)]
    ((_, key, why),) = catalogue_problems(no_reference)
    assert key == "reference_for_family" and "has none" in why
    blind_reference = [dict(base, sku="A 1", family="A", reference_for_family=True, dram_bandwidth_gbps=None),
                       dict(base, sku="A 2", family="A", reference_for_family=False)]
    ((sku, key, why),) = catalogue_problems(blind_reference)
    assert (sku, key) == ("A 1", "reference_for_family") and "no DRAM bandwidth while a member has one" in why


async def test_the_seed_refuses_a_catalogue_where_one_name_names_two_skus(db_url, tmp_path):
    clash = [dict(ENTRIES[0]), dict(ENTRIES[1], driver_product_names=["nvidia h100 80gb hbm3"])]
    path = tmp_path / "hardware.json"
    path.write_text(json.dumps({"hardware": clash}), encoding="utf-8")
    with pytest.raises(IngestAborted) as refused:
        await in_own_transaction(db_url, lambda session: load_hardware_catalogue(session, path))
    (problem,) = refused.value.problems
    assert (problem.file, problem.where, problem.key) == (str(path), "NVIDIA H100 PCIe 80GB", "driver_product_names")
    assert problem.reason == "'nvidia h100 80gb hbm3' already names 'NVIDIA H100 SXM5 80GB': one name, one SKU"


# -- names resolve --------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "sku"), sorted(NAMES_IN_SOURCES.items()))
def test_each_name_the_sources_use_resolves_to_its_sku(name, sku):
    index = seed_index()
    assert resolve(index, name) == sku
    assert resolve(index, f"  {name.lower()} ") == sku  # names-v1: case and spacing do not matter
    assert BY_SKU[sku]["vendor"].casefold() == name.split()[0].casefold()


def test_an_unnamed_variant_is_not_guessed():
    """'NVIDIA H100' is neither the SXM nor the PCIe nor the NVL: it is its family's 'variant not stated'
    entry, which claims no figure the three do not share and leaves the floor to the family's reference."""
    h100 = BY_SKU["NVIDIA H100 (variant not stated)"]
    assert h100["family"] == "NVIDIA H100" and h100["reference_for_family"] is False
    assert all(h100[k] is None for k in FIGURES)
    a100 = BY_SKU["NVIDIA A100 (variant not stated)"]
    shared = {k for k in FIGURES if len({e[k] for e in ENTRIES if e["family"] == "NVIDIA A100"}) == 1}
    assert {k for k in FIGURES if a100[k] is not None} == shared  # exactly what every A100 has in common


def _liger_names() -> set[str]:
    files = sorted(LIGER.glob("**/all_benchmark_data*.csv")) if LIGER.is_dir() else []
    if not files:
        pytest.skip(f"no Liger-Kernel benchmark CSV under {LIGER}")
    names = set()
    for path in files:
        with path.open(newline="", encoding="utf-8") as handle:
            names |= {row["gpu_name"] for row in csv.DictReader(handle)}
    return names


def _zst_lines(path: Path) -> Iterator[str]:
    try:
        import zstandard
    except ImportError:
        zstd = shutil.which("zstd")
        if zstd is None:
            pytest.skip("reading a .jsonl.zst needs the zstandard module or the zstd command")
        yield from subprocess.run([zstd, "-dc", str(path)], capture_output=True, check=True).stdout.decode().splitlines()
        return
    with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
        yield from io.TextIOWrapper(reader, encoding="utf-8")


def _export_hardware() -> tuple[set[str], set[tuple[str, str, str]]]:
    """(every product name an export uses, every (vendor, model, architecture) a run states)."""
    files = sorted(EXPORTS.glob("*.jsonl*")) if EXPORTS.is_dir() else []
    if not files:
        pytest.skip(f"no kernelindex.com catalogue export under {EXPORTS}")
    names: set[str] = set()
    runs: set[tuple[str, str, str]] = set()
    for path in files:
        lines = _zst_lines(path) if path.suffix == ".zst" else iter(path.read_text(encoding="utf-8").splitlines())
        for line in lines:
            if '"benchmark_runs"' not in line[:40] and '"implementations"' not in line[:40]:
                continue
            record = json.loads(line)
            row = record["row"]
            if record["table"] == "benchmark_runs":
                runs.add((row["hardwareVendor"], row["hardwareModel"], row["hardwareArchitecture"]))
                names.add(row["hardwareModel"])
                names.add(row["manifest"]["environment"]["spec"]["hardware"]["product"])
            elif record["table"] == "implementations":
                names |= set(row["manifest"]["spec"].get("support", {}).get("productsTested") or [])
    return names, runs


def test_every_gpu_in_the_liger_files_resolves():
    names = _liger_names()
    assert names <= set(NAMES_IN_SOURCES), f"not pinned above: {sorted(names - set(NAMES_IN_SOURCES))}"
    index = seed_index()
    assert {n: resolve(index, n) for n in names} == {n: NAMES_IN_SOURCES[n] for n in names}


def test_every_accelerator_in_the_exports_resolves_and_agrees_with_the_run():
    names, runs = _export_hardware()
    accelerators = names - NOT_ACCELERATORS
    assert accelerators <= set(NAMES_IN_SOURCES), f"not pinned above: {sorted(accelerators - set(NAMES_IN_SOURCES))}"
    assert {"NVIDIA B200", "NVIDIA GB200", "AMD Instinct MI300X", "AMD Instinct MI355X"} <= accelerators
    index = seed_index()
    for vendor, model, architecture in runs:
        entry = BY_SKU[resolve(index, model)]
        assert entry["vendor"].casefold() == vendor.casefold(), model
        if architecture != "unknown":  # FlashInfer-Bench states none
            assert entry["architecture"] == TARGET_ARCHITECTURES[architecture], (model, architecture)


async def test_the_seeded_database_holds_the_catalogue_and_resolves_every_name(db_url, graphql):
    async def read(session):
        return await load_hardware_index(session)

    index = await in_own_transaction(db_url, read)
    assert {name: resolve(index, name) for name in NAMES_IN_SOURCES} == NAMES_IN_SOURCES
    data = await graphql("{ hardware(first: 100) { totalCount nodes { sku vendor architecture hasDatasheet datasheetSource "
                         "dramBandwidthGbps } } }")
    assert data["hardware"]["totalCount"] == len(ENTRIES)
    nodes = {n["sku"]: n for n in data["hardware"]["nodes"]}
    assert set(nodes) == set(BY_SKU)
    for sku, node in nodes.items():
        assert node["hasDatasheet"] is (BY_SKU[sku]["dram_bandwidth_gbps"] is not None), sku
        assert (node["vendor"], node["architecture"], node["datasheetSource"]) == (
            BY_SKU[sku]["vendor"], BY_SKU[sku]["architecture"], BY_SKU[sku]["datasheet_source"])


# -- headroom-v1 on every SKU with a datasheet ------------------------------------------------------------

# A workload as an export states it: inputs and outputs with dtype and symbolic shape, axes bound by
# its configuration (a bf16 GEMM with an int32 index, as FlashInfer-Bench and SOL-ExecBench give them).
SEMANTICS = {
    "inputs": [{"name": "a", "dtype": "bf16", "shape": ["m", "k"]}, {"name": "b", "dtype": "bf16", "shape": ["k", "n"]},
               {"name": "rows", "dtype": "int32", "shape": ["m"]}],
    "outputs": [{"name": "c", "dtype": "bf16", "shape": ["m", "n"]}],
}
BINDINGS = {"m": 1024, "n": 4096, "k": 7168}
BYTES = 2 * (1024 * 7168 + 7168 * 4096 + 1024 * 4096) + 4 * 1024


def test_headroom_v1_gives_a_floor_on_every_sku_with_a_datasheet():
    catalogue = seed_catalogue()
    assert declared_tensor_bytes(SEMANTICS, BINDINGS) == BYTES
    with_datasheet = [h for h in catalogue if h.dram_bandwidth_gbps]
    assert len(with_datasheet) >= len(REQUIRED)
    for h in catalogue:
        floor = headroom_v1(SEMANTICS, BINDINGS, h.family, catalogue, None)
        if floor.floor_ns is None:
            # Only a family with no bandwidth anywhere (the H20) has none, and says why.
            assert not any(m.dram_bandwidth_gbps for m in catalogue if m.family == h.family), h.sku
            assert floor.unavailable_reason == f"no datasheet DRAM bandwidth for {h.family}"
            continue
        assert floor.hardware is not None and floor.hardware.family == h.family and floor.hardware.reference_for_family
        assert floor.floor_ns == pytest.approx(BYTES / floor.hardware.dram_bandwidth_gbps)
        if h.dram_bandwidth_gbps:
            # The family's floor bounds this SKU too: it is never above the SKU's own.
            assert floor.floor_ns <= BYTES / h.dram_bandwidth_gbps, h.sku
            assert floor.basis_line.endswith(f"{floor.hardware.short_name} datasheet)")
    by_short = {h.short_name: h for h in catalogue}
    mi300x = headroom_v1(SEMANTICS, BINDINGS, by_short["MI300X"].family, catalogue, None)
    assert mi300x.bound_line == f"DRAM {mi300x.floor_display} · bandwidth-bound on MI300X"
    assert mi300x.floor_ns == pytest.approx(BYTES / 5300)
