"""The catalogue: hardware, implementations (with their deployability), environments, protocols and sources."""

from __future__ import annotations

from datetime import date

import strawberry

from kernelindex.graphql.cost import cost_weight
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

    @strawberry.field(description="Opaque global ID.")
    def id(self) -> strawberry.ID:
        return to_global_id("Hardware", self.facts.id)

    @strawberry.field(description="Database id (stable, for scripts).")
    def database_id(self) -> int:
        return self.facts.id

    @strawberry.field(description="Exact SKU, e.g. 'NVIDIA H100 SXM5 80GB'.")
    def sku(self) -> str:
        return self.facts.sku

    @strawberry.field(description="Short name used in sentences, e.g. 'H100 SXM'.")
    def short_name(self) -> str:
        return self.facts.short_name

    @strawberry.field(description="Family, e.g. 'NVIDIA H100'.")
    def family(self) -> str:
        return self.facts.family

    @strawberry.field(description="Vendor, e.g. 'NVIDIA'.")
    def vendor(self) -> str:
        return self.facts.vendor

    @strawberry.field(description="Architecture, e.g. 'Hopper'.")
    def architecture(self) -> str | None:
        return self.facts.architecture

    @strawberry.field(description="Product names the driver reports for this SKU (torch.cuda.get_device_name): the catalogue's few per SKU.")
    def driver_product_names(self) -> list[str]:
        return list(self.facts.driver_product_names)

    @strawberry.field(description="Priority hardware: pages say when a workload is not measured on it.")
    def priority(self) -> bool:
        return self.facts.priority

    @strawberry.field(description="Whether this SKU's datasheet stands for its family in headroom-v1.")
    def reference_for_family(self) -> bool:
        return self.facts.reference_for_family

    @strawberry.field(description="False for hardware first seen in a run and not yet in the catalogue: no datasheet figures.")
    def has_datasheet(self) -> bool:
        return self.facts.has_datasheet

    @strawberry.field(description="Memory in GB.")
    def memory_gb(self) -> float | None:
        return self.facts.memory_gb

    @strawberry.field(description="Datasheet DRAM bandwidth in GB/s.")
    def dram_bandwidth_gbps(self) -> float | None:
        return self.facts.dram_bandwidth_gbps

    @strawberry.field(description="Datasheet FP32 peak in TFLOPS (non-tensor).")
    def fp32_tflops(self) -> float | None:
        return self.facts.fp32_tflops

    @strawberry.field(description="Datasheet TF32 tensor-core peak in TFLOPS, dense.")
    def tf32_tflops(self) -> float | None:
        return self.facts.tf32_tflops

    @strawberry.field(description="Datasheet FP16 tensor-core peak in TFLOPS, dense.")
    def fp16_tflops(self) -> float | None:
        return self.facts.fp16_tflops

    @strawberry.field(description="Datasheet BF16 tensor-core peak in TFLOPS, dense.")
    def bf16_tflops(self) -> float | None:
        return self.facts.bf16_tflops

    @strawberry.field(description="L2 cache in MB.")
    def l2_mb(self) -> float | None:
        return self.facts.l2_mb

    @strawberry.field(description="Streaming multiprocessors.")
    def sm_count(self) -> int | None:
        return self.facts.sm_count

    @strawberry.field(description="Thermal design power in watts.")
    def tdp_w(self) -> float | None:
        return self.facts.tdp_w

    @strawberry.field(description="Where the datasheet figures come from.")
    def datasheet_source(self) -> str | None:
        return self.facts.datasheet_source

    @strawberry.field(description="Link to the datasheet.")
    def datasheet_url(self) -> str | None:
        return self.facts.datasheet_url


@strawberry.type(description="Why an implementation is or is not deployable.")
class DeployabilityReason:
    code: str = strawberry.field(description="'no_public_source', 'no_install_recipe' or 'licence_unknown'.")
    words: str = strawberry.field(description="The reason in words.")


