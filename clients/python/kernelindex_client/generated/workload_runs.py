from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import RunFlagCode
from .fragments import (  # noqa: F401
    PageCursor,
    RunFigures,
    RunFiguresConfiguration,
    RunFiguresEnvironment,
    RunFiguresImplementation,
)


class WorkloadRuns(BaseModel):
    runs: "WorkloadRunsRuns"


class WorkloadRunsRuns(BaseModel):
    total_count: int = Field(alias="totalCount")
    page_info: "WorkloadRunsRunsPageInfo" = Field(alias="pageInfo")
    edges: list["WorkloadRunsRunsEdges"]


WorkloadRunsRunsPageInfo = PageCursor


class WorkloadRunsRunsEdges(BaseModel):
    cursor: str
    node: "WorkloadRunsRunsEdgesNode"


class WorkloadRunsRunsEdgesNode(RunFigures):
    failure_reason: Optional[str] = Field(alias="failureReason")
    num_trials: Optional[int] = Field(alias="numTrials")
    flags: list["WorkloadRunsRunsEdgesNodeFlags"]
    protocol: "WorkloadRunsRunsEdgesNodeProtocol"
    source: "WorkloadRunsRunsEdgesNodeSource"


class WorkloadRunsRunsEdgesNodeFlags(BaseModel):
    code: RunFlagCode
    words: str
    reason: str


class WorkloadRunsRunsEdgesNodeProtocol(BaseModel):
    id: str
    name: str
    version: str
    statistic: str


class WorkloadRunsRunsEdgesNodeSource(BaseModel):
    id: str
    name: str
    revision: Optional[str]
    display: str


WorkloadRuns.model_rebuild()
WorkloadRunsRuns.model_rebuild()
WorkloadRunsRunsEdges.model_rebuild()
WorkloadRunsRunsEdgesNode.model_rebuild()
