from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import HardwareBadge, PageCursor


class HardwareCatalogue(BaseModel):
    hardware: "HardwareCatalogueHardware"


class HardwareCatalogueHardware(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "HardwareCatalogueHardwarePageInfo" = Field(alias="pageInfo")
    nodes: list["HardwareCatalogueHardwareNodes"]


HardwareCatalogueHardwarePageInfo = PageCursor


class HardwareCatalogueHardwareNodes(HardwareBadge):
    architecture: Optional[str]
    priority: bool
    has_datasheet: bool = Field(alias="hasDatasheet")
    memory_gb: Optional[float] = Field(alias="memoryGb")
    dram_bandwidth_gbps: Optional[float] = Field(alias="dramBandwidthGbps")
    fp_32_tflops: Optional[float] = Field(alias="fp32Tflops")
    tf_32_tflops: Optional[float] = Field(alias="tf32Tflops")
    fp_16_tflops: Optional[float] = Field(alias="fp16Tflops")
    bf_16_tflops: Optional[float] = Field(alias="bf16Tflops")
    datasheet_url: Optional[str] = Field(alias="datasheetUrl")


HardwareCatalogue.model_rebuild()
HardwareCatalogueHardware.model_rebuild()