@strawberry.type(description="deployability-v1: deployable only with source available, a known SPDX licence and an install recipe.")
class Deployability:
    result: strawberry.Private[DeployabilityResult]

    @strawberry.field(description="Whether it is deployable.")
    def deployable(self) -> bool:
        return self.result.deployable

    @strawberry.field(description="Why not, when it is not: at most one per reason code (three).")
    def reasons(self) -> list[DeployabilityReason]:
        return [DeployabilityReason(code=r.code, words=r.words) for r in self.result.reasons]

    @strawberry.field(description="Whether the licence is permissive (Apache-2.0, MIT, BSD-2/3-Clause, ISC, Zlib, BSL-1.0).")
    def permissive(self) -> bool:
        return self.result.permissive

    @strawberry.field(description="The verdict in words.")
    def words(self) -> str:
        return self.result.words


@strawberry.type(description="A way to run a workload: PyTorch eager, torch.compile with inductor, …")
class Implementation(Node):
    facts: strawberry.Private[ImplementationFacts]

    @strawberry.field(description="Opaque global ID.")
    def id(self) -> strawberry.ID:
        return to_global_id("Implementation", self.facts.id)

    @strawberry.field(description="Database id (stable, for scripts).")
    def database_id(self) -> int:
        return self.facts.id

    @strawberry.field(description="Stable identifier, e.g. 'torch_eager'.")
    def slug(self) -> str:
        return self.facts.slug

    @strawberry.field(description="Display title, e.g. 'PyTorch eager'.")
    def title(self) -> str:
        return self.facts.title

    @strawberry.field(description="Framework, e.g. 'PyTorch'.")
    def framework(self) -> str:
        return self.facts.framework

    @strawberry.field(description="Language, e.g. 'python'.")
    def language(self) -> str:
        return self.facts.language

    @strawberry.field(description="Runtime id, e.g. 'torch_compile_inductor'.")
    def runtime_id(self) -> str:
        return self.facts.runtime_id

    @strawberry.field(description="'baseline' for the source's designated baseline, otherwise 'candidate'.")
    def role(self) -> str:
        return self.facts.role

    @strawberry.field(description="Whether this is the source's designated baseline.")
    def is_baseline(self) -> bool:
        return self.facts.is_baseline

    @strawberry.field(description="SPDX licence identifier, when known.")
    def licence(self) -> str | None:
        return self.facts.licence

    @strawberry.field(description="'mirrored', 'upstream' or 'none'.")
    def source_availability(self) -> str:
        return self.facts.source_availability

    @strawberry.field(description="Link to the source.")
    def source_url(self) -> str | None:
        return self.facts.source_url

    @strawberry.field(description="How to install it; null when there is none (at most 2 KiB; longer text is cut, with a marker).",
                      metadata=cost_weight(SHORT_TEXT_KIB))
    def install_recipe(self) -> str | None:
        return short_text(self.facts.install_recipe)

    @strawberry.field(description="'MIT · source'.")
    def availability_label(self) -> str:
        return trust.availability_label(self.facts)

    @strawberry.field(description="'source mirrored', 'source upstream' or 'no public source'.")
    def availability_detail(self) -> str:
        return trust.availability_detail(self.facts)

    @strawberry.field(description="The install recipe, or 'no install recipe' (at most 2 KiB, like installRecipe).",
                      metadata=cost_weight(SHORT_TEXT_KIB))
    def install_label(self) -> str:
        return short_text(trust.install_label(self.facts)) or ""

    @strawberry.field(description="'No package · vendor the source' when there is no install recipe.")
    def package_label(self) -> str:
        return trust.package_label(self.facts)

    @strawberry.field(description="'python · torch_eager'.")
    def runtime_display(self) -> str:
        return f"{self.facts.language} · {self.facts.runtime_id}"

    @strawberry.field(description="'PyTorch · MIT · python'.")
    def implementation_line(self) -> str:
        return trust.implementation_line(self.facts)

    @strawberry.field(description="deployability-v1: source, licence and install recipe, with the reasons when not deployable.")
    def deployability(self) -> Deployability:
        return Deployability(result=deployability(self.facts))


