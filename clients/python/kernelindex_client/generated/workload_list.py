from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import WorkloadKind
from .fragments import ImplementationBadge, PageCursor, RecordRow


class WorkloadList(BaseModel):
    workloads: "WorkloadListWorkloads"


class WorkloadListWorkloads(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "WorkloadListWorkloadsPageInfo" = Field(alias="pageInfo")
    edges: list["WorkloadListWorkloadsEdges"]


WorkloadListWorkloadsPageInfo = PageCursor


class WorkloadListWorkloadsEdges(BaseModel):
    cursor: str
    node: "WorkloadListWorkloadsEdgesNode"


class WorkloadListWorkloadsEdgesNode(BaseModel):
    id: str
    slug: str
    name: str
    title: str
    kind: WorkloadKind
    level: Optional[int]
    eligible_run_count: int = Field(alias="eligibleRunCount")
    eligible_run_count_display: str = Field(alias="eligibleRunCountDisplay")
    last_observed_display: Optional[str] = Field(alias="lastObservedDisplay")
    headline: Optional["WorkloadListWorkloadsEdgesNodeHeadline"]
    records: list["WorkloadListWorkloadsEdgesNodeRecords"]


class WorkloadListWorkloadsEdgesNodeHeadline(BaseModel):
    label: str
    latency_ms: float = Field(alias="latencyMs")
    latency_display: str = Field(alias="latencyDisplay")
    speedup_display: Optional[str] = Field(alias="speedupDisplay")
    implementation: "WorkloadListWorkloadsEdgesNodeHeadlineImplementation"


WorkloadListWorkloadsEdgesNodeHeadlineImplementation = ImplementationBadge
WorkloadListWorkloadsEdgesNodeRecords = RecordRow
WorkloadList.model_rebuild()
WorkloadListWorkloads.model_rebuild()
WorkloadListWorkloadsEdges.model_rebuild()
WorkloadListWorkloadsEdgesNode.model_rebuild()
WorkloadListWorkloadsEdgesNodeHeadline.model_rebuild()
