"""The catalogue: hardware, implementations (with their deployability), environments, protocols and sources.

These objects are made once per run shown (a page of runs makes an Implementation, an Environment
with its Hardware, a Protocol and a Source for each), so their stored fields are plain attributes,
filled once from the facts in a hand-written __init__, as on Run: strawberry resolves a field
without a resolver by reading the attribute, with none of the Info and argument handling it gives a
method resolver (about a microsecond a field instead of several). Fields that derive text or rules
(labels, deployability, cut text) stay resolvers, written `name: T = strawberry.field(resolver=…)`
so that the SDL keeps its field order, and cost only when selected.
"""

from __future__ import annotations

from datetime import date

import strawberry

from kernelindex.graphql.cost import cost_weight
from kernelindex.graphql.enums import (
    DeployabilityReasonCode,
    FigureUnit,
    ImplementationRole,
    Metric,
    SourceAvailability,
    of_rules,
)
from kernelindex.graphql.identity import kept_by_identity
from kernelindex.graphql.node import Node, to_global_id
from kernelindex.graphql.text import SHORT_TEXT_KIB, short_text
from kernelindex.rules import trust_labels as trust
from kernelindex.rules.deployability import Deployability as DeployabilityResult
from kernelindex.rules.deployability import deployability
from kernelindex.rules.display import format_date
from kernelindex.rules.facts import EnvironmentFacts, HardwareFacts, ImplementationFacts, ProtocolFacts, SourceFacts


@strawberry.type(description="A GPU SKU from the hardware catalogue, with its datasheet peaks (dense, no sparsity).")
class Hardware(Node):
    facts: strawberry.Private[HardwareFacts]

    # Written by hand, so the dataclass keeps it (it never replaces an __init__ the class defines):
    # every site makes one from its facts alone, and every field below is one of those facts.
    def __init__(self, facts: HardwareFacts) -> None:
        self.facts = facts
        self.id = to_global_id("Hardware", facts.id)
        self.database_id = facts.id
        self.sku = facts.sku
        self.short_name = facts.short_name
        self.family = facts.family
        self.vendor = facts.vendor
        self.architecture = facts.architecture
        self.driver_product_names = list(facts.driver_product_names)
        self.priority = facts.priority
        self.reference_for_family = facts.reference_for_family
        self.has_datasheet = facts.has_datasheet
        self.memory_gb = facts.memory_gb
        self.dram_bandwidth_gbps = facts.dram_bandwidth_gbps
        self.fp32_tflops = facts.fp32_tflops
        self.tf32_tflops = facts.tf32_tflops
        self.fp16_tflops = facts.fp16_tflops
        self.bf16_tflops = facts.bf16_tflops
        self.l2_mb = facts.l2_mb
        self.sm_count = facts.sm_count
        self.tdp_w = facts.tdp_w
        self.datasheet_source = facts.datasheet_source
        self.datasheet_url = facts.datasheet_url

    id: strawberry.ID = strawberry.field(description="Opaque global ID.")
    database_id: int = strawberry.field(description="Database id (stable, for scripts).")
    sku: str = strawberry.field(description="Exact SKU, e.g. 'NVIDIA H100 SXM5 80GB'.")
    short_name: str = strawberry.field(description="Short name used in sentences, e.g. 'H100 SXM'.")
    family: str = strawberry.field(description="Family, e.g. 'NVIDIA H100'.")
    vendor: str = strawberry.field(description="Vendor, e.g. 'NVIDIA'.")
    architecture: str | None = strawberry.field(description="Architecture, e.g. 'Hopper'.")
    driver_product_names: list[str] = strawberry.field(
        description="Product names the driver reports for this SKU (torch.cuda.get_device_name): the catalogue's few per SKU.")
    priority: bool = strawberry.field(description="Priority hardware: pages say when a workload is not measured on it.")
    reference_for_family: bool = strawberry.field(description="Whether this SKU's datasheet stands for its family in headroom-v1.")
    has_datasheet: bool = strawberry.field(
        description="False for hardware first seen in a run and not yet in the catalogue: no datasheet figures.")
    memory_gb: float | None = strawberry.field(description="Memory in GB.")
    dram_bandwidth_gbps: float | None = strawberry.field(description="Datasheet DRAM bandwidth in GB/s.")
    fp32_tflops: float | None = strawberry.field(description="Datasheet FP32 peak in TFLOPS (non-tensor).")
    tf32_tflops: float | None = strawberry.field(description="Datasheet TF32 tensor-core peak in TFLOPS, dense.")
    fp16_tflops: float | None = strawberry.field(description="Datasheet FP16 tensor-core peak in TFLOPS, dense.")
    bf16_tflops: float | None = strawberry.field(description="Datasheet BF16 tensor-core peak in TFLOPS, dense.")
    l2_mb: float | None = strawberry.field(description="L2 cache in MB.")
    sm_count: int | None = strawberry.field(description="Streaming multiprocessors.")
    tdp_w: float | None = strawberry.field(description="Thermal design power in watts.")
    datasheet_source: str | None = strawberry.field(description="Where the datasheet figures come from.")
    datasheet_url: str | None = strawberry.field(description="Link to the datasheet.")


