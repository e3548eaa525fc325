"""The hardware catalogue as the ingest writes it: the seed's hardware.json and the hardware lines
of a catalogue export take the same checks and the same upsert."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import Hardware

HARDWARE_FIELDS = (
    "sku", "short_name", "family", "vendor", "architecture", "driver_product_names", "priority",
    "reference_for_family", "memory_gb", "dram_bandwidth_gbps", "fp32_tflops", "tf32_tflops",
    "fp16_tflops", "bf16_tflops", "l2_mb", "sm_count", "tdp_w", "datasheet_source", "datasheet_url",
)


def hardware_problem(entry: dict[str, Any]) -> str | None:
    missing = [f for f in ("sku", "short_name", "family", "vendor") if not entry.get(f)]
    return f"missing {', '.join(missing)}" if missing else None


async def upsert_hardware(session: AsyncSession, entry: dict[str, Any]) -> None:
    """A catalogue entry: inserted, or its datasheet figures brought up to date."""
    values = {f: entry.get(f) for f in HARDWARE_FIELDS if f in entry}
    values["has_datasheet"] = entry.get("dram_bandwidth_gbps") is not None
    stmt = pg_insert(Hardware).values(**values)
    update = {k: stmt.excluded[k] for k in values if k != "sku"}
    await session.execute(stmt.on_conflict_do_update(index_elements=["sku"], set_=update))