@strawberry.type(description="Where runs were measured: a hardware SKU, a provider and a software stack. Same SKU with another stack is another environment.")
class Environment(Node):
    facts: strawberry.Private[EnvironmentFacts]

    @strawberry.field(description="Opaque global ID.")
    def id(self) -> strawberry.ID:
        return to_global_id("Environment", self.facts.id)

    @strawberry.field(description="Database id (stable, for scripts).")
    def database_id(self) -> int:
        return self.facts.id

    @strawberry.field(description="The hardware SKU.")
    def hardware(self) -> Hardware:
        return Hardware(facts=self.facts.hardware)

    @strawberry.field(description="Cloud or lab, e.g. 'Modal'; null when not reported.")
    def provider(self) -> str | None:
        return self.facts.provider

    @strawberry.field(description="Name of the machine or pool as the source gave it.")
    def label(self) -> str | None:
        return self.facts.label

    @strawberry.field(description="torch version; null when not reported.")
    def torch_version(self) -> str | None:
        return self.facts.torch_version

    @strawberry.field(description="CUDA version; null when not reported.")
    def cuda_version(self) -> str | None:
        return self.facts.cuda_version

    @strawberry.field(description="Driver version; null when not reported.")
    def driver_version(self) -> str | None:
        return self.facts.driver_version

    @strawberry.field(description="Python version; null when not reported.")
    def python_version(self) -> str | None:
        return self.facts.python_version

    @strawberry.field(description="Triton version; null when not reported.")
    def triton_version(self) -> str | None:
        return self.facts.triton_version

    @strawberry.field(description="sha256 over the environment's canonical description.")
    def fingerprint(self) -> str:
        return self.facts.fingerprint


@strawberry.type(description="How runs were timed. Runs are compared only under the same protocol.")
class Protocol:
    facts: strawberry.Private[ProtocolFacts]

    @strawberry.field(description="Protocol id.")
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.facts.id))

    @strawberry.field(description="Name, e.g. 'KernelBench timing scripts'.")
    def name(self) -> str:
        return self.facts.name

    @strawberry.field(description="Version of the protocol.")
    def version(self) -> str:
        return self.facts.version

    @strawberry.field(description="Timer, e.g. 'cuda_events'.")
    def timer(self) -> str | None:
        return self.facts.timer

    @strawberry.field(description="Warm-up calls before timing.")
    def warmup(self) -> int | None:
        return self.facts.warmup

    @strawberry.field(description="Timed trials.")
    def trials(self) -> int | None:
        return self.facts.trials

    @strawberry.field(description="The statistic runs are ranked by: 'mean'.")
    def statistic(self) -> str:
        return self.facts.statistic

    @strawberry.field(description="Whether the L2 cache is flushed before each trial.")
    def l2_flush(self) -> bool | None:
        return self.facts.l2_flush


@strawberry.type(description="Where a figure comes from: a source at one revision.")
class Source:
    facts: strawberry.Private[SourceFacts]

    @strawberry.field(description="Source name, e.g. 'KernelBench baseline timings'.")
    def name(self) -> str:
        return self.facts.name

    @strawberry.field(description="Link to the source.")
    def url(self) -> str | None:
        return self.facts.url

    @strawberry.field(description="Licence of the source's data.")
    def licence(self) -> str | None:
        return self.facts.licence

    @strawberry.field(description="Snapshot revision (e.g. a commit).")
    def revision(self) -> str | None:
        return self.facts.revision

    @strawberry.field(description="Snapshot date.")
    def revision_date(self) -> date | None:
        return self.facts.revision_date

    @strawberry.field(description="'KernelBench baseline timings (2026-03-05) · MIT'.")
    def display(self) -> str:
        text = self.facts.name
        if self.facts.revision_date:
            text += f" ({format_date(self.facts.revision_date)})"
        if self.facts.licence:
            text += f" · {self.facts.licence}"
        return text