@strawberry.type(description="Why an implementation is or is not deployable.")
class DeployabilityReason:
    code: DeployabilityReasonCode = strawberry.field(description="Which rule it fails.")
    words: str = strawberry.field(description="The reason in words.")


@strawberry.type(description="deployability-v1: deployable only with source available, a known SPDX licence and an install recipe.")
class Deployability:
    result: strawberry.Private[DeployabilityResult]

    # Made only when `deployability` is selected (the rules run in that resolver), so everything is
    # filled here: at most three reasons.
    def __init__(self, result: DeployabilityResult) -> None:
        self.result = result
        self.deployable = result.deployable
        self.reasons = [DeployabilityReason(code=of_rules(DeployabilityReasonCode, r.code), words=r.words) for r in result.reasons]
        self.permissive = result.permissive
        self.words = result.words

    deployable: bool = strawberry.field(description="Whether it is deployable.")
    reasons: list[DeployabilityReason] = strawberry.field(description="Why not, when it is not: at most one per reason code (three).")
    permissive: bool = strawberry.field(
        description="Whether the licence is permissive (Apache-2.0, MIT, BSD-2/3-Clause, ISC, Zlib, BSL-1.0).")
    words: str = strawberry.field(description="The verdict in words.")


@strawberry.type(description="A way to run a workload: PyTorch eager, torch.compile with inductor, …")
class Implementation(Node):
    facts: strawberry.Private[ImplementationFacts]

    # Written by hand (see Hardware): the stored facts are plain fields; the labels derived from
    # them and the cut install text stay resolvers, computed only when selected.
    def __init__(self, facts: ImplementationFacts) -> None:
        self.facts = facts
        self.id = to_global_id("Implementation", facts.id)
        self.database_id = facts.id
        self.slug = facts.slug
        self.title = facts.title
        self.framework = facts.framework
        self.language = facts.language
        self.runtime_id = facts.runtime_id
        self.role = of_rules(ImplementationRole, facts.role)
        self.is_baseline = facts.is_baseline
        self.licence = facts.licence
        self.source_availability = of_rules(SourceAvailability, facts.source_availability)
        self.source_url = facts.source_url
        self.authors = list(facts.authors)
        self.project = facts.project
        self.target_architectures = list(facts.target_architectures)
        self.artifact_sha256 = facts.artifact_sha256
        self.artifact_bytes = facts.artifact_bytes
        self.version = facts.version

    id: strawberry.ID = strawberry.field(description="Opaque global ID.")
    database_id: int = strawberry.field(description="Database id (stable, for scripts).")
    slug: str = strawberry.field(description="Stable identifier, e.g. 'torch_eager'.")
    title: str = strawberry.field(description="Display title, e.g. 'PyTorch eager'.")
    framework: str = strawberry.field(description="Framework, e.g. 'PyTorch'.")
    language: str = strawberry.field(description="Language, e.g. 'python'.")
    runtime_id: str = strawberry.field(description="Runtime id, e.g. 'torch_compile_inductor'.")
    role: ImplementationRole = strawberry.field(description="Baseline for the source's designated baseline, otherwise candidate.")
    is_baseline: bool = strawberry.field(description="Whether this is the source's designated baseline.")
    licence: str | None = strawberry.field(description="SPDX licence identifier, when known.")
    source_availability: SourceAvailability = strawberry.field(description="Whether its source can be read, and where.")
    source_url: str | None = strawberry.field(description="Link to the source.")
    authors: list[str] = strawberry.field(description="Its authors, as the source names them (empty when it names none).")
    project: str | None = strawberry.field(description="The project it belongs to, as the source names it.")
    target_architectures: list[str] = strawberry.field(description="The architectures it targets, e.g. ['sm_100'], as stated.")
    artifact_sha256: str | None = strawberry.field(description="The source artifact's digest as the source states it ('sha256:…').")
    artifact_bytes: int | None = strawberry.field(description="The source artifact's size in bytes.")
    version: str | None = strawberry.field(description="Its own revision or package version (Liger-Kernel's version for its kernels).")

    def _install_recipe(self) -> str | None:
        return short_text(self.facts.install_recipe)
    install_recipe: str | None = strawberry.field(
        resolver=_install_recipe,
        description="How to install it; null when there is none (at most 2 KiB; longer text is cut, with a marker).",
        metadata=cost_weight(SHORT_TEXT_KIB),
    )

    def _availability_label(self) -> str:
        return trust.availability_label(self.facts)
    availability_label: str = strawberry.field(resolver=_availability_label, description="'MIT · source'.")

    def _availability_detail(self) -> str:
        return trust.availability_detail(self.facts)
    availability_detail: str = strawberry.field(
        resolver=_availability_detail, description="sourceAvailability in words, e.g. 'source mirrored'.")

    def _install_label(self) -> str:
        return short_text(trust.install_label(self.facts)) or ""
    install_label: str = strawberry.field(
        resolver=_install_label,
        description="The install recipe, or 'no install recipe' (at most 2 KiB, like installRecipe).",
        metadata=cost_weight(SHORT_TEXT_KIB),
    )

    def _package_label(self) -> str:
        return trust.package_label(self.facts)
    package_label: str = strawberry.field(
        resolver=_package_label, description="'No package · vendor the source' when there is no install recipe.")

    def _runtime_display(self) -> str:
        return f"{self.facts.language} · {self.facts.runtime_id}"
    runtime_display: str = strawberry.field(resolver=_runtime_display, description="'python · torch_eager'.")

    def _implementation_line(self) -> str:
        return trust.implementation_line(self.facts)
    implementation_line: str = strawberry.field(resolver=_implementation_line, description="'PyTorch · MIT · python'.")

    def _deployability(self) -> Deployability:
        return Deployability(result=deployability(self.facts))
    deployability: Deployability = strawberry.field(
        resolver=_deployability,
        description="deployability-v1: source, licence and install recipe, with the reasons when not deployable.",
    )


