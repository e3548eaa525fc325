"""Small hand-made facts for the rules tests, and the eight seed runs built as facts.

Everything here is plain data; the seed builder reads only the files under seeds/.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from kernelindex.rules.facts import (
    EnvironmentFacts,
    HardwareFacts,
    ImplementationFacts,
    ProtocolFacts,
    RunFacts,
    SourceFacts,
    WorkloadFacts,
)
from kernelindex.rules.identity import configuration_key

SEEDS = Path(__file__).resolve().parents[2] / "seeds"

OBSERVED = datetime(2026, 3, 5, tzinfo=UTC)
CANONICAL_BINDINGS = {"batch_size": 2}
CANONICAL_DTYPE = "fp32"
CANONICAL_KEY = configuration_key(CANONICAL_BINDINGS, CANONICAL_DTYPE)
CURRENT_REVISION = 10


def hardware(
    id: int = 1,
    sku: str = "NVIDIA H100 SXM5 80GB",
    short_name: str = "H100 SXM",
    family: str = "NVIDIA H100",
    **kw: Any,
) -> HardwareFacts:
    kw.setdefault("dram_bandwidth_gbps", 3350.0)
    return HardwareFacts(id=id, sku=sku, short_name=short_name, family=family, **kw)


def implementation(
    id: int = 1,
    slug: str = "torch_eager",
    title: str = "PyTorch eager",
    role: str = "baseline",
    licence: str | None = "MIT",
    source_availability: str = "mirrored",
    **kw: Any,
) -> ImplementationFacts:
    return ImplementationFacts(
        id=id, slug=slug, title=title, role=role, licence=licence, source_availability=source_availability, **kw
    )


def baseline_impl(id: int = 1) -> ImplementationFacts:
    return implementation(id=id, slug="torch_eager", title="PyTorch eager", role="baseline")


def candidate_impl(id: int = 2, slug: str = "torch_compile_inductor", title: str = "torch.compile (inductor)") -> ImplementationFacts:
    return implementation(id=id, slug=slug, title=title, role="candidate")


def environment(id: int = 1, hw: HardwareFacts | None = None, **kw: Any) -> EnvironmentFacts:
    return EnvironmentFacts(id=id, hardware=hw or hardware(), **kw)


def protocol(id: int = 1, name: str = "KernelBench timing scripts", version: str = "1", **kw: Any) -> ProtocolFacts:
    return ProtocolFacts(id=id, name=name, version=version, **kw)


def source(id: int = 1, name: str = "KernelBench baseline timings", licence: str | None = "MIT", **kw: Any) -> SourceFacts:
    return SourceFacts(id=id, name=name, licence=licence, **kw)


def workload(
    id: int = 1,
    slug: str = "w",
    current_revision_id: int | None = CURRENT_REVISION,
    bindings: dict[str, int] | None = None,
    dtype: str = CANONICAL_DTYPE,
) -> WorkloadFacts:
    bindings = dict(CANONICAL_BINDINGS if bindings is None else bindings)
    return WorkloadFacts(
        id=id,
        slug=slug,
        current_revision_id=current_revision_id,
        canonical_bindings=bindings,
        canonical_dtype=dtype,
        canonical_configuration_key=configuration_key(bindings, dtype),
    )


def run(
    id: int,
    mean_ms: float | None,
    *,
    impl: ImplementationFacts | None = None,
    env: EnvironmentFacts | None = None,
    proto: ProtocolFacts | None = None,
    src: SourceFacts | None = None,
    revision_id: int = CURRENT_REVISION,
    bindings: dict[str, int] | None = None,
    dtype: str = CANONICAL_DTYPE,
    status: str = "passed",
    std_ms: float | None = None,
    num_trials: int | None = 100,
    observed_at: datetime = OBSERVED,
    evidence: str = "reported",
    **kw: Any,
) -> RunFacts:
    bindings = dict(CANONICAL_BINDINGS if bindings is None else bindings)
    return RunFacts(
        id=id,
        workload_revision_id=revision_id,
        bindings=bindings,
        dtype=dtype,
        configuration_key=configuration_key(bindings, dtype),
        implementation=impl or baseline_impl(),
        environment=env or environment(),
        protocol=proto or protocol(),
        source=src or source(),
        status=status,
        mean_ms=mean_ms,
        std_ms=std_ms,
        num_trials=num_trials,
        observed_at=observed_at,
        evidence=evidence,
        **kw,
    )


# --- the seed data as facts -------------------------------------------------------------------


def load_json(name: str) -> Any:
    return json.loads((SEEDS / name).read_text(encoding="utf-8"))


def seed_catalogue() -> list[HardwareFacts]:
    fields = set(HardwareFacts.__dataclass_fields__)
    out = []
    for i, h in enumerate(load_json("hardware.json")["hardware"], start=1):
        kw = {k: v for k, v in h.items() if k in fields}
        kw["driver_product_names"] = tuple(kw.get("driver_product_names", ()))
        out.append(HardwareFacts(id=i, **kw))
    return out


def seed_implementations() -> dict[str, ImplementationFacts]:
    fields = set(ImplementationFacts.__dataclass_fields__)
    return {
        d["slug"]: ImplementationFacts(id=i, **{k: v for k, v in d.items() if k in fields})
        for i, d in enumerate(load_json("implementations.json")["implementations"], start=1)
    }


def seed_workloads() -> dict[str, dict[str, Any]]:
    return {w["slug"]: w for w in load_json("workloads.json")["workloads"]}


def seed_world() -> dict[str, tuple[WorkloadFacts, list[RunFacts]]]:
    """{workload slug: (workload facts, its runs)} from seeds/runs.jsonl, ids assigned in file order."""
    catalogue = seed_catalogue()
    by_driver_name = {name: h for h in catalogue for name in h.driver_product_names}
    impls = seed_implementations()
    workloads: dict[str, WorkloadFacts] = {}
    for i, (slug, w) in enumerate(seed_workloads().items(), start=1):
        c = w["canonical"]
        workloads[slug] = WorkloadFacts(
            id=i,
            slug=slug,
            current_revision_id=100 + i,
            canonical_bindings=dict(c["bindings"]),
            canonical_dtype=c["dtype"],
            canonical_configuration_key=configuration_key(c["bindings"], c["dtype"]),
        )
    envs: dict[str, EnvironmentFacts] = {}
    protocols: dict[tuple, ProtocolFacts] = {}
    sources: dict[str, SourceFacts] = {}
    runs: dict[str, list[RunFacts]] = {slug: [] for slug in workloads}
    lines = (SEEDS / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    for run_id, line in enumerate((text for text in lines if text.strip()), start=1):
        d = json.loads(line)
        e = d["environment"]
        if e["label"] not in envs:
            envs[e["label"]] = EnvironmentFacts(
                id=len(envs) + 1,
                hardware=by_driver_name[e["hardware"]["product_name"]],
                provider=e.get("provider"),
                label=e["label"],
            )
        p = d["protocol"]
        pkey = (p["name"], p["version"])
        if pkey not in protocols:
            protocols[pkey] = ProtocolFacts(
                id=len(protocols) + 1, name=p["name"], version=p["version"], statistic=p["statistic"],
                timer=p.get("timer"), warmup=p.get("warmup"), trials=p.get("trials"), l2_flush=p.get("l2_flush"),
            )
        s = d["source"]
        if s["name"] not in sources:
            sources[s["name"]] = SourceFacts(
                id=len(sources) + 1, name=s["name"], licence=s.get("licence"), url=s.get("url"),
                revision=s.get("revision"), revision_date=date.fromisoformat(s["revision_date"]),
            )
        w = workloads[d["workload"]["slug"]]
        cfg = d["configuration"]
        st = d["statistics"]
        runs[w.slug].append(
            RunFacts(
                id=run_id,
                workload_revision_id=w.current_revision_id,
                bindings=dict(cfg["bindings"]),
                dtype=cfg["dtype"],
                configuration_key=configuration_key(cfg["bindings"], cfg["dtype"]),
                implementation=impls[d["implementation"]["slug"]],
                environment=envs[e["label"]],
                protocol=protocols[pkey],
                source=sources[s["name"]],
                status=d["status"],
                mean_ms=st["mean"],
                std_ms=st["std"],
                num_trials=st["num_trials"],
                min_ms=st.get("min"),
                max_ms=st.get("max"),
                observed_at=datetime.fromisoformat(d["observed_at"].replace("Z", "+00:00")),
                evidence=d["evidence"],
                workload_id=w.id,
            )
        )
    return {slug: (workloads[slug], runs[slug]) for slug in workloads}


RESNET18 = "kernelbench-l3-p9-resnet18"
VGG19 = "kernelbench-l3-p12-vgg19"
