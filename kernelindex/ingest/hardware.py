"""The hardware catalogue as the ingest writes it: the seed's hardware.json and the hardware lines
of a catalogue export take the same checks and the same upsert."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import Hardware
from kernelindex.rules.names import hardware_key, hardware_name_problem, name_problem, normalise_hardware_name

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


def _number(value: Any) -> float | None:
    """A figure as a number, or None when absent or not a number (hardware_problem words that case)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def catalogue_problems(entries: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(sku, key, why) for each way a whole catalogue (the seed's hardware.json) contradicts itself,
    which no single entry shows:

    - a name (SKU or product name, under names-v1's hardware_key) that names two SKUs: the hardware
      index would silently resolve it to whichever came first;
    - a family without exactly one reference_for_family SKU;
    - a family member with more DRAM bandwidth than its reference, or a reference with none where a
      member has one: headroom-v1 bounds a record on any member with the reference's datasheet, so a
      faster member would get a floor above its own, and a reference without a bandwidth none at all.
    """
    problems: list[tuple[str, str, str]] = []
    named: dict[str, str] = {}
    for entry in entries:
        sku = str(entry.get("sku"))
        for key, name in [("sku", sku)] + [("driver_product_names", str(n)) for n in entry.get("driver_product_names") or []]:
            other = named.setdefault(hardware_key(name), sku)
            if other != sku:
                problems.append((sku, key, f"{name!r} already names {other!r}: one name, one SKU"))
    families: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        families.setdefault(str(entry.get("family")), []).append(entry)
    for family, members in families.items():
        references = [m for m in members if m.get("reference_for_family")]
        if len(references) != 1:
            listed = ", ".join(repr(m.get("sku")) for m in references) or "none"
            problems.append((str(members[0].get("sku")), "reference_for_family",
                             f"family {family!r} needs exactly one reference_for_family SKU, has {listed}"))
            continue
        reference = references[0]
        bound = _number(reference.get("dram_bandwidth_gbps"))
        if bound is None and any(_number(m.get("dram_bandwidth_gbps")) is not None for m in members):
            problems.append((str(reference.get("sku")), "reference_for_family",
                             f"the reference of family {family!r} has no DRAM bandwidth while a member has one: "
                             "headroom-v1 would give the family no floor"))
        for member in members:
            bandwidth = _number(member.get("dram_bandwidth_gbps"))
            if bound is not None and bandwidth is not None and bandwidth > bound:
                problems.append((str(member.get("sku")), "dram_bandwidth_gbps",
                                 f"{bandwidth:g} GB/s is above its family reference {reference.get('sku')!r} ({bound:g} GB/s): "
                                 "headroom-v1's family floor would not bound it; give it a family of its own"))
    return problems


async def upsert_hardware(session: AsyncSession, entry: dict[str, Any]) -> None:
    """A catalogue entry: inserted, or its datasheet figures brought up to date."""
    values = {f: entry.get(f) for f in HARDWARE_FIELDS if f in entry}
    values["has_datasheet"] = entry.get("dram_bandwidth_gbps") is not None
    stmt = pg_insert(Hardware).values(**values)
    update = {k: stmt.excluded[k] for k in values if k != "sku"}
    await session.execute(stmt.on_conflict_do_update(index_elements=["sku"], set_=update))