# One Implementation per facts object: the facts are frozen and shared (a catalogue's implementation
# is the same object in every run of it), and an Implementation is only ever read, so the records of a
# list of 100 workloads (some 700, over a handful of implementations) share a few instead of each
# filling its own. Kept by the facts' identity (kernelindex.graphql.identity), at most
# IMPLEMENTATIONS_KEPT (a new catalogue brings new facts objects).
IMPLEMENTATIONS_KEPT = 4096


@kept_by_identity(IMPLEMENTATIONS_KEPT)
def implementation_of(facts: ImplementationFacts) -> Implementation:
    """The Implementation of `facts` (the same object for the same facts object)."""
    return Implementation(facts=facts)


@strawberry.type(description="Where runs were measured: a hardware SKU, a provider and a software stack. Same SKU with another stack is another environment.")
class Environment(Node):
    facts: strawberry.Private[EnvironmentFacts]

    # Written by hand (see Hardware); the Hardware is made here too, as most selections of an
    # environment ask for it.
    def __init__(self, facts: EnvironmentFacts) -> None:
        self.facts = facts
        self.id = to_global_id("Environment", facts.id)
        self.database_id = facts.id
        self.hardware = Hardware(facts=facts.hardware)
        self.provider = facts.provider
        self.label = facts.label
        self.torch_version = facts.torch_version
        self.cuda_version = facts.cuda_version
        self.driver_version = facts.driver_version
        self.python_version = facts.python_version
        self.triton_version = facts.triton_version
        self.fingerprint = facts.fingerprint

    id: strawberry.ID = strawberry.field(description="Opaque global ID.")
    database_id: int = strawberry.field(description="Database id (stable, for scripts).")
    hardware: Hardware = strawberry.field(description="The hardware SKU.")
    provider: str | None = strawberry.field(description="Cloud or lab, e.g. 'Modal'; null when not reported.")
    label: str | None = strawberry.field(description="Name of the machine or pool as the source gave it.")
    torch_version: str | None = strawberry.field(description="torch version; null when not reported.")
    cuda_version: str | None = strawberry.field(description="CUDA version; null when not reported.")
    driver_version: str | None = strawberry.field(description="Driver version; null when not reported.")
    python_version: str | None = strawberry.field(description="Python version; null when not reported.")
    triton_version: str | None = strawberry.field(description="Triton version; null when not reported.")
    fingerprint: str = strawberry.field(description="sha256 over the environment's canonical description.")


