from pydantic import Field

from .base_model import BaseModel
from .fragments import PageCursor, RecordRow


class HardwareRecords(BaseModel):
    records: "HardwareRecordsRecords"


class HardwareRecordsRecords(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "HardwareRecordsRecordsPageInfo" = Field(alias="pageInfo")
    edges: list["HardwareRecordsRecordsEdges"]


HardwareRecordsRecordsPageInfo = PageCursor


class HardwareRecordsRecordsEdges(BaseModel):
    cursor: str
    node: "HardwareRecordsRecordsEdgesNode"


class HardwareRecordsRecordsEdgesNode(BaseModel):
    id: str
    workload: "HardwareRecordsRecordsEdgesNodeWorkload"
    records: list["HardwareRecordsRecordsEdgesNodeRecords"]


class HardwareRecordsRecordsEdgesNodeWorkload(BaseModel):
    id: str
    slug: str
    title: str


HardwareRecordsRecordsEdgesNodeRecords = RecordRow
HardwareRecords.model_rebuild()
HardwareRecordsRecords.model_rebuild()
HardwareRecordsRecordsEdges.model_rebuild()
HardwareRecordsRecordsEdgesNode.model_rebuild()
