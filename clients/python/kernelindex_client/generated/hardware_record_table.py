from pydantic import Field

from .base_model import BaseModel
from .fragments import PageCursor, RecordTableRow, WorkloadKey


class HardwareRecordTable(BaseModel):
    records: "HardwareRecordTableRecords"


class HardwareRecordTableRecords(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "HardwareRecordTableRecordsPageInfo" = Field(alias="pageInfo")
    nodes: list["HardwareRecordTableRecordsNodes"]


HardwareRecordTableRecordsPageInfo = PageCursor


class HardwareRecordTableRecordsNodes(BaseModel):
    id: str
    workload: "HardwareRecordTableRecordsNodesWorkload"
    records: list["HardwareRecordTableRecordsNodesRecords"]


HardwareRecordTableRecordsNodesWorkload = WorkloadKey
HardwareRecordTableRecordsNodesRecords = RecordTableRow
HardwareRecordTable.model_rebuild()
HardwareRecordTableRecords.model_rebuild()
HardwareRecordTableRecordsNodes.model_rebuild()
