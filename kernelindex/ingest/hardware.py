"""The hardware catalogue as the ingest writes it: the seed's hardware.json and the hardware lines
of a catalogue export take the same checks and the same upsert."""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import Hardware
from kernelindex.rules.names import hardware_name_problem, name_problem, normalise_hardware_name

HARDWARE_FIELDS = (
    "sku", "short_name", "family", "vendor", "architecture", "driver_product_names", "priority",
    "reference_for_family", "memory_gb", "dram_bandwidth_gbps", "fp32_tflops", "tf32_tflops",
    "fp16_tflops", "bf16_tflops", "l2_mb", "sm_count", "tdp_w", "datasheet_source", "datasheet_url",
)


NAME_FIELDS = ("sku", "short_name", "family", "vendor")
FIGURE_FIELDS = ("memory_gb", "dram_bandwidth_gbps", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops", "l2_mb", "sm_count", "tdp_w")


def hardware_problem(entry: dict[str, Any]) -> tuple[str, str] | None:
    """(key, why) a catalogue entry is refused, or None: its names are present, normalised
    (names-v1: no invisible characters, no stray spaces) and no look-alikes; its figures are
    finite and positive."""
    missing = [f for f in NAME_FIELDS if not entry.get(f)]
    if missing:
        return missing[0], f"missing {', '.join(missing)}"
    for key in NAME_FIELDS:
        value = entry[key]
        if not isinstance(value, str):
            return key, f"{key} must be a string"
        bad = hardware_name_problem(value) if key == "sku" else name_problem(value)
        if bad:
            return key, f"{key} {bad}"
        if normalise_hardware_name(value) != value:
            return key, f"{key} {value!r} holds invisible characters or stray spaces: write it as {normalise_hardware_name(value)!r}"
    names = entry.get("driver_product_names") or []
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        return "driver_product_names", "driver_product_names must be a list of non-empty strings"
    for name in names:
        bad = hardware_name_problem(name)
        if bad:
            return "driver_product_names", bad
    for key in FIGURE_FIELDS:
        value = entry.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            return key, f"{key} must be a positive finite number or null, got {value!r}"
    return None


async def upsert_hardware(session: AsyncSession, entry: dict[str, Any]) -> None:
    """A catalogue entry: inserted, or its datasheet figures brought up to date."""
    values = {f: entry.get(f) for f in HARDWARE_FIELDS if f in entry}
    values["has_datasheet"] = entry.get("dram_bandwidth_gbps") is not None
    stmt = pg_insert(Hardware).values(**values)
    update = {k: stmt.excluded[k] for k in values if k != "sku"}
    await session.execute(stmt.on_conflict_do_update(index_elements=["sku"], set_=update))
