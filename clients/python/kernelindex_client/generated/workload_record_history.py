from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import PageCursor, RecordChange


class WorkloadRecordHistory(BaseModel):
    workload: Optional["WorkloadRecordHistoryWorkload"]


class WorkloadRecordHistoryWorkload(BaseModel):
    id: str
    slug: str
    record_history: "WorkloadRecordHistoryWorkloadRecordHistory" = Field(
        alias="recordHistory"
    )


class WorkloadRecordHistoryWorkloadRecordHistory(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "WorkloadRecordHistoryWorkloadRecordHistoryPageInfo" = Field(
        alias="pageInfo"
    )
    nodes: list["WorkloadRecordHistoryWorkloadRecordHistoryNodes"]


WorkloadRecordHistoryWorkloadRecordHistoryPageInfo = PageCursor
WorkloadRecordHistoryWorkloadRecordHistoryNodes = RecordChange
WorkloadRecordHistory.model_rebuild()
WorkloadRecordHistoryWorkload.model_rebuild()
WorkloadRecordHistoryWorkloadRecordHistory.model_rebuild()