@strawberry.type(description="How runs were timed. Runs are compared only under the same protocol.")
class Protocol(Node):
    facts: strawberry.Private[ProtocolFacts]

    # Written by hand (see Hardware): every field is one of the facts.
    def __init__(self, facts: ProtocolFacts) -> None:
        self.facts = facts
        self.id = to_global_id("Protocol", facts.id)
        self.database_id = facts.id
        self.name = facts.name
        self.version = facts.version
        self.timer = facts.timer
        self.warmup = facts.warmup
        self.trials = facts.trials
        self.statistic = facts.statistic
        self.l2_flush = facts.l2_flush
        self.metric = of_rules(Metric, facts.metric)
        self.unit = of_rules(FigureUnit, facts.unit)

    id: strawberry.ID = strawberry.field(description="Opaque global ID.")
    database_id: int = strawberry.field(description="Database id (stable, for scripts).")
    name: str = strawberry.field(description="Name, e.g. 'KernelBench timing scripts'.")
    version: str = strawberry.field(description="Version of the protocol.")
    timer: str | None = strawberry.field(description="Timer, e.g. 'cuda_events'.")
    warmup: int | None = strawberry.field(description="Warm-up calls before timing.")
    trials: int | None = strawberry.field(description="Timed trials.")
    statistic: str = strawberry.field(
        description="The statistic its figures are and runs are ranked by, as the source states it: the mean, the median, the "
                    "minimum, a geometric mean over a set of cases (geomean), or none stated (unspecified).")
    l2_flush: bool | None = strawberry.field(description="Whether the L2 cache is flushed before each trial.")
    metric: Metric = strawberry.field(
        description="What its figures are. Figures of two metrics never compare, and only latency runs hold records.")
    unit: FigureUnit = strawberry.field(description="The unit its figures are stored in.")


@strawberry.type(description="Where a figure comes from: a source at one revision.")
class Source(Node):
    facts: strawberry.Private[SourceFacts]

    # Written by hand (see Hardware): the stored facts are plain fields, the display text a resolver.
    # Its id is the source snapshot's: a source at one revision.
    def __init__(self, facts: SourceFacts) -> None:
        self.facts = facts
        self.id = to_global_id("Source", facts.id)
        self.database_id = facts.id
        self.name = facts.name
        self.url = facts.url
        self.licence = facts.licence
        self.revision = facts.revision
        self.revision_date = facts.revision_date
        self.route = facts.route
        self.terms = facts.terms
        self.attribution = facts.attribution

    id: strawberry.ID = strawberry.field(description="Opaque global ID.")
    database_id: int = strawberry.field(description="Database id of the source at this revision (stable, for scripts).")
    route: str | None = strawberry.field(
        description="The route the figure came through, when it is not the source itself: e.g. the kernelindex.com catalogue "
                    "export's file it was read from.")
    terms: str | None = strawberry.field(description="The source's terms of use, as it states them.")
    attribution: str | None = strawberry.field(description="The attribution the source asks for.")
    name: str = strawberry.field(description="Source name, e.g. 'KernelBench baseline timings'.")
    url: str | None = strawberry.field(description="Link to the source.")
    licence: str | None = strawberry.field(description="Licence of the source's data.")
    revision: str | None = strawberry.field(description="Snapshot revision (e.g. a commit).")
    revision_date: date | None = strawberry.field(description="Snapshot date.")

    def _display(self) -> str:
        text = self.facts.name
        if self.facts.revision_date:
            text += f" ({format_date(self.facts.revision_date)})"
        if self.facts.licence:
            text += f" · {self.facts.licence}"
        return text
    display: str = strawberry.field(resolver=_display, description="'KernelBench baseline timings (2026-03-05) · MIT'.")
