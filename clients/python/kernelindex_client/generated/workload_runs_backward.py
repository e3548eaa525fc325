from pydantic import Field

from .base_model import BaseModel
from .fragments import PageCursor, RunFigures


class WorkloadRunsBackward(BaseModel):
    runs: "WorkloadRunsBackwardRuns"


class WorkloadRunsBackwardRuns(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "WorkloadRunsBackwardRunsPageInfo" = Field(alias="pageInfo")
    edges: list["WorkloadRunsBackwardRunsEdges"]


WorkloadRunsBackwardRunsPageInfo = PageCursor


class WorkloadRunsBackwardRunsEdges(BaseModel):
    cursor: str
    node: "WorkloadRunsBackwardRunsEdgesNode"


WorkloadRunsBackwardRunsEdgesNode = RunFigures
WorkloadRunsBackward.model_rebuild()
WorkloadRunsBackwardRuns.model_rebuild()
WorkloadRunsBackwardRunsEdges.model_rebuild()
