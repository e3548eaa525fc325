"""Lower bounds on latency from datasheet peaks.

headroom-v1, as the reference pages define it: the bytes of every declared tensor whose shape is
fully bound at the canonical configuration, each read or written once at the DRAM bandwidth of the
family's reference datasheet. No arithmetic term: a bandwidth floor only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kernelindex.rules.display import format_count, format_duration_ns, format_ratio
from kernelindex.rules.dtypes import element_bytes
from kernelindex.rules.facts import HardwareFacts

HEADROOM_V1 = "headroom-v1"

V1_NOTES = (
    "no arithmetic formula for this family: bandwidth floor only",
    "estimate, not evidence",
)
V1_DESCRIPTION = (
    "headroom-v1: a lower bound from declared tensors and datasheet peaks. "
    "A kernel can sit well above it for good reasons."
)


def bound_shape(shape: Iterable[Any], bindings: dict[str, int]) -> list[int] | None:
    """Concrete dimensions, or None when some axis is not bound."""
    dims = []
    for d in shape:
        if isinstance(d, int):
            dims.append(d)
        elif isinstance(d, str) and d in bindings:
            dims.append(int(bindings[d]))
        else:
            return None
    return dims


def declared_tensor_bytes(semantics: dict[str, Any] | None, bindings: dict[str, int]) -> int:
    """Bytes of the declared inputs and outputs whose shapes are fully bound. A constant axis binds its
    own value (a definition a source states names its constant axes in shapes; a traced one writes them
    as integers)."""
    if not semantics:
        return 0
    constants = {a["name"]: a["value"] for a in semantics.get("axes", [])
                 if a.get("behaviour") == "constant" and isinstance(a.get("value"), int) and not isinstance(a.get("value"), bool)}
    bindings = {**constants, **bindings}
    total = 0
    for tensor in list(semantics.get("inputs", [])) + list(semantics.get("outputs", [])):
        dims = bound_shape(tensor.get("shape", []), bindings)
        size = element_bytes(tensor.get("dtype", ""))
        if dims is None or size is None:
            continue
        total += math.prod(dims) * size
    return total


def reference_hardware(family: str, catalogue: Iterable[HardwareFacts]) -> HardwareFacts | None:
    """The SKU whose datasheet stands for its family."""
    members = [h for h in catalogue if h.family == family]
    for h in members:
        if h.reference_for_family:
            return h
    return members[0] if members else None


@dataclass(frozen=True)
class HeadroomV1:
    method: str
    bytes: int
    floor_ns: float | None
    bandwidth_gbps: float | None
    hardware: HardwareFacts | None
    record_ms: float | None
    unavailable_reason: str | None = None

    @property
    def ratio_above(self) -> float | None:
        if self.floor_ns is None or self.record_ms is None:
            return None
        return self.record_ms * 1e6 / self.floor_ns

    @property
    def floor_display(self) -> str | None:
        return None if self.floor_ns is None else format_duration_ns(self.floor_ns)

    @property
    def summary(self) -> str | None:
        """'Estimated floor 359 ns · record 3866.81× above it'."""
        if self.floor_ns is None:
            return None
        text = f"Estimated floor {self.floor_display}"
        if self.ratio_above is not None:
            text += f" · record {format_ratio(self.ratio_above)} above it"
        return text

    @property
    def bound_line(self) -> str | None:
        """'DRAM 359 ns · bandwidth-bound on H100 SXM'."""
        if self.floor_ns is None or self.hardware is None:
            return None
        return f"DRAM {self.floor_display} · bandwidth-bound on {self.hardware.short_name}"

    @property
    def basis_line(self) -> str | None:
        """'every declared tensor crosses HBM exactly once (3,350 GB/s, H100 SXM datasheet)'."""
        if self.floor_ns is None or self.hardware is None or self.bandwidth_gbps is None:
            return None
        return (
            f"every declared tensor crosses HBM exactly once "
            f"({format_count(self.bandwidth_gbps)} GB/s, {self.hardware.short_name} datasheet)"
        )

    @property
    def bytes_display(self) -> str:
        return f"{format_count(self.bytes)} bytes"


def headroom_v1(
    semantics: dict[str, Any] | None,
    bindings: dict[str, int],
    family: str | None,
    catalogue: Iterable[HardwareFacts],
    record_ms: float | None,
) -> HeadroomV1:
    n_bytes = declared_tensor_bytes(semantics, bindings)
    hardware = reference_hardware(family, catalogue) if family else None
    if hardware is None:
        return HeadroomV1(HEADROOM_V1, n_bytes, None, None, None, record_ms, "no record, so no hardware to bound")
    if not hardware.dram_bandwidth_gbps:
        return HeadroomV1(
            HEADROOM_V1, n_bytes, None, None, hardware, record_ms, f"no datasheet DRAM bandwidth for {hardware.family}"
        )
    if n_bytes == 0:
        return HeadroomV1(HEADROOM_V1, 0, None, hardware.dram_bandwidth_gbps, hardware, record_ms, "no declared tensor is fully bound")
    # bytes / (GB/s) is nanoseconds.
    floor_ns = n_bytes / hardware.dram_bandwidth_gbps
    return HeadroomV1(HEADROOM_V1, n_bytes, floor_ns, hardware.dram_bandwidth_gbps, hardware, record_ms)
