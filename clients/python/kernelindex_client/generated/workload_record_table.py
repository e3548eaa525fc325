from typing import Optional

from .base_model import BaseModel
from .fragments import RecordTableRow, WorkloadKey


class WorkloadRecordTable(BaseModel):
    workload: Optional["WorkloadRecordTableWorkload"]


class WorkloadRecordTableWorkload(WorkloadKey):
    records: list["WorkloadRecordTableWorkloadRecords"]


WorkloadRecordTableWorkloadRecords = RecordTableRow
WorkloadRecordTable.model_rebuild()
WorkloadRecordTableWorkload.model_rebuild()
